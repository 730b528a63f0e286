"""The `operator` module's writers (transforms/sugar/operators.py): `operator.setitem`,
`operator.delitem` and the in-place operators write into their first argument as the
statements they stand for do (their gradients were those of pure functions: wrong);
written inside an expression or passed as a value, they are refused, located."""
from __future__ import annotations

import functools
import inspect
import operator
from operator import iadd, imul

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain, seed_of


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
    y = np.ones(2) * x
    return np.sum(operator.iadd(y, x) * 2.0)


def reduced(x):
    return functools.reduce(operator.iadd, [np.ones(2) * x, np.ones(2)])


@pytest.mark.parametrize('f, marker', [(within_an_expression, 'operator.iadd'),
                                       (reduced, 'operator.iadd')],
                         ids=lambda v: getattr(v, '__name__', ''))
def test_elsewhere_refused_at_its_place(f, marker):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(lambda x: np.sum(f(x)))(1.5)
    lines, first = inspect.getsourcelines(f)
    line = first + next(k for k, text in enumerate(lines) if marker in text)
    assert str(info.value).startswith(f'{__file__}:{line}:')
    assert 'operator.iadd() writes into its first argument' in str(info.value)
