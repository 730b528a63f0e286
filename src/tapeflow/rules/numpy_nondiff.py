"""NumPy functions whose outputs carry no derivative.

Known to the compiler so that it needs no adjoint for them and warns about
nothing: array constructors (zeros, ones, empty, *_like, eye, arange...),
shape and type queries, integer and boolean results (argmax, argsort,
comparisons, isnan...), piecewise-constant functions (sign, floor, round...)
and random sampling. Functions with a derivative somewhere (histogram's bin
edges, unique's values) are left out on purpose: a missing rule is an error,
never a silent zero.
"""
import numpy as np

from tapeflow.rules.registry import available, describe, nondifferentiable

_NAMES = """
zeros ones empty zeros_like ones_like empty_like eye identity tri arange
indices diag_indices diag_indices_from tril_indices triu_indices tril_indices_from
triu_indices_from mask_indices ix_ ravel_multi_index unravel_index
shape ndim size result_type can_cast promote_types min_scalar_type common_type
iscomplexobj isrealobj isscalar isfortran issubdtype broadcast_shapes
shares_memory may_share_memory iterable
argmax argmin argsort argpartition argwhere nonzero flatnonzero count_nonzero
searchsorted digitize nanargmax nanargmin lexsort
all any isnan isinf isfinite isneginf isposinf isnat isclose allclose array_equal
array_equiv equal not_equal less less_equal greater greater_equal isin
logical_and logical_or logical_not logical_xor
bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift right_shift
bitwise_count gcd lcm floor_divide
sign signbit floor ceil trunc rint round around fix spacing nextafter
iscomplex isreal einsum_path array_repr array_str
""".split()

NONDIFFERENTIABLE = available(np, _NAMES)
NONDIFFERENTIABLE += [np.fft.fftfreq, np.fft.rfftfreq, np.linalg.matrix_rank]

_RANDOM = [getattr(np.random, name) for name in dir(np.random)
           if not name.startswith('_') and callable(getattr(np.random, name))
           and not isinstance(getattr(np.random, name), type)]
_RANDOM += [getattr(cls, name) for cls in (np.random.Generator, np.random.RandomState)
            for name in dir(cls) if not name.startswith('_')
            and callable(getattr(cls, name))]

nondifferentiable(*NONDIFFERENTIABLE, *_RANDOM)

describe('no derivative (constant, integer or boolean result)', *NONDIFFERENTIABLE)
describe('no derivative (random sampling)', *_RANDOM)
