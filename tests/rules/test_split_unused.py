"""np.split, np.array_split and the h/v/dsplits with a piece the code does not use: its
cotangent is the symbolic zero 0.0, which the rule joined with the arrays of the other
pieces (a ValueError from np.concatenate before, issue 30). The gradient is zero there."""
import numpy as np
import pytest

import tapeflow as tf

X = np.arange(1.0, 7.0)
M = np.arange(1.0, 13.0).reshape(3, 4)


def split_first(x):
    a, b = np.split(x, 2)
    return np.sum(a)


def array_split_ends(x):
    a, b, c = np.array_split(x, 3)
    return np.sum(a * c)


def hsplit_first(x):
    a, b = np.hsplit(x, 2)
    return np.sum(a ** 2)


def vsplit_last(m):
    a, b, c = np.vsplit(m, 3)
    return np.sum(np.sin(c))


def split_at_indices(x):
    a, b, c = np.split(x, [1, 4])
    return np.sum(b) * 2.0


def fd_grad(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        out.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return out


@pytest.mark.parametrize('f, x', [(split_first, X), (array_split_ends, X), (hsplit_first, X),
                                  (hsplit_first, M), (vsplit_last, M), (split_at_indices, X)],
                         ids=lambda v: getattr(v, '__name__', 'x'))
def test_unused_pieces_have_zero_gradient(f, x):
    expected = fd_grad(f, x)
    np.testing.assert_allclose(tf.grad(f)(x), expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(tf.jacfwd(f)(x), expected, rtol=1e-7, atol=1e-9)


def test_the_issue_case_closed_form():
    np.testing.assert_array_equal(tf.grad(split_first)(X), [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(tf.grad(array_split_ends)(X), [5.0, 6.0, 0.0, 0.0, 1.0, 2.0])
