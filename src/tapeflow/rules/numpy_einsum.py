"""Rules for np.einsum: any subscripts, explicit or implicit output, ellipses,
repeated indices (traces, diagonals), broadcasting, and the sublist form.

The cotangent of operand k is itself an einsum: `g` contracted with the other
operands, written into operand k's subscripts. Three things need care and
get it here: a subscript repeated within operand k ('ii') becomes distinct
letters tied by identity matrices; a subscript only operand k has (summed
away) is contracted with ones; a size-1 axis that einsum broadcast is summed.
"""
import string

import numpy as np

from tapeflow.rules.batching import batch_rows, defjvp_batched
from tapeflow.rules.multilinear import Family
from tapeflow.rules.registry import defjvp, defvjp, describe
from tapeflow.rules.shapes import fit

# Operands have rules up to this many (string form) / twice as many arguments.
MAX_OPERANDS = 32


def _sublist_to_string(sublist):
    return ''.join('...' if s is Ellipsis else string.ascii_letters[s] for s in sublist)


def parse(args):
    """(input subscripts per operand, output subscripts, operands), ellipses expanded."""
    if isinstance(args[0], str):
        spec = args[0].replace(' ', '')
        operands = list(args[1:])
        inputs, arrow, output = spec.partition('->')
        inputs = inputs.split(',')
        explicit = bool(arrow)
    else:
        operands = list(args[0::2][:len(args) // 2])
        inputs = [_sublist_to_string(s) for s in args[1::2][:len(operands)]]
        explicit = len(args) % 2 == 1
        output = _sublist_to_string(args[-1]) if explicit else ''
    used = set(''.join(inputs) + output) - {'.'}
    fresh = iter(c for c in string.ascii_letters if c not in used)
    ellipsis_ndim = max([np.ndim(op) - len(s) + 3 for op, s in zip(operands, inputs) if '...' in s],
                        default=0)
    ellipsis = ''.join(next(fresh) for _ in range(ellipsis_ndim))
    expanded = []
    for op, s in zip(operands, inputs):
        if '...' in s:
            own = np.ndim(op) - len(s) + 3
            s = s.replace('...', ellipsis[ellipsis_ndim - own:])
        expanded.append(s)
    if explicit:
        output = output.replace('...', ellipsis)
    else:
        letters = ''.join(expanded)
        output = ellipsis + ''.join(sorted(c for c in set(letters)
                                           if letters.count(c) == 1 and c not in ellipsis))
    return expanded, output, operands


def _sizes(inputs, operands):
    sizes = {}
    for s, op in zip(inputs, operands):
        for c, n in zip(s, np.shape(op)):
            if n != 1 or c not in sizes:
                sizes[c] = n
    return sizes


def einsum_grad(g, args, k, optimize=False):
    """The cotangent of operand `k` of `np.einsum(*args)` from the output's `g`."""
    inputs, output, operands = parse(args)
    x, subs = operands[k], inputs[k]
    others = inputs[:k] + inputs[k + 1:]
    other_ops = operands[:k] + operands[k + 1:]
    sizes = _sizes(inputs, operands)
    taken = set(''.join(inputs) + output)
    fresh = iter(c for c in string.ascii_letters if c not in taken)
    dtype = getattr(x, 'dtype', np.float64)
    dtype = dtype if np.issubdtype(dtype, np.inexact) else np.float64
    target, extra_subs, extra_ops = '', [], []
    for c, n in zip(subs, np.shape(x)):
        if c in target:                              # a repeated index: a diagonal
            d = next(fresh)
            extra_subs.append(c + d)
            extra_ops.append(np.eye(n, dtype=dtype))
            target += d
        elif n == 1 and sizes[c] != 1:               # a broadcast axis
            target += next(fresh)
        else:
            target += c
    named = set(output + ''.join(others) + ''.join(extra_subs))
    naked = ''.join(c for c in target if c not in named)
    if naked:
        extra_subs.append(naked)
        extra_ops.append(np.ones(tuple(np.shape(x)[target.index(c)] for c in naked), dtype))
    spec = ','.join([output] + others + extra_subs) + '->' + target
    grad = np.einsum(spec, g, *other_ops, *extra_ops, optimize=optimize)
    if np.shape(grad) != np.shape(x):     # an axis every other factor broadcast
        grad = np.broadcast_to(grad, np.shape(x)) + 0.0
    return grad


def _operand_index(args, argnum):
    return argnum - 1 if isinstance(args[0], str) else argnum // 2


def _is_operand(args, argnum):
    if isinstance(args[0], str):
        return 1 <= argnum < len(args)
    return argnum % 2 == 0 and argnum < len(args) - len(args) % 2


def _substituted(args, argnum, t):
    args = list(args)
    args[argnum] = t
    return args


def _jvp(argnum, t, args, kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k != 'out'}
    return np.einsum(*_substituted(args, argnum, t), **kwargs)


def _vjp(argnum, g, args, kwargs):
    grad = einsum_grad(g, args, _operand_index(args, argnum), kwargs.get('optimize', False))
    return fit(grad, args[argnum])


# einsum is linear in each operand: its rules, and theirs, are einsums (rules/multilinear.py)
EINSUM = Family(np.einsum, 'numpy.einsum', _jvp, _vjp, _is_operand, __name__)


def _einsum_jvp_batched(argnum, jvp):
    """A batch of tangents of one operand: a fresh letter for the batch axis, in front."""
    def jvp_batched(t, ans, *args, **kwargs):
        kwargs.pop('out', None)
        inputs, output, operands = parse(args)
        sizes = _sizes(inputs, operands)
        if any(np.shape(op) != tuple(sizes[c] for c in s) for s, op in zip(inputs, operands)):
            # einsum broadcast a size-1 axis: that needs the ellipsis it was written with
            return batch_rows([jvp(row, ans, *args, **kwargs) for row in t], ans)
        k = _operand_index(args, argnum)
        batch = next(c for c in string.ascii_letters if c not in set(''.join(inputs) + output))
        inputs[k] = batch + inputs[k]
        operands[k] = t
        return np.einsum(','.join(inputs) + '->' + batch + output, *operands, **kwargs)
    return jvp_batched


for _argnum in range(2 * MAX_OPERANDS + 1):
    _vjp_rule, _jvp_rule = EINSUM.first_order(_argnum)
    defvjp(np.einsum, _vjp_rule, argnums=[_argnum])
    defjvp(np.einsum, _jvp_rule, argnums=[_argnum])
    defjvp_batched(np.einsum, _einsum_jvp_batched(_argnum, _jvp_rule), argnums=[_argnum])

describe('any subscripts: explicit or implicit output, ellipses, repeated indices '
         '(trace, diagonal), broadcasting, sublist form; any number of operands; optimize',
         np.einsum)
