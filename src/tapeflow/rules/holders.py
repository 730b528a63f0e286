"""Functions that hold values in slots, as a list does: a `functools.partial` (its
arguments and keywords) and a `Closure` (its defaults and the locals it read). A write
into an array such a function holds is seen when it is called; `rules.container_reads`
refreshes its slots after the write (`refresh_items`) and moves their derivatives, as it
does for a list's, with the paths this module finds. A slot is found by identity.

The cotangent (tangent) of a partial is (its function's, its arguments' tuple, its
keywords' dict) (`tapeflow.call_plans`), of a Closure the sequence of its values'. A path
leads to one slot's part of it: (1, j) to argument j of a partial, (2, name) to a keyword,
(0, k) to value k of the Closure a partial holds, (k,) to value k of a Closure.
"""
from __future__ import annotations

import functools

from tapeflow.rules.closures import Closure

__all__ = ['holds_values', 'function_slots', 'function_leaves', 'slot_cotangent', 'cleared',
           'placed', 'with_slots']


def holds_values(value) -> bool:
    """Whether `value` is a function holding values in slots (a partial, a Closure)."""
    return isinstance(value, (functools.partial, Closure))


def function_slots(fn, held) -> list:
    """The paths of `fn`'s slots that hold the very object `held`."""
    if isinstance(fn, Closure):
        return [(k,) for k, v in enumerate(fn.values) if v is held]
    if not isinstance(fn, functools.partial):
        return []
    inner = [(0,) + path for path in function_slots(fn.func, held)]
    return inner + [(1, j) for j, v in enumerate(fn.args) if v is held] + \
        [(2, name) for name, v in fn.keywords.items() if v is held]


def function_leaves(fn) -> list:
    """The values `fn` holds: its slots', and a partial's function where it is no Closure
    (a bound method, a callable object: what they hold is no slot of the partial)."""
    if isinstance(fn, Closure):
        return list(fn.values)
    if not isinstance(fn, functools.partial):
        return []
    inner = function_leaves(fn.func) if isinstance(fn.func, Closure) else [fn.func]
    return inner + list(fn.args) + list(fn.keywords.values())


def _is_zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def slot_cotangent(g, path):
    """The part of `fn`'s cotangent `g` at `path` (zero where `g` has none)."""
    for step in path:
        if _is_zero(g):
            return 0.0
        g = g.get(step, 0.0) if isinstance(g, dict) else g[step]
    return g


def cleared(g, paths):
    """`fn`'s cotangent `g` with zero at each of `paths` (what a refresh took from it)."""
    for path in paths:
        g = _set(g, path, 0.0)
    return g


def _set(g, path, value):
    if _is_zero(g):
        return g
    step, rest = path[0], path[1:]
    inner = value if not rest else _set(g.get(step, 0.0) if isinstance(g, dict) else g[step],
                                        rest, value)
    if isinstance(g, dict):
        return {**g, step: inner}
    out = list(g)
    out[step] = inner
    return tuple(out) if isinstance(g, tuple) else out


def placed(fn, paths, t):
    """The tangent of `fn` that is `t` at each of `paths` and zero elsewhere."""
    if isinstance(fn, Closure):
        return tuple(t if (k,) in paths else 0.0 for k in range(len(fn.values)))
    inner = [path[1:] for path in paths if path[0] == 0]
    return (placed(fn.func, inner, t) if inner else 0.0,
            tuple(t if (1, j) in paths else 0.0 for j in range(len(fn.args))),
            {name: t for name in fn.keywords if (2, name) in paths})


def with_slots(fn, paths, item):
    """`fn` made anew with `item` in each of the slots at `paths`."""
    if isinstance(fn, Closure):
        values = tuple(item if (k,) in paths else v for k, v in enumerate(fn.values))
        return Closure(fn.fn, fn.nparams, fn.ndefaults, values)
    inner = [path[1:] for path in paths if path[0] == 0]
    func = with_slots(fn.func, inner, item) if inner else fn.func
    args = [item if (1, j) in paths else v for j, v in enumerate(fn.args)]
    keywords = {name: item if (2, name) in paths else v for name, v in fn.keywords.items()}
    return functools.partial(func, *args, **keywords)
