"""`functools.partial` objects: differentiated directly (`grad(partial(f, k=c))`, as in
JAX) and called inside compiled code; the bound values are constants."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, seed_of


def weighted(x, y, axis=None):
    return np.sum(np.sin(x) * y, axis=axis)


X = np.array([[0.3, -0.5, 1.1], [0.7, 0.2, -1.3]])
Y = np.array([[1.0, 2.0, -0.5], [0.3, -1.2, 0.8]])


def test_grad_of_a_partial_with_a_bound_keyword():
    f = functools.partial(weighted, axis=None)
    g = tf.grad(f, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(g[0], np.cos(X) * Y)
    np.testing.assert_allclose(g[1], np.sin(X))


def test_grad_of_a_partial_with_a_bound_positional_argument_counts_the_rest():
    f = functools.partial(weighted, X)            # X is a constant now: argument 0 is y
    np.testing.assert_allclose(tf.grad(f)(Y), np.sin(X))


def test_vjp_and_jvp_of_a_partial_against_differences():
    f = functools.partial(weighted, axis=0)
    rng = np.random.default_rng(seed_of('partial'))
    out, pullback = tf.vjp(f, X, Y)
    np.testing.assert_allclose(out, weighted(X, Y, axis=0))
    u = rng.standard_normal(out.shape)
    gx, gy = pullback(u)
    check_gradient(lambda x, y: np.sum(u * f(x, y)), [gx, gy], [X, Y], [0, 1], rng)
    v = rng.standard_normal(X.shape)
    _, tangent = tf.jvp(f, (X, Y), (v, np.zeros_like(Y)))
    numeric = (f(X + 1e-6 * v, Y) - f(X - 1e-6 * v, Y)) / 2e-6
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)


def test_a_partial_of_a_numpy_function():
    f = functools.partial(np.sum, axis=1)
    np.testing.assert_allclose(tf.jacrev(f)(X).shape, (2, 2, 3))
    np.testing.assert_allclose(tf.grad(lambda x: np.sum(f(x) ** 2))(X),
                               2 * np.sum(X, axis=1, keepdims=True) * np.ones_like(X))


def test_hessian_of_a_partial():
    x = np.array([0.3, -0.5, 1.1])
    h = tf.hessian(functools.partial(weighted, y=Y[0]))(x)
    np.testing.assert_allclose(h, np.diag(-np.sin(x) * Y[0]), atol=1e-12)


SCALED = functools.partial(weighted, axis=1)


def calls_a_partial(x, y):
    return np.sum(SCALED(x, y) ** 2)


def test_a_partial_called_inside_compiled_code():
    rng = np.random.default_rng(seed_of('inside'))
    g = tf.grad(calls_a_partial, argnums=(0, 1))(X, Y)
    check_gradient(calls_a_partial, list(g), [X, Y], [0, 1], rng)


def test_a_keyword_written_at_a_call_inside_compiled_code_wins_over_the_bound_one():
    def f(x):
        return np.sum(SCALED(x, Y, axis=0) ** 2)
    rng = np.random.default_rng(seed_of('wins'))
    g = tf.grad(f)(X)
    check_gradient(f, [g], [X], [0], rng)


def test_a_partial_taking_star_arguments_is_refused_at_the_call():
    def loose(*xs):
        return xs[0]
    with pytest.raises(TypeError, match=r'takes \*args'):
        tf.grad(functools.partial(loose, 1.0))(2.0)
