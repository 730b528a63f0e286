"""Ordinary Python the compiler must differentiate exactly, or refuse where it is
written (`file:line:col`): never a crash inside tapeflow, never a wrong number."""
import functools
import inspect

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import TapeflowError, UnsupportedError
from tests.gradcheck import check_gradient, numeric_directional, random_direction, seed_of


def check(f, *args, wrt=0, name=None):
    """Value against plain Python; gradient (reverse) and tangent (forward) against
    central differences along random directions."""
    rng = np.random.default_rng(seed_of(name or f.__name__))
    value, gradient = tf.value_and_grad(f, argnums=wrt)(*args)
    assert np.allclose(value, f(*args))
    check_gradient(f, [gradient], args, [wrt], rng)
    direction = random_direction(args[wrt], rng)
    tangents = tuple(direction if i == wrt else np.zeros_like(a) if isinstance(a, np.ndarray)
                     else 0.0 for i, a in enumerate(args))
    _, tangent = tf.jvp(f, args, tangents)
    numeric = numeric_directional(f, args, [wrt], [direction])
    assert np.isclose(float(np.sum(tangent)), numeric, rtol=1e-5, atol=1e-6)
    return gradient


def line_of(fn, text):
    """The line of `fn`'s file holding `text` (within `fn`)."""
    lines, first = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return first + offset
    raise AssertionError(f'{text!r} not in {fn.__name__}')


# ------------------------------------------------------------------ reversed(...)

def reversed_range(x, n):
    s = 0.0
    for i in reversed(range(n)):
        s = s * x + i
    return s


def reversed_array_enumerated(x):
    s = 0.0
    for k, v in enumerate(reversed(x)):
        s = s * 2.0 + np.sin(v) * k
    return s


def reversed_list_zipped(x):
    items = [x, 2.0 * x, x * x]
    s = 0.0
    for a, b in zip(reversed(items), items):
        s = s + a * np.sin(b)
    return s


def reversed_rows(x):
    s = np.zeros(x.shape[1])
    for row in reversed(x):
        s = s * 0.5 + np.cos(row)
    return np.sum(s * s)


def test_reversed_range():
    gradient = check(reversed_range, 1.5, 4)
    # s = ((3 x + 2) x + 1) x: ds/dx = 9 x^2 + 4 x + 1
    assert np.isclose(gradient, 9 * 1.5 ** 2 + 4 * 1.5 + 1)


@pytest.mark.parametrize('f, arg', [
    (reversed_array_enumerated, np.array([0.3, -1.2, 2.0])),
    (reversed_list_zipped, 0.3),
    (reversed_rows, np.arange(6.0).reshape(3, 2) / 5),
])
def test_reversed_sequences(f, arg):
    check(f, arg)
