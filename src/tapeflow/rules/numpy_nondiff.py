"""NumPy functions whose outputs carry no derivative.

Known to the compiler so that it needs no adjoint for them and warns about
nothing: array constructors (zeros, ones, empty, *_like, eye...),
shape and type queries, integer and boolean results (argmax, argsort,
comparisons, isnan...), piecewise-constant functions (floor, round...; sign has rules of its own, as it moves with a complex input)
and random sampling. Functions with a derivative somewhere (histogram's bin
edges, unique's values) are left out on purpose: a missing rule is an error,
never a silent zero.
"""
import numpy as np

from tapeflow.rules.registry import available, describe, nondifferentiable

_NAMES = """
zeros ones empty zeros_like ones_like empty_like eye identity tri
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
signbit floor ceil trunc rint round around fix spacing
iscomplex isreal einsum_path array_repr array_str
""".split()

NONDIFFERENTIABLE = available(np, _NAMES)
NONDIFFERENTIABLE += [np.linalg.matrix_rank]
# Integer and boolean scalar types called as functions (`np.int64(x)`): an integer result.
NONDIFFERENTIABLE += [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                      np.uint64, np.intp, np.uintp, np.bool_]

# Random sampling: no derivative where the arguments are sizes, seeds and
# states, or where the sample is an integer (piecewise constant in the
# parameters). Samples that move continuously with a float parameter
# (normal(loc, scale), uniform(low, high), choice(a), permutation(x)...) are
# left out: differentiating them with respect to that parameter is an error
# (write loc + scale * standard_normal(...)), never a silent zero.
_RANDOM_CONSTANT = set("""
bytes default_rng get_bit_generator set_bit_generator get_state set_state seed test spawn
bit_generator rand randn random random_sample ranf sample standard_normal
standard_exponential standard_cauchy randint random_integers integers binomial poisson
geometric hypergeometric logseries multinomial negative_binomial zipf
multivariate_hypergeometric
""".split())
_RANDOM = [getattr(np.random, name) for name in dir(np.random)
           if name in _RANDOM_CONSTANT and callable(getattr(np.random, name))
           and not isinstance(getattr(np.random, name), type)]
_RANDOM += [getattr(cls, name) for cls in (np.random.Generator, np.random.RandomState)
            for name in dir(cls) if name in _RANDOM_CONSTANT
            and callable(getattr(cls, name))]

nondifferentiable(*NONDIFFERENTIABLE, *_RANDOM)

describe('no derivative (constant, integer or boolean result)', *NONDIFFERENTIABLE)
describe('no derivative (random sampling)', *_RANDOM)
