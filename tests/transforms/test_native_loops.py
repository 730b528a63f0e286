"""`transforms.native_loops`: array statements of static shapes written as loops over
their elements under `compile='numba'`: the NumPy path's numbers (to rounding), its
gradients against finite differences, and what is not understood left to Numba."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import UnsupportedError
from tests.gradcheck import check_gradient

pytest.importorskip('numba', reason="the native path needs Numba (pip install "
                                    "'tapeflow[numba]'): not installed here")


def gravity(pos, vel, m):
    for step in range(20):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = np.sum(d * d, axis=2) + 0.01
        w = m * r2 ** -1.5
        acc = np.sum(d * w[:, :, None], axis=1)
        vel = vel + 0.01 * acc
        pos = pos + 0.01 * vel
    return np.sum(pos * pos)


def rows_and_columns(x, b, c):
    y = np.exp(x * c[:, None]) + b          # (4, 3) * (4, 1) + (3,)
    z = y / (1.0 + x * x) - np.sqrt(x * x + 1.0) ** 0.5
    return np.sum(np.tanh(z) * y ** 2) + np.sum(np.sum(z, axis=0) * b)


def changing_shape(x):
    y = x
    for i in range(3):
        y = y[1:] * 1.5                     # a shape of its own each trip: not lowered
    return np.sum(np.sin(y) * y) + np.sum(x * x)


def outer_sums(x, y):
    p = x[:, None] * np.cos(y)[None, :]     # (5, 1) * (1, 6)
    return np.sum(np.sum(p * p, axis=1) - x) + np.sum(np.sum(p, axis=0) * y)


CASES = [
    (gravity, lambda rng: (rng.normal(size=(4, 3)), 0.1 * rng.normal(size=(4, 3)),
                           rng.uniform(0.5, 1.5, size=4)), (0, 1, 2)),
    (rows_and_columns, lambda rng: (rng.normal(size=(4, 3)), rng.normal(size=3),
                                    rng.normal(size=4)), (0, 1, 2)),
    (outer_sums, lambda rng: (rng.normal(size=5), rng.normal(size=6)), (0, 1)),
    (changing_shape, lambda rng: (rng.normal(size=5),), (0,)),
]


@pytest.mark.parametrize('fn, make, wrt', CASES, ids=lambda c: getattr(c, '__name__', ''))
def test_same_numbers_as_the_numpy_path_and_finite_differences(fn, make, wrt):
    rng = np.random.default_rng(15)
    args = make(rng)
    value, grads = tf.value_and_grad(fn, wrt, compile='numba')(*args)
    expected_value, expected = tf.value_and_grad(fn, wrt)(*args)
    np.testing.assert_allclose(value, expected_value, rtol=1e-13)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-11, atol=1e-14)
    check_gradient(fn, grads, args, wrt, rng)


def _native_source(fn, args, wrt=0):
    return tf.source(fn, wrt, compile='numba', args=args)


def test_gravity_is_loops_over_elements_fused_and_keeps_only_what_the_sweep_reads():
    rng = np.random.default_rng(1)
    text = _native_source(gravity, CASES[0][1](rng), (0, 1))
    assert 'd[_i, _j, _k] = pos[_j, _k] - pos[_i, _k]' in text      # (the views, fused)
    assert 'unbroadcast(' not in text and 'grad_of_sum(' not in text and 'untake(' not in text
    assert '_item3[_i, _j, _k] = m[_j] * np.power(r2[_i, _j], -1.5)' in text   # (w, fused)
    assert '    w = ' not in text and '_mul2' not in text
    kept = sorted(line.split('=')[0].strip() for line in text.splitlines()
                  if line.strip().endswith('_tape = []'))
    assert kept == ['_d_tape', '_item3_tape', '_pos_tape', '_r2_tape'], kept


def test_what_has_no_static_shape_is_left_to_numba():
    text = _native_source(changing_shape, (np.arange(4.0),))
    assert 'np.sin(y)' in text and 'x[_i] * x[_i]' in text


def test_powers_and_divisions_as_numpy_computes_them():
    def powers(x):
        return np.sum(x ** 2 + x ** 0.5 + x ** -1 + x ** 3 + 1.0 / x)
    x = np.array([0.0, 0.5, 2.0, 3.0])
    text = _native_source(powers, (x,))
    assert 'np.sqrt(x[_i])' in text and 'np.divide(1.0, x[_i])' in text and 'x[_i] * x[_i]' \
        in text and 'np.power(x[_i], 3)' in text
    with np.errstate(divide='ignore', invalid='ignore'):
        value = tf.value_and_grad(powers, compile='numba')(x)[0]
        assert value == tf.value_and_grad(powers)(x)[0] == np.inf     # not a ZeroDivisionError


def test_an_integer_array_is_refused_not_computed_in_float64():
    rng = np.random.default_rng(2)
    pos, vel, _ = CASES[0][1](rng)
    g = tf.value_and_grad(gravity, (0, 1), compile='numba')
    with pytest.raises(UnsupportedError):
        g(pos, vel, np.arange(1, 5))


def rebound_between(x, y):
    t = x * 2.0 + y                 # read once below, but x is bound again before that
    x = x * x
    u = np.exp(y)                   # read by the reverse sweep too: kept
    return np.sum(t * x * u)


def test_an_array_is_computed_where_it_is_read_only_where_its_inputs_are_unchanged():
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(3, 2)), rng.normal(size=2))
    text = _native_source(rebound_between, args, (0, 1))
    assert 't = np.empty((3, 2))' in text and '= t[_i, _j] * x[_i, _j]' in text
    assert 'u = np.empty((2,))' in text
    value, grads = tf.value_and_grad(rebound_between, (0, 1), compile='numba')(*args)
    expected_value, expected = tf.value_and_grad(rebound_between, (0, 1))(*args)
    np.testing.assert_allclose(value, expected_value, rtol=1e-13)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    check_gradient(rebound_between, grads, args, (0, 1), rng)
