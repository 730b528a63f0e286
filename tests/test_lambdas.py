"""A lambda is read from its source exactly and differentiated like a def.

Values are checked against the plain Python value of the lambda, gradients
against central differences along random directions and closed forms.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import SourceUnavailableError, UnsupportedError
from tests.gradcheck import check_gradient, seed_of

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src'

K = 1.5


def _rng(name):
    return np.random.default_rng(seed_of(name))


def test_grad_of_a_lambda_matches_differences_and_its_closed_form():
    f = lambda x: np.sin(x) * x ** 2  # noqa: E731
    x = 0.7
    g = tf.grad(f)(x)
    assert np.isclose(g, np.cos(x) * x ** 2 + 2 * x * np.sin(x))
    check_gradient(f, [g], [x], [0], _rng('grad'))


def test_grad_written_around_the_lambda():
    g = tf.grad(lambda x: x * x * x)(2.0)
    assert np.isclose(g, 12.0)


def test_two_lambdas_on_one_line_are_each_their_own():
    f = tf.grad(lambda x: x * x); g = tf.grad(lambda y: y + 1)  # noqa: E702
    assert np.isclose(f(3.0), 6.0)
    assert np.isclose(g(3.0), 1.0)


def test_two_lambdas_with_the_same_parameters_on_one_line():
    f, g = (lambda x: x * x * x), (lambda x: np.exp(2 * x))
    assert np.isclose(tf.grad(f)(2.0), 12.0)
    assert np.isclose(tf.grad(g)(0.5), 2 * np.exp(1.0))


def test_a_lambda_spanning_several_lines():
    f = tf.value_and_grad(lambda x, y: (np.sin(x) *
                                        y
                                        + x * x),
                          argnums=(0, 1))
    value, (gx, gy) = f(0.3, 2.0)
    assert np.isclose(value, np.sin(0.3) * 2.0 + 0.09)
    assert np.isclose(gx, np.cos(0.3) * 2.0 + 0.6)
    assert np.isclose(gy, np.sin(0.3))


def test_a_lambda_inside_a_call_with_other_arguments():
    def apply(fn, x, scale):
        return tf.grad(fn)(x) * scale
    assert np.isclose(apply(lambda v: np.tanh(v) * 3.0, 0.2, 2.0), 2.0 * 3.0 * (1 - np.tanh(0.2) ** 2))


def test_nested_lambdas_each_is_read():
    make = lambda a: (lambda x: a * np.exp(x * a))  # noqa: E731
    inner = make(2.0)
    assert np.isclose(inner(0.1), 2.0 * np.exp(0.2))
    assert np.isclose(tf.grad(inner)(0.1), 4.0 * np.exp(0.2))
    check_gradient(inner, [tf.grad(inner)(0.1)], [0.1], [0], _rng('nested'))


def test_closures_globals_and_defaults():
    def outer(a):
        return tf.grad(lambda x: a * x * x + K * x)(2.0)
    assert np.isclose(outer(5.0), 5.0 * 4.0 + K)

    fs = [lambda x, k=k: np.sin(k * x) for k in (1.0, 2.0, 3.0)]
    for k, f in zip((1.0, 2.0, 3.0), fs):
        assert np.isclose(tf.grad(f)(0.4), k * np.cos(k * 0.4))


def test_a_default_is_the_value_it_was_bound_to():
    global K
    f = lambda x, k=K: k * x  # noqa: E731
    old = K
    try:
        K = 100.0
        assert np.isclose(tf.grad(f)(1.0), old)
    finally:
        K = old


def test_jvp_jacfwd_jacrev_hessian_of_lambdas():
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    x = np.array([0.1, 0.5, -0.4])
    v = np.array([1.0, -2.0, 0.5])
    closed = np.cos(x) * x + np.sin(x)
    primal, tangent = tf.jvp(f, (x,), (v,))
    assert np.isclose(primal, f(x))
    assert np.isclose(tangent, closed @ v)

    h = lambda x: np.sin(x) * x  # noqa: E731
    jf = tf.jacfwd(h)(x)
    jr = tf.jacrev(h)(x)
    assert np.allclose(jf, np.diag(closed))
    assert np.allclose(jr, np.diag(closed))

    hess = tf.hessian(f)(x)
    assert np.allclose(hess, np.diag(2 * np.cos(x) - x * np.sin(x)))


def test_vmap_of_grad_of_a_lambda():
    xs = np.array([0.1, 0.2, 0.3])
    got = tf.vmap(tf.grad(lambda x: x ** 3 + np.sin(x)))(xs)
    assert np.allclose(got, 3 * xs ** 2 + np.cos(xs))


def test_check_grads_of_a_lambda():
    tf.check_grads(lambda x, y: np.sum(np.tanh(x) * y), (np.array([0.3, -0.2]), np.array([1.0, 2.0])),
                   order=2)


def test_the_generated_source_names_a_lambda_lambda_():
    text = tf.source(lambda x: x * x)
    assert 'def dlambda_(' in text


def test_a_lambda_inside_a_differentiated_function_is_differentiated():
    def uses(x):
        sq = lambda v: v * v * x  # noqa: E731
        return sq(x) + sum(map(lambda v: v * x, [1.0, 2.0]))
    assert np.isclose(tf.grad(uses)(1.5), 3 * 1.5 ** 2 + 3.0)
    check_gradient(uses, [tf.grad(uses)(1.5)], [1.5], [0], _rng('inside'))


def test_a_lambda_without_source_says_write_a_def():
    f = eval('lambda x: x * x')
    with pytest.raises(SourceUnavailableError, match='write the lambda as a def in a file'):
        tf.grad(f)(1.0)


def test_two_lambdas_that_cannot_be_told_apart_are_refused_where_they_stand(tmp_path):
    """Without column positions (`-X no_debug_ranges`, or Python 3.10) two lambdas with
    the same parameters on one line are told apart by the code their text compiles to;
    where both compile to the same, a located refusal, no guess."""
    module = tmp_path / 'two_lambdas.py'
    module.write_text('import tapeflow as tf\n'
                      'f, g = (lambda x: x * x), (lambda x: x + 1)\n'
                      'a, b = (lambda x: 2 * x), (lambda x: 2 * x)\n'
                      'h = lambda y: y * y\n'
                      'print(tf.grad(h)(3.0))\n'
                      'print(tf.grad(f)(3.0), tf.grad(g)(3.0))\n'
                      'tf.grad(b)(3.0)\n')
    env = dict(os.environ, PYTHONPATH=str(SRC))
    result = subprocess.run([sys.executable, '-X', 'no_debug_ranges', str(module)],
                            capture_output=True, text=True, env=env)
    assert result.returncode != 0
    assert result.stdout.split() == ['6.0', '6.0', '1.0']   # told apart by their code
    assert f'{module}:3:9: cannot tell which lambda this is' in result.stderr
    assert 'write it as a def' in result.stderr
