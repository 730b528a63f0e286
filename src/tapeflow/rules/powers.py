"""Rules of `x ** y` (operator.pow, np.power, `**=`), and the helpers the rules of
every power share (math.pow's too): `times_log(a, x)`, `a * log(x)` that stays 0
where `a` is 0, with rules of its own so that it differentiates again.
"""
import math
import operator

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import alias, describe
from tapeflow.rules.shapes import broadcast_tangent, unbroadcast


def _log_base(x):
    """log(x), for the derivative of `x ** y` in y.

    0 where x == 0 (d(0 ** y)/dy is taken as 0, as in JAX); NaN where a real x
    is negative: there `x ** y` is not a differentiable function of y (it is
    NaN for every non-integer y), and no number would be right. Complex x: the
    principal log.
    """
    if x.__class__ is float or x.__class__ is int:
        return math.log(x) if x > 0 else (0.0 if x == 0 else math.nan)
    if np.iscomplexobj(x):
        return np.log(np.where(x == 0, 1, x))
    return np.where(x < 0, np.nan, np.log(np.where(x > 0, x, 1)))


def times_log(a, x):
    """`a * log(x)`, exactly 0 where `a` is 0.

    `a` is the cotangent (or tangent) times `x ** y`: where it is zero, so is
    the contribution, even where log(x) is NaN. A zero tangent of an exponent
    that does not really move (an integer popped from a tape) must not turn
    the base's derivative into NaN (`0 * nan`): select, never multiply.
    """
    if a.__class__ is float or a.__class__ is int:
        if a == 0:
            return 0.0
        if x.__class__ is float or x.__class__ is int:
            return a * _log_base(x)
    return a * _log_base(np.where(a == 0, 1, x))


def _over(b, x):
    """`b / x`, exactly 0 where `b` is 0 (the derivative of `times_log` in x)."""
    if b.__class__ is float or b.__class__ is int:
        if b == 0:
            return 0.0
        if x.__class__ is float or x.__class__ is int:
            return b / x
    return b / np.where(b == 0, 1, x)


# Generated code calls `times_log` and `_over` (from the rules of `**` and pow); their
# own rules keep the zero-stays-zero guarantee at every order.
def _times_log_vjp_a(h, ans, a, x):
    return unbroadcast(times_log(h, x), a)


def _times_log_vjp_x(h, ans, a, x):
    return unbroadcast(_over(h * a, x), x)


def _times_log_jvp_a(t, ans, a, x):
    return broadcast_tangent(times_log(t, x), ans)


def _times_log_jvp_x(t, ans, a, x):
    return broadcast_tangent(_over(t * a, x), ans)


def _over_vjp_b(h, ans, b, x):
    return unbroadcast(_over(h, x), b)


def _over_vjp_x(h, ans, b, x):
    return unbroadcast(-_over(h * ans, x), x)


def _over_jvp_b(t, ans, b, x):
    return broadcast_tangent(_over(t, x), ans)


def _over_jvp_x(t, ans, b, x):
    return broadcast_tangent(-_over(t * ans, x), ans)


entry(times_log, (_times_log_vjp_a, _times_log_vjp_x), (_times_log_jvp_a, _times_log_jvp_x),
      forms=None)
entry(_over, (_over_vjp_b, _over_vjp_x), (_over_jvp_b, _over_jvp_x), forms=None)


def _slope_exponent(y):
    """`y`, with 1 where it is 0: `y * x ** (y1 - 1)` is then the slope y x^(y-1) with 0
    (not 0 * inf) where y is 0, x^0 being 1 everywhere, at x = 0 too (as JAX)."""
    if y.__class__ is float or y.__class__ is int:
        return y if y != 0 else 1.0
    return np.where(y == 0, 1.0, y)


_slope_exponent.__tapeflow_folds__ = True     # pure on literals: `transforms.fold` calls it


def pow_vjp_x(g, ans, x, y):
    return unbroadcast(g * y * x ** (_slope_exponent(y) - 1), x)


def pow_vjp_y(g, ans, x, y):
    return unbroadcast(times_log(g * ans, x), y)


def pow_jvp_x(t, ans, x, y):
    return broadcast_tangent(t * y * x ** (_slope_exponent(y) - 1), ans)


def pow_jvp_y(t, ans, x, y):
    return broadcast_tangent(times_log(t * ans, x), ans)


BROADCASTING = 'broadcasting operands (scalars, 0-d arrays, any shapes); Python floats'
entry(operator.pow, (pow_vjp_x, pow_vjp_y), (pow_jvp_x, pow_jvp_y), forms=BROADCASTING)

alias(np.power, operator.pow)
alias(operator.ipow, operator.pow)
describe(BROADCASTING, operator.ipow, np.power)
