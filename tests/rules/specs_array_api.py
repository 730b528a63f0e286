"""Spec table: the functions of rules/array_api.py (code written with `xp = array_namespace(x)`).

Each takes the namespace first; NumPy's own namespace (NumPy 2 has the standard's
names) stands for it here. tests/test_array_api.py runs them on array_api_strict.
"""
import numpy as np

from rulecheck import A, F, L, Spec
from tapeflow.rules import array_api as api

SHAPES = [(), (3,), (2, 3)]


def unary(fn, lo=-2.0, hi=2.0):
    return [Spec(fn, (np, A(shape, lo, hi)), name=f'xp.{fn.__name__}{shape}', second=False)
            for shape in SHAPES]


def binary(fn, lo=-2.0, hi=2.0):
    pairs = [((3,), (2, 3)), ((2, 3), (2, 3)), ((), (2, 2))]
    out = [Spec(fn, (np, A(a, lo, hi), A(b, lo, hi)), name=f'xp.{fn.__name__}{a}{b}', second=False)
           for a, b in pairs]
    out.append(Spec(fn, (np, A((3,), lo, hi), F(lo, hi)), name=f'xp.{fn.__name__}((3,),float)',
                    second=False))
    return out


SPECS = []
for _fn in (api.sin, api.cos, api.tan, api.atan, api.sinh, api.cosh, api.tanh, api.asinh,
            api.exp, api.expm1, api.square, api.negative, api.positive):
    SPECS += unary(_fn, -1.2, 1.2)
for _fn in (api.asin, api.acos, api.atanh):
    SPECS += unary(_fn, -0.9, 0.9)
for _fn in (api.log, api.log1p, api.log2, api.log10, api.sqrt, api.reciprocal):
    SPECS += unary(_fn, 0.3, 2.0)
SPECS += unary(api.acosh, 1.2, 3.0)
SPECS += unary(api.abs, 0.2, 2.0) + unary(api.abs, -2.0, -0.2)
SPECS += unary(api.sign) + unary(api.conj) + unary(api.imag)   # real inputs (complex: test_array_api_complex)
for _fn in (api.add, api.subtract, api.multiply, api.maximum, api.minimum, api.logaddexp):
    SPECS += binary(_fn)
for _fn in (api.divide, api.pow, api.atan2, api.hypot):
    SPECS += binary(_fn, 0.3, 2.0)
for _fn in (api.sum, api.mean, api.prod, api.max, api.min):
    SPECS += [Spec(_fn, (np, A((2, 3))), name=f'xp.{_fn.__name__}', second=False),
              Spec(_fn, (np, A((2, 3))), {'axis': 1}, name=f'xp.{_fn.__name__}(axis=1)', second=False),
              Spec(_fn, (np, A((2, 3, 2))), {'axis': (0, 2), 'keepdims': True},
                   name=f'xp.{_fn.__name__}(axis=(0,2),keepdims)', second=False)]
SPECS += [
    Spec(api.matmul, (np, A((2, 3)), A((3, 4))), name='xp.matmul(2-D)', second=False),
    Spec(api.matmul, (np, A((3,)), A((3, 4))), name='xp.matmul(1-D,2-D)', second=False),
    Spec(api.matmul, (np, A((2, 3)), A((3,))), name='xp.matmul(2-D,1-D)', second=False),
    Spec(api.matmul, (np, A((3,)), A((3,))), name='xp.matmul(1-D,1-D)', second=False),
    Spec(api.matmul, (np, A((2, 2, 3)), A((3, 4))), name='xp.matmul(batched)', second=False),
    Spec(api.vecdot, (np, A((2, 3)), A((3,))), name='xp.vecdot', second=False),
    Spec(api.matrix_transpose, (np, A((2, 3))), name='xp.matrix_transpose', second=False),
    Spec(api.permute_dims, (np, A((2, 3, 4)), (2, 0, 1)), name='xp.permute_dims', second=False),
    Spec(api.reshape, (np, A((2, 3)), (3, 2)), name='xp.reshape', second=False),
    Spec(api.expand_dims, (np, A((2, 3))), {'axis': 1}, name='xp.expand_dims', second=False),
    Spec(api.squeeze, (np, A((2, 1, 3)), 1), name='xp.squeeze', second=False),
    Spec(api.broadcast_to, (np, A((3,)), (2, 3)), name='xp.broadcast_to', second=False),
    Spec(api.flip, (np, A((2, 3))), {'axis': 1}, name='xp.flip', second=False),
    Spec(api.sort, (np, A((2, 3))), name='xp.sort', second=False),
    Spec(api.sort, (np, A((3, 2))), {'axis': 0}, name='xp.sort(axis=0)', second=False),
    Spec(api.concat, (np, L(A((2, 3)), A((1, 3)))), name='xp.concat', second=False),
    Spec(api.concat, (np, L(A((2, 3)), A((2, 2)))), {'axis': 1}, name='xp.concat(axis=1)',
         second=False),
    Spec(api.stack, (np, L(A((2, 3)), A((2, 3)))), {'axis': 1}, name='xp.stack', second=False),
    Spec(api.where, (np, np.array([True, False, True]), A((3,)), A((2, 3))), name='xp.where',
         second=False),
    Spec(api.clip, (np, A((5,))), {'min': -0.5, 'max': 0.7}, name='xp.clip', second=False),
    Spec(api.asarray, (np, A((3,))), name='xp.asarray', second=False),
    Spec(api.astype, (np, A((3,)), np.float64), name='xp.astype', second=False),
    Spec(api.full, (np, (2, 3), F()), name='xp.full', second=False),
    Spec(api.full_like, (np, np.zeros((2, 3)), F()), name='xp.full_like', second=False),
    Spec(api.real, (np, A((3,))), name='xp.real', second=False),
]

# the lowerings' move of a NumPy value into the library it is written into: the identity
from tapeflow.rules.arrays import to_library  # noqa: E402
SPECS.append(Spec(to_library, (A((3,)), np.zeros(3)), name='to_library', second=False))

# the lowerings' values of np.put / np.place / np.putmask: np.resize in the array's library
from tapeflow.rules.mutation import cycled  # noqa: E402
SPECS += [Spec(cycled, (A((3,)), 7), name='cycled(longer)', second=False),
          Spec(cycled, (A((4,)), (2, 2)), name='cycled(shape)', second=False),
          Spec(cycled, (A((5,)), 2), name='cycled(shorter)', second=False)]
