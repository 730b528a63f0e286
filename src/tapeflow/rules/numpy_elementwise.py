"""Rules for NumPy's unary elementwise functions (sin, exp, log, sqrt...).

Each rule is one `return` the compiler can inline: the VJP is `g * f'(x)` and
the JVP `t * f'(x)`, written with `ans` where that saves work (exp, tanh,
sqrt). Constants are Python floats, so a float32 input keeps a float32
cotangent. Holomorphic functions serve complex inputs as they stand (the
pairing is bilinear, as in autograd and JAX); abs, angle, real, imag and conj
have their own complex forms.

Functions with zero derivative almost everywhere (sign, floor, round...) are
non-differentiable: see `numpy_nondiff`.
"""
import math

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules.batching import defjvp_batched
from tapeflow.rules.operators import conj_unit
from tapeflow.rules.registry import defjvp, defvjp, describe
from tapeflow.rules.shapes import fit

LN2 = math.log(2.0)
LN10 = math.log(10.0)
DEG = math.pi / 180.0
RAD = 180.0 / math.pi
SINC_CURVATURE = -math.pi ** 2 / 3.0


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

def exp_vjp(g, ans, x): return g * ans
def exp_jvp(t, ans, x): return t * ans
def exp2_vjp(g, ans, x): return g * ans * LN2
def exp2_jvp(t, ans, x): return t * ans * LN2
def expm1_vjp(g, ans, x): return g * (ans + 1.0)
def expm1_jvp(t, ans, x): return t * (ans + 1.0)
def log_vjp(g, ans, x): return g / x
def log_jvp(t, ans, x): return t / x
def log2_vjp(g, ans, x): return g / (x * LN2)
def log2_jvp(t, ans, x): return t / (x * LN2)
def log10_vjp(g, ans, x): return g / (x * LN10)
def log10_jvp(t, ans, x): return t / (x * LN10)
def log1p_vjp(g, ans, x): return g / (x + 1.0)
def log1p_jvp(t, ans, x): return t / (x + 1.0)

# ---------------------------------------------------------------- powers

def sqrt_vjp(g, ans, x): return g / (2.0 * ans)
def sqrt_jvp(t, ans, x): return t / (2.0 * ans)
def cbrt_vjp(g, ans, x): return g / (3.0 * ans * ans)
def cbrt_jvp(t, ans, x): return t / (3.0 * ans * ans)
def square_vjp(g, ans, x): return g * (2.0 * x)
def square_jvp(t, ans, x): return t * (2.0 * x)
def reciprocal_vjp(g, ans, x): return -g * ans * ans
def reciprocal_jvp(t, ans, x): return -t * ans * ans

# ---------------------------------------------------------------- trigonometric

def sin_vjp(g, ans, x): return g * np.cos(x)
def sin_jvp(t, ans, x): return t * np.cos(x)
def cos_vjp(g, ans, x): return -g * np.sin(x)
def cos_jvp(t, ans, x): return -t * np.sin(x)
def tan_vjp(g, ans, x): return g * (1.0 + ans * ans)
def tan_jvp(t, ans, x): return t * (1.0 + ans * ans)
def arcsin_vjp(g, ans, x): return g / np.sqrt(1.0 - x * x)
def arcsin_jvp(t, ans, x): return t / np.sqrt(1.0 - x * x)
def arccos_vjp(g, ans, x): return -g / np.sqrt(1.0 - x * x)
def arccos_jvp(t, ans, x): return -t / np.sqrt(1.0 - x * x)
def arctan_vjp(g, ans, x): return g / (1.0 + x * x)
def arctan_jvp(t, ans, x): return t / (1.0 + x * x)
def deg2rad_vjp(g, ans, x): return g * DEG
def deg2rad_jvp(t, ans, x): return t * DEG
def rad2deg_vjp(g, ans, x): return g * RAD
def rad2deg_jvp(t, ans, x): return t * RAD
def sinc_vjp(g, ans, x): return g * _sinc_slope(x)
def sinc_jvp(t, ans, x): return t * _sinc_slope(x)

# ---------------------------------------------------------------- hyperbolic

def sinh_vjp(g, ans, x): return g * np.cosh(x)
def sinh_jvp(t, ans, x): return t * np.cosh(x)
def cosh_vjp(g, ans, x): return g * np.sinh(x)
def cosh_jvp(t, ans, x): return t * np.sinh(x)
def tanh_vjp(g, ans, x): return g * (1.0 - ans * ans)
def tanh_jvp(t, ans, x): return t * (1.0 - ans * ans)
def arcsinh_vjp(g, ans, x): return g / np.sqrt(x * x + 1.0)
def arcsinh_jvp(t, ans, x): return t / np.sqrt(x * x + 1.0)
def arccosh_vjp(g, ans, x): return g / np.sqrt(x * x - 1.0)
def arccosh_jvp(t, ans, x): return t / np.sqrt(x * x - 1.0)
def arctanh_vjp(g, ans, x): return g / (1.0 - x * x)
def arctanh_jvp(t, ans, x): return t / (1.0 - x * x)

# ---------------------------------------------------------------- magnitude, complex parts

def abs_vjp(g, ans, x): return np.real(g) * conj_unit(x, ans)
def abs_jvp(t, ans, x): return np.real(t * conj_unit(x, ans))
def fabs_vjp(g, ans, x): return g * np.sign(x)
def fabs_jvp(t, ans, x): return t * np.sign(x)
def conj_vjp(g, ans, x): return np.conj(g)
def conj_jvp(t, ans, x): return np.conj(t)
def real_vjp(g, ans, x): return fit(np.real(g) + 0j, x)
def real_jvp(t, ans, x): return np.real(t)
def imag_vjp(g, ans, x): return fit(-1j * np.real(g), x)
def imag_jvp(t, ans, x): return np.imag(t)
def angle_vjp(g, ans, x, deg=False):
    return fit(-1j * np.real(g) * _angle_slope(x, deg), x)

def angle_jvp(t, ans, x, deg=False):
    return np.imag(t * _angle_slope(x, deg))

def real_if_close_vjp(g, ans, a, tol=100): return g
def real_if_close_jvp(t, ans, a, tol=100): return np.real(t) if np.isrealobj(ans) else t
def nan_to_num_vjp(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return fit(np.where(np.isfinite(x), g, 0.0), x)

def nan_to_num_jvp(t, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return np.where(np.isfinite(x), t, 0.0)

def modf_vjp(g, ans, x): return fit(_modf_frac(g[0]) + np.zeros_like(x), x)
def modf_jvp(t, ans, x): return (t, np.zeros_like(ans[1]))


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


_RULES = [
    (np.sign, sign_vjp, sign_jvp),
    (np.exp, exp_vjp, exp_jvp), (np.exp2, exp2_vjp, exp2_jvp),
    (np.expm1, expm1_vjp, expm1_jvp), (np.log, log_vjp, log_jvp),
    (np.log2, log2_vjp, log2_jvp), (np.log10, log10_vjp, log10_jvp),
    (np.log1p, log1p_vjp, log1p_jvp), (np.sqrt, sqrt_vjp, sqrt_jvp),
    (np.cbrt, cbrt_vjp, cbrt_jvp), (np.square, square_vjp, square_jvp),
    (np.reciprocal, reciprocal_vjp, reciprocal_jvp),
    (np.sin, sin_vjp, sin_jvp), (np.cos, cos_vjp, cos_jvp), (np.tan, tan_vjp, tan_jvp),
    (np.arcsin, arcsin_vjp, arcsin_jvp), (np.arccos, arccos_vjp, arccos_jvp),
    (np.arctan, arctan_vjp, arctan_jvp),
    (np.deg2rad, deg2rad_vjp, deg2rad_jvp), (np.radians, deg2rad_vjp, deg2rad_jvp),
    (np.rad2deg, rad2deg_vjp, rad2deg_jvp), (np.degrees, rad2deg_vjp, rad2deg_jvp),
    (np.sinc, sinc_vjp, sinc_jvp),
    (np.sinh, sinh_vjp, sinh_jvp), (np.cosh, cosh_vjp, cosh_jvp),
    (np.tanh, tanh_vjp, tanh_jvp), (np.arcsinh, arcsinh_vjp, arcsinh_jvp),
    (np.arccosh, arccosh_vjp, arccosh_jvp), (np.arctanh, arctanh_vjp, arctanh_jvp),
    (np.absolute, abs_vjp, abs_jvp), (np.fabs, fabs_vjp, fabs_jvp),
    (np.conjugate, conj_vjp, conj_jvp), (np.real, real_vjp, real_jvp),
    (np.imag, imag_vjp, imag_jvp), (np.angle, angle_vjp, angle_jvp),
    (np.real_if_close, real_if_close_vjp, real_if_close_jvp),
    (np.nan_to_num, nan_to_num_vjp, nan_to_num_jvp), (np.modf, modf_vjp, modf_jvp),
]

for _fn, _vjp, _jvp in _RULES:
    defvjp(_fn, _vjp)
    defjvp(_fn, _jvp)

# A batch `(B,) + shape(x)` of tangents meets nothing broadcast (rules/batching.py): the
# JVPs of the functions that are not ufuncs take it as they stand, and so does modf's,
# whose pair of outputs the elementwise lift does not know.
for _fn, _jvp in [(np.real, real_jvp), (np.imag, imag_jvp), (np.angle, angle_jvp),
                  (np.sinc, sinc_jvp), (np.real_if_close, real_if_close_jvp),
                  (np.nan_to_num, nan_to_num_jvp), (np.modf, modf_jvp)]:
    defjvp_batched(_fn, _jvp)

describe('any shape, float or complex (holomorphic)', *[
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sqrt, np.square,
    np.reciprocal, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh,
    np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh])
describe('any shape, real', np.cbrt, np.deg2rad, np.radians, np.rad2deg, np.degrees,
         np.sinc, np.fabs, np.nan_to_num)
describe('any shape, real or complex (|z|: conj(z)/|z|; 0 at 0)', np.absolute)
describe('any shape, real or complex', np.conjugate, np.real, np.imag, np.real_if_close)
describe('any shape; deg', np.angle)
describe('any shape; real: no derivative (piecewise constant); complex: d(z/|z|), 0 at 0',
         np.sign)
describe('two outputs (fractional, integral); only the fractional part has a derivative',
         np.modf)
