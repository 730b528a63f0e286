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
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import fit

_METHODS = ('linear', 'lower', 'higher', 'midpoint')


def _steps(a, q, axis, skip_nan):
    """The number of steps below the top order statistic per result, `max(n, 1) - 1`
    (n: the count, of non-NaNs for the nan-variants), in the shape `q.shape + outer`."""
    shape = np.shape(a)
    axes = reduced_axes(len(shape), axis)
    rest = [i for i in range(len(shape)) if i not in axes]
    outer = tuple(shape[i] for i in rest)
    if skip_nan:
        n = np.reshape(np.sum(~np.isnan(a), axis=axes), outer)
    else:
        n = np.full(outer, int(np.prod([shape[i] for i in axes])))
    return np.broadcast_to(np.maximum(n, 1) - 1, np.shape(q) + outer)


def _virtual(a, q, axis, skip_nan):
    """q * (n - 1): the fractional rank of each result (differentiable in q)."""
    steps = _steps(a, q, axis, skip_nan)
    return np.reshape(q, np.shape(q) + (1,) * (np.ndim(steps) - np.ndim(q))) * steps


def _terms(a, q, axis, method, skip_nan):
    """Flat positions (lo, hi) of the order statistics behind each result."""
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
    steps = _steps(a, q, axis, skip_nan)
    virtual = _virtual(a, q, axis, skip_nan)
    lo = np.ceil(virtual) if method == 'higher' else np.floor(virtual)
    hi = np.minimum(lo + 1, steps)
    ranked = np.broadcast_to(ranked, np.shape(lo) + np.shape(ranked)[-1:])
    lo_at = np.take_along_axis(ranked, np.expand_dims(lo.astype(np.intp), -1), -1)[..., 0]
    hi_at = np.take_along_axis(ranked, np.expand_dims(hi.astype(np.intp), -1), -1)[..., 0]
    return lo_at, hi_at


def _weight(a, q, axis, method, skip_nan):
    """The weight of the upper order statistic: q * (n - 1) - floor(.) for linear (it
    moves with q: the rules of the rules see it), a constant for the other methods."""
    virtual = _virtual(a, q, axis, skip_nan)
    if method == 'linear':
        return (virtual - np.floor(virtual)).astype(_float_dtype(a))
    if method == 'midpoint':
        return np.where(virtual > np.floor(virtual), 0.5, 0.0).astype(_float_dtype(a))
    return np.zeros(np.shape(virtual), _float_dtype(a))


def _float_dtype(x):
    dtype = getattr(x, 'dtype', None)
    return dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64


def _vjp(g, a, q, axis, method, skip_nan):
    lo, hi = _terms(a, q, axis, method, skip_nan)
    weight = _weight(a, q, axis, method, skip_nan)
    g = np.reshape(g, np.shape(lo))
    spread = np.concatenate([np.ravel(g * (1.0 - weight)), np.ravel(g * weight)])
    return fit(scatter_add(spread, np.concatenate([np.ravel(lo), np.ravel(hi)]), np.shape(a)), a)


def _jvp(t, ans, a, q, axis, method, skip_nan):
    lo, hi = _terms(a, q, axis, method, skip_nan)
    weight = _weight(a, q, axis, method, skip_nan)
    return np.reshape(gather(t, lo) * (1.0 - weight) + gather(t, hi) * weight, np.shape(ans))


def _q_slope(a, q, axis, method, skip_nan):
    """d(result)/dq per result, in the shape of `_terms`'s positions.

    linear: (s[hi] - s[lo]) * (n - 1), the slope of the segment q falls in;
    lower, higher, midpoint are piecewise constant in q: 0.
    """
    lo, hi = _terms(a, q, axis, method, skip_nan)
    if method != 'linear':
        return np.zeros(np.shape(lo), _float_dtype(a))
    return (gather(a, hi) - gather(a, lo)) * _steps(a, q, axis, skip_nan)


def _q_vjp(g, a, q, axis, method, skip_nan, scale):
    slope = _q_slope(a, q, axis, method, skip_nan)
    per = np.reshape(np.reshape(g, np.shape(slope)) * slope, np.shape(q) + (-1,))
    return fit(np.sum(per, axis=-1) * scale, q)


def _q_jvp(t, ans, a, q, axis, method, skip_nan, scale):
    slope = _q_slope(a, q, axis, method, skip_nan)
    rows = np.reshape(t, np.shape(q) + (1,) * (np.ndim(slope) - np.ndim(q)))
    return np.reshape(rows * slope * scale, np.shape(ans))


def quantile_vjp_q(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, weights=None, interpolation=None):
    return _q_vjp(g, a, q, axis, interpolation or method, False, 1.0)

def quantile_jvp_q(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, weights=None, interpolation=None):
    return _q_jvp(t, ans, a, q, axis, interpolation or method, False, 1.0)

def nanquantile_vjp_q(g, ans, a, q, axis=None, out=None, overwrite_input=False,
                      method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_vjp(g, a, q, axis, interpolation or method, True, 1.0)

def nanquantile_jvp_q(t, ans, a, q, axis=None, out=None, overwrite_input=False,
                      method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_jvp(t, ans, a, q, axis, interpolation or method, True, 1.0)

def percentile_vjp_q(g, ans, a, q, axis=None, out=None, overwrite_input=False,
                     method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_vjp(g, a, np.divide(q, 100.0), axis, interpolation or method, False, 0.01)

def percentile_jvp_q(t, ans, a, q, axis=None, out=None, overwrite_input=False,
                     method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_jvp(t, ans, a, np.divide(q, 100.0), axis, interpolation or method, False, 0.01)

def nanpercentile_vjp_q(g, ans, a, q, axis=None, out=None, overwrite_input=False,
                        method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_vjp(g, a, np.divide(q, 100.0), axis, interpolation or method, True, 0.01)

def nanpercentile_jvp_q(t, ans, a, q, axis=None, out=None, overwrite_input=False,
                        method='linear', keepdims=False, weights=None, interpolation=None):
    return _q_jvp(t, ans, a, np.divide(q, 100.0), axis, interpolation or method, True, 0.01)


def median_vjp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _vjp(g, a, 0.5, axis, 'linear', False)

def median_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _jvp(t, ans, a, 0.5, axis, 'linear', False)

def nanmedian_vjp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _vjp(g, a, 0.5, axis, 'linear', True)

def nanmedian_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _jvp(t, ans, a, 0.5, axis, 'linear', True)

def quantile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                 keepdims=False, weights=None, interpolation=None):
    return _vjp(g, a, q, axis, interpolation or method, False)

def quantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                 keepdims=False, weights=None, interpolation=None):
    return _jvp(t, ans, a, q, axis, interpolation or method, False)

def nanquantile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                    keepdims=False, weights=None, interpolation=None):
    return _vjp(g, a, q, axis, interpolation or method, True)

def nanquantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                    keepdims=False, weights=None, interpolation=None):
    return _jvp(t, ans, a, q, axis, interpolation or method, True)

def percentile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, weights=None, interpolation=None):
    return _vjp(g, a, np.divide(q, 100.0), axis, interpolation or method, False)

def percentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                   keepdims=False, weights=None, interpolation=None):
    return _jvp(t, ans, a, np.divide(q, 100.0), axis, interpolation or method, False)

def nanpercentile_vjp(g, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                      keepdims=False, weights=None, interpolation=None):
    return _vjp(g, a, np.divide(q, 100.0), axis, interpolation or method, True)

def nanpercentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method='linear',
                      keepdims=False, weights=None, interpolation=None):
    return _jvp(t, ans, a, np.divide(q, 100.0), axis, interpolation or method, True)


nondifferentiable(_terms, _steps, _float_dtype)   # positions and counts

MEDIAN = 'axis None/int/tuple, keepdims; even counts average the middle pair'
entry(np.median, median_vjp, median_jvp, forms=MEDIAN)
entry(np.nanmedian, nanmedian_vjp, nanmedian_jvp, forms=MEDIAN)
QUANTILE = ('q scalar or array (derivative in q too), axis None/int/tuple, keepdims; '
            'method linear/lower/higher/midpoint')
entry(np.quantile, (quantile_vjp, quantile_vjp_q), (quantile_jvp, quantile_jvp_q),
      forms=QUANTILE)
entry(np.nanquantile, (nanquantile_vjp, nanquantile_vjp_q), (nanquantile_jvp, nanquantile_jvp_q),
      forms=QUANTILE)
entry(np.percentile, (percentile_vjp, percentile_vjp_q), (percentile_jvp, percentile_jvp_q),
      forms=QUANTILE)
entry(np.nanpercentile, (nanpercentile_vjp, nanpercentile_vjp_q),
      (nanpercentile_jvp, nanpercentile_jvp_q), forms=QUANTILE)
