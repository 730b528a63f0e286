"""Shape helpers shared by rules, the eager tape and generated code.

NumPy only. `unbroadcast(g, x)` is the one every binary rule ends with: it sums
a cotangent `g` (in the broadcast shape of an operation's output) back to the
shape of the operand `x`, and gives it `x`'s float dtype.

Also the one-word helpers for common rule shapes: `def_elementwise`,
`def_linear`, `def_nondiff`.
"""
from __future__ import annotations

import numpy as np

from tapeflow.rules import registry

__all__ = ['unbroadcast', 'unbroadcast_to', 'def_elementwise', 'def_linear',
           'def_nondiff', 'zeros_like_value', 'balanced_eq']

_SCALARS = (float, int, bool)


def unbroadcast(g, x):
    """Sum `g` down to the shape of `x` (the operand it is the cotangent of)."""
    if g.__class__ in _SCALARS:
        return g
    shape = np.shape(x)
    if g.shape == shape:
        return _as_dtype_of(g, x)
    return _as_dtype_of(unbroadcast_to(g, shape), x)


def unbroadcast_to(g, shape):
    """Sum the broadcast axes of `g` away so that it has `shape`."""
    extra = np.ndim(g) - len(shape)
    if extra > 0:
        g = np.sum(g, axis=tuple(range(extra)))
    gshape = np.shape(g)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gshape[i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return np.reshape(g, shape) if np.shape(g) != tuple(shape) else g


def _as_dtype_of(g, x):
    dtype = getattr(x, 'dtype', None)
    if dtype is None or dtype == getattr(g, 'dtype', None):
        return g
    if np.issubdtype(dtype, np.inexact) and not (
            np.issubdtype(dtype, np.floating) and np.iscomplexobj(g)):
        return g.astype(dtype) if hasattr(g, 'astype') else g
    return g


def zeros_like_value(x):
    """A zero cotangent with the structure of `x` (array, scalar, list, tuple)."""
    if isinstance(x, (list, tuple)):
        return type(x)(zeros_like_value(v) for v in x)
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype if np.issubdtype(x.dtype, np.inexact) else float)
    if isinstance(x, np.generic):
        return x.dtype.type(0) if np.issubdtype(x.dtype, np.inexact) else 0.0
    return 0.0


def balanced_eq(x, z, y):
    """Where `z` (the max/min of x and y) came from x; ties share equally."""
    return (x == z) / (1.0 + (x == y))


# ------------------------------------------------------------------ rule shapes

def def_elementwise(fn, derivative, name=None):
    """A unary elementwise function with pointwise `derivative(ans, x)`.

    VJP: g * derivative; JVP: t * derivative.
    """
    registry.defvjp(fn, lambda g, ans, x, *a, **k: g * derivative(ans, x), name=name)
    registry.defjvp(fn, lambda t, ans, x, *a, **k: t * derivative(ans, x), name=name)


def def_linear(fn, argnums=(0,), transpose=None):
    """`fn` is linear in each argument of `argnums` (the others held fixed).

    JVP: `fn` applied to the tangent in that position. VJP: `transpose(g,
    ans, *args, **kwargs)` when given (per argnum if a dict).
    """
    for argnum in argnums:
        def jvp(t, ans, *args, _i=argnum, **kwargs):
            args = list(args)
            args[_i] = t
            return fn(*args, **kwargs)
        registry.defjvp(fn, jvp, argnums=[argnum])
        if transpose is not None:
            rule = transpose[argnum] if isinstance(transpose, dict) else transpose
            registry.defvjp(fn, rule, argnums=[argnum])


def def_nondiff(*fns):
    """Functions whose outputs carry no derivative."""
    registry.nondifferentiable(*fns)
