"""Rules for Python's `math` module and the numeric builtins (abs, pow, min,
max, sum, float) on Python scalars.

These are the hot path of scalar loops, so each rule is one `return` built
from `math` functions on floats (no NumPy call, no array): the compiler
inlines it. Where NumPy's function has the same formula (sin, exp, sqrt...),
math's rules are NumPy's entry read with math's functions (`scalar=` in
`numpy_elementwise`); the others are here, one entry each where they can be. Their arguments are Python numbers; the cotangent of a float is a
float. Sequence functions (fsum, prod, sum, sumprod, dist) take a list and
give a list cotangent. Batched JVPs (rules/batching.py) meet `(B,)` arrays of
tangents where a rule meets a float, and may call NumPy.
"""
import builtins
import math
import operator

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules.powers import times_log
from tapeflow.rules.batching import defjvp_batched, lift_tangent
from tapeflow.rules.entries import PYTHON_FLOATS, elementwise, entry
from tapeflow.rules.sequences import Items
from tapeflow.rules.shapes import unbroadcast
from tapeflow.runtime.helpers import add_adjoint
from tapeflow.rules.registry import (alias, defjvp, defvjp, describe, linear_pair, nondifferentiable,
                                     version_dependent)

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def digamma(x):
    """The digamma function on floats (d lgamma / dx), to ~1e-13."""
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    if x < 0.5:
        return digamma(1.0 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 8.0:                  # (rebinding, not +=: read as writing into an array x)
        shift = shift - 1.0 / x
        x = x + 1.0
    inv = 1.0 / (x * x)
    series = inv * (1.0 / 12 - inv * (1.0 / 120 - inv * (1.0 / 252 - inv * (
        1.0 / 240 - inv * (1.0 / 132)))))
    return shift + math.log(x) - 0.5 / x - series


def sign(x):
    return (x > 0) - (x < 0)


def _hypot_part(x, ans):
    return x / ans if ans else 0.0


def _zero(v):
    """0 shaped like `v` (a float, or a batch of tangents); never `0.0 * v`, NaN at inf."""
    return 0.0 if v.__class__ is float or v.__class__ is int else np.zeros_like(v)


# ---------------------------------------------------------------- one argument

# (sin, exp, sqrt... are NumPy's entries read with math's functions: numpy_elementwise)
elementwise(math.erf, lambda g, ans, x: g * TWO_OVER_SQRT_PI * math.exp(-x * x),
            forms=PYTHON_FLOATS)
elementwise(math.erfc, lambda g, ans, x: -g * TWO_OVER_SQRT_PI * math.exp(-x * x),
            forms=PYTHON_FLOATS)
elementwise(math.gamma, lambda g, ans, x: g * ans * digamma(x), forms=PYTHON_FLOATS)
elementwise(math.lgamma, lambda g, ans, x: g * digamma(x), forms=PYTHON_FLOATS)
elementwise(math.fabs, lambda g, ans, x: g * sign(x), forms=PYTHON_FLOATS)
elementwise(float, lambda g, ans, x=0.0: g, forms=PYTHON_FLOATS, batched=True)
elementwise(math.modf, lambda g, ans, x: 0.0 if g[0] is None else g[0],
            lambda t, ans, x: (t, 0.0), forms=PYTHON_FLOATS, batched=True)

def log_vjp(g, ans, x, base=math.e): return g / (x * math.log(base))
def log_jvp(t, ans, x, base=math.e): return t / (x * math.log(base))
def log_vjp_base(g, ans, x, base=math.e): return -g * ans / (base * math.log(base))
def log_jvp_base(t, ans, x, base=math.e): return -t * ans / (base * math.log(base))
def complex_vjp_real(g, ans, real=0.0, imag=0.0): return unbroadcast(g, real)
def complex_vjp_imag(g, ans, real=0.0, imag=0.0): return unbroadcast(1j * g, imag)
def complex_jvp_real(t, ans, real=0.0, imag=0.0): return t + 0j
def complex_jvp_imag(t, ans, real=0.0, imag=0.0): return 1j * t

# ---------------------------------------------------------------- two arguments

def pow_vjp_x(g, ans, x, y, mod=None): return g * y * x ** (y - 1) if y else _zero(g)
def pow_vjp_y(g, ans, x, y, mod=None): return times_log(g * ans, x)
def pow_jvp_x(t, ans, x, y, mod=None): return t * y * x ** (y - 1) if y else _zero(t)
def pow_jvp_y(t, ans, x, y, mod=None): return times_log(t * ans, x)
def atan2_vjp_y(g, ans, y, x): return g * x / (x * x + y * y)
def atan2_vjp_x(g, ans, y, x): return -g * y / (x * x + y * y)
def atan2_jvp_y(t, ans, y, x): return t * x / (x * x + y * y)
def atan2_jvp_x(t, ans, y, x): return -t * y / (x * x + y * y)
def copysign_vjp_x(g, ans, x, y): return g * sign(x) * sign(ans)
def copysign_jvp_x(t, ans, x, y): return t * sign(x) * sign(ans)
def zero_vjp(g, ans, x, y): return _zero(g)
def zero_jvp(t, ans, x, y): return _zero(t)
def first_vjp(g, ans, x, y): return g
def first_jvp(t, ans, x, y): return t
def fmod_vjp_y(g, ans, x, y): return -g * math.trunc(x / y)
def fmod_jvp_y(t, ans, x, y): return -t * math.trunc(x / y)
def remainder_vjp_y(g, ans, x, y): return -g * round((x - ans) / y)
def remainder_jvp_y(t, ans, x, y): return -t * round((x - ans) / y)
def ldexp_vjp(g, ans, x, i): return g * 2.0 ** i
def ldexp_jvp(t, ans, x, i): return t * 2.0 ** i
def nextafter_vjp_x(g, ans, x, y, steps=1): return g
def nextafter_vjp_y(g, ans, x, y, steps=1): return _zero(g)
def nextafter_jvp_x(t, ans, x, y, steps=1): return t
def nextafter_jvp_y(t, ans, x, y, steps=1): return _zero(t)
# frexp(x) = (m, e), x = m * 2**e: m moves as x / 2**e (e is an integer, piecewise constant)
def frexp_vjp(g, ans, x): return 0.0 if g[0] is None else math.ldexp(g[0], -ans[1])
def frexp_jvp(t, ans, x): return (t * 2.0 ** -ans[1], 0.0)
# divmod(x, y) = (x // y, x % y): the quotient is piecewise constant, the remainder is %
def divmod_vjp_x(g, ans, x, y): return _zero(x) if g[1] is None else unbroadcast(g[1], x)
def divmod_vjp_y(g, ans, x, y):
    return _zero(y) if g[1] is None else unbroadcast(-g[1] * (x // y), y)
def divmod_jvp_x(t, ans, x, y): return (_zero(ans[0]), t + _zero(ans[1]))
def divmod_jvp_y(t, ans, x, y): return (_zero(ans[0]), -t * (x // y) + _zero(ans[1]))
def fma_vjp_x(g, ans, x, y, z): return g * y
def fma_vjp_y(g, ans, x, y, z): return g * x
def fma_vjp_z(g, ans, x, y, z): return g
def fma_jvp_x(t, ans, x, y, z): return t * y
def fma_jvp_y(t, ans, x, y, z): return t * x
def fma_jvp_z(t, ans, x, y, z): return t

# ---------------------------------------------------------------- variadic and sequences

def _chosen(args, ans, i):
    """True when argument i is the one min/max returned (the first of equals)."""
    values = args[0] if len(args) == 1 else args
    foreign = is_foreign_array(ans)
    for k, v in enumerate(values):
        # a CuPy array on the left: NumPy's scalar would make itself an array, which CuPy refuses
        if (ans == v) if foreign else (v == ans):
            return k == i
    return False


def _products_of_others(xs):
    out = []
    for i in range(len(xs)):
        p = 1.0
        for k, v in enumerate(xs):
            if k != i:
                p *= v
        out.append(p)
    return out


def fsum_vjp(g, ans, seq): return [g] * len(seq)
def fsum_jvp(t, ans, seq): return math.fsum(t)
def prod_vjp(g, ans, seq, start=1): return [g * start * p for p in _products_of_others(seq)]
def prod_jvp(t, ans, seq, start=1):
    return start * math.fsum(ti * p for ti, p in zip(t, _products_of_others(seq)))

def sumprod_vjp_p(g, ans, p, q): return [g * v for v in q]
def sumprod_vjp_q(g, ans, p, q): return [g * v for v in p]
def sumprod_jvp_p(t, ans, p, q): return math.sumprod(t, q)
def sumprod_jvp_q(t, ans, p, q): return math.sumprod(p, t)
def dist_vjp_p(g, ans, p, q): return [g * _hypot_part(a - b, ans) for a, b in zip(p, q)]
def dist_vjp_q(g, ans, p, q): return [-g * _hypot_part(a - b, ans) for a, b in zip(p, q)]
def dist_jvp_p(t, ans, p, q):
    return math.fsum(ti * _hypot_part(a - b, ans) for ti, a, b in zip(t, p, q))

def dist_jvp_q(t, ans, p, q):
    return -math.fsum(ti * _hypot_part(a - b, ans) for ti, a, b in zip(t, p, q))


# Batched (rules/batching.py): the items of `t` are `(B,)` arrays or, unbatched, floats;
# math.fsum takes neither, builtins.sum both. modf's pair has no lift to undergo.

def fsum_jvp_batched(t, ans, seq): return builtins.sum(t)
def prod_jvp_batched(t, ans, seq, start=1):
    return start * builtins.sum(ti * p for ti, p in zip(t, _products_of_others(seq)))

def sumprod_jvp_p_batched(t, ans, p, q): return builtins.sum(ti * v for ti, v in zip(t, q))
def sumprod_jvp_q_batched(t, ans, p, q): return builtins.sum(v * ti for ti, v in zip(t, p))
def dist_jvp_p_batched(t, ans, p, q):
    return builtins.sum(ti * _hypot_part(a - b, ans) for ti, a, b in zip(t, p, q))

def dist_jvp_q_batched(t, ans, p, q):
    return -builtins.sum(ti * _hypot_part(a - b, ans) for ti, a, b in zip(t, p, q))


def _variadic(fn, vjp, jvp, count=32, batched=None, linear=False):
    """Rules for each argument of `fn(*args)`. `linear`: each rule is linear in its
    cotangent (tangent), the two transposes of each other, and the arguments only choose
    (max, min, sum): `linear_pair` makes them differentiable again."""
    for i in range(count):
        vjp_i, jvp_i = _at_argument(vjp, i, linear), _at_argument(jvp, i, linear)
        defvjp(fn, vjp_i, argnums=[i])
        defjvp(fn, jvp_i, argnums=[i])
        if linear:
            linear_pair(vjp_i, jvp_i)
        if batched is not None:
            defjvp_batched(fn, _at_argument(batched, i, linear), argnums=[i])


def _at_argument(rule, i, keywords=True):
    """`rule` for argument i, taking the call's arguments as they were given. Without
    keywords (hypot's), the compiler reads it (made for the number of arguments) and
    differentiates it again; with them (max's `key`, `default`), `linear_pair` does."""
    if not keywords:
        def at(g, ans, *args):
            return rule(g, ans, args, i)
        return at

    def at(g, ans, *args, **kw):
        return rule(g, ans, args, i)
    return at


def _hypot_vjp(g, ans, args, i): return g * _hypot_part(args[i], ans)
def _hypot_jvp(t, ans, args, i): return t * _hypot_part(args[i], ans)


def _choice_vjp(g, ans, args, i):
    if len(args) == 1 and isinstance(args[0], np.ndarray):
        # max(x) of an array chooses a row (Python's max over the first axis)
        out = np.zeros(args[0].shape, np.result_type(args[0], float))
        for k in range(len(args[0])):
            if _chosen(args, ans, k):
                out[k] = g
        return out
    if len(args) == 1:
        return [g if _chosen(args, ans, k) else 0.0 for k in range(len(args[0]))]
    return g if _chosen(args, ans, i) else _zero(g)


def _choice_jvp(t, ans, args, i):
    if len(args) == 1:
        return next((tk for k, tk in enumerate(t) if _chosen(args, ans, k)), 0.0)
    return t if _chosen(args, ans, i) else _zero(t)


def _sum_vjp_seq(g, ans, args, i):
    # each item (and the start) was broadcast to the sum's shape: summed back to its own
    if i == 0:
        return [unbroadcast(g, item) for item in args[0]]
    return unbroadcast(g, args[1])


def _sum_jvp_seq(t, ans, args, i):
    return builtins.sum(t) if i == 0 else t


def _choice_jvp_batched(t, ans, args, i):
    if len(args) == 1 and t.__class__ is np.ndarray:    # an array's items, past the batch axis
        t = list(np.moveaxis(t, 1, 0))
    return _choice_jvp(t, ans, args, i)


def _sum_jvp_seq_batched(t, ans, args, i):
    if i == 1:
        return lift_tangent(t, args[1], ans)
    if t.__class__ is np.ndarray:
        return np.sum(t, axis=1)
    return builtins.sum(lift_tangent(ti, item, ans) for ti, item in zip(t, args[0]))


# ---------------------------------------------------------------- registration

BOTH = 'Python floats; derivative in both arguments'
entry(math.log, (log_vjp, log_vjp_base), (log_jvp, log_jvp_base),
      forms='Python floats; log(x) and log(x, base), derivative in both')
entry(math.pow, (pow_vjp_x, pow_vjp_y), (pow_jvp_x, pow_jvp_y), forms=BOTH)
entry(builtins.pow, (pow_vjp_x, pow_vjp_y), (pow_jvp_x, pow_jvp_y),
      batched=(pow_jvp_x, pow_jvp_y), forms=BOTH)       # scalars: a batch as it stands
entry(math.atan2, (atan2_vjp_y, atan2_vjp_x), (atan2_jvp_y, atan2_jvp_x), forms=BOTH)
entry(math.copysign, (copysign_vjp_x, zero_vjp), (copysign_jvp_x, zero_jvp),
      forms='Python floats; derivative in x (the sign argument has none)')
entry(math.fmod, (first_vjp, fmod_vjp_y), (first_jvp, fmod_jvp_y), forms=BOTH)
entry(math.remainder, (first_vjp, remainder_vjp_y), (first_jvp, remainder_jvp_y), forms=BOTH)
entry(math.ldexp, ldexp_vjp, ldexp_jvp, forms='Python float and an int exponent')
entry(math.nextafter, (nextafter_vjp_x, nextafter_vjp_y), (nextafter_jvp_x, nextafter_jvp_y),
      forms='Python floats; x plus a step that moves only in jumps: 1 in x, 0 in y')
entry(math.frexp, frexp_vjp, frexp_jvp, batched=frexp_jvp,
      forms='Python float; two outputs (mantissa m = x / 2**e, exponent e): m has a derivative')
entry(builtins.divmod, (divmod_vjp_x, divmod_vjp_y), (divmod_jvp_x, divmod_jvp_y),
      forms='Python floats and arrays; two outputs (x // y, x % y): the remainder has a '
            'derivative, 1 in x and -(x // y) in y')
SEQUENCE = 'a sequence of floats (cotangent: a list); start'
entry(math.fsum, fsum_vjp, fsum_jvp, batched=fsum_jvp_batched, forms=SEQUENCE)
entry(math.prod, prod_vjp, prod_jvp, batched=prod_jvp_batched, forms=SEQUENCE)
entry(math.dist, (dist_vjp_p, dist_vjp_q), (dist_jvp_p, dist_jvp_q),
      batched=(dist_jvp_p_batched, dist_jvp_q_batched),
      forms='two sequences of coordinates (cotangent: lists)')
entry(complex, (complex_vjp_real, complex_vjp_imag),        # complex(re, im) = re + 1j * im
      (complex_jvp_real, complex_jvp_imag),
      forms='complex(real, imag): Python numbers, by position; the bilinear pairing')
for _fn in version_dependent(math, 'sumprod', 'Python >= 3.12'):
    entry(_fn, (sumprod_vjp_p, sumprod_vjp_q), (sumprod_jvp_p, sumprod_jvp_q),
          batched=(sumprod_jvp_p_batched, sumprod_jvp_q_batched),
          forms='two sequences of floats (cotangent: lists)')
for _fn in version_dependent(math, 'fma', 'Python >= 3.13'):
    entry(_fn, (fma_vjp_x, fma_vjp_y, fma_vjp_z), (fma_jvp_x, fma_jvp_y, fma_jvp_z),
          forms='Python floats; derivative in all three')

_variadic(math.hypot, _hypot_vjp, _hypot_jvp)
def _sequence_vjp(g, ans, x):
    """`list(x)` / `tuple(x)`: the cotangent of the items, in `x`'s structure."""
    if g.__class__ is float and g == 0.0:
        return 0.0
    if isinstance(x, np.ndarray):
        out = np.zeros(x.shape, np.result_type(x, float))
        for k, item in enumerate(g):
            out[k] = item
        return out
    if isinstance(x, list) and isinstance(g, Items):
        return g
    return list(g) if isinstance(x, list) else tuple(g)


def _list_jvp(t, ans, x):
    return list(t)


def _tuple_jvp(t, ans, x):
    return tuple(t)


def repeated(seq, count):
    """`seq * count` for a list or tuple: repetition (desugar writes `[x] * n` so: `*`'s
    rules would scale)."""
    return seq * count


def repeated_vjp(g, ans, seq, count):
    """Each item's cotangent: the sum of its copies' (in the sequence's type)."""
    if g.__class__ is float and g == 0.0:
        return 0.0
    k = len(seq)
    out = [0.0] * k
    for j, part in enumerate(g):        # (items of any structure: a list of tuples too)
        out[j % k] = add_adjoint(out[j % k], part)
    return out if isinstance(seq, list) else tuple(out)


def repeated_jvp(t, ans, seq, count):
    if t.__class__ is float and t == 0.0:
        return 0.0
    return list(t) * count if isinstance(seq, list) else tuple(t) * count


entry(repeated, repeated_vjp, repeated_jvp, static=(1,),
      forms='a list or tuple repeated an int number of times ([x] * n)')
linear_pair(repeated_vjp, repeated_jvp)
MADE = 'a list, tuple or array (its rows) made a list / tuple'
entry(builtins.list, _sequence_vjp, _list_jvp, forms=MADE)
entry(builtins.tuple, _sequence_vjp, _tuple_jvp, forms=MADE)
_variadic(builtins.max, _choice_vjp, _choice_jvp, batched=_choice_jvp_batched, linear=True)
_variadic(builtins.min, _choice_vjp, _choice_jvp, batched=_choice_jvp_batched, linear=True)
_variadic(builtins.sum, _sum_vjp_seq, _sum_jvp_seq, count=2, batched=_sum_jvp_seq_batched,
          linear=True)
alias(builtins.abs, operator.abs)

nondifferentiable(
    math.floor, math.ceil, math.trunc, math.isfinite, math.isinf, math.isnan,
    math.isclose, math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt,
    math.ulp,
    builtins.round, builtins.int, builtins.bool, builtins.len, builtins.range,
    builtins.isinstance, _zero,
)

describe('any number of Python floats', math.hypot)
describe('several scalars, or one sequence (cotangent: a list); the first of equal '
         'values is chosen', builtins.max, builtins.min)
describe('a sequence (cotangent: a list) and start', builtins.sum)
describe('Python floats and NumPy arrays', builtins.abs)
