"""`vmap`: a function mapped over a batch axis of its arguments, as in JAX.

`vmap(f, in_axes, out_axes)(*args)` is `f` applied to every slice of the
batch and the results stacked. It runs `f` once per slice, in a Python loop:
exact for every function tapeflow can run, including `grad(f)`, `jvp`,
anything with control flow that depends on the values. (A vectorised path,
`f` run once on the whole batch, would need every operation's batching rule
proven for the primal values; tapeflow's batched rules, `rules.batching`,
batch tangents, not primals, so none is taken.)

The mapped function is a primitive with its own rules (`rules.registry`):
the VJP of a slice is `vjp(f)` of that slice, the JVP `jvp(f)`, so
`grad`, `jvp`, `jacfwd`, `jacrev` of a function that calls `vmap(f)` are
exact too, and so is the eager tape (which records the loop op by op).

Axes: `in_axes` is an int, None, or a tuple with one entry per positional
argument, each an int, None, or a tuple/list/dict prefix of that argument's
structure; `out_axes` an int, None (the output does not depend on the batch
element: checked), or such a prefix of the output's structure.
"""
from __future__ import annotations

import collections
import functools
import inspect

import numpy as np

from tapeflow.linear_maps import Rule, leaves_of as _leaves, rebuild as _rebuild
from tapeflow.linear_maps import zeros_like as _zeros_like
from tapeflow.rules import registry
from tapeflow.runtime.support import is_zero

__all__ = ['vmap']

_CONTAINERS = (list, tuple, dict)


# ------------------------------------------------------------------ trees and axes

def _leaves_with_axes(tree, spec, where):
    """[(leaf, axis)] for the leaves of `tree`, each with its entry of the prefix `spec`."""
    if spec is None or isinstance(spec, int):
        return [(leaf, spec) for leaf in _leaves(tree)]
    if isinstance(spec, dict):
        if not isinstance(tree, dict) or set(tree) != set(spec):
            raise ValueError(f'vmap: the axes {spec!r} of {where} do not match its structure')
        return [pair for key in sorted(tree)
                for pair in _leaves_with_axes(tree[key], spec[key], f'{where}[{key!r}]')]
    if isinstance(spec, (list, tuple)):
        if not isinstance(tree, (list, tuple)) or len(tree) != len(spec):
            raise ValueError(f'vmap: the axes {spec!r} of {where} do not match its structure')
        return [pair for k, (t, s) in enumerate(zip(tree, spec))
                for pair in _leaves_with_axes(t, s, f'{where}[{k}]')]
    raise TypeError(f'vmap: an axis is an int or None, not {spec!r}')


def _argument_axes(in_axes, nargs):
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple):
        if len(in_axes) != nargs:
            raise ValueError(f'vmap: in_axes has {len(in_axes)} entries but the function was '
                             f'called with {nargs} positional arguments')
        return in_axes
    return (in_axes,) * nargs


def _axis(axis, leaf, where):
    ndim = np.ndim(leaf)
    if not -ndim <= axis < ndim:
        raise ValueError(f'vmap: cannot map over axis {axis} of {where}, which has '
                         f'{ndim} dimensions (shape {np.shape(leaf)})')
    return axis % ndim


def _plan(args, in_axes):
    """(per argument [(leaf, axis)], the batch size)."""
    plan, sizes = [], {}
    for i, (arg, spec) in enumerate(zip(args, _argument_axes(in_axes, len(args)))):
        pairs = []
        for leaf, axis in _leaves_with_axes(arg, spec, f'argument {i}'):
            if axis is not None:
                axis = _axis(axis, leaf, f'argument {i}')
                sizes.setdefault(np.shape(leaf)[axis], f'argument {i}')
            pairs.append((leaf, axis))
        plan.append((arg, pairs))
    if not sizes:
        raise ValueError('vmap: at least one entry of in_axes must be an axis, not None')
    if len(sizes) > 1:
        raise ValueError('vmap got inconsistent sizes for the mapped axes: ' +
                         ', '.join(f'{where} has size {n}' for n, where in sizes.items()))
    return plan, next(iter(sizes))


def _slice(leaf, axis, k):
    if axis is None:
        return leaf
    if axis == 0:
        return leaf[k]
    return leaf[(slice(None),) * axis + (k,)]


def _slices(plan, k):
    return [_rebuild(arg, iter([_slice(leaf, axis, k) for leaf, axis in pairs]))
            for arg, pairs in plan]


def _stack(rows, out_axes, where='the output'):
    """The results of the slices, stacked leaf by leaf along `out_axes`."""
    first = rows[0]
    columns = list(zip(*[_leaves(r) for r in rows]))
    pairs = _leaves_with_axes(first, out_axes, where)
    if any(len(_leaves(r)) != len(pairs) for r in rows):
        raise ValueError('vmap: the function returned results of different structures')
    leaves = []
    for (leaf, axis), column in zip(pairs, columns):
        if axis is None:
            if not all(np.array_equal(np.asarray(c), np.asarray(leaf)) for c in column[1:]):
                raise ValueError(f'vmap: out_axes is None for a part of {where} that changes '
                                 f'along the batch; give it an axis')
            leaves.append(leaf)
        else:
            axis = axis if axis >= 0 else axis + np.ndim(leaf) + 1
            leaves.append(np.stack(column, axis=axis))
    return _rebuild(first, iter(leaves))


def _apply(f, in_axes, out_axes, args):
    plan, size = _plan(args, in_axes)
    if size == 0:
        raise ValueError('vmap: the batch is empty (size 0); tapeflow runs the function once '
                         'per element, so it cannot know the shape of its result')
    return _stack([f(*_slices(plan, k)) for k in range(size)], out_axes)


# ------------------------------------------------------------------ derivatives

def _unstack_cotangent(g, ans, out_axes, size):
    """The cotangent of the output, split into the cotangents of each slice's result."""
    pairs = _leaves_with_axes(ans, out_axes, 'the output')
    g_leaves = _leaves(g) if isinstance(ans, _CONTAINERS) else [g]
    rows = []
    for k in range(size):
        parts = []
        for (leaf, axis), gl in zip(pairs, g_leaves):
            if axis is None:
                # the output is the same for every slice: its cotangent goes to one of them
                parts.append(gl if k == 0 else np.zeros_like(np.asarray(gl, float)))
                continue
            axis = axis if axis >= 0 else axis + np.ndim(leaf)
            gl = np.broadcast_to(gl, np.shape(leaf)) if np.ndim(gl) != np.ndim(leaf) else gl
            parts.append(_slice(np.asarray(gl), axis, k))
        rows.append(_rebuild(ans, iter(parts)) if isinstance(ans, _CONTAINERS) else parts[0])
    return rows


def _batched_vjp(f, in_axes, out_axes, argnum, g, ans, *args):
    """Rule: the cotangent of argument `argnum` of `vmap(f)`, slice by slice."""
    from tapeflow import api
    arg = args[argnum]
    if is_zero(g):
        return _zeros_like(arg)
    plan, size = _plan(args, in_axes)
    cotangents = []
    for k, gk in enumerate(_unstack_cotangent(g, ans, out_axes, size)):
        _, pullback = api.vjp(f, *_slices(plan, k))
        ct = pullback(gk)[argnum]
        cotangents.append(_zeros_like(_slices(plan, k)[argnum]) if ct is None else ct)
    spec = _argument_axes(in_axes, len(args))[argnum]
    if spec is None:
        total = cotangents[0]
        for ct in cotangents[1:]:
            total = _rebuild(total, iter([a + b for a, b in zip(_leaves(total), _leaves(ct))]))
        return total
    axes = [axis for _, axis in plan[argnum][1]]
    stacked = [np.stack([_leaves(ct)[j] for ct in cotangents], axis=0 if axis is None else axis)
               for j, axis in enumerate(axes)]
    # a leaf of the argument with no axis (a prefix entry None) gathers the sum
    leaves = [s.sum(axis=0) if axis is None else s for s, axis in zip(stacked, axes)]
    return _rebuild(arg, iter(leaves))


def _batched_jvp(f, in_axes, out_axes, argnum, t, ans, *args):
    """Rule: the output tangent of `vmap(f)` when argument `argnum` moves along `t`."""
    from tapeflow import api
    if is_zero(t):
        return _zeros_like(ans)
    plan, size = _plan(args, in_axes)
    tangent_plan = list(plan)
    tangent_plan[argnum] = (t, [(leaf, axis) for leaf, (_, axis) in
                                zip(_leaves(t) if isinstance(args[argnum], _CONTAINERS) else [t],
                                    plan[argnum][1])])
    rows = []
    for k in range(size):
        primals = _slices(plan, k)
        tangents = [_zeros_like(p) for p in primals]
        tangents[argnum] = _slices(tangent_plan, k)[argnum]
        rows.append(api.jvp(f, primals, tangents)[1])
    return _stack(rows, out_axes, 'the output tangent')


def _positional_count(f, in_axes):
    """(how many positional arguments `vmap(f)` may take, whether always that many);
    (None, False) where that cannot be known."""
    if isinstance(in_axes, (tuple, list)):
        return len(in_axes), True
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None, False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None, False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional), all(p.default is p.empty for p in positional)


# (f, in_axes, out_axes) -> the function vmap made, the most recently made last (bounded:
# `vmap(grad(f))` in a loop maps a new function each time; each made function carries its
# own rule entry, so one dropped here and by its caller is freed)
_MAPPED = collections.OrderedDict()
MAPPED_KEPT = 64


def vmap(f, in_axes=0, out_axes=0):
    """`f` mapped over a batch axis of its arguments, with JAX's semantics.

    `in_axes`: an int (every argument mapped along that axis), None (not
    mapped), or a tuple with one such entry per positional argument (an entry
    may itself be a tuple/list/dict prefix of the argument's structure).
    `out_axes`: where the batch axis goes in each output leaf (None: the output
    must be the same for every element). Arguments and results may be tuples,
    lists and dicts of arrays.

    Which path runs: always the exact one, `f` called once per batch element
    in a Python loop and the results stacked with `np.stack`; so `vmap(grad(f))`
    is exactly the loop of `grad(f)`. Under `grad`, `jvp`, `jacfwd`, `jacrev`
    the mapped function is a primitive whose rules apply `vjp(f)` / `jvp(f)`
    slice by slice; on the eager tape the loop is recorded op by op.
    """
    if not callable(f):
        raise TypeError(f'vmap: expected a function, got {f!r}')
    if not (isinstance(out_axes, (int, tuple, list, dict)) or out_axes is None):
        raise TypeError(f'vmap: out_axes is an int, None or a structure of them, not {out_axes!r}')

    try:
        key = (f, repr(in_axes), repr(out_axes))
        made = _MAPPED.pop(key, None)
    except TypeError:           # an unhashable callable
        key = made = None
    if made is not None:
        _MAPPED[key] = made     # (the most recently used last)
        return made

    def batched(*args):
        return _apply(f, in_axes, out_axes, args)

    name = getattr(f, '__name__', 'f')
    batched.__name__ = batched.__qualname__ = f'vmap_{name}' if name.isidentifier() else 'vmapped'
    batched.__doc__ = f'vmap of {name}: {f.__doc__ or ""}'
    count, fixed = _positional_count(f, in_axes)
    entry = batched.__tapeflow_primitive__ = registry.Primitive(batched, batched.__name__)
    rules = functools.partial(_batched_vjp, f, in_axes, out_axes), \
        functools.partial(_batched_jvp, f, in_axes, out_axes)
    for argnum in range(count if count is not None else 16):
        entry.vjps[argnum] = Rule(rules[0], argnum, 'vjp', batched.__name__)
        entry.jvps[argnum] = Rule(rules[1], argnum, 'jvp', batched.__name__)
    if not fixed:
        _keep(key, batched)
        return batched
    # a def of fixed arity that calls the primitive: what the compiler reads when
    # the mapped function is itself differentiated (`jvp(vmap(f), ...)`)
    from tapeflow.syntax.unparse import load_module
    params = ', '.join(f'_a{k}' for k in range(count))
    namespace = {'_batched': batched}
    load_module(f'def {batched.__name__}({params}):\n    return _batched({params})\n',
                namespace, batched.__name__)
    caller = namespace[batched.__name__]
    caller.__doc__ = batched.__doc__
    caller.__tapeflow_vmapped__ = (f, in_axes, out_axes)
    _keep(key, caller)
    return caller


def _keep(key, made):
    if key is not None:
        _MAPPED[key] = made
        while len(_MAPPED) > MAPPED_KEPT:
            _MAPPED.popitem(last=False)


vmap.__tapeflow_fold__ = True      # `vmap(f)` inside compiled code is made while compiling
