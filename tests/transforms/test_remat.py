"""Rematerialisation (`transforms.remat`): cheap values computed again in the reverse
sweep, never a different number.

Every corpus function's value and gradient are the same, bit for bit, with the
optimizing passes (rematerialisation among them) and without; and the generated
code of small functions shows what is computed again and what stays on the tape.
"""
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.api import compile_adjoint
from tests.corpus import CASES


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True) \
        and np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_gradient_bit_identical_with_and_without_optimizing(case):
    lean = compile_adjoint(case.fn, case.wrt).combined
    plain = compile_adjoint(case.fn, case.wrt, optimize=False).combined
    assert _same(lean(*case.args(np.random.default_rng(3))), plain(*case.args(np.random.default_rng(3))))


def sin_loop(x):
    for i in range(20):
        x = math.sin(x) * x
    return x


def sin_while(x):
    k = 0
    while k < 20:
        x = math.sin(x) * x
        k += 1
    return x


def sin_then_scale(x):
    for i in range(20):
        x = math.sin(x) * 2.0 + 0.1
    return x


def indexed(xs, w):
    s = 0.0
    for t in range(xs.shape[0]):
        s = s + np.tanh(xs[t] * w)
    return np.sum(s)


def written_between(xs, w):
    s = 0.0
    for t in range(3):
        a = xs[t]
        xs[t] = 0.0
        s = s + a * w
    return s


def pushes(text):
    """Pushes in the text, the trip count's aside."""
    return text.count('_push(') - text.count('_push(len(')


def test_a_math_function_of_a_restored_value_is_computed_after_the_restore():
    text = tf.source(sin_loop)                # (the range loop keeps x by the trip: `slots`)
    assert pushes(text) == 0 and text.count('_xs[i] = x') == 1
    assert 'x = _xs[_trip]\n        _sin = math.sin(x)' in text
    g = tf.grad(sin_loop)(0.7)
    assert g == compile_adjoint(sin_loop, (0,), optimize=False).combined(0.7)[1]


def test_a_math_function_of_a_popped_value_is_computed_after_the_pop():
    text = tf.source(sin_while)
    assert pushes(text) == 2 and '_push(x)' in text and '_push(_trips)' in text
    assert 'x = _pop()\n        _sin = math.sin(x)' in text
    assert tf.grad(sin_while)(0.7) == compile_adjoint(sin_while, (0,), optimize=False).combined(0.7)[1]


def test_a_value_read_before_its_reader_pops_stays_on_the_tape_or_is_right():
    # `x = _sin * 2.0 + 0.1`: its reverse reads _sin before it pops x
    lean = tf.value_and_grad(sin_then_scale)(0.3)
    plain = compile_adjoint(sin_then_scale, (0,), optimize=False).combined(0.3)
    assert lean == plain


def test_items_of_a_parameter_nothing_writes_are_indexed_again_by_the_loop_variable():
    xs, w = np.linspace(0.1, 1.0, 12).reshape(4, 3), np.array([0.5, -0.2, 0.3])
    text = tf.source(indexed, argnums=1, args=(xs, w))
    assert 'for t in reversed(_range):' in text        # t is not pushed: the range runs back
    assert '_push(_item' not in text and text.count('= xs[t]') == 2    # xs[t] indexed again
    lean = tf.value_and_grad(indexed, argnums=(0, 1))(xs, w)
    plain = compile_adjoint(indexed, (0, 1), optimize=False).combined(xs, w)
    assert _same(lean, plain)


def test_an_array_written_in_place_is_not_indexed_again():
    xs, w = np.linspace(0.1, 1.0, 3), 0.7
    value, g = tf.value_and_grad(written_between, argnums=1)(xs.copy(), w)
    assert g == pytest.approx(np.sum(xs)) and value == pytest.approx(np.sum(xs) * w)


def test_the_tape_is_checked_under_debug():
    text = tf.source(sin_while)
    assert 'assert not _tape' in text
