"""Rules the compiler differentiates again: second and third order in both modes.

Rules with star-argument signatures (gathers, splits, the variadic functions, the
FFTs) are primitives of their own (`registry.linear_pair`); axes and widths that
generated code pops off its tape are checked to carry no float when the code runs
(`runtime.support.static_argument`) instead of being refused; structures are
rebuilt by a primitive. Each case found by autograd's test suite.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, seed_of

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 3))
V = RNG.standard_normal(4)
W = RNG.standard_normal(3)
C = A + 1j * RNG.standard_normal((4, 3))

CASES = [
    ('pad', lambda x: np.pad(x, ((1, 2), (0, 1))), A, 3),
    ('pad reflect', lambda x: np.pad(x, 2, mode='reflect'), V, 2),
    ('fftshift', lambda x: np.fft.fftshift(x), A, 3),
    ('diag k', lambda x: np.diag(x, k=1), A, 3),
    ('split', lambda x: np.split(x, 2, axis=0), A, 2),
    ('array_split', lambda x: np.array_split(x, 3, axis=1), A, 2),
    ('r_', lambda x: np.r_[x, x[:2]], V, 3),
    ('c_', lambda x: np.c_[x, 2.0 * x], V, 2),
    ('linspace', lambda x: np.linspace(x[0], x[1], 5), V, 3),
    ('gradient', lambda x: np.gradient(x, 0.5), V, 2),
    ('builtin sum', lambda x: sum([x[0] ** 2, x[1]]), V, 3),
    ('builtin max', lambda x: max(x[0] * x[1], x[2]), V, 2),
    ('arange', lambda x: np.sum(np.arange(x[0], 10.0, 1.5) ** 2), V, 2),
    ('meshgrid', lambda x: np.meshgrid(x, x[:2])[0] * np.meshgrid(x, x[:2])[1], V, 2),
    ('atleast_2d', lambda x: np.atleast_2d(x) ** 2, V, 2),
    ('item', lambda x: x.item(1) ** 3, V, 3),
    ('fft', lambda x: np.fft.fft(x, n=5, norm='ortho'), C, 2),
    ('rfft', lambda x: np.fft.rfft(x, n=7), V, 2),
    ('irfftn', lambda x: np.fft.irfftn(x, s=(4, 5), axes=(0, 1)), C, 2),
    ('ifftn axes', lambda x: np.fft.ifftn(x, axes=(1,)), C, 2),
    ('diff prepend', lambda x: np.diff(x ** 2, prepend=1.0), V, 2),
    ('repeat 0', lambda x: np.repeat(x, 0), A, 2),
    ('concatenate', lambda x: np.concatenate((x, 2.0 * x), axis=0) ** 2, A, 2),
    ('vstack of an array', lambda x: np.vstack(x) ** 2, V, 2),
    ('stack', lambda x: np.stack([x, x ** 2], axis=1), V, 2),
    ('norm axis', lambda x: np.linalg.norm(x, axis=1), A, 2),
    ('norm ord 3', lambda x: np.linalg.norm(x, ord=3), V, 2),
    ('tensordot', lambda x: np.tensordot(x, x, axes=([0], [0])), A, 2),
    ('int64 cast', lambda x: np.sum(x[np.int64(np.abs(x[:, 0]))] ** 2), A, 2),
    ('min of rows', lambda x: np.min(np.array([[x[0], x[1]], [x[1], 0.5]]), axis=0), V, 2),
    ('sign complex', lambda x: np.sign(x) * x, C, 2),
    ('dist', lambda x: math.dist([x[0], x[1]], [0.5, 0.2]), V, 2),
    ('dist one', lambda x: math.dist([x[0]], [0.5]), V, 2),
]


@pytest.mark.parametrize('name, f, x, order', CASES, ids=[c[0] for c in CASES])
def test_rule_differentiated_again(name, f, x, order):
    check_grads(f, x, np.random.default_rng(seed_of(name)), order=order, what=name)


def test_power_with_a_zero_exponent_at_zero_is_flat():
    f = lambda x: np.power(x, 0.0)              # noqa: E731
    assert tf.grad(f)(0.0) == 0.0
    assert tf.grad(tf.grad(f))(0.0) == 0.0
    g = lambda x: np.sum(x ** np.array([0.0, 2.0]))     # noqa: E731
    np.testing.assert_allclose(tf.hessian(g)(np.array([0.0, 1.5])), [[0.0, 0.0], [0.0, 2.0]])


def test_an_axis_computed_from_the_input_is_static_at_second_order():
    def f(x):
        return np.sum(np.sin(x), axis=int(x[0] > 5))       # an int: fine
    check_grads(f, V, np.random.default_rng(1), order=2)


def dist_to_point(p):
    return math.dist([p[0], p[1]], [0.5, 0.2])


def _third(f, p):
    """d/dp0 of the Hessian's entry (0, 0), by forward mode over forward over reverse."""
    def h00(p):
        return tf.jvp(tf.grad(f), (p,), ([1.0, 0.0],))[1][0]
    exact = tf.jvp(h00, (p,), ([1.0, 0.0],))[1]
    numeric = (h00([p[0] + 1e-5, p[1]]) - h00([p[0] - 1e-5, p[1]])) / 2e-5
    return exact, numeric


def test_third_order_forward_through_rules_that_build_lists():
    # the tangents of a list a rule builds add by structure: they were joined with `+`
    # into a longer list, and the third derivative read as 0.0 (a wrong number)
    exact, numeric = _third(dist_to_point, [0.3, -1.2])
    assert exact == pytest.approx(numeric, rel=1e-5)
    assert exact != 0.0
