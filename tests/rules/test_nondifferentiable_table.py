"""Every entry of the non-differentiable table has a derivative of zero (or none) almost
everywhere: no silent zero.

`registry.nondifferentiable` tells the compiler and the eager tape that a function's
outputs carry no derivative, so a gradient through it is 0 without a word. That is
right only for functions that are constant, integer- or boolean-valued or piecewise
constant in their float arguments. Before issue 30 the table held `divmod` (its
remainder has derivative 1 in x), `math.frexp` (the mantissa x / 2**e moves),
`math.nextafter` (x plus a jump) and the array API's `sort`, `linspace`, `arange`,
`meshgrid` and `unique_values`: each a silent zero.

The test walks the whole table. Each entry is called on valid inputs from `CASES` and
every float among its arguments is moved a little both ways (away from jumps): the
float outputs must not change, i.e. central differences are exactly zero. Outputs
that are not floats (shapes, booleans, integers, dtypes, strings) carry no derivative
by their type. An entry with no case fails the test: a new entry needs one (or a
reason in `PLUMBING`, for the helpers generated code calls on values that are not
numbers of the user's computation).
"""
from __future__ import annotations

import builtins
import math
import operator
import types
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import array_api, guards, objects, registry
from tapeflow.rules import (array_ops, container_reads, dicts, indexing, math_rules, numpy_binary,
                            numpy_constructors, numpy_methods, numpy_norms, numpy_order,
                            numpy_reductions, numpy_statistics, shapes, write_checks)
from tapeflow.runtime import helpers, support

X = np.array([0.3, 1.7, -2.6, 4.2])
Y = np.array([0.6, 1.2, -2.9, 4.4])
M = np.array([[1.3, -0.4, 2.2], [0.7, 3.1, -1.6], [2.4, 0.2, 1.1]])
I = np.array([3, 5, 12])


class Fresh:
    """A random generator made anew (seeded) for every call of a case."""

    def __init__(self, kind):
        self.kind = kind

    def make(self):
        if self.kind == 'generator':
            return np.random.Generator(np.random.PCG64(0))
        return np.random.RandomState(0)


GEN, RS = Fresh('generator'), Fresh('randomstate')
CASES: dict = {}            # function -> [(args, kwargs, values_specified, call)]


def case(fn, *args, unspecified=False, via=None, **kwargs):
    """`fn(*args, **kwargs)` is a valid call; `unspecified`: its values are not defined
    (np.empty), only their type and shape are compared. `via`: a function of `args` that
    calls `fn`, where some of its arguments are made from others (a maximum and the
    array it is the maximum of; a container and an item it holds)."""
    CASES.setdefault(fn, []).append((args, kwargs, not unspecified, via or fn))


# ------------------------------------------------------------------ NumPy

case(dicts.dict_keys, {'a': 0.3, 'b': np.array([1.0, 2.0])})
case(np.zeros, (2, 3))
case(np.ones, (2, 3))
case(np.empty, (2, 3), unspecified=True)
case(np.zeros_like, X)
case(np.ones_like, X)
case(np.empty_like, X, unspecified=True)
case(np.eye, 3)
case(np.identity, 3)
case(np.tri, 3)
case(np.indices, (2, 3))
case(np.diag_indices, 3)
case(np.diag_indices_from, M)
case(np.tril_indices, 3)
case(np.triu_indices, 3)
case(np.tril_indices_from, M)
case(np.triu_indices_from, M)
case(np.mask_indices, 3, np.triu)
case(np.ix_, [0, 1], [2])
case(np.ravel_multi_index, ([0, 1], [1, 0]), (2, 2))
case(np.unravel_index, [1, 2], (2, 2))
for _fn in (np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.isfortran,
            np.iterable, np.common_type, np.argmax, np.argmin, np.argsort, np.argwhere,
            np.nonzero, np.flatnonzero, np.count_nonzero, np.nanargmax, np.nanargmin, np.all,
            np.any, np.isnan, np.isinf, np.isfinite, np.isneginf, np.isposinf, np.iscomplex,
            np.isreal, np.signbit, np.floor, np.ceil, np.trunc, np.rint, np.round, np.around,
            np.fix, np.spacing, np.array_repr, np.array_str, np.logical_not, np.int8,
            np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.intp,
            np.uintp, np.bool_):
    case(_fn, np.abs(X) if _fn in (np.uint8, np.uint16, np.uint32, np.uint64, np.uintp) else X)
case(np.round, X, 1)
case(np.around, X, 1)
case(np.result_type, X, 2.5)
case(np.can_cast, np.float32, np.float64)
case(np.promote_types, 'f4', 'f8')
case(np.min_scalar_type, 2.5)
case(np.isscalar, 2.5)
case(np.issubdtype, np.float64, np.floating)
case(np.broadcast_shapes, (2, 1), (3,))
case(np.shares_memory, X, Y)
case(np.may_share_memory, X, Y)
case(np.argpartition, X, 1)
case(np.searchsorted, np.sort(Y), X)
case(np.digitize, X, np.sort(Y))
case(np.lexsort, (X, Y))
case(np.isnat, np.array(['2020-01-01'], dtype='datetime64[D]'))
for _fn in (np.isclose, np.allclose, np.array_equal, np.array_equiv, np.equal, np.not_equal,
            np.less, np.less_equal, np.greater, np.greater_equal, np.isin, np.logical_and,
            np.logical_or, np.logical_xor):
    case(_fn, X, Y)
case(np.floor_divide, X, 0.75)
case(np.floor_divide, 2.3, Y)
for _fn in (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift,
            np.gcd, np.lcm):
    case(_fn, I, 2)
case(np.bitwise_not, I)
case(np.invert, I)
case(np.bitwise_count, I)
case(np.einsum_path, 'ij,jk->ik', M, M)
case(np.linalg.matrix_rank, M)

# ------------------------------------------------------------------ NumPy's random sampling

_SIZE = 3
for _owner, _rng in ((np.random, None), (np.random.RandomState, RS), (np.random.Generator, GEN)):
    _first = () if _rng is None else (_rng,)
    for _name, _args in [('bytes', (4,)), ('rand', (_SIZE,)), ('randn', (_SIZE,)),
                         ('random', (_SIZE,)), ('random_sample', (_SIZE,)), ('ranf', (_SIZE,)),
                         ('sample', (_SIZE,)), ('standard_normal', (_SIZE,)),
                         ('standard_exponential', (_SIZE,)), ('standard_cauchy', (_SIZE,)),
                         ('randint', (0, 5, _SIZE)), ('random_integers', (1, 5, _SIZE)),
                         ('integers', (0, 5, _SIZE)), ('binomial', (5, 0.37, _SIZE)),
                         ('poisson', (2.3, _SIZE)), ('geometric', (0.37, _SIZE)),
                         ('hypergeometric', (5, 4, 3, _SIZE)), ('logseries', (0.37, _SIZE)),
                         ('multinomial', (5, [0.2, 0.8])),
                         ('negative_binomial', (5, 0.37, _SIZE)), ('zipf', (2.3, _SIZE)),
                         ('multivariate_hypergeometric', ([3, 4], 2)), ('seed', (0,)),
                         ('get_state', ()), ('spawn', (2,))]:
        if hasattr(_owner, _name):
            case(getattr(_owner, _name), *_first, *_args)
case(np.random.RandomState.set_state, RS, np.random.RandomState(1).get_state())
case(np.random.set_state, np.random.RandomState(0).get_state())
case(np.random.default_rng, 0)
case(np.random.get_bit_generator)
case(np.random.set_bit_generator, np.random.get_bit_generator())

# ------------------------------------------------------------------ math, builtins, operator

for _fn in (math.floor, math.ceil, math.trunc, math.isfinite, math.isinf, math.isnan,
            math.ulp, builtins.round, builtins.int, builtins.bool):
    case(_fn, 2.3)
    case(_fn, -1.7)
case(builtins.round, 2.345, 1)
case(math.isclose, 2.3, 2.4)
case(math.factorial, 5)
case(math.comb, 5, 2)
case(math.perm, 5, 2)
case(math.gcd, 12, 8)
case(math.lcm, 12, 8)
case(math.isqrt, 10)
case(builtins.len, [2.5, 1.5])
case(builtins.range, 3)
case(builtins.isinstance, 2.5, float)
case(builtins.slice, 0, 2)
case(math_rules._zero, 2.5)
for _fn in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
            operator.is_, operator.is_not):
    case(_fn, 2.3, 2.4)
for _fn in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    case(_fn, X, Y)
case(operator.not_, 2.3)
case(operator.truth, 2.3)
case(operator.floordiv, 2.3, 0.7)
case(operator.floordiv, X, 0.75)
case(operator.ifloordiv, 2.3, 0.7)
case(operator.contains, [2.5, 1.5], 2.5)
case(operator.index, 3)
for _fn in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
            operator.iand, operator.ior, operator.ixor):
    case(_fn, 12, 2)
case(operator.invert, 12)

# ------------------------------------------------------------------ the array API's functions

_XP = np
for _name in ('zeros', 'ones', 'empty'):
    case(array_api.FUNCTIONS[_name], _XP, (2, 3), unspecified=_name == 'empty')
for _name in ('zeros_like', 'ones_like', 'empty_like', 'isnan', 'isinf', 'isfinite',
              'floor', 'ceil', 'round', 'trunc', 'argmax', 'argmin', 'argsort', 'nonzero',
              'any', 'all', 'count_nonzero', 'logical_not', 'signbit', 'result_type'):
    case(array_api.FUNCTIONS[_name], _XP, X, unspecified=_name == 'empty_like')
for _name in ('equal', 'not_equal', 'less', 'less_equal', 'greater', 'greater_equal',
              'logical_and', 'logical_or', 'logical_xor'):
    case(array_api.FUNCTIONS[_name], _XP, X, Y)
case(array_api.FUNCTIONS['eye'], _XP, 3)
case(array_api.FUNCTIONS['finfo'], _XP, np.float64)
case(array_api.FUNCTIONS['iinfo'], _XP, np.int64)
case(array_api.FUNCTIONS['isdtype'], _XP, np.float64, 'real floating')
case(array_api.FUNCTIONS['broadcast_shapes'], _XP, (2, 1), (3,))
case(array_api.namespace_of, X)

# ------------------------------------------------------------------ tapeflow's own helpers
# (positions, masks, counts, weights and zeros the rules compute)

case(shapes.zeros_like_value, X)
case(shapes.zeros_like_value, [2.5, (1.5, X)])
case(shapes.structure_shape, [[1.5, 2.5]])
case(shapes.is_symbolic_zero, 2.5)
case(array_ops.positions, (2, 3))
case(array_ops.is_basic_index, (0, slice(None)))
case(array_ops._kept, (4,), [0, 2])
case(indexing._sorted_sources, X, np.argsort(X), 0)
case(indexing._first_true, [X > 0, X < 0])
case(numpy_binary._inside, X, 0.0, 1.9, None, None)
case(numpy_binary._below, X, 0.0, 1.9, None, None)
case(numpy_binary._above, X, 0.0, 1.9, None, None)
case(numpy_binary._zero, X)
case(numpy_reductions.count, M, 0)
case(numpy_reductions.count, M, 0, M > 0)
case(numpy_reductions.reduced_axes, 2, -1)
case(numpy_reductions.kept_shape, (2, 3), 0)
case(numpy_reductions._axis, (2, 3), 1)
case(numpy_reductions.not_nan, np.array([1.5, np.nan, 2.5]))
case(numpy_reductions.float_dtype, X)
case(numpy_reductions._choice, M,
     via=lambda a: numpy_reductions._choice(a, np.max(a, axis=0), 0, False))
case(numpy_reductions._range_weights, M, 1)
case(numpy_reductions._plain, 2.5, X)
case(numpy_reductions._kept, (2, 3), 1)
case(numpy_reductions._size, (2, 3), 1)
case(numpy_statistics._dof, M, 0, True, 1, None)
case(numpy_order._terms, X, 0.3, None, 'linear', False)
case(numpy_order._steps, X, 0.3, None, False)
case(numpy_order._float_dtype, X)
case(numpy_constructors._arange_weights, np.arange(0.5, 3.0, 0.7), (0.5, 3.0, 0.7), 2)
case(numpy_norms._norm_axes, M, None, None)
case(numpy_norms._picked, M, 0, np.max)
for _fn in (numpy_methods.dtype_of, numpy_methods.itemsize_of, numpy_methods.nbytes_of,
            numpy_methods.strides_of):
    case(_fn, X)
case(write_checks.put_index, X, [0, 2])
case(write_checks.diagonal_index, M)
case(write_checks.is_array, X)
case(write_checks.is_list, [2.5])
case(write_checks.shares, X, via=lambda x: write_checks.shares(x[1:], x))
case(write_checks.index_size, X > 0)
case(write_checks.as_mask, [True, False, True, False], (4,))
case(write_checks.insert_index, [2.5, 1.5], -1)
case(container_reads.holds, X, via=lambda x: container_reads.holds([x, 2.5], x))
case(container_reads.is_mutable, X)
case(container_reads._slots, X, via=lambda x: container_reads._slots([x, 2.5], x))
case(container_reads._slot_of, X, via=lambda x: container_reads._slot_of([x, 2.5], x))
case(container_reads._is_container, [2.5])
case(container_reads._keys_of, {'a': 2.5})
case(helpers.zero_tangent, X)
case(helpers.zero_tangent, 2.5)
case(helpers.is_zero, 2.5)
case(helpers.pop_index, [2.5, 1.5], 0)
case(support.new_tape)

# Helpers generated code calls on what is not a number of the user's computation (a tape,
# a container's slots, a saved copy, a check that raises or returns None): no case can
# say more about them than their reason.
PLUMBING = {
    support.adjoint_stack: 'the stack of cotangents beside a tape: takes and returns tapes',
    shapes.shape_witness: 'a stand-in for an operand whose class, shape and dtype a rule '
                          'reads (`unbroadcast(g, shape_witness(x))`), never its numbers',
    tf.stop_gradient: 'zero derivative by its contract (the identity, with none)',
    write_checks.check_memory: 'a run-time check: returns None or raises',
    write_checks.check_overlap: 'a run-time check: returns None or raises',
    write_checks.check_apart: 'a run-time check: returns None or raises',
    write_checks.check_refresh: 'a run-time check: returns None or raises',
    write_checks.overlap_value: 'a copy of a written value for check_overlap to compare',
    container_reads._reread_slot: 'the key of the slot a container holds an item in',
    helpers.saved_contents: 'a copy kept to undo a write (the reverse sweep restores it)',
    helpers.restore_contents: 'puts a saved copy back in place; returns None',
    np.random.test: "runs NumPy's own tests",
    dicts.delete_item: 'removes a key (`del d[k]`): returns None; the reverse sweep puts it back',
    guards.raised: 'the exception `raise E` raises (an exception object, no number)',
    guards.deleted: 'what `del x` leaves in x inside a try/with body: the unbound marker, no number',
    guards.exit_context: "a context manager's __exit__: whether it suppresses the error (a bool)",
    guards.numerics: "np.geterr()'s settings read inside a `with np.errstate` (a dict of strings)",
    guards.reentered: 'an np.errstate for those settings (a context manager)',
    guards.written_in_place: 'whether a try/with body wrote a name in place (a bool)',
    objects.attributes_of: "an object's own __dict__: written and read as a dict, its items by "
                           "key (rules.dicts), itself no number",
    objects.matches_sequence: 'whether a sequence pattern can match a value (a bool)',
}


# ------------------------------------------------------------------ the check


def _table():
    registry.load_lazily()
    user = set(map(id, registry.user_primitives()))
    return [entry for entry in list(registry.RULES.values())
            if entry.nondiff and id(entry.fn) not in user]


def _is_float(leaf) -> bool:
    if isinstance(leaf, bool):
        return False
    if isinstance(leaf, (float, complex)):
        return True
    return isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype.kind in 'fc'


def _leaves(value, out):
    if isinstance(value, (list, tuple)):
        for item in value:
            _leaves(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _leaves(item, out)
    else:
        out.append(value)
    return out


def _moved(value, step, counter, target):
    """`value` with its float leaf number `target` (counted by `counter`) moved by `step`
    (relative to its size; every element of an array at once, along a fixed direction)."""
    if isinstance(value, (list, tuple)) and not isinstance(value, Fresh):
        items = [_moved(v, step, counter, target) for v in value]
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == 'f'):
        counter[0] += 1
        if counter[0] - 1 == target:
            direction = np.cos(np.arange(np.size(value)) + 1.0).reshape(np.shape(value))
            moved = value + step * (1.0 + np.abs(value)) * direction
            return float(moved) if isinstance(value, float) else moved
    return value


def _call(fn, args, kwargs):
    np.random.seed(0)
    args = [a.make() if isinstance(a, Fresh) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return fn(*args, **kwargs)


def _same(a, b, values) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return not values or np.array_equal(a, b, equal_nan=True)
    return not values or a == b or (a != a and b != b)


def moving_outputs(fn, args, kwargs, values=True, step=1e-7):
    """The float arguments (by number) along which a float output of `fn` moves."""
    base = _call(fn, args, kwargs)
    n_floats = [0]
    _moved(list(args), 0.0, n_floats, -1)
    moving = []
    for k in range(n_floats[0]):
        outs = [_call(fn, _moved(list(args), s, [0], k), kwargs) for s in (step, -step)]
        for out in outs:
            got, want = _leaves(out, []), _leaves(base, [])
            if len(got) != len(want) or not all(
                    _same(g, w, values) for g, w in zip(got, want) if _is_float(w)):
                moving.append(k)
                break
    return moving


def _label(fn):
    return registry.lookup(fn).name if registry.lookup(fn) is not None else repr(fn)


@pytest.fixture(autouse=True)
def _keep_global_random_state():
    state = np.random.get_state()
    yield
    np.random.set_state(state)


def _gives_a_namespace(fn) -> bool:
    """A getter of an array namespace (`array_api_compat.array_namespace`), which
    `transforms/namespaces.py` registers when it compiles a call of it: it gives a module."""
    try:
        return isinstance(fn(X), types.ModuleType)
    except Exception:
        return False


def test_every_entry_has_a_case_or_a_reason():
    missing = [entry.name for entry in _table()
               if entry.fn not in CASES and entry.fn not in PLUMBING
               and not _gives_a_namespace(entry.fn)]
    assert not missing, (f'non-differentiable entries without a case in {__file__} (give '
                         f'each valid inputs, or a reason in PLUMBING): {missing}')


def test_no_case_or_reason_is_stale():
    stale = [_label(fn) for fn in list(CASES) + list(PLUMBING)
             if not registry.is_nondifferentiable(fn)]
    assert not stale, f'cases for functions no longer in the table: {stale}'


@pytest.mark.parametrize('fn', list(CASES), ids=_label)
def test_central_differences_of_float_outputs_are_zero(fn):
    for args, kwargs, values, call in CASES[fn]:
        assert not moving_outputs(call, args, kwargs, values), \
            f'{_label(fn)}{args!r:.80}: a float output moves with a float argument'


# ------------------------------------------------------------------ the check finds derivatives


@pytest.mark.parametrize('fn, args', [
    (math.frexp, (3.0,)), (math.nextafter, (3.0, 10.0)), (builtins.divmod, (2.6, 1.0)),
    (np.divmod, (X, 0.7)), (np.frexp, (X,)), (np.modf, (X,)), (math.modf, (2.6,)),
    (np.remainder, (X, 0.7)), (np.fmod, (X, 0.7)), (np.nextafter, (X, 10.0)),
    (np.sort, (X,)), (np.linspace, (0.5, 2.5, 4)), (np.arange, (0.5, 3.0, 0.7)),
    (np.meshgrid, (X, Y)), (np.unique, (X,)),
])
def test_the_check_finds_a_derivative_and_the_table_does_not_hold_it(fn, args):
    assert moving_outputs(fn, args, {})
    assert not registry.is_nondifferentiable(fn)


def test_the_array_api_functions_that_move_are_not_in_the_table():
    for name in ('sort', 'linspace', 'arange', 'meshgrid', 'unique_values'):
        fn = array_api.FUNCTIONS[name]
        assert not registry.is_nondifferentiable(fn), name
    assert moving_outputs(array_api.FUNCTIONS['linspace'], (np, 0.5, 2.5, 4), {})


# ------------------------------------------------------------------ their derivatives now


def fd(fn, x, eps=1e-6):
    return (fn(x + eps) - fn(x - eps)) / (2 * eps)


def divmod_remainder(x):
    return divmod(x, 1.0)[1] * x


def divmod_in_divisor(y):
    q, r = divmod(2.6, y)
    return q * y * y + r * r


def frexp_mantissa(x):
    m, e = math.frexp(x)
    return m * x + e


def nextafter_x(x):
    return math.nextafter(x, 10.0) * x


def np_divmod(x):
    q, r = np.divmod(x, 0.7)
    return np.sum(q * r + r ** 2)


def np_frexp(x):
    m, e = np.frexp(x)
    return np.sum(m ** 2 * e)


@pytest.mark.parametrize('f, x', [(divmod_remainder, 2.3), (divmod_in_divisor, 0.7),
                                  (frexp_mantissa, 3.0), (nextafter_x, 2.3)])
def test_python_scalars_are_differentiated(f, x):
    expected = fd(f, x)
    assert expected != 0
    assert tf.grad(f)(x) == pytest.approx(expected, rel=1e-6)
    assert tf.jacfwd(f)(x) == pytest.approx(expected, rel=1e-6)


def test_the_issue_figures():
    # divmod(x, 1.0)[1] is x - floor(x): derivative 1; frexp(3.0) = (0.75, 2): dm/dx = 1/4
    assert tf.grad(lambda x: divmod(x, 1.0)[1])(2.6) == 1.0
    assert tf.grad(lambda x: math.frexp(x)[0])(3.0) == 0.25
    assert tf.grad(lambda x: math.nextafter(x, 10.0))(4.6) == 1.0


@pytest.mark.parametrize('f', [np_divmod, np_frexp])
def test_numpy_two_output_functions_are_differentiated(f):
    x = np.array([2.6, 3.3, 5.1])
    expected = np.array([fd(lambda v, i=i: f(np.where(np.arange(3) == i, v, x)), x[i])
                         for i in range(3)])
    np.testing.assert_allclose(tf.grad(f)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(tf.jacfwd(f)(x), expected, rtol=1e-6)


def test_second_order_through_divmod():
    def f(v):
        return divmod(v[0] * v[1], 0.7)[1] * v[0] + divmod(2.5, v[1])[1]

    v = np.array([1.3, 2.1])
    # the remainder is v0 v1 - c (c constant nearby): f = (v0 v1 - c) v0 + 2.5 - k v1
    np.testing.assert_allclose(tf.hessian(f)(v), [[2 * v[1], 2 * v[0]], [2 * v[0], 0.0]],
                               rtol=1e-12)


def test_array_api_sort_is_differentiated():
    from array_api_compat import array_namespace

    def f(x):
        xp = array_namespace(x)
        return xp.sum(xp.sort(x) * xp.asarray([1.0, 2.0, 3.0]))

    np.testing.assert_allclose(tf.grad(f)(np.array([3.0, 1.0, 2.0])), [3.0, 1.0, 2.0])


def test_array_api_linspace_in_its_end_is_a_located_error():
    from array_api_compat import array_namespace

    def f(a):
        xp = array_namespace(a)
        return xp.sum(xp.linspace(0.0, a, 3))

    with pytest.raises(tf.TapeflowError, match=r'test_nondifferentiable_table\.py:\d+:\d+: '
                                               r'no derivative rule .*linspace'):
        tf.grad(f)(np.asarray(2.0))
