"""Rules for order statistics: median, quantile, percentile and their nan-variants.

Each result interpolates between two order statistics of the reduced
elements: `(1 - w) * s[lo] + w * s[hi]` with `s` sorted. The rules find, with
a stable argsort, which input elements `s[lo]` and `s[hi]` are, and gather
(JVP) or scatter-add (VJP) there. Exact for every `axis` (None, int, tuple),
`keepdims`, array `q`, and the methods linear, lower, higher and midpoint;
nan-variants skip NaNs (they sort last).
"""
import numpy as np

from tapeflow.rules.array_ops import gather, positions, scatter_add
from tapeflow.rules.numpy_reductions import reduced_axes
from tapeflow.rules.registry import defjvp, defvjp, describe, nondifferentiable, static
from tapeflow.rules.shapes import fit

_METHODS = ('linear', 'lower', 'higher', 'midpoint')


def _terms(a, q, axis, method, skip_nan):
    """Flat positions (lo, hi) of the order statistics behind each result, and w."""
    if method not in _METHODS:
        raise NotImplementedError(f'no derivative rule for quantile method={method!r}')
    shape = np.shape(a)
    axes = reduced_axes(len(shape), axis)
    rest = [i for i in range(len(shape)) if i not in axes]
    order = rest + list(axes)
    outer = tuple(shape[i] for i in rest)
    flat_a = np.reshape(np.transpose(a, order), outer + (-1,))
    flat_positions = np.reshape(np.transpose(positions(shape), order), outer + (-1,))
    ranked = np.take_along_axis(flat_positions, np.argsort(flat_a, axis=-1, kind='stable'), -1)
    n = np.sum(~np.isnan(flat_a), axis=-1) if skip_nan else np.shape(flat_a)[-1]
    q = np.reshape(q, np.shape(q) + (1,) * len(outer))
    virtual = q * (np.maximum(np.broadcast_to(n, outer), 1) - 1)
    lo = np.floor(virtual)
    weight = virtual - lo
    if method == 'lower':
        weight = 0.0 * weight
    elif method == 'higher':
        lo, weight = np.ceil(virtual), 0.0 * weight
    elif method == 'midpoint':
        weight = np.where(weight > 0, 0.5, 0.0)
    hi = np.minimum(lo + 1, np.maximum(n, 1) - 1)
    ranked = np.broadcast_to(ranked, np.shape(lo) + np.shape(ranked)[-1:])
    lo_at = np.take_along_axis(ranked, np.expand_dims(lo.astype(np.intp), -1), -1)[..., 0]
    hi_at = np.take_along_axis(ranked, np.expand_dims(hi.astype(np.intp), -1), -1)[..., 0]
    return lo_at, hi_at, weight.astype(_float_dtype(a))


def _float_dtype(x):
    dtype = getattr(x, 'dtype', None)
    return dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64


def _vjp(g, a, q, axis, method, skip_nan):
    lo, hi, weight = _terms(a, q, axis, method, skip_nan)
    g = np.reshape(g, np.shape(lo))
    spread = np.concatenate([np.ravel(g * (1.0 - weight)), np.ravel(g * weight)])
    return fit(scatter_add(spread, np.concatenate([np.ravel(lo), np.ravel(hi)]), np.shape(a)), a)


def _jvp(t, ans, a, q, axis, method, skip_nan):
    lo, hi, weight = _terms(a, q, axis, method, skip_nan)
    return np.reshape(gather(t, lo) * (1.0 - weight) + gather(t, hi) * weight, np.shape(ans))


def median_vjp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _vjp(g, a, 0.5, axis, 'linear', False)

def median_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _jvp(t, ans, a, 0.5, axis, 'linear', False)

def nanmedian_vjp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _vjp(g, a, 0.5, axis, 'linear', True)

def nanmedian_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _jvp(t, ans, a, 0.5, axis, 'linear', True)

def quantile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                 keepdims=False, **kw):
    return _vjp(g, a, q, axis, method, False)

def quantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                 keepdims=False, **kw):
    return _jvp(t, ans, a, q, axis, method, False)

def nanquantile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                    keepdims=False, **kw):
    return _vjp(g, a, q, axis, method, True)

def nanquantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                    keepdims=False, **kw):
    return _jvp(t, ans, a, q, axis, method, True)

def percentile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, **kw):
    return _vjp(g, a, np.divide(q, 100.0), axis, method, False)

def percentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, **kw):
    return _jvp(t, ans, a, np.divide(q, 100.0), axis, method, False)

def nanpercentile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                      keepdims=False, **kw):
    return _vjp(g, a, np.divide(q, 100.0), axis, method, True)

def nanpercentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                      keepdims=False, **kw):
    return _jvp(t, ans, a, np.divide(q, 100.0), axis, method, True)


nondifferentiable(_terms, _float_dtype)   # positions and interpolation weights

for _fn, _vjp_rule, _jvp_rule in [
        (np.median, median_vjp, median_jvp), (np.nanmedian, nanmedian_vjp, nanmedian_jvp),
        (np.quantile, quantile_vjp, quantile_jvp),
        (np.nanquantile, nanquantile_vjp, nanquantile_jvp),
        (np.percentile, percentile_vjp, percentile_jvp),
        (np.nanpercentile, nanpercentile_vjp, nanpercentile_jvp)]:
    defvjp(_fn, _vjp_rule)
    defjvp(_fn, _jvp_rule)

for _fn in (np.quantile, np.nanquantile, np.percentile, np.nanpercentile):
    static(_fn, 1)

describe('axis None/int/tuple, keepdims; even counts average the middle pair',
         np.median, np.nanmedian)
describe('q scalar or array (static), axis None/int/tuple, keepdims; '
         'method linear/lower/higher/midpoint',
         np.quantile, np.nanquantile, np.percentile, np.nanpercentile)
