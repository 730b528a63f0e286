"""Spec table: elementwise functions, operators, math, scipy.special."""
import builtins
import math
import operator

import numpy as np

from rulecheck import A, F, L, Spec
from tapeflow.rules import powers
from tapeflow.rules.iterators import iterated, zipped
from tapeflow.rules.math_rules import repeated
from tapeflow.rules.guards import kept_value, written_value
from tapeflow.rules.sequence_ops import add_any, concatenated, mul_any, star_items
from tapeflow.rules.registry import available

SHAPES = [(), (3,), (2, 3)]


def unary(fn, lo=-2.0, hi=2.0, complex_=False, **kw):
    name = getattr(fn, '__name__', str(fn))
    out = [Spec(fn, (A(shape, lo, hi),), name=f'{name}{shape}', **kw) for shape in SHAPES]
    out.append(Spec(fn, (F(lo, hi),), name=f'{name}(float)', **kw))
    if complex_:
        out.append(Spec(fn, (A((3,), lo, hi, complex_=True),), name=f'{name}(complex)', **kw))
    return out


def binary(fn, lo=-2.0, hi=2.0, lo2=None, hi2=None, **kw):
    lo2, hi2 = (lo if lo2 is None else lo2), (hi if hi2 is None else hi2)
    name = getattr(fn, '__name__', str(fn))
    pairs = [((3,), (2, 3)), ((4, 1), (3,)), ((2, 3), (2, 3)), ((), (2, 2)), ((2, 2), ())]
    out = [Spec(fn, (A(a, lo, hi), A(b, lo2, hi2)), name=f'{name}{a}{b}', **kw)
           for a, b in pairs]
    out.append(Spec(fn, (F(lo, hi), A((3,), lo2, hi2)), name=f'{name}(float,(3,))', **kw))
    out.append(Spec(fn, (A((2,), lo, hi), F(lo2, hi2)), name=f'{name}((2,),float)', **kw))
    out.append(Spec(fn, (F(lo, hi), F(lo2, hi2)), name=f'{name}(float,float)', **kw))
    return out


SPECS = []
for _fn in (np.exp, np.expm1, np.sin, np.cos, np.tanh, np.sinh, np.cosh, np.square,
            np.arctan, np.arcsinh):
    SPECS += unary(_fn, complex_=True)
for _fn in (np.exp2, np.deg2rad, np.rad2deg, np.radians, np.degrees, np.sinc, np.fabs,
            np.nan_to_num):
    SPECS += unary(_fn)
for _fn in (np.log, np.log2, np.log10, np.sqrt, np.reciprocal):
    SPECS += unary(_fn, 0.3, 3.0, complex_=True)
SPECS += unary(np.log1p, -0.5, 2.0) + unary(np.cbrt, 0.3, 3.0)
SPECS += unary(np.tan, -1.2, 1.2, complex_=True)
SPECS += unary(np.arcsin, -0.9, 0.9) + unary(np.arccos, -0.9, 0.9)
SPECS += unary(np.arctanh, -0.9, 0.9) + unary(np.arccosh, 1.2, 3.0)
SPECS += unary(np.absolute, complex_=True)
SPECS += unary(np.sign, 0.2, 2.0, complex_=True)     # real: zero away from 0
SPECS += [
    Spec(np.sinc, (A(value=[0.0, 0.5, -1.5]),), name='sinc(at 0)'),
    Spec(np.nan_to_num, (A(value=[1.0, np.inf, -0.5]),), name='nan_to_num(inf)'),
    Spec(np.conjugate, (A((3,), complex_=True),), name='conjugate(complex)'),
    Spec(np.real, (A((3,), complex_=True),), name='real(complex)'),
    Spec(np.real, (A((2, 3)),), name='real(real)'),
    Spec(np.imag, (A((3,), complex_=True),), name='imag(complex)'),
    Spec(np.angle, (A((3,), complex_=True),), name='angle(complex)'),
    Spec(np.angle, (A((3,), complex_=True),), {'deg': True}, name='angle(deg)'),
    Spec(np.real_if_close, (A((3,)),), name='real_if_close'),
    Spec(np.modf, (A((4,), 0.1, 3.0),), name='modf'),
    Spec(np.frexp, (A((4,), 0.1, 3.0),), name='frexp'),
]

for _fn in (np.maximum, np.minimum, np.fmax, np.fmin, np.logaddexp, np.logaddexp2,
            np.hypot, np.arctan2):
    SPECS += binary(_fn)
SPECS += binary(np.float_power, 0.3, 2.0, -2.0, 2.0)
SPECS += binary(np.remainder, 0.1, 3.0, 0.7, 1.3)
SPECS += binary(np.fmod, -3.0, 3.0, 0.7, 1.3)
SPECS += binary(np.copysign, 0.2, 2.0, -2.0, 2.0)
SPECS += [
    Spec(np.fmax, (A(value=[1.0, np.nan, 3.0]), A(value=[2.0, 0.5, np.nan])),
         name='fmax(nan)', f32=False),
    Spec(np.ldexp, (A((2, 3)), np.array([1, -2, 3])), name='ldexp'),
    Spec(np.nextafter, (A((2, 3)), A((3,))), name='nextafter'),
    Spec(np.divmod, (A((2, 3), 0.1, 3.0), A((3,), 0.7, 1.3)), name='divmod'),
    Spec(np.divmod, (A((2,), 0.1, 3.0), F(0.7, 1.3)), name='divmod((2,),float)'),
    Spec(complex, (A(()), A(())), name='complex(re, im)', f32=False, tensor=False),
    Spec(np.heaviside, (A(value=[0.0, 1.5, -1.0]), A((3,))), name='heaviside', wrt=(1,)),
    Spec(np.heaviside, (A((2, 3)), A((3,))), name='heaviside(x)', wrt=(0,)),
    Spec(np.where, (np.array([True, False, True]), A((2, 3)), A((3,))), name='where'),
    Spec(np.where, (np.array([[True], [False]]), A(()), F()), name='where(scalars)'),
    Spec(np.clip, (A((2, 3), -3, 3), -1.0, 1.0), name='clip(consts)'),
    Spec(np.clip, (A((2, 3), -3, 3), A((3,), -2, -0.5), A((2, 1), 0.5, 2)), name='clip(arrays)'),
    Spec(np.clip, (A((4,), -3, 3), None, 0.5), name='clip(None)'),
    Spec(np.clip, (A((4,), -3, 3),), {'min': -0.5, 'max': 0.5}, name='clip(min=,max=)'),
    Spec(np.clip, (A((3,), -3, 3), A(value=2.0), A(value=1.0)), name='clip(min>max)'),
]

# Python's operators (the rules in `operators`).
for _op in (operator.add, operator.sub, operator.mul, np.add, np.subtract, np.multiply):
    SPECS += binary(_op)
SPECS += binary(operator.truediv, -2.0, 2.0, 0.5, 2.0) + binary(np.divide, -2.0, 2.0, 0.5, 2.0)
SPECS += binary(operator.pow, 0.3, 2.0, -2.0, 2.0) + binary(np.power, 0.3, 2.0, -2.0, 2.0)
SPECS += binary(operator.mod, 0.1, 3.0, 0.7, 1.3)
SPECS += unary(operator.neg) + unary(operator.pos) + unary(operator.abs, complex_=True)
SPECS += [
    Spec(operator.iadd, (F(), F()), name='iadd', f32=False),
    Spec(operator.imul, (F(), F()), name='imul', f32=False),
    Spec(operator.matmul, (A((3,)), A((3,))), name='matmul(1,1)'),
    Spec(operator.matmul, (A((2, 3)), A((3,))), name='matmul(2,1)'),
    Spec(operator.matmul, (A((3,)), A((3, 4))), name='matmul(1,2)'),
    Spec(operator.matmul, (A((2, 3)), A((3, 4))), name='matmul(2,2)'),
    Spec(operator.matmul, (A((5, 2, 3)), A((3, 4))), name='matmul(3,2)'),
    Spec(operator.matmul, (A((3,)), A((5, 3, 4))), name='matmul(1,3)'),
    Spec(operator.matmul, (A((5, 1, 2, 3)), A((4, 3, 2))), name='matmul(4,3)'),
    Spec(np.linalg.matmul, (A((2, 2, 3)), A((2, 3, 1))), name='linalg.matmul'),
    # the helpers the rules of `**` call (a * log(x), b / x; 0 where a, b are 0)
    Spec(powers.times_log, (A((2, 3)), A((3,), 0.3, 2.0)), name='times_log'),
    Spec(powers.times_log, (F(), F(0.3, 2.0)), name='times_log(float)'),
    Spec(powers._over, (A((2, 3)), A((3,), 0.5, 2.0)), name='_over'),
    Spec(powers._over, (F(), F(0.5, 2.0)), name='_over(float)'),
]

# The math module and the builtins, on Python floats.
for _fn in (math.sin, math.cos, math.atan, math.sinh, math.cosh, math.tanh, math.asinh,
            math.exp, math.expm1, math.erf, math.erfc, math.degrees, math.radians, float):
    SPECS.append(Spec(_fn, (F(),), name=f'math.{_fn.__name__}', f32=False))
for _fn, lo, hi in [(math.tan, -1.2, 1.2), (math.asin, -0.9, 0.9), (math.acos, -0.9, 0.9),
                    (math.atanh, -0.9, 0.9), (math.acosh, 1.2, 3.0), (math.log2, 0.3, 3.0),
                    (math.log10, 0.3, 3.0), (math.log1p, -0.5, 2.0), (math.sqrt, 0.3, 3.0),
                    (math.gamma, 0.3, 4.0), (math.lgamma, 0.3, 4.0), (math.gamma, -2.7, -2.2),
                    (math.fabs, 0.2, 2.0), (math.fabs, -2.0, -0.2), (math.modf, 0.2, 3.0),
                    (builtins.abs, -2.0, -0.2)] + \
        [(_fn, -2, 2) for _fn in available(math, ['exp2'])] + \
        [(_fn, 0.3, 3.0) for _fn in available(math, ['cbrt'])]:
    SPECS.append(Spec(_fn, (F(lo, hi),), name=f'math.{_fn.__name__}({lo},{hi})', f32=False))
# Python >= 3.12 / 3.13
SPECS += [Spec(_fn, (L(F(), F(), F()), L(F(), F(), F())), name='math.sumprod', f32=False)
          for _fn in available(math, ['sumprod'])]
SPECS += [Spec(_fn, (F(), F(), F()), name='math.fma', f32=False) for _fn in available(math, ['fma'])]
SPECS += [
    Spec(math.log, (F(0.3, 3.0),), name='math.log', f32=False),
    Spec(math.log, (F(0.3, 3.0), F(1.5, 4.0)), name='math.log(base)', f32=False),
    Spec(math.pow, (F(0.3, 3.0), F()), name='math.pow', f32=False),
    Spec(builtins.pow, (F(0.3, 3.0), F()), name='pow', f32=False),
    Spec(math.atan2, (F(), F()), name='math.atan2', f32=False),
    Spec(math.hypot, (F(), F(), F()), name='math.hypot', f32=False),
    Spec(math.copysign, (F(0.2, 2), F(-2, -0.2)), name='math.copysign', f32=False),
    Spec(math.fmod, (F(-3, 3), F(0.7, 1.3)), name='math.fmod', f32=False),
    Spec(math.remainder, (F(-3, 3), F(0.7, 1.3)), name='math.remainder', f32=False),
    Spec(math.ldexp, (F(), 3), name='math.ldexp', f32=False),
    Spec(math.frexp, (F(0.3, 3.0),), name='math.frexp', f32=False),
    Spec(math.nextafter, (F(), F(2.5, 3.0)), name='math.nextafter', f32=False),
    Spec(builtins.divmod, (F(0.1, 3.0), F(0.7, 1.3)), name='divmod', f32=False),
    Spec(math.fsum, (L(F(), F(), F()),), name='math.fsum', f32=False),
    Spec(math.prod, (L(F(), F(), F()),), name='math.prod', f32=False),
    Spec(math.prod, (L(F(), F(value=0.0), F()),), name='math.prod(zero)', f32=False),
    Spec(math.dist, (L(F(), F()), L(F(), F())), name='math.dist', f32=False),
    Spec(builtins.max, (F(), F(), F()), name='max(a, b, c)', f32=False),
    Spec(builtins.min, (L(F(), F(), F()),), name='min(list)', f32=False),
    Spec(builtins.sum, (L(F(), F()), F()), name='sum(list, start)', f32=False),
    Spec(builtins.list, (L(F(), F(), F(), tuple_=True),), name='list(tuple)', f32=False,
         tensor=False),
    Spec(builtins.tuple, (L(F(), F()),), name='tuple(list)', f32=False, tensor=False),
    Spec(repeated, (L(F(), F()), 3), name='[a, b] * 3', f32=False, tensor=False),
    Spec(repeated, (L(A((2,)), F(), tuple_=True), 2), name='(a, b) * 2', f32=False,
         tensor=False),
    Spec(builtins.sum, (L(A((2,)), F(), A((1,))),), name='sum(mixed shapes)', f32=False,
         tensor=False),
    Spec(concatenated, (L(F(), F()), L(A((2,)), F())), name='[a, b] + [c, d]', f32=False,
         tensor=False),
    Spec(concatenated, (L(F(), F(), tuple_=True), L(F(), A((3,)), tuple_=True)),
         name='(a, b) + (c, d)', f32=False, tensor=False),
    Spec(add_any, (F(), A((3,))), name='add_any(numbers)', f32=False, tensor=False),
    Spec(add_any, (L(F(), F(), tuple_=True), L(F(), F(), tuple_=True)), name='add_any(tuples)',
         f32=False, tensor=False),
    Spec(mul_any, (A((2, 3)), F()), name='mul_any(numbers)', f32=False, tensor=False),
    Spec(mul_any, (L(F(), A((2,))), 3), name='mul_any(list, 3)', f32=False, tensor=False),
    Spec(mul_any, (2, L(F(), F(), tuple_=True)), name='mul_any(2, tuple)', f32=False,
         tensor=False),
    Spec(zipped, (L(F(), F(), F()), L(F(), F())), name='zipped(a, b)', f32=False,
         tensor=False),
    Spec(builtins.sorted, (L(F(), F(), F(), F()),), name='sorted(list)', f32=False, tensor=False),
    Spec(iterated, (L(F(), A((2,)), F()),), name='iterated(list)', f32=False, tensor=False),
    Spec(iterated, (A((3, 2)),), name='iterated(array)', f32=False, tensor=False),

    Spec(builtins.sorted, (L(A((2,)), A((2,)), A((2,))),), dict(key=np.sum, reverse=True),
         name='sorted(rows, key, reverse)', f32=False, tensor=False),
    Spec(star_items, (L(F(), A((2,)), F()), 2), name='a, *b, c = list', f32=False, tensor=False),
    Spec(star_items, (L(F(), F(), tuple_=True), 1), name='a, *b = tuple', f32=False,
         tensor=False),
    Spec(star_items, (A((3, 2)), 1), name='a, *b = rows', f32=False, tensor=False),
    Spec(kept_value, (L(0, 0, L(F(), A((2,)), tuple_=True), tuple_=True), 1),
         name='kept_value(run, k)', f32=False, tensor=False),
    Spec(written_value, (L(0, 0, L(F(), A((2,)), tuple_=True), tuple_=True), 1, A((2,))),
         name='written_value(run, k, given)', f32=False, tensor=False),
]


def _scipy_specs():
    try:
        import scipy.special as sc
        from scipy.special import _ufuncs
    except ImportError:  # pragma: no cover
        return []
    out = []
    for fn, lo, hi in [(sc.gammaln, 0.3, 4.0), (sc.gamma, 0.3, 4.0), (sc.digamma, 0.3, 4.0),
                       (sc.rgamma, 0.3, 4.0), (sc.erf, -2, 2), (sc.erfc, -2, 2),
                       (sc.erfinv, -0.9, 0.9), (sc.erfcinv, 0.1, 1.9), (sc.erfcx, -1, 2),
                       (sc.expit, -3, 3), (sc.logit, 0.1, 0.9), (sc.log_expit, -3, 3),
                       (sc.ndtr, -2, 2), (sc.log_ndtr, -2, 2), (sc.ndtri, 0.1, 0.9),
                       (sc.entr, 0.1, 2), (sc.i0, -2, 2), (np.i0, -2, 2), (sc.i1, -2, 2),
                       (sc.i0e, -2, 2), (sc.i1e, -2, 2)]:
        out.append(Spec(fn, (A((2, 3), lo, hi),), name=f'special.{fn.__name__}'))
    out += [
        Spec(sc.i1, (A(value=[0.0, 1.0]),), name='special.i1(0)'),
        Spec(sc.beta, (A((3,), 0.5, 3), A((2, 1), 0.5, 3)), name='special.beta'),
        Spec(sc.betaln, (A((3,), 0.5, 3), A((2, 1), 0.5, 3)), name='special.betaln'),
        Spec(sc.xlogy, (A((3,)), A((2, 3), 0.2, 3)), name='special.xlogy'),
        Spec(sc.xlog1py, (A((3,)), A((2, 3), -0.5, 3)), name='special.xlog1py'),
        Spec(sc.rel_entr, (A((3,), 0.1, 2), A((3,), 0.1, 2)), name='special.rel_entr'),
        Spec(sc.polygamma, (1, A((3,), 0.5, 3)), name='special.polygamma'),
        Spec(sc.polygamma, (0, A((3,), 0.5, 3)), name='special.polygamma(0)'),
        Spec(_ufuncs._zeta, (3.0, A((3,), 0.5, 3)), name='special.zeta'),
        Spec(sc.logsumexp, (A((2, 3)),), name='special.logsumexp'),
        Spec(sc.logsumexp, (A((2, 3)),), {'axis': 1, 'keepdims': True}, name='special.logsumexp(axis)'),
        Spec(sc.logsumexp, (A((2, 3)),), {'axis': 0, 'b': np.array([1.0, 2.0, 0.5])}, name='special.logsumexp(b)'),
        Spec(sc.softmax, (A((2, 3)),), name='special.softmax'),
        Spec(sc.softmax, (A((2, 3)),), {'axis': 1}, name='special.softmax(axis)'),
        Spec(sc.log_softmax, (A((2, 3)),), {'axis': -1}, name='special.log_softmax'),
    ]
    return out


SPECS += _scipy_specs()
