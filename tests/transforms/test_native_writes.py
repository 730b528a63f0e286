"""`compile='numba'` and writes in place (`vel += dt * acc`): where the mutation pass
makes the write a new value laid out as the array (`like_layout`), Numba compiles it
for C-ordered float64 arrays; what it cannot (a Fortran-ordered argument, a write
through an alias) is refused at its line, and `compile='auto'` falls back."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import NativeFallbackWarning, UnsupportedError
from tests.gradcheck import check_gradient

numba = pytest.importorskip('numba', reason="the native path needs Numba (pip install "
                                            "'tapeflow[numba]'): not installed here")


def leapfrog(pos, vel):
    for i in range(5):
        vel += 0.1 * np.sin(pos)
        pos += 0.1 * vel
    return np.sum(pos * pos) + np.sum(vel)


def scaled_in_place(x, w):
    z = np.tanh(x * w)
    z *= 2.0
    return np.sum(z * z)


def through_an_alias(x, w):
    z = np.tanh(x * w)
    v = z
    v *= 2.0
    return np.sum(z * z)


@pytest.mark.parametrize('fn, args', [
    (leapfrog, (np.linspace(0.1, 0.9, 6).reshape(2, 3), np.linspace(-0.3, 0.3, 6).reshape(2, 3))),
    (scaled_in_place, (np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)))])
def test_writes_in_place_compile_to_the_numpy_paths_numbers(fn, args):
    value, grads = tf.value_and_grad(fn, (0, 1), compile='numba')(*[a.copy() for a in args])
    expected_value, expected = tf.value_and_grad(fn, (0, 1))(*[a.copy() for a in args])
    assert value == pytest.approx(float(expected_value), rel=1e-13)
    assert value == pytest.approx(float(fn(*[a.copy() for a in args])), rel=1e-13)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
    check_gradient(fn, grads, [a.copy() for a in args], (0, 1), np.random.default_rng(7))


def test_a_fortran_ordered_argument_written_in_place_is_refused_at_its_line():
    pos = np.asfortranarray(np.linspace(0.1, 0.9, 6).reshape(2, 3))
    vel = np.zeros((2, 3))
    with pytest.raises(UnsupportedError) as raised:
        tf.value_and_grad(leapfrog, (0, 1), compile='numba')(pos.copy(order='F'), vel.copy())
    assert raised.value.lineno == leapfrog.__code__.co_firstlineno + 3      # pos += ...
    with pytest.warns(NativeFallbackWarning):
        value, _ = tf.value_and_grad(leapfrog, (0, 1), compile='auto')(pos.copy(order='F'), vel.copy())
    assert value == tf.value_and_grad(leapfrog, (0, 1))(pos.copy(order='F'), vel.copy())[0]


def test_a_write_through_an_alias_is_refused_at_its_line():
    args = (np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5))
    with pytest.raises(UnsupportedError) as raised:
        tf.value_and_grad(through_an_alias, (0, 1), compile='numba')(*args)
    assert raised.value.lineno == through_an_alias.__code__.co_firstlineno + 3
