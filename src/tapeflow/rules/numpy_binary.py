"""Rules for NumPy's binary elementwise functions, `where` and `clip`.

(add, subtract, multiply, divide, power and matmul live in `operators`, shared
with Python's operators.) Every VJP ends in `fit(..., operand)`: summed back
over the axes the operand was broadcast along, in the operand's dtype, a
scalar for a Python float. Every JVP has the output's (broadcast) shape.
Ties of maximum/minimum share the cotangent equally, as in autograd.
"""
import math

import numpy as np

from tapeflow.rules.batching import lift_tangent
from tapeflow.rules.entries import binary, entry
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import fit

LN2 = math.log(2.0)
BROADCASTING = 'broadcasting operands (scalars, 0-d, any shapes)'


def _share(t, x, ans, y):
    """`t` where `x` was chosen (ans == x), halved where x == y; 0 elsewhere."""
    return np.where(x == ans, np.where(x == y, 0.5 * t, t), 0.0)


def _full(t, ans):
    """`t` broadcast to the output's shape, as a fresh array."""
    return t + np.zeros_like(ans)


def _zero(v):
    """Zeros shaped like `v` (never `0.0 * v`: that is NaN where v is inf)."""
    return 0.0 if v.__class__ is float or v.__class__ is int else np.zeros_like(v)


def _remainder_part(g, ans):
    """The cotangent of the second of two outputs (None where it was not used)."""
    return np.zeros_like(ans[1]) if g[1] is None else g[1]


def _safe_div(a, b):
    return a / np.where(b == 0, 1.0, b)


def _log_base(x):
    return np.log(np.where(x == 0, 1.0, x))


# ---------------------------------------------------------------- choosers

def max_vjp_x(g, ans, x, y): return fit(_share(g, x, ans, y), x)
def max_vjp_y(g, ans, x, y): return fit(_share(g, y, ans, x), y)
def max_jvp_x(t, ans, x, y): return _full(_share(t, x, ans, y), ans)
def max_jvp_y(t, ans, x, y): return _full(_share(t, y, ans, x), ans)

# ---------------------------------------------------------------- smooth binary functions

binary(np.logaddexp, lambda g, ans, x, y: g * np.exp(x - ans),
       lambda g, ans, x, y: g * np.exp(y - ans), forms=BROADCASTING)
binary(np.logaddexp2, lambda g, ans, x, y: g * np.exp2(x - ans),
       lambda g, ans, x, y: g * np.exp2(y - ans), forms=BROADCASTING)
binary(np.hypot, lambda g, ans, x, y: g * _safe_div(x, ans),
       lambda g, ans, x, y: g * _safe_div(y, ans), forms=BROADCASTING)
binary(np.arctan2, lambda g, ans, x, y: g * y / (x * x + y * y),
       lambda g, ans, x, y: -g * x / (x * x + y * y), forms=BROADCASTING)
binary(np.float_power, lambda g, ans, x, y: g * y * np.float_power(x, y - 1),
       lambda g, ans, x, y: g * ans * _log_base(x), forms=BROADCASTING)

# ---------------------------------------------------------------- remainders, signs

def mod_vjp_x(g, ans, x, y): return fit(g, x)
def mod_vjp_y(g, ans, x, y): return fit(-g * np.floor_divide(x, y), y)
def mod_jvp_x(t, ans, x, y): return _full(t, ans)
def mod_jvp_y(t, ans, x, y): return -t * np.floor_divide(x, y)
def fmod_vjp_y(g, ans, x, y): return fit(-g * np.trunc(x / y), y)
def fmod_jvp_y(t, ans, x, y): return -t * np.trunc(x / y)
def copysign_vjp_x(g, ans, x, y): return fit(g * np.sign(x) * np.sign(ans), x)
def copysign_jvp_x(t, ans, x, y): return t * np.sign(x) * np.sign(ans)
def zero_vjp_y(g, ans, x, y): return fit(_zero(g), y)
def zero_jvp_y(t, ans, x, y): return _zero(_full(t, ans))
def ldexp_vjp_x(g, ans, x, y): return fit(g * np.exp2(y), x)
def ldexp_jvp_x(t, ans, x, y): return _full(t * np.exp2(y), ans).astype(ans.dtype)
# np.divmod(x, y) = (x // y, x % y): the quotient is piecewise constant, the remainder
# moves as np.remainder's (an unused output's cotangent is None)
def divmod_vjp_x(g, ans, x, y): return fit(_remainder_part(g, ans), x)
def divmod_vjp_y(g, ans, x, y): return fit(-_remainder_part(g, ans) * np.floor_divide(x, y), y)
def divmod_jvp_x(t, ans, x, y): return (np.zeros_like(ans[0]), _full(t, ans[1]))
def divmod_jvp_y(t, ans, x, y):
    return (np.zeros_like(ans[0]), _full(-t * np.floor_divide(x, y), ans[1]))
def divmod_jvp_x_batched(t, ans, x, y): return divmod_jvp_x(lift_tangent(t, x, ans[1]), ans, x, y)
def divmod_jvp_y_batched(t, ans, x, y): return divmod_jvp_y(lift_tangent(t, y, ans[1]), ans, x, y)
def heaviside_vjp_x(g, ans, x, y): return fit(_zero(g), x)
def heaviside_vjp_y(g, ans, x, y): return fit(np.where(x == 0, g, 0.0), y)
def heaviside_jvp_x(t, ans, x, y): return _zero(_full(t, ans))
def heaviside_jvp_y(t, ans, x, y): return _full(np.where(x == 0, t, 0.0), ans)


def _share_vjp(h, ans, t, x, out, y): return fit(_share(h, x, out, y), t)
def _share_jvp(tt, ans, t, x, out, y): return _share(tt, x, out, y)
def _share_vjp_x(h, ans, t, x, out, y): return fit(_zero(h), x)
def _share_vjp_out(h, ans, t, x, out, y): return fit(_zero(h), out)
def _share_vjp_y(h, ans, t, x, out, y): return fit(_zero(h), y)
def _share_zero_jvp(tt, ans, t, x, out, y): return _zero(ans)
def _share_jvp_batched(tt, ans, t, x, out, y): return _share(lift_tangent(tt, t, ans), x, out, y)


# Generated code calls `_share` (inlined from the choosers' rules): linear in t,
# piecewise constant in the others.
_SHARE_ZERO = (_share_zero_jvp,) * 3
entry(_share, (_share_vjp, _share_vjp_x, _share_vjp_out, _share_vjp_y),
      (_share_jvp, *_SHARE_ZERO), batched=(_share_jvp_batched, *_SHARE_ZERO), forms=None)

entry(np.maximum, (max_vjp_x, max_vjp_y), (max_jvp_x, max_jvp_y),
      also=(np.minimum, np.fmax, np.fmin),
      forms='broadcasting operands (scalars, 0-d, any shapes); ties share equally')
entry(np.remainder, (mod_vjp_x, mod_vjp_y), (mod_jvp_x, mod_jvp_y), forms=BROADCASTING)
entry(np.fmod, (mod_vjp_x, fmod_vjp_y), (mod_jvp_x, fmod_jvp_y), forms=BROADCASTING)
entry(np.divmod, (divmod_vjp_x, divmod_vjp_y), (divmod_jvp_x, divmod_jvp_y),
      batched=(divmod_jvp_x_batched, divmod_jvp_y_batched),
      forms='broadcasting operands; two outputs (x // y, x % y): the remainder has a '
            'derivative, 1 in x and -(x // y) in y')
entry(np.copysign, (copysign_vjp_x, zero_vjp_y), (copysign_jvp_x, zero_jvp_y),
      forms=BROADCASTING)
entry(np.nextafter, (mod_vjp_x, zero_vjp_y), (mod_jvp_x, zero_jvp_y),
      forms='broadcasting operands; x plus a step that moves only in jumps: 1 in x, 0 in y')
entry(np.ldexp, ldexp_vjp_x, ldexp_jvp_x, static=(1,),
      forms='broadcasting operands; the integer exponent is static')
entry(np.heaviside, (heaviside_vjp_x, heaviside_vjp_y), (heaviside_jvp_x, heaviside_jvp_y),
      forms=BROADCASTING)


# ---------------------------------------------------------------- where

def where_vjp_x(g, ans, condition, x, y): return fit(np.where(condition, g, 0.0), x)
def where_vjp_y(g, ans, condition, x, y): return fit(np.where(condition, 0.0, g), y)
def where_jvp_x(t, ans, condition, x, y): return np.where(condition, t, np.zeros_like(ans))
def where_jvp_y(t, ans, condition, x, y): return np.where(condition, np.zeros_like(ans), t)


# Batched (rules/batching.py): the batch `(B,) + shape` lifted as for a ufunc.
def where_jvp_x_batched(t, ans, condition, x, y):
    return where_jvp_x(lift_tangent(t, x, ans), ans, condition, x, y)

def where_jvp_y_batched(t, ans, condition, x, y):
    return where_jvp_y(lift_tangent(t, y, ans), ans, condition, x, y)


entry(np.where, (None, where_vjp_x, where_vjp_y), (None, where_jvp_x, where_jvp_y),
      batched=(None, where_jvp_x_batched, where_jvp_y_batched), static=(0,),
      forms='where(condition, x, y) with broadcasting; condition static')


# ---------------------------------------------------------------- clip

def _bounds(a_min, a_max, low, high):
    """The clip bounds, given positionally (a_min, a_max) or as min=, max=."""
    return (low if a_min is None else a_min), (high if a_max is None else a_max)


def _inside(a, a_min, a_max, low, high):
    low, high = _bounds(a_min, a_max, low, high)
    inside = np.ones(np.shape(a), dtype=bool)
    if low is not None:
        inside = inside & (a >= low)
    if high is not None:
        inside = inside & (a <= high)
    return inside


def _below(a, a_min, a_max, low, high):
    low, high = _bounds(a_min, a_max, low, high)
    below = a < low
    return below if high is None else below & (low <= high)


def _above(a, a_min, a_max, low, high):
    low, high = _bounds(a_min, a_max, low, high)
    return (a > high) | (low > high) if low is not None else a > high


def clip_vjp_a(g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return fit(np.where(_inside(a, a_min, a_max, min, max), g, 0.0), a)

def clip_vjp_min(g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return fit(np.where(_below(a, a_min, a_max, min, max), g, 0.0), a_min)

def clip_vjp_max(g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return fit(np.where(_above(a, a_min, a_max, min, max), g, 0.0), a_max)

def clip_jvp_a(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return np.where(_inside(a, a_min, a_max, min, max), t, np.zeros_like(ans))

def clip_jvp_min(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return np.where(_below(a, a_min, a_max, min, max), t, np.zeros_like(ans))

def clip_jvp_max(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return np.where(_above(a, a_min, a_max, min, max), t, np.zeros_like(ans))


def clip_jvp_a_batched(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return clip_jvp_a(lift_tangent(t, a, ans), ans, a, a_min, a_max, min=min, max=max)

def clip_jvp_min_batched(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return clip_jvp_min(lift_tangent(t, a_min, ans), ans, a, a_min, a_max, min=min, max=max)

def clip_jvp_max_batched(t, ans, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return clip_jvp_max(lift_tangent(t, a_max, ans), ans, a, a_min, a_max, min=min, max=max)


nondifferentiable(_inside, _below, _above, _zero)   # masks, zeros (not _bounds: the bounds move)
entry(np.clip, (clip_vjp_a, clip_vjp_min, clip_vjp_max), (clip_jvp_a, clip_jvp_min, clip_jvp_max),
      batched=(clip_jvp_a_batched, clip_jvp_min_batched, clip_jvp_max_batched),
      forms='a_min/a_max (or min=/max=) scalars, arrays or None, broadcasting; '
            'derivative in a, a_min and a_max')
