"""Batched sweeps: every direction in one sweep equals one sweep per direction.

`jacfwd` runs the forward code once with the input's tangent carrying a
leading batch axis (`tapeflow.rules.batching`); `hessian` does so over the
compiled gradient, and `jacrev` over the pullback (a batch of cotangents).
On the whole corpus, the batched Jacobians of the scalar output must equal
the gradient, and the batched Hessian must equal the columns
`jvp(grad f, e_k)` taken one direction at a time.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import jacobians
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
def test_batched_jacobians_of_a_scalar_function_are_its_gradient(case):
    args = case.args(np.random.default_rng(11))
    for i in case.wrt:
        expected = tf.grad(case.fn, argnums=i)(*args)
        for jacobian in (tf.jacfwd, tf.jacrev):
            jac = jacobian(case.fn, argnums=i)(*args)
            assert np.shape(jac) == np.shape(args[i])
            np.testing.assert_allclose(jac, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('case', ARRAY_CASES, ids=lambda c: c.name)
def test_batched_hessian_equals_one_sweep_per_direction(case):
    args = case.args(np.random.default_rng(12))
    i = case.wrt[0]
    x = args[i]
    gradient = tf.grad(case.fn, argnums=i)
    columns = []
    for direction in jacobians.basis_batch(x):
        direction = direction if isinstance(x, np.ndarray) else float(direction)
        columns.append(np.asarray(tf.jvp(gradient, args, _unit_tangents(args, i, direction))[1]))
    expected = np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
    hessian = tf.hessian(case.fn, argnums=i)(*args)
    np.testing.assert_allclose(hessian, expected, rtol=1e-9, atol=1e-11)


def rows_and_columns(x, w):
    y = np.tanh(w @ x)
    for i in range(2):
        y = y * x[i] + np.sin(y)
    return y.reshape(2, 2)


def test_batched_jacobians_of_a_matrix_valued_function_agree_with_differences():
    rng = np.random.default_rng(13)
    x, w = rng.standard_normal(3), rng.standard_normal((4, 3))
    eps = 1e-6
    numeric = np.stack([(rows_and_columns(x + eps * e, w) - rows_and_columns(x - eps * e, w))
                        / (2 * eps) for e in np.eye(3)], axis=-1)
    for jacobian in (tf.jacfwd, tf.jacrev):
        jac = jacobian(rows_and_columns)(x, w)
        assert jac.shape == (2, 2, 3)
        np.testing.assert_allclose(jac, numeric, rtol=1e-6, atol=1e-8)
    jac_w = tf.jacrev(rows_and_columns, argnums=1)(x, w)
    assert jac_w.shape == (2, 2, 4, 3)
    np.testing.assert_allclose(jac_w, tf.jacfwd(rows_and_columns, argnums=1)(x, w), rtol=1e-12)


def clipped(x):
    return np.tanh(x)


tf.defvjp(clipped, lambda g, ans, x: g * (1.0 - ans ** 2))
tf.defjvp(clipped, lambda t, ans, x: t * (1.0 - ans ** 2))


def through_a_lambda_rule(x):
    return clipped(x) * x[0]


def test_jacrev_falls_back_to_one_sweep_per_output_when_the_adjoint_cannot_be_swept_forward():
    x = np.array([0.3, -0.2, 0.5])
    expected = np.diag(1.0 - np.tanh(x) ** 2) * x[0]
    expected[:, 0] += np.tanh(x)
    np.testing.assert_allclose(tf.jacrev(through_a_lambda_rule)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(tf.jacfwd(through_a_lambda_rule)(x), expected, rtol=1e-12)
    # a vector output has no gradient, so no Hessian: JAX's TypeError at the return
    for transform in (tf.grad, tf.hessian):
        with pytest.raises(TypeError, match=r'test_batched.py:\d+:\d+: Gradient only defined for '
                                            r'scalar-output functions. Output of '
                                            r'through_a_lambda_rule\(\) had shape: \(3,\)'):
            transform(through_a_lambda_rule)(x)


# Found by the fuzzer's batched check (seeds 5010, 5011: tf.hessian against jvp of grad):
# a write through a repeated index kept every position's cotangent in the batched sweep,
# where NumPy keeps the last write (SILENT WRONG Hessians), and np.place's values given
# as a list had their batch of tangents read as an array (AttributeError).

def written_through_a_repeated_index(x):
    x[[0, 0, 0]] = np.sum(x)
    return np.sum(x * x)


def augmented_through_a_repeated_index(x):
    x[[0, 0]] += np.sin(x[1])
    return np.sum(x * x)


def a_copy_written_through_repeated_pairs(x):
    y = np.zeros((3, 3))
    y[[0, 0], [1, 1]] = x[:2] ** 2
    y[:, [2, 2]] += x[1:] * 3.0
    z = x * 1.0
    z[[0, 2, 0]] = x[[1, 1, 2]] ** 2
    return np.sum(y * y) + np.sum(z * x)


def placed_from_a_list(x):
    a = x * x * 3.0
    np.place(a, a < 1.2, [np.tanh(np.sum(x))])
    return np.sum(a * a)


@pytest.mark.parametrize('f', [written_through_a_repeated_index, augmented_through_a_repeated_index,
                               a_copy_written_through_repeated_pairs, placed_from_a_list],
                         ids=lambda f: f.__name__)
def test_batched_hessian_of_writes_through_repeated_indices(f):
    x = np.array([1.1, 0.7, 0.5])
    grad, eps = tf.grad(f), 1e-5
    numeric = np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(3)],
                       axis=1)
    columns = np.stack([tf.jvp(grad, (x.copy(),), (e,))[1] for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(columns, numeric, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.hessian(f)(x.copy()), numeric, rtol=1e-6, atol=1e-7)


def a_branch_never_taken_reads_a_broadcast_product(y):
    a = y * 0.25
    d = np.sum(a, axis=1, keepdims=True) * y
    j = 0
    while j < 3:
        e = np.sin(2.0 - a[1])
        if j < 5:
            break
        e += d[0]               # never runs: d's cotangent stays the symbolic zero
    return np.sum(e * e) + np.sum(a * y)


def test_the_hessian_where_a_symbolic_zero_meets_a_smaller_operand():
    """Fuzzer, seed 5060 index 285: the batched sweep crashed (shapes (6,) and (6, 2, 3))
    where the symbolic zero cotangent of d times the (2, 1) sum was unbroadcast to y:
    the primal gives the symbolic zero, the batch of tangents now does too."""
    y = np.array([[1.2, 0.66, 1.35], [1.42, 0.74, 1.27]])
    f = a_branch_never_taken_reads_a_broadcast_product
    grad, eps = tf.grad(f), 1e-5
    numeric = np.array([(grad(y + eps * e.reshape(2, 3)) - grad(y - eps * e.reshape(2, 3)))
                        / (2 * eps) for e in np.eye(6)]).reshape(2, 3, 2, 3)
    np.testing.assert_allclose(tf.hessian(f)(y.copy()), numeric.transpose(2, 3, 0, 1),
                               rtol=1e-5, atol=1e-7)
