"""`compile='numba'` puts the user's helpers in line (`transforms.native_calls`): the same
numbers as the NumPy path (which compiles each helper's pair), checked against central
differences too; what it cannot put in line is refused at its line."""
import math

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.compilation as compilation
from tapeflow.errors import NativeFallbackWarning, UnsupportedError
from tests.gradcheck import check_gradient
from tests.user_module import write_module

numba = pytest.importorskip('numba', reason="the native path needs Numba (pip install "
                                            "'tapeflow[numba]'): not installed here")


def clip_below(x, lo=0.0):
    """An early return and a default."""
    if x < lo:
        return lo
    y = x * x
    return math.sin(y) + y


def step(x, h):
    return x + h * math.sin(x)


def two_steps(x, h):
    """A helper that calls a helper, with the caller's own names (x, h, y) inside."""
    y = step(x, h)
    return step(y, h * 0.5)


def loop_of_helpers(x, h):
    y = 0.0
    for i in range(4):
        x = two_steps(x, h)
        y = y + clip_below(x - 0.5 * i, lo=0.1) * clip_below(0.5 * h)
    return x * y


def scaled(v, c):
    return v * c


def norm2(v):
    return np.sum(v * v)


def arrays_through_helpers(x, w):
    z = scaled(np.tanh(x * w), 2.0)
    return norm2(scaled(z, w)) + norm2(x) * 0.5


def scale_into(v, c):
    v *= c
    return v


def writes_through_a_helper(x):
    z = np.tanh(x)
    scale_into(z, 2.0)
    return np.sum(z)


def power(x, n):
    return x if n <= 1 else x * power(x, n - 1)


def recursive(x):
    return power(x, 3) + x


CASES = [
    (loop_of_helpers, (0.7, 0.3), (0, 1)),
    (loop_of_helpers, (-0.4, 0.2), (0, 1)),       # the early return taken
    (arrays_through_helpers, (np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)), (0, 1)),
]


def copied(args):
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize('fn, args, wrt', CASES)
def test_helpers_in_line_give_the_numpy_paths_numbers(fn, args, wrt):
    value, grads = tf.value_and_grad(fn, wrt, compile='numba')(*copied(args))
    expected_value, expected = tf.value_and_grad(fn, wrt)(*copied(args))
    assert value == pytest.approx(float(expected_value), rel=1e-13)
    assert value == pytest.approx(float(fn(*copied(args))), rel=1e-13)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
    check_gradient(fn, grads, copied(args), wrt, np.random.default_rng(5))


def test_the_code_numba_compiles_has_no_call_of_a_helper():
    text = compilation.compile(loop_of_helpers, compilation.Spec(
        'reverse', (0, 1), scalar_args=(0, 1), compile='numba')).native_source
    for helper in ('two_steps(', 'step(', 'clip_below('):
        assert helper not in text
    # each helper's names renamed apart (the caller's `y` and two_steps's `y` both live);
    # a parameter never bound again is its argument (`lo`: the constant 0.1)
    assert 'y = 0.0' in text and 'y_two_steps = x + h * _sin_step' in text
    assert '_sub < 0.1' in text and 'lo_clip_below' not in text


def test_forward_mode_puts_helpers_in_line_too():
    args, tangents = (0.7, 0.3), (1.0, -0.5)
    value, tangent = tf.jvp(loop_of_helpers, args, tangents, compile='numba')
    expected_value, expected_tangent = tf.jvp(loop_of_helpers, args, tangents)
    assert value == expected_value and tangent == pytest.approx(expected_tangent, rel=1e-12)


def test_an_in_place_write_in_a_helper_is_refused_at_its_line_as_in_the_caller():
    with pytest.raises(UnsupportedError) as raised:
        tf.grad(writes_through_a_helper, compile='numba')(np.linspace(0.1, 1.0, 4))
    assert raised.value.lineno == scale_into.__code__.co_firstlineno + 1
    with pytest.warns(NativeFallbackWarning, match=f':{scale_into.__code__.co_firstlineno + 1}:'):
        fallen_back = tf.grad(writes_through_a_helper, compile='auto')(np.linspace(0.1, 1.0, 4))
    np.testing.assert_allclose(fallen_back, tf.grad(writes_through_a_helper)(np.linspace(0.1, 1.0, 4)))


def test_a_recursive_helper_is_refused_at_its_call_of_itself():
    with pytest.raises(UnsupportedError) as raised:
        tf.grad(recursive, compile='numba')(0.7)
    assert raised.value.lineno == power.__code__.co_firstlineno + 1
    assert 'a call of the user function power()' in str(raised.value)


HELPERS = """
import math


def bump(x):
    return math.exp(-x * x)
"""

CALLER = """
import math
from helpers_elsewhere import bump


def scale(x):
    return math.sin(x) * x


def caller(x):
    return bump(x) + scale(x)
"""


def test_a_helper_from_another_file_is_refused_at_the_call(tmp_path):
    write_module(tmp_path, 'helpers_elsewhere', HELPERS)
    module = write_module(tmp_path, 'caller_of_helpers', CALLER)
    with pytest.raises(UnsupportedError) as raised:
        tf.grad(module.caller, compile='numba')(0.7)
    error = raised.value
    assert error.filename == str(tmp_path / 'caller_of_helpers.py')
    assert error.lineno == 11 and 'a call of the user function bump()' in str(error)
    # the one from its own file is put in line: no refusal for it first
    assert 'scale' not in str(error)


def test_a_derivative_of_a_derivative_is_refused_at_the_users_function():
    """`jvp(grad(f))` calls tapeflow's own gradient: refused at f's line, not in generated
    code; 'auto' runs it on the NumPy path."""
    with pytest.raises(UnsupportedError) as raised:
        tf.jvp(tf.grad(step, (0, 1)), (0.7, 0.3), (1.0, 0.0), compile='numba')
    error = raised.value
    assert error.filename == __file__ and error.lineno == step.__code__.co_firstlineno
    assert 'a derivative of a derivative (step)' in str(error)
    with pytest.warns(NativeFallbackWarning):
        fallen_back = tf.jvp(tf.grad(step, (0, 1)), (0.7, 0.3), (1.0, 0.0), compile='auto')
    expected = tf.jvp(tf.grad(step, (0, 1)), (0.7, 0.3), (1.0, 0.0))
    np.testing.assert_allclose(fallen_back[1], expected[1], rtol=1e-15)
