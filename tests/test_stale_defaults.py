"""Generated code holds a function's defaults: a def made again with other defaults
(`lambda x, k=k` in a loop) is compiled again, also when it is called from
another compiled function, never served the code of the first."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, seed_of


def calls(fun):
    def caller(x):
        return fun(x)
    return caller


@pytest.mark.parametrize('mode', ['grad', 'jvp'])
def test_a_callee_made_again_with_other_defaults_is_compiled_again(mode):
    x = np.array([1.0, -2.0, 3.0])
    rng = np.random.default_rng(seed_of(mode))
    for order in (2, 3, 1):
        fun = lambda x, order=order: np.linalg.norm(x, ord=order)   # noqa: E731
        f = calls(fun)
        if mode == 'grad':
            g = tf.grad(f)(x)
            check_gradient(fun, [g], [x], [0], rng)
            expected = np.sign(x) * np.abs(x) ** (order - 1) / fun(x) ** (order - 1)
            np.testing.assert_allclose(g, expected)
        else:
            v = rng.standard_normal(3)
            _, t = tf.jvp(f, (x,), (v,))
            numeric = (fun(x + 1e-6 * v) - fun(x - 1e-6 * v)) / 2e-6
            np.testing.assert_allclose(t, numeric, rtol=1e-6)


def test_a_def_made_again_with_equal_defaults_is_not_compiled_again():
    before = None
    for _ in range(3):
        def f(x, k=2.0):
            return np.sum(x ** k)
        np.testing.assert_allclose(tf.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])
        misses = tf.cache.stats['misses'] if hasattr(tf, 'cache') else None
        if before is not None and misses is not None:
            assert misses == before
        before = misses
