"""Rules for reductions: sum, mean, prod, max/min, ptp, and their nan-variants
(var, std and average are in `numpy_statistics`, scans and differences in
`numpy_scans`).

Every reduction takes `axis` as None, an int or a tuple of ints, and
`keepdims`; sum, mean, prod, max, min, var and std also `where=`; var and std
`ddof` (or `correction`). The VJP spreads `g` back over the reduced axes, the
JVP is the reduction's own linearisation. prod is exact with zeros (products of
the other elements, not ans / x).

Generated code calls the VJPs of the common reductions by name, one helper
each, so an adjoint reads `bx = grad_of_sum(bs, x, 1, False, where=True)`:
`grad_of_sum`, `grad_of_mean`, `grad_of_max` (max and min). They are fast for
an ndarray without `where=` and take the general route (`expand`, `fit`)
otherwise; they are primitives with their own rules (linear in `g`), so
generated code that calls them can be differentiated again.
"""
import math

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import dense, fit, fit_batch, stack_batch

__all__ = ['reduced_axes', 'kept_shape', 'expand', 'count', 'float_dtype', 'not_nan',
           'grad_of_sum', 'grad_of_mean', 'grad_of_max', 'products_of_others', 'batch_axes',
           'with_kept_dims']


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


def batch_axes(ndim, axis):
    """The axes of a batch `(B,) + shape` that a reduction of `shape` over `axis` removes."""
    return tuple(a + 1 for a in reduced_axes(ndim, axis))


def expand(g, x, axis=None, keepdims=False):
    """`g`, the cotangent of a reduction of `x` over `axis`, spread over x's shape."""
    shape = np.shape(x)
    if np.ndim(g) == 0 and is_foreign_array(x) and not is_foreign_array(g):
        return np.full_like(x, g, dtype=np.result_type(float_dtype(x), g))   # in x's library
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


def expand_batch(t, x, axis=None, keepdims=False):
    """`expand` for a batch `t` of `(B,) + shape(g)`: `(B,) + shape(x)`."""
    shape = np.shape(x)
    if not keepdims:
        t = np.reshape(t, t.shape[:1] + kept_shape(shape, axis))
    return np.broadcast_to(t, t.shape[:1] + shape) + 0.0


def _expand_jvp_batched(t, ans, g, x, axis=None, keepdims=False):
    return expand_batch(t, x, axis, keepdims)


# Generated code calls `expand` (inlined from reduction rules): linear in g.
entry(expand, _expand_vjp, _expand_jvp, batched=_expand_jvp_batched, static=(1, 2, 3),
      forms=None)
nondifferentiable(count)


def _axis(shape, axis):
    return reduced_axes(len(shape), axis)


def _masked(x, where):
    return x if where is True else x * where


def float_dtype(x):
    dtype = getattr(x, 'dtype', None)
    return dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64


def with_kept_dims(ans, x, axis, keepdims):
    """`ans` of a reduction of `x` over `axis`, with the reduced axes kept (length 1)."""
    return ans if keepdims else np.reshape(ans, kept_shape(np.shape(x), axis))


def not_nan(a, where=True):
    """Elements a nan-reduction counts."""
    return ~np.isnan(a) if where is True else ~np.isnan(a) & where


# ---------------------------------------------------------------- the VJPs generated code calls

def grad_of_sum(g, x, axis=None, keepdims=False, where=True):
    """The cotangent of `x` in `np.sum(x, axis, keepdims=keepdims, where=where)`.

    `g` copied over the summed axes, in the shape and dtype of `x`, zero where
    `where` is False.
    """
    if where is True and _plain(g, x):
        return _spread(g, x, axis, keepdims)
    return fit(_masked(expand(g, x, axis, keepdims), where), x)


def grad_of_mean(g, x, axis=None, keepdims=False, where=True):
    """The cotangent of `x` in `np.mean(x, axis, keepdims=keepdims, where=where)`."""
    if where is True and _plain(g, x):
        return _spread(g / _size(x.shape, axis), x, axis, keepdims)
    return fit(_masked(expand(g, x, axis, keepdims), where) / count(x, axis, where), x)


def grad_of_max(g, x, ans, axis=None, keepdims=False, where=True):
    """The cotangent of `x` in `ans = np.max(x, axis, ...)` (or min, amax, nanmax...).

    `g` goes to the elements equal to `ans`, shared equally among ties.
    """
    if where is True and _plain(g, x):
        if axis is not None and not keepdims:
            kept = _kept(x.shape, axis)
            g = g.reshape(kept) if g.__class__ is np.ndarray else g
            ans = ans.reshape(kept) if ans.__class__ is np.ndarray else ans
        hit = x == ans
        if np.count_nonzero(hit) == np.size(ans) and not np.isnan(ans).any():
            return hit * g          # one element attains each maximum: no ties to share
        # (a NaN maximum is attained nowhere, so the count alone could hide a tie)
        ties = hit.sum(axis=axis, dtype=x.dtype, keepdims=True)
        return hit * (g / np.maximum(ties, 1))
    return fit(expand(g, x, axis, keepdims) * _choice(x, ans, axis, keepdims, where), x)


# Pure: each computes a new value from its arguments and changes none of them (so
# `transforms.fusion` may move a call of it to its one reader, as arithmetic).
for _helper in (grad_of_sum, grad_of_mean, grad_of_max):
    _helper.__tapeflow_pure__ = True


def _plain(g, x):
    """The common case: `x` an ndarray of floats, `g` a float or of x's dtype."""
    if x.__class__ is not np.ndarray:
        return False
    if g.__class__ is float:
        return x.dtype.kind in 'fc'
    return (g.__class__ is np.ndarray or isinstance(g, np.generic)) and g.dtype == x.dtype \
        and x.dtype.kind in 'fc'


def _kept(shape, axis):
    """`shape` with the reduced `axis` (an int, or ints) set to 1: the keepdims shape."""
    if axis.__class__ is int:
        kept = list(shape)
        kept[axis] = 1
        return kept
    return kept_shape(shape, axis)


def _size(shape, axis):
    """How many elements a reduction over `axis` combines."""
    if axis is None:
        return math.prod(shape)
    if axis.__class__ is int:
        return shape[axis]
    return math.prod(shape[i] for i in reduced_axes(len(shape), axis))


def _spread(g, x, axis, keepdims):
    """`g` copied over the shape of `x` (a new array: cheaper than np.broadcast_to)."""
    out = np.empty(x.shape, x.dtype)
    if g.__class__ is np.ndarray and g.ndim:
        out[...] = g if keepdims or axis is None else g.reshape(_kept(x.shape, axis))
    else:
        out.fill(g)
    return out


# Rules of the helpers above, for generated code differentiated again. Each is
# linear in `g`; `x` and `ans` give shapes and which elements attain a max,
# constant wherever the derivative exists.

def _grad_of_sum_vjp(h, ans, g, x, axis=None, keepdims=False, where=True):
    return fit(np.sum(dense(h, x), axis=axis, keepdims=keepdims, where=where), g)

def _grad_of_sum_jvp(t, ans, g, x, axis=None, keepdims=False, where=True):
    return grad_of_sum(t, x, axis, keepdims, where=where)

def _grad_of_mean_vjp(h, ans, g, x, axis=None, keepdims=False, where=True):
    return fit(np.mean(dense(h, x), axis=axis, keepdims=keepdims, where=where), g)

def _grad_of_mean_jvp(t, ans, g, x, axis=None, keepdims=False, where=True):
    return grad_of_mean(t, x, axis, keepdims, where=where)

def _grad_of_max_vjp(h, ans, g, x, extreme, axis=None, keepdims=False, where=True):
    return fit(np.sum(h * _choice(x, extreme, axis, keepdims, where), axis=axis,
                      keepdims=keepdims), g)

def _grad_of_max_jvp(t, ans, g, x, extreme, axis=None, keepdims=False, where=True):
    return grad_of_max(t, x, extreme, axis, keepdims, where=where)

# Batched (rules/batching.py): `t` is `(B,) + shape(g)`, the result `(B,) + shape(x)`.

def _grad_of_sum_jvp_batched(t, ans, g, x, axis=None, keepdims=False, where=True):
    return fit_batch(_masked(expand_batch(t, x, axis, keepdims), where), x)

def _grad_of_mean_jvp_batched(t, ans, g, x, axis=None, keepdims=False, where=True):
    return fit_batch(_masked(expand_batch(t, x, axis, keepdims), where) / count(x, axis, where), x)

def _grad_of_max_jvp_batched(t, ans, g, x, extreme, axis=None, keepdims=False, where=True):
    return fit_batch(expand_batch(t, x, axis, keepdims)
                     * _choice(x, extreme, axis, keepdims, where), x)


entry(grad_of_sum, _grad_of_sum_vjp, _grad_of_sum_jvp, batched=_grad_of_sum_jvp_batched,
      static=(1, 2, 3), forms=None)
entry(grad_of_mean, _grad_of_mean_vjp, _grad_of_mean_jvp, batched=_grad_of_mean_jvp_batched,
      static=(1, 2, 3), forms=None)
entry(grad_of_max, _grad_of_max_vjp, _grad_of_max_jvp, batched=_grad_of_max_jvp_batched,
      static=(1, 2, 3, 4), forms=None)


# ---------------------------------------------------------------- sum, mean

def sum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return grad_of_sum(g, a, axis, keepdims, where=where)

def sum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    if where is True:           # (Dask's sum and mean take no `where`)
        return np.sum(t, axis=axis, dtype=dtype, keepdims=keepdims)
    return np.sum(t, axis=axis, dtype=dtype, keepdims=keepdims, where=where)

def mean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return grad_of_mean(g, a, axis, keepdims, where=where)

def mean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    if where is True:
        return np.mean(t, axis=axis, dtype=dtype, keepdims=keepdims)
    return np.mean(t, axis=axis, dtype=dtype, keepdims=keepdims, where=where)

def sum_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                    where=True):
    return np.sum(stack_batch(t, a), axis=batch_axes(np.ndim(a), axis), dtype=dtype,
                  keepdims=keepdims, where=where)


def mean_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return np.mean(stack_batch(t, a), axis=batch_axes(np.ndim(a), axis), dtype=dtype,
                   keepdims=keepdims, where=where)

def nansum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
               where=True):
    return grad_of_sum(g, a, axis, keepdims, where=not_nan(a, where))

def nansum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
               where=True):
    return np.sum(t * not_nan(a, where), axis=axis, keepdims=keepdims)

def nanmean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return grad_of_mean(g, a, axis, keepdims, where=not_nan(a, where))

def nanmean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return np.sum(t * not_nan(a, where), axis=axis,
                  keepdims=keepdims) / count(a, axis, not_nan(a, where), keepdims)

def nansum_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                       where=True):
    return np.sum(t * not_nan(a, where), axis=batch_axes(np.ndim(a), axis), keepdims=keepdims)

def nanmean_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    return np.sum(t * not_nan(a, where), axis=batch_axes(np.ndim(a), axis),
                  keepdims=keepdims) / count(a, axis, not_nan(a, where), keepdims)


# ---------------------------------------------------------------- prod

def products_of_others(a, axis, where):
    """For each element: the product of the other elements of its reduction.

    Exact with zeros (prefix times suffix products, no division). Elements
    outside `where` count as 1.
    """
    if where is not True:
        a = np.where(where, a, 1.0)
    shape = np.shape(a)
    axes = reduced_axes(len(shape), axis)
    if not axes:
        return np.ones_like(a)
    rest = [i for i in range(len(shape)) if i not in axes]
    order = rest + list(axes)
    moved = np.transpose(a, order)
    flat = np.reshape(moved, tuple(shape[i] for i in rest) + (-1,))
    n = np.shape(flat)[-1]
    position = np.arange(n)
    # Exclusive prefix and suffix products: each element's neighbour, 1 at the ends.
    before = np.where(position == 0, 1.0, np.roll(flat, 1, axis=-1))
    after = np.where(position == n - 1, 1.0, np.roll(flat, -1, axis=-1))
    left = np.cumprod(before, axis=-1)
    right = np.flip(np.cumprod(np.flip(after, -1), -1), -1)
    return np.transpose(np.reshape(left * right, np.shape(moved)), tuple(int(i) for i in np.argsort(order)))


def prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return grad_of_sum(g, a, axis, keepdims, where=where) * products_of_others(a, axis, where)

def prod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return np.sum(_masked(t * products_of_others(a, axis, where), where), axis=axis,
                  keepdims=keepdims)

def nanprod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=True):
    return grad_of_sum(g, a, axis, keepdims, where=not_nan(a, where)) \
        * products_of_others(a, axis, not_nan(a, where))

def nanprod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=True):
    return np.sum(t * products_of_others(a, axis, not_nan(a, where)) * not_nan(a, where),
                  axis=axis, keepdims=keepdims)

def prod_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                     where=True):
    return np.sum(_masked(t * products_of_others(a, axis, where), where),
                  axis=batch_axes(np.ndim(a), axis), keepdims=keepdims)

def nanprod_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, keepdims=False,
                        initial=None, where=True):
    return np.sum(t * products_of_others(a, axis, not_nan(a, where)) * not_nan(a, where),
                  axis=batch_axes(np.ndim(a), axis), keepdims=keepdims)


# ---------------------------------------------------------------- max, min, ptp

def _choice(a, ans, axis, keepdims, where=True):
    """Weights that share a max/min's cotangent among the elements attaining it."""
    hit = a == with_kept_dims(ans, a, axis, keepdims)
    if where is not True:
        hit = hit & where
    hits = np.sum(hit, axis=_axis(np.shape(a), axis), keepdims=True)
    return (hit / np.maximum(hits, 1)).astype(float_dtype(a))


def _range_weights(a, axis):
    return (_choice(a, np.max(a, axis=axis, keepdims=True), axis, True)
            - _choice(a, np.min(a, axis=axis, keepdims=True), axis, True))


def max_vjp(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return grad_of_max(g, a, ans, axis, keepdims, where=where)

def max_jvp(t, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return _shared_tangent(t, _choice(a, ans, axis, keepdims, where), axis, keepdims)

def max_jvp_batched(t, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return _shared_tangent(t, _choice(a, ans, axis, keepdims, where),
                           batch_axes(np.ndim(a), axis), keepdims)


def _shared_tangent(t, weights, axis, keepdims):
    """The mean of the tangents of the elements attaining a max/min, taken about the largest
    of them: exact where they are equal (a row of ties' `a - np.max(a)` has tangent 0, not a
    rounding error that a large factor lifts: fuzzer seed 5411 index 859, 7e10 * 1 ulp)."""
    plain = np.sum(t * weights, axis=axis, keepdims=keepdims)
    if getattr(plain, 'dtype', np.dtype(float)).kind != 'f':
        return plain                    # (complex tangents: the plain mean)
    hit = weights > 0
    ref = np.max(np.where(hit, t, -np.inf), axis=axis, keepdims=True)
    ref = np.where(np.isfinite(ref), ref, 0.0)
    about = ref + np.sum((t - ref) * weights, axis=axis, keepdims=True)
    made = np.reshape(about, np.shape(plain))
    return made[()] if np.ndim(made) == 0 and not is_foreign_array(made) else made

def ptp_vjp(g, ans, a, axis=None, out=None, keepdims=False):
    return fit(expand(g, a, axis, keepdims) * _range_weights(a, axis), a)

def ptp_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    return np.sum(t * _range_weights(a, axis), axis=axis, keepdims=keepdims)

def ptp_jvp_batched(t, ans, a, axis=None, out=None, keepdims=False):
    return np.sum(t * _range_weights(a, axis), axis=batch_axes(np.ndim(a), axis),
                  keepdims=keepdims)


# ---------------------------------------------------------------- registration

# Helpers that compute axes, counts, masks and the weights of piecewise-linear
# choices: constant wherever the rules that call them are differentiable.
nondifferentiable(reduced_axes, kept_shape, _axis, not_nan, float_dtype, _choice,
                  _range_weights, _plain, _kept, _size)


AXES = 'axis None/int/tuple, keepdims'
entry(np.sum, sum_vjp, sum_jvp, batched=sum_jvp_batched, forms=f'{AXES}, where, dtype, initial')
entry(np.mean, mean_vjp, mean_jvp, batched=mean_jvp_batched, forms=f'{AXES}, where, dtype')
entry(np.nansum, nansum_vjp, nansum_jvp, batched=nansum_jvp_batched,
      forms=f'{AXES}, where, dtype, initial')
entry(np.nanmean, nanmean_vjp, nanmean_jvp, batched=nanmean_jvp_batched,
      forms=f'{AXES}, where, dtype')
entry(np.prod, prod_vjp, prod_jvp, batched=prod_jvp_batched,
      forms=f'{AXES}, where; exact with zeros')
entry(np.nanprod, nanprod_vjp, nanprod_jvp, batched=nanprod_jvp_batched,
      forms=f'{AXES}, where; exact with zeros')
entry(np.max, max_vjp, max_jvp, batched=max_jvp_batched,
      also=(np.min, np.amax, np.amin, np.nanmax, np.nanmin),
      forms=f'{AXES}, where, initial; ties share equally')
entry(np.ptp, ptp_vjp, ptp_jvp, batched=ptp_jvp_batched, forms=f'{AXES}; ties share equally')
