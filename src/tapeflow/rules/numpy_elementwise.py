"""Rules for NumPy's unary elementwise functions (sin, exp, log, sqrt...).

Each function is one entry (`entries.elementwise`): one formula, `g * f'(x)`,
serving as the VJP and as the JVP (the tangent in `g`'s place), which the
compiler inlines; written with `ans` where that saves work (exp, tanh, sqrt).
`scalar=math.f` gives math's function the same formula with math's functions
(`math.cos` for `np.cos`): a Python float stays a float. Constants are Python
floats, so a float32 input keeps a float32 cotangent. Holomorphic functions serve complex inputs as they stand (the
pairing is bilinear, as in autograd and JAX); abs, angle, real, imag and conj
have their own complex forms.

Functions with zero derivative almost everywhere (sign, floor, round...) are
non-differentiable: see `numpy_nondiff`.
"""
import math

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules.operators import conj_unit
from tapeflow.rules.entries import HOLOMORPHIC, REAL, REAL_OR_COMPLEX, elementwise
from tapeflow.rules.registry import version_dependent
from tapeflow.rules.shapes import fit

LN2 = math.log(2.0)
LN10 = math.log(10.0)
DEG = math.pi / 180.0
RAD = 180.0 / math.pi
SINC_CURVATURE = -math.pi ** 2 / 3.0
EXP2, = version_dependent(math, 'exp2', 'Python >= 3.11') or [None]
CBRT, = version_dependent(math, 'cbrt', 'Python >= 3.11') or [None]


def _sinc_slope(x):
    """d/dx sin(pi x)/(pi x). At 0 the Taylor term -pi^2 x / 3, so that it
    is 0 there and has the right derivative (sinc''(0) = -pi^2 / 3)."""
    safe = np.where(x == 0, 1.0, x)
    px = np.pi * safe
    return np.where(x == 0, SINC_CURVATURE * x, (np.cos(px) * px - np.sin(px)) / (px * safe))


def _angle_slope(x, deg):
    """conj(x) / |x|^2 (0 at 0), in degrees when asked: Im(slope * t) is d angle."""
    return np.conj(x) / np.where(x == 0, 1.0, np.real(x * np.conj(x))) * (RAD if deg else 1.0)


def _modf_frac(g):
    return 0.0 if g is None else g


# ---------------------------------------------------------------- exp and logs

elementwise(np.exp, lambda g, ans, x: g * ans, forms=HOLOMORPHIC, scalar=math.exp)
elementwise(np.exp2, lambda g, ans, x: g * ans * LN2, forms=HOLOMORPHIC, scalar=EXP2)
elementwise(np.expm1, lambda g, ans, x: g * (ans + 1.0), forms=HOLOMORPHIC, scalar=math.expm1)
elementwise(np.log, lambda g, ans, x: g / x, forms=HOLOMORPHIC)
elementwise(np.log2, lambda g, ans, x: g / (x * LN2), forms=HOLOMORPHIC, scalar=math.log2)
elementwise(np.log10, lambda g, ans, x: g / (x * LN10), forms=HOLOMORPHIC, scalar=math.log10)
elementwise(np.log1p, lambda g, ans, x: g / (x + 1.0), forms=HOLOMORPHIC, scalar=math.log1p)

# ---------------------------------------------------------------- powers

elementwise(np.sqrt, lambda g, ans, x: g / (2.0 * ans), forms=HOLOMORPHIC, scalar=math.sqrt)
elementwise(np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans), forms=REAL, scalar=CBRT)
elementwise(np.square, lambda g, ans, x: g * (2.0 * x), forms=HOLOMORPHIC)
elementwise(np.reciprocal, lambda g, ans, x: -g * ans * ans, forms=HOLOMORPHIC)

# ---------------------------------------------------------------- trigonometric

elementwise(np.sin, lambda g, ans, x: g * np.cos(x), forms=HOLOMORPHIC, scalar=math.sin)
elementwise(np.cos, lambda g, ans, x: -g * np.sin(x), forms=HOLOMORPHIC, scalar=math.cos)
elementwise(np.tan, lambda g, ans, x: g * (1.0 + ans * ans), forms=HOLOMORPHIC, scalar=math.tan)
elementwise(np.arcsin, lambda g, ans, x: g / np.sqrt(1.0 - x * x), forms=HOLOMORPHIC,
            scalar=math.asin)
elementwise(np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x * x), forms=HOLOMORPHIC,
            scalar=math.acos)
elementwise(np.arctan, lambda g, ans, x: g / (1.0 + x * x), forms=HOLOMORPHIC, scalar=math.atan)
elementwise(np.deg2rad, lambda g, ans, x: g * DEG, forms=REAL, also=[np.radians],
            scalar=math.radians)
elementwise(np.rad2deg, lambda g, ans, x: g * RAD, forms=REAL, also=[np.degrees],
            scalar=math.degrees)
elementwise(np.sinc, lambda g, ans, x: g * _sinc_slope(x), forms=REAL, batched=True)

# ---------------------------------------------------------------- hyperbolic

elementwise(np.sinh, lambda g, ans, x: g * np.cosh(x), forms=HOLOMORPHIC, scalar=math.sinh)
elementwise(np.cosh, lambda g, ans, x: g * np.sinh(x), forms=HOLOMORPHIC, scalar=math.cosh)
elementwise(np.tanh, lambda g, ans, x: g * (1.0 - ans * ans), forms=HOLOMORPHIC,
            scalar=math.tanh)
elementwise(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1.0), forms=HOLOMORPHIC,
            scalar=math.asinh)
elementwise(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1.0), forms=HOLOMORPHIC,
            scalar=math.acosh)
elementwise(np.arctanh, lambda g, ans, x: g / (1.0 - x * x), forms=HOLOMORPHIC,
            scalar=math.atanh)

# ---------------------------------------------------------------- magnitude, complex parts

elementwise(np.absolute, lambda g, ans, x: np.real(g) * conj_unit(x, ans),
            lambda t, ans, x: np.real(t * conj_unit(x, ans)),
            forms='any shape, real or complex (|z|: conj(z)/|z|; 0 at 0)')
elementwise(np.fabs, lambda g, ans, x: g * np.sign(x), forms=REAL)
elementwise(np.conjugate, lambda g, ans, x: np.conj(g), forms=REAL_OR_COMPLEX)
elementwise(np.real, lambda g, ans, x: fit(np.real(g) + 0j, x), lambda t, ans, x: np.real(t),
            forms=REAL_OR_COMPLEX, batched=True)
elementwise(np.imag, lambda g, ans, x: fit(-1j * np.real(g), x), lambda t, ans, x: np.imag(t),
            forms=REAL_OR_COMPLEX, batched=True)
elementwise(np.angle, lambda g, ans, x, deg=False: fit(-1j * np.real(g) * _angle_slope(x, deg), x),
            lambda t, ans, x, deg=False: np.imag(t * _angle_slope(x, deg)),
            forms='any shape; deg', batched=True)
elementwise(np.real_if_close, lambda g, ans, a, tol=100: g,
            lambda t, ans, a, tol=100: np.real(t) if np.isrealobj(ans) else t,
            forms=REAL_OR_COMPLEX, batched=True)
elementwise(np.nan_to_num,
            lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
                fit(np.where(np.isfinite(x), g, 0.0), x),
            lambda t, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
                np.where(np.isfinite(x), t, 0.0),
            forms=REAL, batched=True)
elementwise(np.modf, lambda g, ans, x: fit(_modf_frac(g[0]) + np.zeros_like(x), x),
            lambda t, ans, x: (t, np.zeros_like(ans[1])),
            forms='two outputs (fractional, integral); only the fractional part has a derivative',
            batched=True)

# frexp(x) = (m, e), x = m * 2**e: m moves as x / 2**e (e: integers, piecewise constant)
elementwise(np.frexp,
            lambda g, ans, x: fit(_modf_frac(g[0]) * np.exp2(-ans[1]) + np.zeros_like(x), x),
            lambda t, ans, x: (t * np.exp2(-ans[1]), np.zeros_like(ans[1])),
            forms='two outputs (mantissa m = x / 2**e, integer exponent e): m has a derivative',
            batched=True)


# sign(x): piecewise constant for a real x (zero derivative); x / |x| for a complex one,
# which moves with x: d sign = (dx - s Re(conj(s) dx)) / |x|, and in the pairing
# Re(sum(G * dx)) the cotangent is G = (g - Re(g s) conj(s)) / |x|; 0 at 0.

def _inverse_modulus(x):
    r = np.abs(x)
    return (r != 0) / np.where(r == 0, 1.0, r)


def _no_slope(like):
    """Zeros of `like`'s shape (the derivative of a piecewise-constant function)."""
    if like.__class__ in (float, int):
        return 0.0
    return np.zeros_like(like, dtype=float) if is_foreign_array(like) else np.zeros(np.shape(like))


def sign_vjp(g, ans, x):
    if not np.iscomplexobj(x):
        return fit(_no_slope(x), x)
    return fit((g - np.real(g * ans) * np.conj(ans)) * _inverse_modulus(x), x)


def sign_jvp(t, ans, x):
    if not np.iscomplexobj(x):
        return _no_slope(ans)
    return (t - ans * np.real(np.conj(ans) * t)) * _inverse_modulus(x)



elementwise(np.sign, sign_vjp, sign_jvp, forms='any shape; real: no derivative (piecewise '
            'constant); complex: d(z/|z|), 0 at 0')
