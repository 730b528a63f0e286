"""Exact values where finite differences cannot decide: ties, repeated indices,
zeros in products, structure of cotangents, the helpers the compiler uses."""
import math
import operator

import numpy as np
import pytest

from tapeflow.rules import RULES, array_ops
from tapeflow.rules.registry import MissingRule
from tapeflow.rules.sequences import Items
from tapeflow.rules.shapes import add_cotangents, fill_zeros, fit


def vjp(fn, g, *args, argnum=0, **kwargs):
    return RULES[fn].vjp(argnum)(g, fn(*args, **kwargs), *args, **kwargs)


def jvp(fn, t, *args, argnum=0, **kwargs):
    return RULES[fn].jvp(argnum)(t, fn(*args, **kwargs), *args, **kwargs)


def test_ties_share_the_cotangent_equally():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_allclose(vjp(np.max, 1.0, x), [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(vjp(np.maximum, np.ones(4), x, x), [0.5] * 4)
    np.testing.assert_allclose(vjp(np.maximum, np.ones(4), x, x, argnum=1), [0.5] * 4)
    np.testing.assert_allclose(jvp(np.min, np.ones(4), x), 1.0)


def test_repeated_fancy_indices_accumulate():
    x = np.arange(4.0)
    g = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(vjp(operator.getitem, g, x, [0, 0, 3]), [3, 0, 0, 4])
    np.testing.assert_array_equal(vjp(operator.getitem, g, x, np.array([2, 2, 2])), [0, 0, 7, 0])
    y = np.zeros((2, 3))
    cot = vjp(operator.getitem, np.ones(3), y, (np.array([1, 1, 0]), np.array([2, 2, 0])))
    np.testing.assert_array_equal(cot, [[1, 0, 0], [0, 0, 2]])


def test_boolean_masks_and_basic_indices():
    x = np.arange(6.0).reshape(2, 3)
    mask = x > 2
    np.testing.assert_array_equal(vjp(operator.getitem, np.ones(3), x, mask), mask)
    np.testing.assert_array_equal(vjp(operator.getitem, np.ones(2), x, (slice(None), -1)),
                                  [[0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(vjp(operator.getitem, 5.0, x, (1, 0)), [[0, 0, 0], [5, 0, 0]])
    np.testing.assert_array_equal(vjp(operator.getitem, np.ones((1, 2, 3)), x, None),
                                  np.ones((2, 3)))


def test_cotangent_of_a_list_is_a_list_with_zeros():
    # one element's: sparse (an `Items`, O(1) whatever the length), read as the list it stands for
    xs = [1.0, np.array([1.0, 2.0]), 3.0]
    cot = vjp(operator.getitem, np.array([5.0, 6.0]), xs, 1)
    assert isinstance(cot, Items) and len(cot) == 3
    cot = list(cot)
    assert cot[0] == 0.0 and cot[2] == 0.0
    np.testing.assert_array_equal(cot[1], [5, 6])
    cot = vjp(operator.getitem, [7.0, 8.0], (1.0, 2.0, 3.0), slice(None, None, -2))
    assert cot == (8.0, 0.0, 7.0)
    cot = vjp(np.array, np.array([[1.0, 2.0], [3.0, 4.0]]), [[1.0, 2.0], [3.0, 4.0]])
    assert cot == [[1.0, 2.0], [3.0, 4.0]] and all(isinstance(v, float) for row in cot for v in row)
    cot = vjp(np.sum, 2.0, [1.0, 2.0, 3.0])
    assert cot == [2.0, 2.0, 2.0]


def test_assignment_last_write_wins_and_add_at_accumulates():
    x, v = np.zeros(3), np.array([1.0, 2.0, 3.0])
    idx = np.array([0, 0, 2])
    y = array_ops.assign(x, idx, v)
    np.testing.assert_array_equal(y, [2, 0, 3])
    g = np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(vjp(array_ops.assign, g, x, idx, v, argnum=2), [0, 10, 30])
    np.testing.assert_array_equal(vjp(array_ops.assign, g, x, idx, v, argnum=0), [0, 20, 0])
    np.testing.assert_array_equal(array_ops.add_at(x, idx, v), [3, 0, 3])
    np.testing.assert_array_equal(vjp(array_ops.add_at, g, x, idx, v, argnum=2), [10, 10, 30])
    assert np.all(x == 0), 'the primitives do not mutate their input'


def test_products_with_zeros_are_exact():
    x = np.array([2.0, 0.0, 3.0])
    np.testing.assert_array_equal(vjp(np.prod, 1.0, x), [0, 6, 0])
    np.testing.assert_array_equal(vjp(np.prod, 1.0, np.array([0.0, 0.0, 3.0])), [0, 0, 0])
    np.testing.assert_array_equal(vjp(np.cumprod, np.ones(3), x), [1, 8, 0])
    assert vjp(math.prod, 1.0, [2.0, 0.0, 3.0]) == [0.0, 6.0, 0.0]


def test_broadcast_operands_get_their_own_shapes_and_dtypes():
    g = np.ones((2, 4, 3), dtype=np.float32)
    a, b = np.ones((4, 1), np.float32), np.ones((3,), np.float32)
    cot_a = vjp(operator.truediv, g, a, b)
    cot_b = vjp(operator.truediv, g, a, b, argnum=1)
    assert cot_a.shape == (4, 1) and cot_b.shape == (3,)
    assert cot_a.dtype == cot_b.dtype == np.float32
    cot = vjp(np.hypot, np.ones(3), 2.0, np.array([1.0, 2.0, 3.0]))
    assert isinstance(cot, float)
    assert isinstance(fit(np.array(3.0), 1.0), float)


def test_python_float_rules_stay_on_floats():
    assert type(vjp(math.sin, 1.0, 0.5)) is float
    assert type(vjp(math.log, 1.0, 2.0, 10.0, argnum=1)) is float
    assert vjp(max, 1.0, 1.0, 3.0, 3.0, argnum=1) == 1.0
    assert vjp(max, 1.0, 1.0, 3.0, 3.0, argnum=2) == 0.0


def test_multi_output_cotangents_may_leave_outputs_out():
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    w, v = np.linalg.eigh(a)
    only_values = RULES[np.linalg.eigh].vjp(0)((np.ones(2), None), (w, v), a)
    np.testing.assert_allclose(np.trace(only_values), 2.0)
    parts = np.split(np.arange(4.0), 2)
    cot = RULES[np.split].vjp(0)([None, np.ones(2)], parts, np.arange(4.0), 2)
    np.testing.assert_array_equal(cot, [0, 0, 1, 1])
    assert add_cotangents([1.0, None], [2.0, 3.0]) == [3.0, 3.0]
    assert [np.shape(z) for z in fill_zeros([None, 1.0], [np.ones(2), 1.0])] == [(2,), ()]


def test_missing_rules_name_the_function_and_argument():
    with pytest.raises(MissingRule, match='argument 1 of numpy.ldexp'):
        RULES[np.ldexp].vjp(1)
    assert RULES[np.argmax].nondiff and RULES[np.random.standard_normal].nondiff
    # normal(loc, scale) moves with loc: no rule (an error), never a silent zero
    assert np.random.normal not in RULES
    assert np.histogram not in RULES, 'histogram has a derivative in its bin edges: no silent zero'


def test_unsupported_forms_raise_instead_of_guessing():
    x = np.arange(4.0)
    with pytest.raises(NotImplementedError):
        vjp(np.pad, np.ones(8), x, 2, 'mean')
    with pytest.raises(NotImplementedError):
        vjp(np.linalg.svd, [np.ones((3, 3)), np.ones(2), np.ones((2, 2))], np.ones((3, 2)))
    with pytest.raises(NotImplementedError):
        vjp(np.quantile, np.ones(()), x, 0.3, method='weibull')
