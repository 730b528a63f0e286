"""Shape helpers shared by rules, the eager tape and generated code.

NumPy only. `unbroadcast(g, x)` is the one every binary rule ends with: it sums
a cotangent `g` (in the broadcast shape of an operation's output) back to the
shape of the operand `x`, and gives it `x`'s float dtype.

(The one-word helpers for common rule shapes, `def_elementwise`, `def_linear`,
`def_nondiff`, are in `entries`.)
"""
from __future__ import annotations

import numpy as np

from tapeflow.rules.arrays import is_api_only, is_foreign_array, to_library, to_numpy_of
from tapeflow.rules.array_api import unbroadcast_api, zeros_api
from tapeflow.rules.sequences import Items

from tapeflow.rules import registry
from tapeflow.rules.batching import batch_size, defjvp_batched, lift_tangent, unbatched_as_batch

__all__ = ['unbroadcast', 'unbroadcast_to', 'broadcast_tangent', 'zeros_like_value', 'balanced_eq',
           'fit', 'match_complex', 'add_cotangents', 'fill_zeros', 'structure_shape', 'unpack',
           'rebuild', 'dense', 'is_symbolic_zero', 'unbroadcast_batch', 'fit_batch', 'stack_batch',
           'shape_witness']

_SCALARS = (float, int, bool, complex)


def unbroadcast(g, x):
    """Sum `g` down to the shape of `x` (the operand it is the cotangent of)."""
    if g.__class__ in _SCALARS:
        if g.__class__ is complex and (x.__class__ is float or x.__class__ is int):
            # a real number's cotangent from complex arithmetic stays complex (jacrev of a
            # complex function), as for arrays: a NumPy scalar, which float() takes apart
            return np.complex128(g)
        return g
    if x.__class__ is np.ndarray:
        if g.__class__ is np.ndarray and g.dtype == x.dtype:
            gshape, shape = g.shape, x.shape
            if gshape == shape:
                return g                  # the common case: nothing to sum, nothing to cast
            summed = _summed_axes(gshape, shape)
            if summed is not None:        # the next: axes of x broadcast, summed back
                return _sum_axes(g, shape, *summed)
        shape = x.shape
        g = to_numpy_of(g, x)             # a NumPy value's, from a CuPy array: to the host
    elif isinstance(x, np.generic) and not is_api_only(g):
        shape = ()
        g = to_numpy_of(g, x)
    elif not isinstance(g, (np.ndarray, np.generic)) and (is_api_only(g) or is_api_only(x)):
        return _unbroadcast_api(g, x)
    else:
        shape = np.shape(x)
    if g.shape == shape:
        return _as_dtype_of(g, x)
    if not _sums_to(g.shape, shape) and not np.any(g):
        # the symbolic zero through arithmetic (0.0 / np.float64(2.0), or 0.0 * s where
        # s is smaller than x): no cotangent was broadcast from x, none flows back
        return 0.0
    return _as_dtype_of(unbroadcast_to(g, shape), x)


def _summed_axes(gshape, shape):
    """(leading axes, all axes) that sum an array of `gshape` to `shape`, where it is
    `shape` broadcast along some axes; else None."""
    extra = len(gshape) - len(shape)
    if extra < 0:
        return None
    axes = list(range(extra))
    for i, n in enumerate(shape):
        m = gshape[extra + i]
        if n != m:
            if n != 1:
                return None
            axes.append(extra + i)
    return extra, tuple(axes)


def _sum_axes(g, shape, extra, axes):
    """`g` (an ndarray) summed over `axes` (`_summed_axes`) to `shape`."""
    if not extra:
        return g.sum(axis=axes, keepdims=True)
    if len(axes) == extra:                              # leading axes only (bias terms)
        return g.sum(axis=axes)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


def _sums_to(gshape, shape) -> bool:
    """Whether an array of `gshape` is one of `shape` broadcast (so sums back to it)."""
    return _summed_axes(gshape, shape) is not None


unbroadcast.__tapeflow_pure__ = True       # a new value, nothing changed (`transforms.fusion`)


def shape_witness(x):
    """What `unbroadcast(g, x)` reads of `x` (its class, shape and dtype) without its
    memory: for a NumPy array of numbers a read-only stand-in whose elements share one
    zero (strides 0); anything else is `x` itself (`transforms.witness` pushes it)."""
    if x.__class__ is np.ndarray and x.ndim and x.dtype.kind in 'biufc':
        return np.ndarray(x.shape, x.dtype, bytes(x.dtype.itemsize), 0, (0,) * x.ndim)
    return x


def _unbroadcast_api(g, x):
    """`unbroadcast` for arrays NumPy's functions cannot reach (array_api_strict):
    summed with their namespace's `sum`, cast with its `astype`."""
    if x.__class__ in _SCALARS:
        return g if g.__class__ in _SCALARS else g.__array_namespace__().sum(g)
    xp = x.__array_namespace__()
    g = unbroadcast_api(xp, g, x.shape)
    if g.__class__ in _SCALARS or g.dtype == x.dtype:
        return g
    return xp.astype(g, x.dtype) if xp.isdtype(x.dtype, 'real floating') and \
        xp.isdtype(g.dtype, 'real floating') else g


def broadcast_tangent(t, ans):
    """The tangent `t` of an operand, in the shape of the output `ans` it moves."""
    if t.__class__ in _SCALARS and ans.__class__ in _SCALARS:
        return t
    shape = ans.shape if ans.__class__ is np.ndarray else np.shape(ans)
    if t.__class__ is np.ndarray and t.shape == shape:
        return t
    if np.ndim(t) > len(shape):              # a batch of tangents (rules/batching.py)
        shape = np.shape(t)[:1] + shape
    if np.shape(t) == shape:
        return t
    if is_foreign_array(ans) and not is_foreign_array(t):     # a number, into ans's library
        return np.full_like(ans, t, shape=shape) if np.ndim(t) == 0 else \
            np.broadcast_to(to_library(np.asarray(t), ans), shape)
    return np.broadcast_to(t, shape)


def unbroadcast_to(g, shape):
    """Sum the broadcast axes of `g` away so that it has `shape`."""
    if g.__class__ is np.ndarray and shape.__class__ is tuple:
        if g.shape == shape:
            return g
        summed = _summed_axes(g.shape, shape)
        if summed is not None:
            return _sum_axes(g, shape, *summed)
    extra = np.ndim(g) - len(shape)
    if extra > 0:
        g = np.sum(g, axis=tuple(range(extra)))
    gshape = np.shape(g)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gshape[i] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return np.reshape(g, shape) if np.shape(g) != tuple(shape) else g


def unbroadcast_batch(t, x):
    """`unbroadcast` for a batch `t` of `(B,) + broadcast shape`: `(B,) + shape(x)`.

    Sums the axes `x` was broadcast along, never the batch axis (rules/batching.py).
    """
    return _as_dtype_of(_unbroadcast_batch_to(t, np.shape(x)), x)


def _unbroadcast_batch_to(t, shape):
    if t.shape[1:] == tuple(shape):
        return t
    # with the batch axis last, `unbroadcast_to` lines it up with itself
    return np.moveaxis(unbroadcast_to(np.moveaxis(t, 0, -1), tuple(shape) + t.shape[:1]), -1, 0)


def _as_dtype_of(g, x):
    dtype = getattr(x, 'dtype', None)
    if dtype is None or dtype == getattr(g, 'dtype', None):
        return g
    if np.issubdtype(dtype, np.inexact) and not (
            np.issubdtype(dtype, np.floating) and np.iscomplexobj(g)):
        return g.astype(dtype) if hasattr(g, 'astype') else g
    return g


def is_symbolic_zero(g) -> bool:
    """Generated code's "no cotangent yet": the Python float 0.0."""
    return g.__class__ is float and g == 0.0


def dense(g, like):
    """`g`, or zeros shaped like `like` when `g` is the symbolic zero.

    For rules that apply something other than arithmetic to a cotangent
    (`g @ b`, `np.sum(g, axis=1)`), which the float 0.0 would not survive.
    """
    if g.__class__ is float or (isinstance(g, (np.generic, np.ndarray)) and np.ndim(g) == 0):
        # the symbolic zero, or what arithmetic made of it (0.0 / np.float64(2.0))
        if g == 0.0 and (isinstance(like, (list, tuple, dict, Items)) or np.ndim(like)):
            return zeros_like_value(like)
    return g


def zeros_like_value(x):
    """A zero cotangent with the structure of `x` (array, scalar, list, tuple, dict)."""
    if isinstance(x, dict):
        return {k: zeros_like_value(v) for k, v in x.items()}
    if isinstance(x, Items):
        return Items(len(x))
    if isinstance(x, (list, tuple)):
        return rebuild(x, [zeros_like_value(v) for v in x])
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype if np.issubdtype(x.dtype, np.inexact) else float)
    if isinstance(x, range):                # read by index (forward mode over a loop's tape)
        return [0.0] * len(x)
    if is_api_only(x):
        return zeros_api(x)
    if is_foreign_array(x):                 # CuPy, Dask...: zeros in x's library
        dtype = np.dtype(x.dtype)
        return np.zeros_like(x, dtype=dtype if np.issubdtype(dtype, np.inexact) else float)
    if isinstance(x, np.generic):
        return x.dtype.type(0) if np.issubdtype(x.dtype, np.inexact) else 0.0
    return 0.0


def balanced_eq(x, z, y):
    """Where `z` (the max/min of x and y) came from x; ties share equally."""
    return (x == z) / (1.0 + (x == y))


# ------------------------------------------------------------------ additions

def match_complex(g, x):
    """`g` as a cotangent of `x`: its real part when `x` is real (bilinear pairing)."""
    if np.iscomplexobj(g) and not np.iscomplexobj(x):
        return np.real(g)
    return g


def rebuild(like, items):
    """A sequence of the type of `like` (list, tuple, namedtuple) holding `items`; an
    array when `like` is one (an array passed where a sequence of its rows is read)."""
    if hasattr(like, '_fields'):
        return type(like)._make(items)
    if isinstance(like, np.ndarray):
        rows = [np.broadcast_to(item, np.shape(like)[1:]) for item in items]
        return np.stack(rows) if rows else np.zeros(np.shape(like))
    return type(like)(items)


# rebuild is linear in its items, `like` only a type: a primitive, so that the rules
# that call it are differentiated again (second order) without reading type(like).

def rebuild_jvp(t, ans, like, items):
    return rebuild(like, t)


def rebuild_vjp(g, ans, like, items):
    if g.__class__ is float and g == 0.0:
        return 0.0
    return list(g) if isinstance(items, list) else tuple(g)


registry.defjvp(rebuild, rebuild_jvp, argnums=[1])
registry.defvjp(rebuild, rebuild_vjp, argnums=[1])
registry.static(rebuild, 0)
registry.RULES_OF_RULES.add(rebuild)


def structure_shape(x):
    """The shape np.array(x) has, read from the structure of a (nested) sequence."""
    if isinstance(x, (list, tuple)):
        return (len(x),) + (structure_shape(x[0]) if len(x) else ())
    return np.shape(x)


def unpack(g, x):
    """The cotangent of the (nested) list or tuple `x`, out of the array `g`."""
    return rebuild(x, [fit(g[i], item) for i, item in enumerate(x)])


def fit(g, x):
    """`g` summed to `x`'s shape and cast to its dtype; a scalar for a Python float.

    The last step of most rules: real part for a real `x`, unbroadcast, and a
    NumPy float scalar (a `float`) rather than a 0-d array for a Python scalar.
    For a list or tuple `x` (which NumPy took as an array), a list or tuple.
    """
    if x.__class__ is np.ndarray and g.__class__ is np.ndarray and g.shape == x.shape \
            and g.dtype == x.dtype:
        return g
    if g.__class__ is np.ndarray and g.ndim < np.ndim(x) and not g.any():
        return 0.0         # a symbolic zero a rule turned into an array (np.transpose(0.0))
    if isinstance(x, (list, tuple)):
        if is_symbolic_zero(g):
            return g
        if _is_sequence_cotangent(g) and len(g) == len(x):   # item by item (items may differ in shape)
            return rebuild(x, [fit(gi, xi) for gi, xi in zip(g, x)])
        return unpack(unbroadcast_to(match_complex(g, x), structure_shape(x)), x)
    g = unbroadcast(match_complex(g, x), x)
    if x.__class__ in _SCALARS and getattr(g, 'ndim', None) == 0 and isinstance(g, np.ndarray):
        return g[()]
    return g


def _is_sequence_cotangent(g) -> bool:
    """A list's cotangent kept as a sequence: a list, a tuple, or `Items`."""
    return isinstance(g, (list, tuple, Items))


def fit_batch(t, x):
    """`fit` for a batch `t` of `(B,) + shape`: `(B,) + shape(x)`, a list for a list `x`."""
    t = match_complex(t, x)
    if isinstance(x, (list, tuple)):
        t = _unbroadcast_batch_to(t, structure_shape(x))
        return rebuild(x, [fit_batch(t[:, i], item) for i, item in enumerate(x)])
    return unbroadcast_batch(t, x)


def stack_batch(t, x):
    """The tangents `t` of a (nested) list `x`, some batches, as one `(B,) + structure_shape(x)`.

    An array `x` (or a batch `t` of the whole) gives `t` as it is.
    """
    return _stack_batch(t, x, batch_size(t, x))


def _stack_batch(t, x, size):
    if isinstance(x, (list, tuple)) and isinstance(t, (list, tuple)):
        return np.stack([_stack_batch(u, v, size) for u, v in zip(t, x)], axis=1)
    return unbatched_as_batch(t, x, size)


def add_cotangents(a, b):
    """`a + b` for cotangents of any structure: lists add elementwise, None is zero."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return rebuild(a, [add_cotangents(u, v) for u, v in zip(a, b)])
    return a + b


def fill_zeros(gs, outputs):
    """Cotangents of a multi-output primitive with None replaced by zeros."""
    return [(np.zeros_like(out) if hasattr(out, 'shape') else zeros_like_value(out))
            if g is None else g for g, out in zip(gs, outputs)]


# ------------------------------------------------------------------ rules of these helpers
# Generated code calls `unbroadcast` and `broadcast_tangent`; differentiating
# generated code (higher order) needs their own rules. Both are linear in
# their first argument.

def _unbroadcast_vjp(g, ans, t, x):
    return broadcast_tangent(g, t)


def _unbroadcast_jvp(t, ans, g, x):
    return unbroadcast(t, x)


def _unbroadcast_jvp_batched(t, ans, g, x):
    if ans.__class__ is float and ans == 0.0 and t.__class__ is np.ndarray and \
            not _sums_to(t.shape[1:], np.shape(x)):
        return 0.0      # (the primal's symbolic zero of a smaller shape: none flows, as there)
    return unbroadcast_batch(t, ans)


def _broadcast_tangent_vjp(g, ans, t, out):
    return unbroadcast(g, t)


def _broadcast_tangent_jvp(t, ans, tangent, out):
    return broadcast_tangent(t, out)


def _broadcast_tangent_jvp_batched(t, ans, tangent, out):
    return broadcast_tangent(lift_tangent(t, tangent, ans), ans)


registry.defvjp(unbroadcast, _unbroadcast_vjp)
registry.defjvp(unbroadcast, _unbroadcast_jvp)
defjvp_batched(unbroadcast, _unbroadcast_jvp_batched)
registry.static(unbroadcast, 1)
registry.nondifferentiable(shape_witness)
registry.defvjp(broadcast_tangent, _broadcast_tangent_vjp)
registry.defjvp(broadcast_tangent, _broadcast_tangent_jvp)
defjvp_batched(broadcast_tangent, _broadcast_tangent_jvp_batched)
registry.static(broadcast_tangent, 1)


# `fit` ends most rules, so generated code calls it: it is linear in `g`.

def _fit_vjp(h, ans, g, x):
    if isinstance(x, (list, tuple)):
        h = np.reshape(np.stack([np.asarray(0.0) if v is None else v for v in _leaves(h)]),
                       structure_shape(x))
    return broadcast_tangent(h, g)


def _fit_jvp(t, ans, g, x):
    return fit(t, x)


def _fit_jvp_batched(t, ans, g, x):
    return fit_batch(t, x)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


registry.defvjp(fit, _fit_vjp)
registry.defjvp(fit, _fit_jvp)
defjvp_batched(fit, _fit_jvp_batched)
registry.static(fit, 1)
registry.nondifferentiable(zeros_like_value, structure_shape)


# `dense` is the identity on cotangents: linear, its own transpose.

def _dense_vjp(h, ans, g, like):
    return h


def _dense_jvp(t, ans, g, like):
    return dense(t, like)


def _dense_jvp_batched(t, ans, g, like):
    if isinstance(ans, (list, tuple, dict, Items)):     # a structure's batched tangents, as
        return t if ans is g else zeros_like_value(like)   # they are; zeros made: zeros
    return broadcast_tangent(lift_tangent(t, g, ans), ans)


registry.defvjp(dense, _dense_vjp)
registry.defjvp(dense, _dense_jvp)
defjvp_batched(dense, _dense_jvp_batched)
registry.static(dense, 1)
registry.nondifferentiable(is_symbolic_zero)


def carries_float(value) -> bool:
    """Whether `value` holds a float or complex number anywhere (integers, shapes and
    strings hold none)."""
    if isinstance(value, (float, complex)):
        return True
    if isinstance(value, (np.ndarray, np.generic)):
        return np.issubdtype(value.dtype, np.inexact)
    if isinstance(value, (list, tuple)):
        return any(carries_float(v) for v in value)
    if isinstance(value, dict):
        return any(carries_float(v) for v in value.values())
    return False
