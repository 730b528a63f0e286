"""The `operator` module's writers (transforms/sugar/operators.py): `operator.setitem`,
`operator.delitem` and the in-place operators write into their first argument as the
statements they stand for do (their gradients were those of pure functions: wrong);
inside an expression, the call is placed where Python evaluates it (what the expression
evaluates before it computed before it); inside a lambda or a generator expression, or
passed as a value, they are refused, located."""
from __future__ import annotations

import functools
import inspect
import operator
from operator import iadd, imul

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain, exact_to_second_order, seed_of


def setitem_into_zeros(x):
    y = np.zeros(2)
    operator.setitem(y, 0, x)
    return np.sum(y * y)


def iadd_into_an_array(x):
    y = np.ones(2) * x
    operator.iadd(y, x)
    return np.sum(y)


def iadd_onto_a_list(x):
    ys = [x]
    operator.iadd(ys, [x * 2.0])
    return sum(ys)


def imul_result_and_object(x):
    y = np.ones(2) * x
    z = imul(y, 3.0)              # z is y, tripled
    return np.sum(y) + np.sum(z)


def iadd_of_a_float_leaves_it(x):
    y = x * 2.0
    z = iadd(y, x)                # a float: y unchanged, z = y + x
    return y * z


def delitem_of_a_list(x):
    ys = [x, x * 2.0, x * 3.0]
    operator.delitem(ys, 1)
    return ys[0] * ys[1]


def setitem_on_a_dict_in_a_loop(x):
    d = {}
    for k in range(3):
        operator.setitem(d, k, x ** (k + 1.0))
    return d[0] + d[2]


CASES = [(setitem_into_zeros, 1.5), (iadd_into_an_array, 1.5), (iadd_onto_a_list, 1.5),
         (imul_result_and_object, 1.5), (iadd_of_a_float_leaves_it, 1.5),
         (delitem_of_a_list, 1.5), (setitem_on_a_dict_in_a_loop, 0.7),
         (iadd_into_an_array, np.array([0.5, -1.0]))]


@pytest.mark.parametrize('f, x', CASES, ids=lambda v: getattr(v, '__name__', ''))
def test_value_and_gradient(f, x):
    checked_against_plain(f, [x], 0, np.random.default_rng(seed_of(f.__name__)))


def test_closed_forms():
    assert tf.grad(setitem_into_zeros)(1.5) == pytest.approx(3.0)
    assert tf.grad(imul_result_and_object)(1.5) == pytest.approx(12.0)
    assert tf.grad(iadd_of_a_float_leaves_it)(1.5) == pytest.approx(12.0 * 1.5)


def within_an_expression(x):
    y = np.ones(3) * x
    return np.sum(operator.iadd(y, x) * 2.0)


def read_before_and_after(x):
    y = x * 1.0
    s = y[0] + operator.iadd(y, x * x)[1] * 2.0     # y[0] read before the write
    return s + np.sum(y * x)


def result_of_a_float_in_a_sum(x):
    t = x[0] * 1.0
    return (operator.imul(t, x[1]) + t) * np.sum(x)     # t itself unchanged


def into_a_listed_array(x):
    ys = [x * 1.0, x * 2.0]
    return np.sum(operator.iadd(ys[0], x) * ys[1]) + np.sum(ys[0])


def setitem_in_a_condition(x):
    d = {}
    if operator.setitem(d, 'a', x * 3.0) is None and x[0] > 0.0:
        return np.sum(d['a'] * x)
    return np.sum(x)


@pytest.mark.parametrize('f', [within_an_expression, read_before_and_after,
                               result_of_a_float_in_a_sum, into_a_listed_array,
                               setitem_in_a_condition], ids=lambda f: f.__name__)
def test_within_an_expression_placed_where_python_evaluates_it(f):
    exact_to_second_order(f, np.array([0.3, 1.2, -0.7]))


def test_within_an_expression_closed_form():
    # y = x + x^2 written into y; s = x0 + 2 (x1 + x1^2); f = s + sum((x + x^2) x)
    x = np.array([0.3, 1.2, -0.7])
    expected = 2 * x + 3 * x ** 2 + np.array([1.0, 2 + 4 * x[1], 0.0])
    np.testing.assert_allclose(tf.grad(read_before_and_after)(x), expected, rtol=1e-12)


def reduced(x):
    return functools.reduce(operator.iadd, [np.ones(2) * x, np.ones(2)])


def in_a_lambda(x):
    add = lambda a, b: operator.iadd(a, b)          # noqa: E731
    return add(np.ones(2) * x, x)


def in_a_generator(x):
    ys = [np.ones(2) * x, np.ones(2)]
    return sum(operator.iadd(y, x) for y in ys)


@pytest.mark.parametrize('f, marker, why', [
    (reduced, 'operator.iadd', 'call it as a statement of its own'),
    (in_a_lambda, 'operator.iadd', 'inside a lambda'),
    (in_a_generator, 'operator.iadd', 'inside a generator expression')],
    ids=lambda v: getattr(v, '__name__', ''))
def test_elsewhere_refused_at_its_place(f, marker, why):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(lambda x: np.sum(f(x)))(1.5)
    lines, first = inspect.getsourcelines(f)
    line = first + next(k for k, text in enumerate(lines) if marker in text)
    assert str(info.value).startswith(f'{__file__}:{line}:')
    assert 'operator.iadd() writes into its first argument' in str(info.value)
    assert why in str(info.value)
