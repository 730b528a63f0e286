"""A call that puts a view of one argument into a list argument, then a write into the
first: the caller cannot see which view the slot holds, so the write is refused where
the view shows when the code runs (it gave a wrong gradient: the slot kept the old view's
cotangent). A slot holding the array itself is brought up to date, as before."""
import copy

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient


def record_row(xs, y):
    xs.append(y[0])


def record_whole(xs, y):
    xs.append(y)


def via_helper(xs, y):
    record_row(xs, y)
    y /= (1.0 + y ** 2)
    return np.sum(y * y) + np.sum(xs[0] * xs[-1])


def via_nested(xs, y):
    def rec(p):
        xs.append(y[0])
    rec(1.0)
    y /= (1.0 + y ** 2)
    return np.sum(y * y) + np.sum(xs[0] * xs[-1])


def whole(xs, y):
    record_whole(xs, y)
    y /= (1.0 + y ** 2)
    return np.sum(y * y) + np.sum(xs[0] * xs[-1][0])


def direct(xs, y):
    xs.append(y[0])
    y /= (1.0 + y ** 2)
    return np.sum(y * y) + np.sum(xs[0] * xs[-1])


def _args():
    rng = np.random.default_rng(3)
    return [rng.uniform(0.5, 1.5, 3)], rng.uniform(0.5, 1.5, (3, 3))


@pytest.mark.parametrize('fn, line', [(via_helper, 2), (via_nested, 4)])
def test_a_view_a_call_stored_is_refused_at_the_write(fn, line):
    with pytest.raises(tf.UnsupportedError) as caught:
        tf.value_and_grad(fn, argnums=(0, 1))(*_args())
    first = fn.__code__.co_firstlineno
    assert f'{__file__}:{first + line}:' in str(caught.value)
    assert 'y shares memory with xs' in str(caught.value) and 'y.copy()' in str(caught.value)


@pytest.mark.parametrize('fn', [whole, direct])
def test_what_the_caller_can_follow_keeps_its_gradient(fn):
    xs, y = _args()
    value, (gxs, gy) = tf.value_and_grad(fn, argnums=(0, 1))(copy.deepcopy(xs), y.copy())
    assert value == fn(copy.deepcopy(xs), y.copy())
    check_gradient(lambda v: fn(copy.deepcopy(xs), v.copy()), [gy], (y,), (0,),
                   np.random.default_rng(4))
