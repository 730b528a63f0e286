"""Rules for evaluating a function given by values or coefficients: np.interp
(piecewise linear; derivative in x, xp, fp, left and right) and np.polyval (listed
with the products).
"""
import numpy as np

from tapeflow.rules.array_ops import gather, scatter_add
from tapeflow.rules.entries import entry
from tapeflow.rules.shapes import fit


# ---------------------------------------------------------------- interp, polyval

def _at(xp, index):
    """xp[index] for an index array that may be a Tensor (it dispatches); xp may move."""
    if isinstance(xp, (list, tuple)):
        xp = np.asarray(xp, float)
    return np.reshape(np.take_along_axis(xp, np.ravel(index), 0), np.shape(index))


def _points(x):
    """Query points or knots given as a list or tuple, as the array np.interp reads."""
    return np.asarray(x, float) if isinstance(x, (list, tuple)) else x


def _interp_terms(x, xp, left, right, period):
    """Lower knot index, weight of the upper knot, slope mask per query point.

    The masks are combined with np.logical_*, never `~`: for a scalar x and a list xp
    `x < xp[0]` is a Python bool, and `~True` is -2.
    """
    if period is not None:
        raise NotImplementedError('no derivative rule for np.interp with period')
    x, xp = _points(x), _points(xp)
    n = np.shape(xp)[0]
    lo = np.clip(np.searchsorted(xp, x, side='right') - 1, 0, max(n - 2, 0))
    hi = np.minimum(lo + 1, n - 1)
    span = _at(xp, hi) - _at(xp, lo)
    weight = (x - _at(xp, lo)) / np.where(span == 0, 1.0, span)
    below, above = x < xp[0], x > xp[n - 1]
    weight = np.where(below, 0.0, np.where(above, 1.0, weight))
    keep_lo = np.logical_not(np.logical_or(np.logical_and(below, left is not None), above))
    keep_hi = np.logical_not(np.logical_or(np.logical_and(above, right is not None), below))
    return lo, hi, weight, keep_lo, keep_hi, span, np.logical_not(np.logical_or(below, above))


def _interp_slope(x, xp, fp, left, right, period):
    lo, hi, _, _, _, span, inside = _interp_terms(x, xp, left, right, period)
    rise = gather(fp, hi) - gather(fp, lo)
    return np.where(inside & (span != 0), rise / np.where(span == 0, 1.0, span), 0.0)


def _interp_fp_vjp(g, x, xp, fp, left, right, period):
    lo, hi, weight, keep_lo, keep_hi, _, _ = _interp_terms(x, xp, left, right, period)
    spread = np.concatenate([np.ravel(g * (1.0 - weight) * keep_lo),
                             np.ravel(g * weight * keep_hi)])
    return scatter_add(spread, np.concatenate([np.ravel(lo), np.ravel(hi)]), np.shape(fp))


def _interp_fp_jvp(t, x, xp, fp, left, right, period):
    lo, hi, weight, keep_lo, keep_hi, _, _ = _interp_terms(x, xp, left, right, period)
    return gather(t, lo) * (1.0 - weight) * keep_lo + gather(t, hi) * weight * keep_hi


def _interp_knots(x, xp, fp, left, right, period):
    """Per query point: the knots (lo, hi) and d(result)/d(xp[lo]), d(result)/d(xp[hi]).

    Inside a segment the result is fp[lo] + slope * (x - xp[lo]), slope =
    (fp[hi] - fp[lo]) / (xp[hi] - xp[lo]): moving xp[lo] gives slope * (w - 1),
    moving xp[hi] gives -slope * w (w the weight of the upper knot). Outside
    [xp[0], xp[-1]] the result is a constant (left, right, fp[0], fp[-1]).
    """
    lo, hi, weight, _, _, _, _ = _interp_terms(x, xp, left, right, period)
    slope = _interp_slope(x, xp, fp, left, right, period)
    return lo, hi, slope * (weight - 1.0), -slope * weight


def interp_vjp_xp(g, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, d_lo, d_hi = _interp_knots(x, xp, fp, left, right, period)
    spread = np.concatenate([np.ravel(g * d_lo), np.ravel(g * d_hi)])
    return fit(scatter_add(spread, np.concatenate([np.ravel(lo), np.ravel(hi)]), np.shape(xp)),
               xp)

def interp_jvp_xp(t, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, d_lo, d_hi = _interp_knots(x, xp, fp, left, right, period)
    return gather(t, lo) * d_lo + gather(t, hi) * d_hi

def interp_vjp_left(g, ans, x, xp, fp, left=None, right=None, period=None):
    return fit(np.where(_points(x) < xp[0], g, 0.0), left)

def interp_vjp_right(g, ans, x, xp, fp, left=None, right=None, period=None):
    return fit(np.where(_points(x) > xp[np.shape(xp)[0] - 1], g, 0.0), right)

def interp_jvp_left(t, ans, x, xp, fp, left=None, right=None, period=None):
    return np.where(_points(x) < xp[0], t, np.zeros_like(ans))

def interp_jvp_right(t, ans, x, xp, fp, left=None, right=None, period=None):
    return np.where(_points(x) > xp[np.shape(xp)[0] - 1], t, np.zeros_like(ans))

def interp_vjp_x(g, ans, x, xp, fp, left=None, right=None, period=None):
    return fit(g * _interp_slope(x, xp, fp, left, right, period), x)

def interp_vjp_fp(g, ans, x, xp, fp, left=None, right=None, period=None):
    return fit(_interp_fp_vjp(g, x, xp, fp, left, right, period), fp)

def interp_jvp_x(t, ans, x, xp, fp, left=None, right=None, period=None):
    return t * _interp_slope(x, xp, fp, left, right, period)

def interp_jvp_fp(t, ans, x, xp, fp, left=None, right=None, period=None):
    return _interp_fp_jvp(t, x, xp, fp, left, right, period)


def _slope_coefficients(p):
    n = np.shape(p)[0]
    return p[:-1] * np.arange(n - 1, 0, -1) if n > 1 else 0.0 * p


def _powers(x, n):
    return np.expand_dims(x, -1) ** np.arange(n - 1, -1, -1)


def _coefficient_grad(g, p, x):
    n = np.shape(p)[0]
    return np.sum(np.reshape(np.expand_dims(g, -1) * _powers(x, n), (-1, n)), axis=0)


def polyval_vjp_p(g, ans, p, x):
    return fit(_coefficient_grad(g, p, x), p)

def polyval_vjp_x(g, ans, p, x): return fit(g * np.polyval(_slope_coefficients(p), x), x)
def polyval_jvp_p(t, ans, p, x): return np.polyval(t, x) + np.zeros_like(ans)
def polyval_jvp_x(t, ans, p, x): return t * np.polyval(_slope_coefficients(p), x)


# ---------------------------------------------------------------- registration

entry(np.interp, (interp_vjp_x, interp_vjp_xp, interp_vjp_fp, interp_vjp_left, interp_vjp_right),
      (interp_jvp_x, interp_jvp_xp, interp_jvp_fp, interp_jvp_left, interp_jvp_right),
      forms='derivative in x, xp, fp and left, right (given by position); no period')
entry(np.polyval, (polyval_vjp_p, polyval_vjp_x), (polyval_jvp_p, polyval_jvp_x),
      forms='p 1-D coefficients, x any shape')
