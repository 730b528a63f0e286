"""Rules for reductions and scans: sum, mean, prod, max/min, var/std, average,
cumsum/cumprod, diff, trapezoid, gradient, and their nan-variants.

Every reduction takes `axis` as None, an int or a tuple of ints, and
`keepdims`; sum, mean, prod, max, min, var and std also `where=`; var and std
`ddof` (or `correction`). The VJP spreads `g` back over the reduced axes
(`expand`), the JVP is the reduction's own linearisation. prod is exact with
zeros (products of the other elements, not ans / x); cumprod too.
"""
import math

import numpy as np

from tapeflow.rules.registry import defjvp, defvjp, describe, nondifferentiable, static
from tapeflow.rules.shapes import fit

__all__ = ['reduced_axes', 'kept_shape', 'expand', 'count']


# ---------------------------------------------------------------- helpers

def reduced_axes(ndim, axis):
    """The axes a reduction over `axis` removes, as a sorted tuple of ints >= 0."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim for a in axis)) if ndim else ()
    return (axis % ndim,) if ndim else ()


def kept_shape(shape, axis):
    """`shape` with the reduced axes set to 1 (the keepdims shape)."""
    axes = reduced_axes(len(shape), axis)
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand(g, x, axis=None, keepdims=False):
    """`g`, the cotangent of a reduction of `x` over `axis`, spread over x's shape."""
    shape = np.shape(x)
    if not keepdims:
        g = np.reshape(g, kept_shape(shape, axis))
    return np.broadcast_to(g, shape) + 0.0


def count(x, axis=None, where=True, keepdims=True):
    """How many elements each reduction of `x` over `axis` combines."""
    shape = np.shape(x)
    if where is True:
        return math.prod(shape[i] for i in reduced_axes(len(shape), axis))
    return np.sum(np.broadcast_to(where, shape), axis=_axis(shape, axis), keepdims=keepdims)


def _expand_vjp(h, ans, g, x, axis=None, keepdims=False):
    return np.sum(h, axis=reduced_axes(np.ndim(x), axis), keepdims=keepdims)


def _expand_jvp(t, ans, g, x, axis=None, keepdims=False):
    return expand(t, x, axis, keepdims)


# Generated code calls `expand` (inlined from reduction rules): linear in g.
defvjp(expand, _expand_vjp)
defjvp(expand, _expand_jvp)
static(expand, 1, 2, 3)
nondifferentiable(count)


def _axis(shape, axis):
    return reduced_axes(len(shape), axis)


def _masked(x, where):
    return x if where is True else x * where


def _float_dtype(x):
    dtype = getattr(x, 'dtype', None)
    return dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64


def _keep(ans, x, axis, keepdims):
    return ans if keepdims else np.reshape(ans, kept_shape(np.shape(x), axis))


def _valid(a, where=True):
    """Elements a nan-reduction counts."""
    return ~np.isnan(a) if where is True else ~np.isnan(a) & where


# ---------------------------------------------------------------- sum, mean

def sum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return fit(_masked(expand(g, a, axis, keepdims), where), a)

def sum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return np.sum(t, axis=axis, dtype=dtype, keepdims=keepdims, where=where)

def mean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return fit(_masked(expand(g, a, axis, keepdims), where) / count(a, axis, where), a)

def mean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return np.mean(t, axis=axis, dtype=dtype, keepdims=keepdims, where=where)

def nansum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
               where=True):
    return fit(expand(g, a, axis, keepdims) * _valid(a, where), a)

def nansum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
               where=True):
    return np.sum(t * _valid(a, where), axis=axis, keepdims=keepdims)

def nanmean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return fit(expand(g, a, axis, keepdims) * _valid(a, where) / count(a, axis, _valid(a, where)),
               a)

def nanmean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return np.sum(t * _valid(a, where), axis=axis,
                  keepdims=keepdims) / count(a, axis, _valid(a, where), keepdims)


# ---------------------------------------------------------------- prod

def _others(a, axis, where=True, skip_nan=False):
    """For each element: the product of the other elements of its reduction."""
    if skip_nan or where is not True:
        a = np.where(_valid(a, where) if skip_nan else where, a, 1.0)
    shape = np.shape(a)
    axes = reduced_axes(len(shape), axis)
    if not axes:
        return np.ones_like(a)
    rest = [i for i in range(len(shape)) if i not in axes]
    order = rest + list(axes)
    moved = np.transpose(a, order)
    flat = np.reshape(moved, tuple(shape[i] for i in rest) + (-1,))
    one = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([one, flat[..., :-1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.flip(np.concatenate([flat[..., 1:], one], axis=-1), -1), -1), -1)
    return np.transpose(np.reshape(left * right, np.shape(moved)), np.argsort(order))


def prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return fit(_masked(expand(g, a, axis, keepdims) * _others(a, axis, where), where), a)

def prod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return np.sum(_masked(t * _others(a, axis, where), where), axis=axis, keepdims=keepdims)

def nanprod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=True):
    return fit(expand(g, a, axis, keepdims) * _others(a, axis, where, True) * _valid(a, where), a)

def nanprod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=True):
    return np.sum(t * _others(a, axis, where, True) * _valid(a, where), axis=axis,
                  keepdims=keepdims)


# ---------------------------------------------------------------- max, min, ptp

def _choice(a, ans, axis, keepdims, where=True):
    """Weights that share a max/min's cotangent among the elements attaining it."""
    hit = a == _keep(ans, a, axis, keepdims)
    if where is not True:
        hit = hit & where
    hits = np.sum(hit, axis=_axis(np.shape(a), axis), keepdims=True)
    return (hit / np.maximum(hits, 1)).astype(_float_dtype(a))


def _range_weights(a, axis):
    return (_choice(a, np.max(a, axis=axis, keepdims=True), axis, True)
            - _choice(a, np.min(a, axis=axis, keepdims=True), axis, True))


def max_vjp(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return fit(expand(g, a, axis, keepdims) * _choice(a, ans, axis, keepdims, where), a)

def max_jvp(t, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return np.sum(t * _choice(a, ans, axis, keepdims, where), axis=axis, keepdims=keepdims)

def ptp_vjp(g, ans, a, axis=None, out=None, keepdims=False):
    return fit(expand(g, a, axis, keepdims) * _range_weights(a, axis), a)

def ptp_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    return np.sum(t * _range_weights(a, axis), axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- var, std

def _dof(a, axis, valid, ddof, correction, keepdims=True):
    return count(a, axis, valid, keepdims) - (ddof if correction is None else correction)


def _centered(a, axis, valid):
    """a minus its mean over `axis`, zero where `valid` is False (conjugated)."""
    centered = np.conj(a - np.mean(a, axis=axis, keepdims=True, where=valid))
    return centered if valid is True else np.where(valid, centered, 0.0)


def _var_grad(a, axis, valid, ddof, correction):
    return _centered(a, axis, valid) * (2.0 / _dof(a, axis, valid, ddof, correction))


def _safe_div(a, b):
    return a / np.where(b == 0, 1.0, b)


def var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
    return fit(expand(g, a, axis, keepdims) * _var_grad(a, axis, where, ddof, correction), a)

def var_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
    return np.sum(np.real(t * _var_grad(a, axis, where, ddof, correction)), axis=axis,
                  keepdims=keepdims)

def std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
    spread = expand(_safe_div(g, 2.0 * ans), a, axis, keepdims)
    return fit(spread * _var_grad(a, axis, where, ddof, correction), a)

def std_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=None, correction=None):
    variance = var_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=where,
                       correction=correction)
    return _safe_div(variance, 2.0 * ans)

def nanvar_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
               mean=None, correction=None):
    return var_vjp(g, ans, a, axis, dtype, out, ddof, keepdims, where=_valid(a, where),
                   correction=correction)

def nanvar_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
               mean=None, correction=None):
    return var_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=_valid(a, where),
                   correction=correction)

def nanstd_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
               mean=None, correction=None):
    return std_vjp(g, ans, a, axis, dtype, out, ddof, keepdims, where=_valid(a, where),
                   correction=correction)

def nanstd_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
               mean=None, correction=None):
    return std_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=_valid(a, where),
                   correction=correction)


# ---------------------------------------------------------------- average

def _weights(a, axis, weights):
    """`weights` broadcast against `a` as np.average does (1-D weights lie along axis)."""
    if weights is None:
        return np.ones(np.shape(a))
    if np.ndim(weights) == 1 and np.ndim(a) != 1:
        shape = [1] * np.ndim(a)
        shape[axis % np.ndim(a)] = np.shape(weights)[0]
        weights = np.reshape(weights, shape)
    return np.broadcast_to(weights, np.shape(a))


def _average_grad_a(a, axis, weights):
    w = _weights(a, axis, weights)
    return w / np.sum(w, axis=axis, keepdims=True)


def _average_grad_w(a, ans, axis, weights, keepdims):
    w = _weights(a, axis, weights)
    return (a - _keep(ans, a, axis, keepdims)) / np.sum(w, axis=axis, keepdims=True)


def _to_weights(cot, a, axis, weights):
    """A cotangent of the broadcast weights, summed to the weights' own shape."""
    if np.ndim(weights) == 1 and np.ndim(a) != 1:
        others = tuple(i for i in range(np.ndim(a)) if i != axis % np.ndim(a))
        return np.sum(cot, axis=others)
    return cot


def _first(g):
    """The cotangent of average's value (None: zero) when it returned a pair."""
    g = g[0] if isinstance(g, (tuple, list)) else g
    return 0.0 if g is None else g


def _weights_sum_part(g, a, axis, keepdims, returned):
    if not returned or g[1] is None:
        return 0.0
    return expand(g[1], a, axis, keepdims)


def _average_value(ans):
    return ans[0] if isinstance(ans, tuple) else ans


def average_vjp_a(g, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    return fit(expand(_first(g), a, axis, keepdims) * _average_grad_a(a, axis, weights), a)

def average_vjp_w(g, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    slope = _average_grad_w(a, _average_value(ans), axis, weights, keepdims)
    spread = expand(_first(g), a, axis, keepdims) * slope \
        + _weights_sum_part(g, a, axis, keepdims, returned)
    return fit(_to_weights(spread, a, axis, weights), weights)

def average_jvp_a(t, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    return _pair(np.sum(t * _average_grad_a(a, axis, weights), axis=axis, keepdims=keepdims), ans,
                 returned)

def average_jvp_w(t, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    return _average_jvp_w(t, ans, a, axis, weights, returned, keepdims)


def _pair(tangent, ans, returned):
    return (tangent, np.zeros_like(ans[1])) if returned else tangent


def _average_jvp_w(t, ans, a, axis, weights, returned, keepdims):
    tw = _weights(a, axis, t)
    value = np.sum(tw * _average_grad_w(a, _average_value(ans), axis, weights, keepdims),
                   axis=axis, keepdims=keepdims)
    if returned:
        total = np.sum(tw, axis=axis, keepdims=keepdims)
        return value, np.broadcast_to(total, np.shape(ans[1])) + 0.0
    return value


defvjp(np.average, average_vjp_a, None, average_vjp_w)
defjvp(np.average, average_jvp_a, None, average_jvp_w)
describe('axis None/int/tuple, weights (same shape, or 1-D along axis; differentiable), '
         'returned, keepdims', np.average)


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
    return fit(_cumsum_vjp(g, a, axis) * _valid(a), a)

def nancumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return np.cumsum(t * _valid(a), axis=axis)

def cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return fit(_cumprod_vjp(g, ans, a, axis), a)

def cumprod_jvp(t, ans, a, axis=None, dtype=None, out=None): return _cumprod_jvp(t, ans, a, axis)
def nancumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    return fit(_cumprod_vjp(g, ans, _nan_one(a), axis) * _valid(a), a)

def nancumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return _cumprod_jvp(t * _valid(a), ans, _nan_one(a), axis)

def cumulative_sum_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    return fit(_cumsum_vjp(_skip_initial(g, axis, include_initial), x, axis), x)

def cumulative_sum_jvp(t, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    return np.cumulative_sum(t, axis=axis, include_initial=include_initial)

def cumulative_prod_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    g, ans = _skip_initial(g, axis, include_initial), _skip_initial(ans, axis, include_initial)
    return fit(_cumprod_vjp(g, ans, x, axis), x)

def cumulative_prod_jvp(t, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
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
    extra = {k: v for k, v in (('prepend', _zero_or_none(prepend)),
                               ('append', _zero_or_none(append))) if v is not None}
    return np.diff(t, n, axis, **extra)


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
        matrix = _gradient_matrix(np.shape(f)[ax], spacing, edge_order).astype(_float_dtype(f))
        total = total + np.moveaxis(np.tensordot(gk, matrix, axes=([ax], [0])), -1, ax)
    return total


def gradient_vjp(g, ans, f, *varargs, axis=None, edge_order=1):
    return fit(_gradient_vjp(g, f, varargs, axis, edge_order), f)

def gradient_jvp(t, ans, f, *varargs, axis=None, edge_order=1):
    return np.gradient(t, *varargs, axis=axis, edge_order=edge_order)


# ---------------------------------------------------------------- registration

# Helpers that compute axes, counts, masks and the weights of piecewise-linear
# choices: constant wherever the rules that call them are differentiable.
nondifferentiable(reduced_axes, kept_shape, _axis, _valid, _float_dtype, _choice,
                  _range_weights, _dof)


for _fn, _vjp, _jvp in [
        (np.sum, sum_vjp, sum_jvp), (np.mean, mean_vjp, mean_jvp),
        (np.nansum, nansum_vjp, nansum_jvp), (np.nanmean, nanmean_vjp, nanmean_jvp),
        (np.prod, prod_vjp, prod_jvp), (np.nanprod, nanprod_vjp, nanprod_jvp),
        (np.max, max_vjp, max_jvp), (np.min, max_vjp, max_jvp),
        (np.amax, max_vjp, max_jvp), (np.amin, max_vjp, max_jvp),
        (np.nanmax, max_vjp, max_jvp), (np.nanmin, max_vjp, max_jvp),
        (np.ptp, ptp_vjp, ptp_jvp),
        (np.var, var_vjp, var_jvp), (np.std, std_vjp, std_jvp),
        (np.nanvar, nanvar_vjp, nanvar_jvp), (np.nanstd, nanstd_vjp, nanstd_jvp),
        (np.cumsum, cumsum_vjp, cumsum_jvp), (np.nancumsum, nancumsum_vjp, nancumsum_jvp),
        (np.cumprod, cumprod_vjp, cumprod_jvp),
        (np.nancumprod, nancumprod_vjp, nancumprod_jvp),
        (np.cumulative_sum, cumulative_sum_vjp, cumulative_sum_jvp),
        (np.cumulative_prod, cumulative_prod_vjp, cumulative_prod_jvp),
        (np.diff, diff_vjp, diff_jvp), (np.ediff1d, ediff1d_vjp, ediff1d_jvp),
        (np.trapezoid, trapezoid_vjp, trapezoid_jvp),
        (np.gradient, gradient_vjp, gradient_jvp)]:
    defvjp(_fn, _vjp)
    defjvp(_fn, _jvp)

describe('axis None/int/tuple, keepdims, where, dtype, initial', np.sum, np.nansum)
describe('axis None/int/tuple, keepdims, where, dtype', np.mean, np.nanmean)
describe('axis None/int/tuple, keepdims, where; exact with zeros', np.prod, np.nanprod)
describe('axis None/int/tuple, keepdims, where, initial; ties share equally',
         np.max, np.min, np.amax, np.amin, np.nanmax, np.nanmin)
describe('axis None/int/tuple, keepdims; ties share equally', np.ptp)
describe('axis None/int/tuple, ddof or correction, keepdims, where; real or complex',
         np.var, np.std, np.nanvar, np.nanstd)
describe('axis None/int, dtype', np.cumsum, np.nancumsum)
describe('axis None/int; exact with zeros', np.cumprod, np.nancumprod)
describe('axis, include_initial', np.cumulative_sum, np.cumulative_prod)
describe('n, axis, prepend, append (constants)', np.diff)
describe('to_end, to_begin (constants)', np.ediff1d)
describe('x (constant sample points, 1-D or full), dx, axis', np.trapezoid)
describe('spacings: scalars or coordinate arrays; axis None/int/tuple; edge_order 1, 2',
         np.gradient)
