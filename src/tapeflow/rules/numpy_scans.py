"""Rules for scans and differences: cumsum, cumprod, cumulative_sum/prod,
nancumsum/nancumprod, diff, ediff1d, trapezoid, gradient.

All are linear but cumprod. cumsum's adjoint is a reversed cumsum; diff's is
a difference the other way round; gradient's is its matrix along each axis,
transposed (any spacing, edge_order 1 or 2). cumprod is exact with zeros: the
Jacobian of the products of the other elements when a zero is present,
`reversed cumsum(g * ans) / x` otherwise.
"""
import numpy as np

from tapeflow.rules.numpy_reductions import expand, float_dtype, not_nan, reduced_axes
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import linear_pair
from tapeflow.rules.shapes import fit


# ---------------------------------------------------------------- scans

def _revcumsum(g, axis):
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def _cumsum_vjp(g, a, axis):
    if axis is None:
        return np.reshape(_revcumsum(np.ravel(g), 0), np.shape(a))
    return _revcumsum(g, axis)


def _cumprod_jacobian(a, axis):
    """J[..., i, k] = d(cumprod a)_i / d a_k along `axis` (moved last); exact with zeros."""
    moved = np.moveaxis(a, axis, -1)
    n = np.shape(moved)[-1]
    skip_one = np.where(np.eye(n, dtype=bool), 1.0, np.expand_dims(moved, -2))
    return np.swapaxes(np.cumprod(skip_one, axis=-1), -1, -2) * np.tri(n, dtype=bool)


def _cumprod_vjp(g, ans, a, axis):
    if axis is None:
        return np.reshape(_cumprod_vjp(np.ravel(g), np.ravel(ans), np.ravel(a), 0), np.shape(a))
    if not np.any(a == 0):
        return _revcumsum(g * ans, axis) / a
    jac = _cumprod_jacobian(a, axis)
    return np.moveaxis(np.einsum('...i,...ik->...k', np.moveaxis(g, axis, -1), jac), -1, axis)


def _cumprod_jvp(t, ans, a, axis):
    if axis is None:
        return _cumprod_jvp(np.ravel(t), np.ravel(ans), np.ravel(a), 0)
    if not np.any(a == 0):
        return ans * np.cumsum(t / a, axis)
    jac = _cumprod_jacobian(a, axis)
    return np.moveaxis(np.einsum('...ik,...k->...i', jac, np.moveaxis(t, axis, -1)), -1, axis)


def _skip_initial(g, axis, include_initial):
    if not include_initial:
        return g
    index = [slice(None)] * np.ndim(g)
    index[0 if axis is None else axis] = slice(1, None)
    return g[tuple(index)]


def _with_initial(t, axis, include_initial, value):
    if not include_initial:
        return t
    first = np.full_like(np.take(t, [0], axis=0 if axis is None else axis), value)
    return np.concatenate([first, t], axis=0 if axis is None else axis)


def _nan_one(a):
    return np.where(np.isnan(a), 1.0, a)


def cumsum_vjp(g, ans, a, axis=None, dtype=None, out=None): return fit(_cumsum_vjp(g, a, axis), a)
def cumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return np.cumsum(t, axis=axis, dtype=dtype)

def nancumsum_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return fit(_cumsum_vjp(g, a, axis) * not_nan(a), a)

def nancumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return np.cumsum(t * not_nan(a), axis=axis)

def _cumsum_batch(t, a, axis, dtype=None):
    """cumsum of each row of the batch `t` (rules/batching.py)."""
    if axis is None:
        return np.cumsum(np.reshape(t, t.shape[:1] + (-1,)), axis=1, dtype=dtype)
    return np.cumsum(t, axis=axis % np.ndim(a) + 1, dtype=dtype)

def cumsum_jvp_batched(t, ans, a, axis=None, dtype=None, out=None):
    return _cumsum_batch(t, a, axis, dtype)

def nancumsum_jvp_batched(t, ans, a, axis=None, dtype=None, out=None):
    return _cumsum_batch(t * not_nan(a), a, axis)

def cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return fit(_cumprod_vjp(g, ans, a, axis), a)

def cumprod_jvp(t, ans, a, axis=None, dtype=None, out=None): return _cumprod_jvp(t, ans, a, axis)
def nancumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return fit(_cumprod_vjp(g, ans, _nan_one(a), axis) * not_nan(a), a)

def nancumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return _cumprod_jvp(t * not_nan(a), ans, _nan_one(a), axis)

def cumulative_sum_vjp(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    return fit(_cumsum_vjp(_skip_initial(g, axis, include_initial), x, axis), x)

def cumulative_sum_jvp(t, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    return np.cumulative_sum(t, axis=axis, include_initial=include_initial)

def cumulative_prod_vjp(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    g, ans = _skip_initial(g, axis, include_initial), _skip_initial(ans, axis, include_initial)
    return fit(_cumprod_vjp(g, ans, x, axis), x)

def cumulative_prod_jvp(t, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    return _with_initial(_cumprod_jvp(t, _skip_initial(ans, axis, include_initial), x, axis), axis,
                         include_initial, 0.0)


# ---------------------------------------------------------------- differences, integrals

def _undiff(g, axis):
    """The transpose of one first difference along `axis`."""
    g = np.moveaxis(g, axis, -1)
    zero = np.zeros_like(g[..., :1])
    return np.moveaxis(np.concatenate([zero, g], -1) - np.concatenate([g, zero], -1), -1, axis)


def _extent(v, axis):
    if v is None:
        return 0
    return 1 if np.ndim(v) == 0 else np.shape(v)[axis]


def _diff_vjp(g, a, n, axis, prepend, append):
    for _ in range(n):
        g = _undiff(g, axis)
    start, stop = _extent(prepend, axis), np.shape(g)[axis] - _extent(append, axis)
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(start, stop)
    return g[tuple(index)]


def _zero_or_none(v):
    return None if v is None else np.zeros_like(v)


def _diff_jvp(t, n, axis, prepend, append):
    # np.diff tells a left-out prepend/append from None: pass only those given
    if prepend is None and append is None:
        return np.diff(t, n, axis)
    if append is None:
        return np.diff(t, n, axis, prepend=np.zeros_like(prepend))
    if prepend is None:
        return np.diff(t, n, axis, append=np.zeros_like(append))
    return np.diff(t, n, axis, prepend=np.zeros_like(prepend), append=np.zeros_like(append))


def diff_vjp(g, ans, a, n=1, axis=-1, prepend=None, append=None):
    return fit(_diff_vjp(g, a, n, axis, prepend, append), a)

def diff_jvp(t, ans, a, n=1, axis=-1, prepend=None, append=None):
    return _diff_jvp(t, n, axis, prepend, append)

def ediff1d_vjp(g, ans, ary, to_end=None, to_begin=None):
    inner = g[_extent(to_begin, 0):np.shape(g)[0] - _extent(to_end, 0)]
    return fit(np.reshape(_undiff(inner, 0), np.shape(ary)), ary)

def ediff1d_jvp(t, ans, ary, to_end=None, to_begin=None):
    return np.ediff1d(t, _zero_or_none(to_end), _zero_or_none(to_begin))


def _trapezoid_weights(y, x, dx, axis):
    n = np.shape(y)[axis]
    if x is None:
        steps = np.full(n - 1, float(dx))
    else:
        steps = np.diff(x, axis=axis if np.ndim(x) > 1 else -1)
    steps = np.moveaxis(steps, axis, -1) if np.ndim(steps) > 1 else steps
    zero = np.zeros_like(steps[..., :1])
    weights = (np.concatenate([zero, steps], -1) + np.concatenate([steps, zero], -1)) / 2.0
    if np.ndim(weights) > 1:
        return np.moveaxis(weights, -1, axis)
    shape = [1] * np.ndim(y)
    shape[axis] = n
    return np.reshape(weights, shape)


def trapezoid_vjp(g, ans, y, x=None, dx=1.0, axis=-1):
    return fit(expand(g, y, axis) * _trapezoid_weights(y, x, dx, axis), y)

def trapezoid_jvp(t, ans, y, x=None, dx=1.0, axis=-1): return np.trapezoid(t, x, dx, axis)


def _gradient_axes(f, axis):
    axes = reduced_axes(np.ndim(f), axis)
    return axes if isinstance(axis, (tuple, list)) or axis is None else axes[:1]


def _gradient_matrix(n, spacing, edge_order):
    return np.gradient(np.eye(n), *spacing, axis=0, edge_order=edge_order)


def _gradient_vjp(g, f, varargs, axis, edge_order):
    axes = _gradient_axes(f, axis)
    gs = [g] if len(axes) == 1 else list(g)
    if len(varargs) <= 1:
        spacings = [tuple(varargs)] * len(axes)
    else:
        spacings = [(v,) for v in varargs]
    total = 0.0
    for ax, gk, spacing in zip(axes, gs, spacings):
        if gk is None:
            continue
        matrix = _gradient_matrix(np.shape(f)[ax], spacing, edge_order).astype(float_dtype(f))
        total = total + np.moveaxis(np.tensordot(gk, matrix, axes=([ax], [0])), -1, ax)
    return total


def gradient_vjp(g, ans, f, *varargs, axis=None, edge_order=1):
    return fit(_gradient_vjp(g, f, varargs, axis, edge_order), f)

def gradient_jvp(t, ans, f, *varargs, axis=None, edge_order=1):
    return np.gradient(t, *varargs, axis=axis, edge_order=edge_order)


# ---------------------------------------------------------------- registration

entry(np.cumsum, cumsum_vjp, cumsum_jvp, batched=cumsum_jvp_batched,
      forms='axis None/int, dtype')
entry(np.nancumsum, nancumsum_vjp, nancumsum_jvp, batched=nancumsum_jvp_batched,
      forms='axis None/int, dtype')
entry(np.cumprod, cumprod_vjp, cumprod_jvp, forms='axis None/int; exact with zeros')
entry(np.nancumprod, nancumprod_vjp, nancumprod_jvp, forms='axis None/int; exact with zeros')
entry(np.cumulative_sum, cumulative_sum_vjp, cumulative_sum_jvp, forms='axis, include_initial')
entry(np.cumulative_prod, cumulative_prod_vjp, cumulative_prod_jvp,
      forms='axis, include_initial')
entry(np.diff, diff_vjp, diff_jvp, forms='n, axis, prepend, append (constants)')
entry(np.ediff1d, ediff1d_vjp, ediff1d_jvp, forms='to_end, to_begin (constants)')
entry(np.trapezoid, trapezoid_vjp, trapezoid_jvp,
      forms='x (constant sample points, 1-D or full), dx, axis')
entry(np.gradient, gradient_vjp, gradient_jvp,
      forms='spacings: scalars or coordinate arrays; axis None/int/tuple; edge_order 1, 2')
linear_pair(gradient_vjp, gradient_jvp)     # linear in g and t; the spacings are constants
