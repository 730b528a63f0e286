"""`linearize`: a function's value and its JVP at fixed primals, as in JAX.

`linearize(f, *primals)` returns `(f(*primals), f_jvp)` with
`f_jvp(*tangents) == jvp(f, primals, tangents)[1]`. It is built on forward
mode (`api.jvp`, the compiled tangent code, compiled once and cached).

What is recomputed: tapeflow has no partial evaluation, so each call of
`f_jvp` runs the forward-mode code, which computes the primal values beside
the tangents (the primal output is computed once, by `linearize` itself).
The primals are copied when `linearize` is called: writing into the arrays
afterwards does not move the point of linearisation. A function that draws
random numbers draws, at each call of `f_jvp`, what it drew for the output
(the random state before `linearize`'s own run is replayed, then put back).

`f_jvp` is a small `def` of one parameter per primal calling `jvp`, so the
compiler reads it like any function: `grad`, `vjp` and `jvp` of it work
(its transpose is `vjp(f_jvp, t)`).
"""
from __future__ import annotations

import copy

import numpy as np

__all__ = ['linearize']


def _frozen(value):
    """`value` with its arrays copied (a structure of lists, tuples and dicts kept)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple, dict)):
        return copy.deepcopy(value)
    return value


def linearize(f, *primals):
    """`(f(*primals), f_jvp)`: `f_jvp(*tangents)` is the JVP of `f` at `primals`, as in JAX.

    One tangent per primal, each of its primal's structure and shape. Each
    call of `f_jvp` runs `f`'s compiled forward mode (the primal values are
    recomputed alongside the tangent; the output is computed once here).
    """
    from tapeflow import api
    from tapeflow.syntax.unparse import load_module
    if not primals:
        raise TypeError('linearize(f, *primals) needs at least one primal')
    primals = tuple(_frozen(p) for p in primals)
    zeros = tuple(_zeros_like(p) for p in primals)
    drawn = _drawn(f, primals)
    out, _ = api.jvp(f, primals, zeros)
    n = len(primals)
    tangents = [f'_t{k}' for k in range(n)]
    names = [f'_p{k}' for k in range(n)]
    text = (f'def f_jvp({", ".join(tangents)}):\n'
            f'    return _jvp(_f, ({", ".join(names)},), ({", ".join(tangents)},))[1]\n')
    jvp = api.jvp if drawn is None else _replaying(api.jvp, drawn)
    namespace = {'_jvp': jvp, '_f': f, **dict(zip(names, primals))}
    load_module(text, namespace, f'linearize {getattr(f, "__name__", "f")}')
    f_jvp = namespace['f_jvp']
    f_jvp.__doc__ = f'The JVP of {getattr(f, "__name__", "f")} at the primals given to linearize.'
    return out, f_jvp


def _drawn(f, primals):
    """The random sources `f` draws from and their states now, or None."""
    from tapeflow.callables import python_function_of
    from tapeflow.runtime.randomness import function_sources
    try:
        fn = python_function_of(f)
    except Exception:           # noqa: BLE001  (refused where `jvp` compiles it)
        return None
    return function_sources(fn, primals)


def _replaying(jvp, drawn):
    """`jvp`, each call drawing the random numbers `linearize`'s own run drew."""
    from tapeflow.runtime.randomness import replay_random, restore_random

    def replayed_jvp(f, primals, tangents):
        replayed = replay_random(drawn)
        try:
            return jvp(f, primals, tangents)
        finally:
            restore_random(replayed)
    replayed_jvp.__tapeflow_fold_call__ = jvp.__tapeflow_fold_call__
    return replayed_jvp


def _zeros_like(value):
    if isinstance(value, dict):
        return {k: _zeros_like(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_zeros_like(v) for v in value)
    if isinstance(value, float):
        return 0.0
    if isinstance(value, (np.ndarray, np.generic)):
        return np.zeros(np.shape(value), np.result_type(value.dtype, float))
    return 0.0
