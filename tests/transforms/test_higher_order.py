"""Jacobians, Hessians and derivatives of generated code."""
import numpy as np
import pytest

import tapeflow as tf
from tests.corpus import CASES
from tests.gradcheck import random_direction

A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 1.0]])
B = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, 2.0], [1.5, 1.0, -1.0], [0.2, 0.4, 0.6]])


def quadratic_form(x):
    return 0.5 * x @ A @ x


def non_square(x):
    return np.tanh(B @ x) * x[0]


def softplus_sum(x):
    return np.sum(np.log(1.0 + np.exp(B @ x)))


def cube(x):
    return x * x * x


def test_hessian_of_a_quadratic_form_is_its_matrix():
    x = np.array([0.3, -0.2, 0.7])
    np.testing.assert_allclose(tf.hessian(quadratic_form)(x), A, rtol=1e-12)


def test_jacfwd_and_jacrev_agree_on_a_non_square_jacobian():
    x = np.array([0.3, -0.2, 0.7])
    fwd, rev = tf.jacfwd(non_square)(x), tf.jacrev(non_square)(x)
    assert fwd.shape == rev.shape == (4, 3)
    np.testing.assert_allclose(fwd, rev, rtol=1e-12)
    eps = 1e-6
    numeric = np.stack([(non_square(x + eps * e) - non_square(x - eps * e)) / (2 * eps)
                        for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(fwd, numeric, rtol=1e-6, atol=1e-8)
    assert tf.jacobian is tf.jacrev


def test_hvp_is_hessian_times_vector():
    x = np.array([0.1, -0.4, 0.25])
    v = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(tf.hvp(softplus_sum, (x,), (v,)), tf.hessian(softplus_sum)(x) @ v,
                               rtol=1e-10)


def test_hessian_shape_follows_jax():
    x = np.array([0.1, -0.4, 0.25])
    assert tf.hessian(softplus_sum)(x).shape == (3, 3)


def test_second_and_third_derivative_of_a_scalar_function():
    d2 = tf.grad(cube)
    assert tf.jvp(d2, (2.0,), (1.0,))[1] == 12.0          # d2/dx2 x^3 = 6x
    assert tf.hessian(cube)(2.0) == 12.0


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_second_derivative_matches_differences_of_the_first(case):
    rng = np.random.default_rng(5)
    args = case.args(rng)
    i = case.wrt[0]
    gradient = tf.grad(case.fn, argnums=i)
    v = random_direction(args[i], rng)
    tangents = [v if k == i else (np.zeros_like(a) if isinstance(a, np.ndarray) else
                                  (0.0 if isinstance(a, float) else a)) for k, a in enumerate(args)]
    _, second = tf.jvp(gradient, args, tangents)
    eps = 1e-6
    plus, minus = list(args), list(args)
    plus[i], minus[i] = args[i] + eps * v, args[i] - eps * v
    numeric = (np.asarray(gradient(*plus)) - np.asarray(gradient(*minus))) / (2 * eps)
    np.testing.assert_allclose(second, numeric, rtol=1e-4, atol=1e-5)
