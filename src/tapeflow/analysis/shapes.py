"""Static shapes of variables, from the shapes of the arguments of one compilation.

Runs on ANF. A compilation is specialised on its arguments' shapes (Python
scalars have shape `()`; the cache keys on them), so many intermediate shapes
are known: arithmetic broadcasts, ufuncs keep it, `@` follows matmul, full
reductions give `()`, `x[i]` drops a dimension, `x.T` reverses, `np.zeros`
with a constant shape makes it. A variable has a shape only if every
assignment to it gives that same shape; anything else is unknown (`None`).

Shape arithmetic is followed too: `x.shape` is a tuple of `x.ndim` ints, so
`x.shape[0]` (an int, like the constant `2`) has shape `()`; `x.ndim` and
`x.size` are ints.

The reverse transform drops `unbroadcast(g, x)` where `x` has the shape of the
operation's result: nothing was broadcast, so `x` need not be kept for it.
"""
from __future__ import annotations

import builtins

from tapeflow.syntax import ast
import numpy as np

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno

_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin, np.std, np.var}
_REDUCTION_METHODS = {'sum', 'mean', 'max', 'min', 'prod', 'std', 'var'}
_CREATION = {np.zeros, np.ones, np.empty, np.full}
_TOP = 'top'      # not decided yet (optimistic start of the fixpoint); None is "unknown"
# Helpers of generated code whose result has the shape of one argument (the
# operand a cotangent belongs to): name -> that argument's position. Read when
# generated code is differentiated again.
_SHAPED_LIKE = {'unbroadcast': 1, 'grad_of_sum': 1, 'grad_of_mean': 1, 'grad_of_max': 1,
                'grad_of_matmul_a': 1, 'grad_of_matmul_b': 2, 'broadcast_tangent': 1}


def broadcast(*shapes):
    if any(s is None for s in shapes):
        return None
    if any(s is _TOP for s in shapes):
        return _TOP
    first = shapes[0] if shapes else None
    if first.__class__ is tuple and all(d.__class__ is int and d >= 0 for d in first) \
            and all(s == first for s in shapes):    # the common case, without NumPy's call
        return first
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def matmul_shape(a, b):
    if a is _TOP or b is _TOP:
        return _TOP if a is not None and b is not None else None
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return () if a == b else None
    if len(b) == 1:
        return a[:-1] if a[-1] == b[0] else None
    if len(a) == 1:
        return b[:-2] + b[-1:] if a[0] == b[-2] else None
    if a[-1] != b[-2]:
        return None
    batch = broadcast(a[:-2], b[:-2])
    return None if batch is None else batch + (a[-2], b[-1])


class _Shapes:
    def __init__(self, known):
        self.known = known                 # name -> shape, for names settled so far

    def of(self, node):
        if isinstance(node, ast.Constant):
            # not a complex constant: `x + 2j` has x's shape but not its dtype, and the
            # `unbroadcast(g, x)` that makes x's cotangent a real number's must stay
            return () if isinstance(node.value, (int, float, bool)) else None
        if isinstance(node, ast.Name):
            return self.known.get(node.id)
        if isinstance(node, ast.Attribute) and getanno(node, Key.RESOLVED) is not None:
            value = getanno(node, Key.RESOLVED)
            return () if isinstance(value, (int, float)) else None
        return None

    def value(self, v):
        """The shape the ANF value `v` produces, or None."""
        if isinstance(v, (ast.Constant, ast.Name)) or (
                isinstance(v, ast.Attribute) and getanno(v, Key.RESOLVED) is not None):
            return self.of(v)
        if isinstance(v, ast.BinOp):
            left, right = self.of(v.left), self.of(v.right)
            if isinstance(v.op, ast.MatMult):
                return matmul_shape(left, right)
            return broadcast(left, right)
        if isinstance(v, ast.UnaryOp):
            return self.of(v.operand)
        if isinstance(v, (ast.Compare, ast.BoolOp)):
            return None
        if isinstance(v, ast.Attribute):
            shape = self.of(v.value)
            if shape is None:
                return None
            if v.attr == 'T':
                return shape if shape is _TOP else shape[::-1]
            if v.attr == 'shape':             # a tuple of ints: `x.shape[0]` is an int, shape ()
                return shape if shape is _TOP else (len(shape),)
            if v.attr in ('ndim', 'size'):
                return shape if shape is _TOP else ()
            return None
        if isinstance(v, ast.Subscript):
            shape = self.of(v.value)
            if shape is _TOP:
                return _TOP
            if shape and _is_integer_like(v.slice, self):
                return shape[1:]
            return None
        if isinstance(v, ast.Call):
            return self.call(v)
        return None

    def call(self, call):
        fn = getanno(call.func, Key.RESOLVED)
        args = [self.of(a) for a in call.args]
        keywords = {k.arg: k.value for k in call.keywords}
        if fn is None and isinstance(call.func, ast.Attribute):           # x.sum() and the like
            if call.func.attr in _REDUCTION_METHODS and not call.args and not keywords:
                receiver = self.of(call.func.value)
                return receiver if receiver is _TOP else (() if receiver is not None else None)
            return None
        if fn is builtins.len:
            return ()
        like = _SHAPED_LIKE.get(getattr(fn, '__name__', None))
        if like is not None and getattr(fn, '__module__', '').startswith('tapeflow.') \
                and len(args) > like:
            return args[like]            # a cotangent in its operand's shape
        if getattr(fn, '__module__', None) == 'math':
            return _TOP if _TOP in args else (() if all(a == () for a in args) else None)
        if isinstance(fn, np.ufunc) and not keywords and len(args) == fn.nin:
            return broadcast(*args)
        if fn in (np.dot, np.matmul) and len(args) == 2 and not keywords:
            return matmul_shape(*args)
        if fn in _REDUCTIONS and args and args[0] is not None:
            return _reduced(args[0], call.args[1:], keywords)
        if fn in _CREATION and call.args and isinstance(call.args[0], ast.Constant):
            value = call.args[0].value
            return (value,) if isinstance(value, int) else None
        if fn in _CREATION and call.args and isinstance(call.args[0], ast.Tuple) \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in call.args[0].elts):
            return tuple(e.value for e in call.args[0].elts)
        return None


_REDUCTION_KEYWORDS = frozenset({'axis', 'keepdims', 'ddof'})


def _reduced(shape, positional, keywords):
    """The shape of a reduction of an array of `shape` over the constant `axis` (an int
    or a tuple of ints, given by keyword or as the second argument), with the constant
    `keepdims` (`ddof` changes no shape); None for anything else."""
    if len(positional) > 1 or not keywords.keys() <= _REDUCTION_KEYWORDS \
            or positional and 'axis' in keywords:
        return None
    axis = positional[0] if positional else keywords.get('axis')
    keep = keywords.get('keepdims')
    if keep is not None and not (isinstance(keep, ast.Constant) and keep.value.__class__ is bool):
        return None
    keep = keep is not None and keep.value
    if shape is _TOP:
        return _TOP
    if axis is None or isinstance(axis, ast.Constant) and axis.value is None:
        return tuple(1 for _ in shape) if keep else ()
    elts = axis.elts if isinstance(axis, ast.Tuple) else [axis]
    if not all(isinstance(e, ast.Constant) and e.value.__class__ is int for e in elts):
        return None
    axes = {e.value + len(shape) if e.value < 0 else e.value for e in elts}
    if len(axes) != len(elts) or not all(0 <= a < len(shape) for a in axes):
        return None
    return tuple(1 if k in axes else d for k, d in enumerate(shape) if keep or k not in axes)


def _is_integer_like(index, shapes):
    return isinstance(index, ast.Constant) and isinstance(index.value, int) or \
        isinstance(index, ast.Name) and index.id in shapes.integers


def infer(node: ast.FunctionDef, param_shapes: dict) -> dict:
    """name -> shape for the names of `node` (ANF) whose shape is settled.

    An optimistic fixpoint: every assigned name starts undecided; each round
    gives it the meet of what its assignments produce; a disagreement makes it
    unknown for good.
    """
    params = {a.id for a in node.args.args}
    assignments, loop_counters = [], set()
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            assignments.append((n.targets[0].id, n.value))
        elif isinstance(n, ast.For):
            if isinstance(n.iter, ast.Call) and getanno(n.iter.func, Key.RESOLVED) is builtins.range:
                loop_counters.add(n.target.id)
            else:
                assignments.append((n.target.id, None))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Name):
            assignments.append((n.func.value.id, None))     # a method may change its object
    targets = {t for t, _ in assignments}
    state = {p: param_shapes.get(p) for p in params}
    for c in loop_counters:
        state[c] = () if c not in targets else None
    for t in targets:
        if t not in params and t not in loop_counters:
            state[t] = _TOP
    shapes = _Shapes(state)
    shapes.integers = {c for c in loop_counters if state.get(c) == ()}
    values = {}                     # name -> the values assigned to it, in order
    for t, v in assignments:
        values.setdefault(t, []).append(v)
    changed = True
    while changed:
        changed = False
        for name in targets:
            if state.get(name) is None:
                continue
            current = state[name]
            for v in values[name]:
                produced = shapes.value(v) if v is not None else None
                current = _meet(current, produced)
            if current != state[name]:
                state[name] = current
                changed = True
    return {n: s for n, s in state.items() if s is not None and s is not _TOP}


def _meet(a, b):
    if a is _TOP:
        return b
    if b is _TOP:
        return a
    return a if a == b else None


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): `ctx.shapes`, from the arguments' shapes."""
    ctx.shapes = infer(tree, ctx.parameter_shapes())
    return tree
