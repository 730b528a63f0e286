"""Rules for scipy.special, registered only when SciPy imports (never required).

gammaln, gamma, digamma/psi, polygamma, rgamma, beta, betaln, erf, erfc,
erfinv, erfcinv, erfcx, expit, logit, log_expit, ndtr, log_ndtr, ndtri,
xlogy, xlog1py, entr, rel_entr, i0, i1, i0e, i1e, logsumexp, softmax,
log_softmax; and numpy.i0, whose derivative needs scipy's i1.
"""
import math

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import RULES_OF_RULES
from tapeflow.rules.shapes import fit

try:
    import scipy.special as sc
    from scipy.special import _ufuncs
    # sc.zeta is a Python wrapper; the Hurwitz zeta ufunc under it has rules here.
    hurwitz_zeta = getattr(_ufuncs, '_zeta', None)
except ImportError:  # pragma: no cover - SciPy is optional
    sc = hurwitz_zeta = None

SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)


def _polygamma(n, x):
    """polygamma(n, x) as ufuncs (scipy's polygamma converts its arguments)."""
    if n == 0:
        return sc.digamma(x)
    return (-1.0) ** (n + 1) * math.factorial(n) * hurwitz_zeta(n + 1.0, x)


def _i1_slope(x):
    """d i1 / dx = i0 - i1 / x, 1/2 at 0."""
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.5, sc.i0(x) - sc.i1(x) / safe)


def _i1e_slope(x, ans):
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.5, sc.i0e(x) - ans / safe - np.sign(x) * ans)


def _all_axes(x, axis):
    return tuple(range(np.ndim(x))) if axis is None else axis


def _lse_weights(a, ans, axis, b, keepdims):
    kept = ans if keepdims else np.expand_dims(ans, _all_axes(a, axis))
    weights = np.exp(a - kept)
    return weights if b is None else weights * b


def _expanded(g, a, axis, keepdims):
    return g if keepdims else np.expand_dims(g, _all_axes(a, axis))


# ---------------------------------------------------------------- unary

def gammaln_vjp(g, ans, x): return g * sc.digamma(x)
def gammaln_jvp(t, ans, x): return t * sc.digamma(x)
def gamma_vjp(g, ans, x): return g * ans * sc.digamma(x)
def gamma_jvp(t, ans, x): return t * ans * sc.digamma(x)
def digamma_vjp(g, ans, x): return g * hurwitz_zeta(2.0, x)
def digamma_jvp(t, ans, x): return t * hurwitz_zeta(2.0, x)
def zeta_vjp_q(g, ans, s, q): return fit(g * _zeta_slope(s, q), q)
def zeta_jvp_q(t, ans, s, q): return t * _zeta_slope(s, q)


def _zeta_slope(s, q):
    """d zeta(s, q) / dq = -s zeta(s + 1, q): a primitive whose s is static (a rule's
    s + 1 never moves through zeta's s, which has no derivative), so the rules
    differentiate again: its own slope in q is -s * _zeta_slope(s + 1, q)."""
    return -s * hurwitz_zeta(s + 1.0, q)


def _zeta_slope_vjp(g, ans, s, q): return fit(-g * s * _zeta_slope(s + 1.0, q), q)
def _zeta_slope_jvp(t, ans, s, q): return -t * s * _zeta_slope(s + 1.0, q)
def rgamma_vjp(g, ans, x): return -g * ans * sc.digamma(x)
def rgamma_jvp(t, ans, x): return -t * ans * sc.digamma(x)
def erf_vjp(g, ans, x): return g * TWO_OVER_SQRT_PI * np.exp(-x * x)
def erf_jvp(t, ans, x): return t * TWO_OVER_SQRT_PI * np.exp(-x * x)
def erfc_vjp(g, ans, x): return -g * TWO_OVER_SQRT_PI * np.exp(-x * x)
def erfc_jvp(t, ans, x): return -t * TWO_OVER_SQRT_PI * np.exp(-x * x)
def erfinv_vjp(g, ans, x): return g * SQRT_PI_OVER_2 * np.exp(ans * ans)
def erfinv_jvp(t, ans, x): return t * SQRT_PI_OVER_2 * np.exp(ans * ans)
def erfcinv_vjp(g, ans, x): return -g * SQRT_PI_OVER_2 * np.exp(ans * ans)
def erfcinv_jvp(t, ans, x): return -t * SQRT_PI_OVER_2 * np.exp(ans * ans)
def erfcx_vjp(g, ans, x): return g * (2.0 * x * ans - TWO_OVER_SQRT_PI)
def erfcx_jvp(t, ans, x): return t * (2.0 * x * ans - TWO_OVER_SQRT_PI)
def expit_vjp(g, ans, x): return g * ans * (1.0 - ans)
def expit_jvp(t, ans, x): return t * ans * (1.0 - ans)
def logit_vjp(g, ans, x): return g / (x * (1.0 - x))
def logit_jvp(t, ans, x): return t / (x * (1.0 - x))
def log_expit_vjp(g, ans, x): return g * sc.expit(-x)
def log_expit_jvp(t, ans, x): return t * sc.expit(-x)
def ndtr_vjp(g, ans, x): return g * INV_SQRT_2PI * np.exp(-0.5 * x * x)
def ndtr_jvp(t, ans, x): return t * INV_SQRT_2PI * np.exp(-0.5 * x * x)
def log_ndtr_vjp(g, ans, x): return g * INV_SQRT_2PI * np.exp(-0.5 * x * x - ans)
def log_ndtr_jvp(t, ans, x): return t * INV_SQRT_2PI * np.exp(-0.5 * x * x - ans)
def ndtri_vjp(g, ans, x): return g * SQRT_2PI * np.exp(0.5 * ans * ans)
def ndtri_jvp(t, ans, x): return t * SQRT_2PI * np.exp(0.5 * ans * ans)
def entr_vjp(g, ans, x): return -g * (np.log(x) + 1.0)
def entr_jvp(t, ans, x): return -t * (np.log(x) + 1.0)
def i0_vjp(g, ans, x): return g * sc.i1(x)
def i0_jvp(t, ans, x): return t * sc.i1(x)
def i1_vjp(g, ans, x): return g * _i1_slope(x)
def i1_jvp(t, ans, x): return t * _i1_slope(x)
def i0e_vjp(g, ans, x): return g * (sc.i1e(x) - np.sign(x) * ans)
def i0e_jvp(t, ans, x): return t * (sc.i1e(x) - np.sign(x) * ans)
def i1e_vjp(g, ans, x): return g * _i1e_slope(x, ans)
def i1e_jvp(t, ans, x): return t * _i1e_slope(x, ans)

# ---------------------------------------------------------------- binary

def polygamma_vjp(g, ans, n, x): return fit(g * _polygamma(n + 1, x), x)
def polygamma_jvp(t, ans, n, x): return t * _polygamma(n + 1, x)
def beta_vjp_a(g, ans, a, b): return fit(g * ans * (sc.digamma(a) - sc.digamma(a + b)), a)
def beta_vjp_b(g, ans, a, b): return fit(g * ans * (sc.digamma(b) - sc.digamma(a + b)), b)
def beta_jvp_a(t, ans, a, b): return t * ans * (sc.digamma(a) - sc.digamma(a + b))
def beta_jvp_b(t, ans, a, b): return t * ans * (sc.digamma(b) - sc.digamma(a + b))
def betaln_vjp_a(g, ans, a, b): return fit(g * (sc.digamma(a) - sc.digamma(a + b)), a)
def betaln_vjp_b(g, ans, a, b): return fit(g * (sc.digamma(b) - sc.digamma(a + b)), b)
def betaln_jvp_a(t, ans, a, b): return t * (sc.digamma(a) - sc.digamma(a + b)) + 0.0 * ans
def betaln_jvp_b(t, ans, a, b): return t * (sc.digamma(b) - sc.digamma(a + b)) + 0.0 * ans
def xlogy_vjp_x(g, ans, x, y): return fit(g * np.log(y), x)
def xlogy_vjp_y(g, ans, x, y): return fit(g * x / y, y)
def xlogy_jvp_x(t, ans, x, y): return t * np.log(y) + 0.0 * ans
def xlogy_jvp_y(t, ans, x, y): return t * x / y + 0.0 * ans
def xlog1py_vjp_x(g, ans, x, y): return fit(g * np.log1p(y), x)
def xlog1py_vjp_y(g, ans, x, y): return fit(g * x / (1.0 + y), y)
def xlog1py_jvp_x(t, ans, x, y): return t * np.log1p(y) + 0.0 * ans
def xlog1py_jvp_y(t, ans, x, y): return t * x / (1.0 + y) + 0.0 * ans
def rel_entr_vjp_x(g, ans, x, y): return fit(g * (np.log(x / y) + 1.0), x)
def rel_entr_vjp_y(g, ans, x, y): return fit(-g * x / y, y)
def rel_entr_jvp_x(t, ans, x, y): return t * (np.log(x / y) + 1.0) + 0.0 * ans
def rel_entr_jvp_y(t, ans, x, y): return -t * x / y + 0.0 * ans

# ---------------------------------------------------------------- reductions

def logsumexp_vjp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    return fit(_expanded(g, a, axis, keepdims) * _lse_weights(a, ans, axis, b, keepdims), a)

def logsumexp_jvp(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    return np.sum(t * _lse_weights(a, ans, axis, b, keepdims), axis=axis, keepdims=keepdims)

def softmax_vjp(g, ans, x, axis=None):
    return fit(ans * (g - np.sum(g * ans, axis=axis, keepdims=True)), x)

def softmax_jvp(t, ans, x, axis=None): return ans * (t - np.sum(t * ans, axis=axis, keepdims=True))
def log_softmax_vjp(g, ans, x, axis=None):
    return fit(g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True), x)

def log_softmax_jvp(t, ans, x, axis=None):
    return t - np.sum(t * np.exp(ans), axis=axis, keepdims=True)


def _special(fn, vjp, jvp, *, forms, static=()):
    """An entry named as users spell the function (`scipy.special.erf`)."""
    module = 'numpy' if fn is np.i0 else 'scipy.special'
    entry(fn, vjp, jvp, static=static, forms=forms, name=f'{module}.{fn.__name__}')


if sc is not None:
    for _fn, _vjp, _jvp in [
            (sc.gammaln, gammaln_vjp, gammaln_jvp), (sc.gamma, gamma_vjp, gamma_jvp),
            (sc.digamma, digamma_vjp, digamma_jvp), (sc.rgamma, rgamma_vjp, rgamma_jvp),
            (sc.erf, erf_vjp, erf_jvp), (sc.erfc, erfc_vjp, erfc_jvp),
            (sc.erfinv, erfinv_vjp, erfinv_jvp), (sc.erfcinv, erfcinv_vjp, erfcinv_jvp),
            (sc.erfcx, erfcx_vjp, erfcx_jvp), (sc.expit, expit_vjp, expit_jvp),
            (sc.logit, logit_vjp, logit_jvp), (sc.log_expit, log_expit_vjp, log_expit_jvp),
            (sc.ndtr, ndtr_vjp, ndtr_jvp), (sc.log_ndtr, log_ndtr_vjp, log_ndtr_jvp),
            (sc.ndtri, ndtri_vjp, ndtri_jvp), (sc.entr, entr_vjp, entr_jvp),
            (sc.i0, i0_vjp, i0_jvp), (np.i0, i0_vjp, i0_jvp), (sc.i1, i1_vjp, i1_jvp),
            (sc.i0e, i0e_vjp, i0e_jvp), (sc.i1e, i1e_vjp, i1e_jvp)]:
        _special(_fn, _vjp, _jvp, forms='any shape, real')
    _special(sc.logsumexp, logsumexp_vjp, logsumexp_jvp,
             forms='axis None/int/tuple, keepdims, b (constant weights)')
    _special(sc.softmax, softmax_vjp, softmax_jvp, forms='axis None/int/tuple')
    _special(sc.log_softmax, log_softmax_vjp, log_softmax_jvp, forms='axis None/int/tuple')
    for _fn, _vjps, _jvps in [
            (sc.beta, (beta_vjp_a, beta_vjp_b), (beta_jvp_a, beta_jvp_b)),
            (sc.betaln, (betaln_vjp_a, betaln_vjp_b), (betaln_jvp_a, betaln_jvp_b)),
            (sc.xlogy, (xlogy_vjp_x, xlogy_vjp_y), (xlogy_jvp_x, xlogy_jvp_y)),
            (sc.xlog1py, (xlog1py_vjp_x, xlog1py_vjp_y), (xlog1py_jvp_x, xlog1py_jvp_y)),
            (sc.rel_entr, (rel_entr_vjp_x, rel_entr_vjp_y), (rel_entr_jvp_x, rel_entr_jvp_y))]:
        _special(_fn, _vjps, _jvps, forms='broadcasting operands')
    if hurwitz_zeta is not None:
        # (no rule in s: differentiating in s is an error, never a silent 0)
        entry(hurwitz_zeta, (None, zeta_vjp_q), (None, zeta_jvp_q), name='scipy.special.zeta',
              forms='Hurwitz zeta(s, q): derivative in q; none in s')
        entry(_zeta_slope, (None, _zeta_slope_vjp), (None, _zeta_slope_jvp), static=(0,),
              forms=None)
        RULES_OF_RULES.add(_zeta_slope)
    _special(sc.polygamma, (None, polygamma_vjp), (None, polygamma_jvp), static=(0,),
             forms='derivative in x; the order n is static')
    # the rules' helper is a primitive of its own (its order n is static, never moving
    # through zeta's s): the rules differentiate again, to any order; polygamma's own
    # rules: the same formula
    entry(_polygamma, (None, polygamma_vjp), (None, polygamma_jvp), static=(0,), forms=None)
    RULES_OF_RULES.add(_polygamma)
