"""Cotangents of sums and means over one axis kept in their reduced shape where they
only meet arrays of the summed array's shape (`transforms.uniform.kept`,
`kept_sum`/`kept_mean`): the same numbers, bit for bit, without the array of copies."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules.numpy_reductions import grad_of_mean, grad_of_sum
from tapeflow.rules.reduced_cotangents import kept_mean, kept_sum
from tests.gradcheck import checked_against_plain


@pytest.mark.parametrize('keep, grad', [(kept_sum, grad_of_sum), (kept_mean, grad_of_mean)])
@pytest.mark.parametrize('axis, keepdims', [(0, False), (1, False), (1, True), (-1, True)])
def test_kept_broadcasts_as_the_array_of_copies_bit_for_bit(keep, grad, axis, keepdims):
    rng = np.random.default_rng(1)
    x, other = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    g = np.sum(x, axis=axis, keepdims=keepdims) * 0.37
    for g_ in (g, 0.37, np.float64(0.37)):
        np.testing.assert_array_equal(keep(g_, x, axis, keepdims) * other,
                                      grad(g_, x, axis, keepdims) * other)


@pytest.mark.parametrize('keep, grad', [(kept_sum, grad_of_sum), (kept_mean, grad_of_mean)])
def test_other_dtypes_and_classes_get_the_array(keep, grad):
    x32 = np.ones((4, 3), np.float32)
    g = np.ones(4, np.float32)
    out = keep(g, x32, 1)
    assert out.dtype == np.float32 and out.shape == (4, 3)
    np.testing.assert_array_equal(out, grad(g, x32, 1))
    out = keep(np.ones(4), np.ma.masked_array(np.ones((4, 3))), 1)
    assert out.shape == (4, 3)


def softmax_xent(W, X, Y):
    logits = X @ W
    z = logits - np.max(logits, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (z - lse), axis=1))


def row_means(x, y):
    return np.sum(np.mean(x, axis=0) * y) + np.sum(np.mean(x * x, axis=1, keepdims=True) * x)


def test_generated_code_keeps_them_and_the_gradients_hold():
    rng = np.random.default_rng(3)
    W, X = rng.standard_normal((5, 4)), rng.standard_normal((6, 5))
    Y = np.eye(4)[rng.integers(0, 4, 6)]
    text = tf.source(softmax_xent, args=(W, X, Y))
    assert 'kept_sum(uniform_mean(-bout, _sum2), _mul, 1) * Y' in text
    assert 'kept_sum(unbroadcast(-bsub, lse) / _sum, _exp, 1, True) * _exp' in text
    grads = checked_against_plain(softmax_xent, (W, X, Y), 0, rng)
    np.testing.assert_allclose(tf.vjp(softmax_xent, W, X, Y)[1](1.0)[0], grads, rtol=1e-13)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    assert 'kept_mean(unbroadcast(bmul3 * x, _mean2), _mul2, 1, True)' in tf.source(
        row_means, argnums=(0, 1), args=(x, y))
    checked_against_plain(row_means, (x, y), (0, 1), rng)


def test_second_derivatives_through_kept_cotangents():
    rng = np.random.default_rng(4)
    W, X = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    Y = np.eye(2)[rng.integers(0, 2, 4)]
    g = tf.grad(softmax_xent)
    v = rng.standard_normal((3, 2))
    second = tf.grad(lambda W: np.sum(g(W, X, Y) * v))(W)
    eps = 1e-5
    numeric = (g(W + eps * v, X, Y) - g(W - eps * v, X, Y)) / (2 * eps)   # H v (H symmetric)
    np.testing.assert_allclose(second, numeric, rtol=1e-6, atol=1e-8)


def test_a_float32_call_keeps_float32():
    rng = np.random.default_rng(5)
    W = rng.standard_normal((5, 4)).astype(np.float32)
    X = rng.standard_normal((6, 5)).astype(np.float32)
    Y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)]
    grads = tf.grad(softmax_xent)(W, X, Y)
    assert grads.dtype == np.float32
    np.testing.assert_allclose(grads, tf.grad(softmax_xent)(W.astype(float), X.astype(float),
                                                          Y.astype(float)), rtol=1e-4, atol=1e-5)
