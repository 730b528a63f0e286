"""np.interp's rules where the query points `x` or the knots `xp` are Python lists or
tuples (NumPy reads them as arrays): the gradients agree with central differences.

Before: with a scalar `x` and a list `xp`, `x < xp[0]` is a Python bool and the rule's
`~` made -1 or -2 of it: the gradient wrt fp had the wrong sign (issue 30).
"""
import numpy as np
import pytest

import tapeflow as tf

FP = np.array([1.0, 2.0, 3.0])
KNOTS = {'list': [-1, 0, 2], 'tuple': (-1.0, 0.0, 2.0), 'array': np.array([-1.0, 0.0, 2.0])}
POINTS = {'float': 0.5, 'list': [0.5, 1.5, -3.0], 'tuple': (0.5, 2.5),
          'array': np.array([0.5, 1.5, -3.0])}


def fd_grad(fn, v, eps=1e-6):
    out = np.zeros_like(v)
    for i in range(v.size):
        step = np.zeros_like(v)
        step.flat[i] = eps
        out.flat[i] = (fn(v + step) - fn(v - step)) / (2 * eps)
    return out


def test_the_issue_case():
    def f(fp):
        return np.interp(0.5, [-1, 0, 2], fp)

    np.testing.assert_allclose(tf.grad(f)(FP), [0.0, 0.75, 0.25])


@pytest.mark.parametrize('xp_kind', KNOTS)
@pytest.mark.parametrize('x_kind', POINTS)
@pytest.mark.parametrize('left', [None, 7.0])
def test_gradient_in_fp(xp_kind, x_kind, left):
    xp, x = KNOTS[xp_kind], POINTS[x_kind]

    def f(fp):
        return np.sum(np.interp(x, xp, fp, left, -4.0) ** 2)

    expected = fd_grad(f, FP)
    np.testing.assert_allclose(tf.grad(f)(FP), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tf.jacfwd(f)(FP), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize('xp_kind', KNOTS)
def test_gradient_in_x_array_and_in_left(xp_kind):
    xp = KNOTS[xp_kind]
    x = np.array([0.5, 1.5, -3.0, 2.5])

    def f(x, left):
        return np.sum(np.interp(x, xp, FP, left) ** 2)

    gx, gleft = tf.grad(f, argnums=(0, 1))(x, 5.0)
    np.testing.assert_allclose(gx, fd_grad(lambda v: f(v, 5.0), x), rtol=1e-6)
    assert gleft == pytest.approx(2 * 5.0)      # only x = -3 is left of the knots


@pytest.mark.parametrize('x_kind', ['list', 'tuple'])
def test_gradient_in_xp_with_sequence_points(x_kind):
    x = POINTS[x_kind]

    def f(xp):
        return np.sum(np.interp(x, xp, FP) ** 2)

    xp = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(tf.grad(f)(xp), fd_grad(f, xp), rtol=1e-6, atol=1e-9)


def test_eager_tape_with_list_knots():
    fp = tf.Variable(FP)
    with tf.GradientTape() as tape:
        y = np.interp(0.5, [-1, 0, 2], fp)
    np.testing.assert_allclose(tape.gradient(y, fp), [0.0, 0.75, 0.25])
