"""`vjp`'s pullback owns its primal point (issue 30): writes the caller makes after `vjp`
returns (into the arguments, their lists, the output) change nothing of what the pullback
computes, and the pullback writes nothing of the caller's. The same for `linearize`."""
import numpy as np

import tapeflow as tf


def sine_weighted(x):
    return np.sum(np.sin(x) * x)


def expected_sine_weighted(x):
    return np.sin(x) + x * np.cos(x)


def test_writing_into_the_argument_after_vjp_changes_nothing():
    x = np.array([1.0, 2.0, 3.0])
    point = x.copy()
    out, pullback = tf.vjp(sine_weighted, x)
    x -= 0.5 * x
    x[0] = 100.0
    assert out == sine_weighted(point)
    assert np.allclose(pullback(1.0)[0], expected_sine_weighted(point), rtol=1e-15)
    assert np.allclose(pullback(2.0)[0], 2.0 * expected_sine_weighted(point), rtol=1e-15)


def pair_product(xs):
    return np.sum(np.sin(xs[0]) * xs[1])


def test_writing_into_a_list_of_arrays_after_vjp_changes_nothing():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    xs = [a.copy(), b.copy()]
    _, pullback = tf.vjp(pair_product, xs)
    xs[0][:] = 0.0
    xs[1] *= 2.0
    xs.append(np.ones(2))
    xs.reverse()
    (grad,) = pullback(1.0)
    assert np.allclose(grad[0], np.cos(a) * b, rtol=1e-15)
    assert np.allclose(grad[1], np.sin(a), rtol=1e-15)


def exponential(x):
    return np.exp(x)            # its reverse sweep reads the output


def test_writing_into_the_output_after_vjp_changes_nothing():
    x = np.array([0.1, 0.5])
    out, pullback = tf.vjp(exponential, x)
    out *= 10.0
    assert np.allclose(pullback(np.ones(2))[0], np.exp(x), rtol=1e-15)


def scaled_in_place(x):
    x *= 3.0
    x[0] = x[1] * x[0]
    return np.sum(np.sin(x))


def test_the_pullback_of_a_function_writing_into_its_argument_writes_nothing_of_the_callers():
    x = np.array([0.2, 0.4, 0.6])
    point = x.copy()
    _, pullback = tf.vjp(scaled_in_place, x)
    left = x.copy()                     # as vjp left it
    x += 1.0
    first = pullback(1.0)[0]
    assert np.array_equal(x, left + 1.0)        # the pullback wrote nothing of the caller's
    y = 3.0 * point
    y[0] = y[1] * y[0]
    expected = np.cos(y) * 3.0
    expected[1] += np.cos(y[0]) * 3.0 * point[0] * 3.0
    expected[0] = np.cos(y[0]) * 3.0 * point[1] * 3.0
    assert np.allclose(first, expected, rtol=1e-14)
    assert np.array_equal(pullback(1.0)[0], first)


def two_arrays(x, y):
    return np.sum(x * y * y)


def test_linearize_keeps_its_point_for_lists_and_several_arrays():
    x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    px, py = x.copy(), y.copy()
    _, f_jvp = tf.linearize(two_arrays, x, y)
    x *= 7.0
    y[:] = 0.0
    tx, ty = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert np.isclose(f_jvp(tx, ty), np.sum(tx * py * py + 2 * px * py * ty), rtol=1e-15)
    xs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    _, g_jvp = tf.linearize(pair_product, xs)
    xs[1][:] = 0.0
    t = [np.array([1.0, 1.0]), np.array([0.0, 0.0])]
    assert np.isclose(g_jvp(t), np.sum(np.cos([1.0, 2.0]) * [3.0, 4.0]), rtol=1e-15)


# WRONG before (-1.492 for -1.588 along a direction): the pullback's reverse sweep ran on a
# copy of the tape, and a callee that gives memory back in place (it writes into arrays it
# made) gave back the originals', not the copy's. A function whose callee does, or may (a
# function called through a value), now runs its forward again for each pullback.

def _scales_a_local(x):
    y = x * 1.0
    y[1:] *= x[1] + 2.0
    return np.sum(y * x)


_SCALERS = [_scales_a_local]


def calls_it_by_name(v):
    return _scales_a_local(v.copy())


def calls_it_through_a_value(v):
    return _SCALERS[0](v.copy())


def test_a_callee_restoring_memory_in_place_under_a_pullback():
    x = np.array([0.3, -0.4, 0.8])
    expected = 2.0 * x + np.array([0.0, np.sum(x[1:] ** 2), 0.0])
    expected[1:] += 2.0 * x[1:] * (x[1] + 2.0) - 2.0 * x[1:]
    for f in (calls_it_by_name, calls_it_through_a_value):
        out, pullback = tf.vjp(f, x.copy())
        assert np.isclose(out, f(x.copy()))
        np.testing.assert_allclose(tf.grad(f)(x.copy()), expected, rtol=1e-12)
        for seed in (1.0, 2.0):
            np.testing.assert_allclose(pullback(seed)[0], seed * expected, rtol=1e-12)
