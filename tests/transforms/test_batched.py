"""Batched forward mode: every direction in one sweep equals one sweep per direction.

`jacfwd` runs the forward code once with the input's tangent carrying a
leading batch axis (`tapeflow.rules.batching`); `hessian` does so over the
compiled gradient. On the whole corpus, the batched Jacobian of the scalar
output must equal the gradient, and the batched Hessian must equal the
columns `jvp(grad f, e_k)` taken one direction at a time.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import api
from tests.corpus import CASES


def _differentiated_arrays(case):
    """The cases whose differentiated arguments are floats or arrays (not lists)."""
    args = case.args(np.random.default_rng(0))
    return all(isinstance(args[i], (float, np.ndarray)) for i in case.wrt)


ARRAY_CASES = [c for c in CASES if _differentiated_arrays(c)]


def _unit_tangents(args, i, direction):
    return [direction if k == i else (np.zeros_like(a) if isinstance(a, np.ndarray) else
                                      (0.0 if isinstance(a, float) else a))
            for k, a in enumerate(args)]


def test_most_of_the_corpus_takes_part():
    assert len(ARRAY_CASES) >= 0.85 * len(CASES)


@pytest.mark.parametrize('case', ARRAY_CASES, ids=lambda c: c.name)
def test_batched_jacobian_of_a_scalar_function_is_its_gradient(case):
    args = case.args(np.random.default_rng(11))
    for i in case.wrt:
        jac = tf.jacfwd(case.fn, argnums=i)(*args)
        expected = tf.grad(case.fn, argnums=i)(*args)
        assert np.shape(jac) == np.shape(args[i])
        np.testing.assert_allclose(jac, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('case', ARRAY_CASES, ids=lambda c: c.name)
def test_batched_hessian_equals_one_sweep_per_direction(case):
    args = case.args(np.random.default_rng(12))
    i = case.wrt[0]
    x = args[i]
    gradient = tf.grad(case.fn, argnums=i)
    columns = []
    for direction in api._basis_batch(x):
        direction = direction if isinstance(x, np.ndarray) else float(direction)
        columns.append(np.asarray(tf.jvp(gradient, args, _unit_tangents(args, i, direction))[1]))
    expected = np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
    hessian = tf.hessian(case.fn, argnums=i)(*args)
    np.testing.assert_allclose(hessian, expected, rtol=1e-9, atol=1e-11)
