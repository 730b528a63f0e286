"""The helpers generated code calls: fast paths agree with the general forms,
symbolic zeros pass through, and reductions compile to one readable call."""
import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain
from tapeflow.rules.numpy_reductions import (_choice, count, expand, grad_of_max, grad_of_mean,
                                             grad_of_sum)
from tapeflow.rules.operators import grad_of_matmul_a, grad_of_matmul_b
from tapeflow.rules.shapes import dense, fit, unbroadcast, unbroadcast_to

FORMS = [((2, 3, 4), None, False), ((2, 3, 4), 1, False), ((2, 3, 4), -1, True),
         ((2, 3, 4), (0, 2), False), ((2, 3, 4), (0, 2), True), ((5,), 0, False),
         ((), None, False), ((2, 3), np.int64(1), False), ((3, 4), None, True)]
DTYPES = [np.float64, np.float32, np.complex128]


def _cotangent(ans, dtype, rng):
    g = np.asarray(rng.standard_normal(np.shape(ans))).astype(dtype)
    return g if np.ndim(ans) else g[()]


def _same(fast, general):
    assert np.shape(fast) == np.shape(general)
    assert np.result_type(fast) == np.result_type(general)
    np.testing.assert_allclose(fast, general, rtol=1e-6)


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize('shape, axis, keepdims', FORMS)
def test_reductions_fast_paths_agree_with_the_general_forms(shape, axis, keepdims, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    x = np.round(x.real, 1).astype(dtype)               # ties for max
    g = _cotangent(np.sum(x, axis=axis, keepdims=keepdims), dtype, rng)
    spread = expand(g, x, axis, keepdims)
    _same(grad_of_sum(g, x, axis, keepdims), fit(spread, x))
    _same(grad_of_mean(g, x, axis, keepdims), fit(spread / count(x, axis), x))
    if dtype is not np.complex128:
        ans = np.max(x, axis=axis, keepdims=keepdims)
        _same(grad_of_max(g, x, ans, axis, keepdims),
              fit(spread * _choice(x, ans, axis, keepdims), x))


def test_a_python_float_cotangent_takes_the_dtype_of_x():
    x = np.ones((2, 3), np.float32)
    for helper in (grad_of_sum, grad_of_mean):
        assert helper(1.0, x).dtype == np.float32
    assert grad_of_max(1.0, x, np.float32(1.0)).dtype == np.float32
    np.testing.assert_allclose(grad_of_max(1.0, x, np.float32(1.0)), np.full((2, 3), 1 / 6))


def test_fast_paths_return_fresh_writable_arrays():
    x = np.zeros((3, 4))
    out = grad_of_sum(np.ones(3), x, 1)
    out[0, 0] = 5.0
    assert out.flags.writeable and out[1, 0] == 1.0


def test_max_with_initial_above_every_element_gives_zero():
    x = np.array([[1.0, 2.0], [3.0, 0.5]])
    ans = np.max(x, axis=1, initial=10.0)
    np.testing.assert_array_equal(grad_of_max(np.ones(2), x, ans, 1), np.zeros((2, 2)))


@pytest.mark.parametrize('a_shape, b_shape', [((2, 3), (3, 4)), ((2, 3), (3,)), ((3,), (3, 4)),
                                              ((3,), (3,)), ((5, 2, 3), (3, 4)),
                                              ((2, 3), (5, 3, 4)), ((3,), (5, 3, 4))])
def test_matmul_fast_paths_agree_with_autograd_style_einsum(a_shape, b_shape):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    g = rng.standard_normal(np.shape(a @ b))
    g = g if np.ndim(g) else float(g)
    # <g, a @ b> is linear in each operand: its gradient is the cotangent.
    eps = 1e-6
    for i, (x, helper) in enumerate([(a, grad_of_matmul_a), (b, grad_of_matmul_b)]):
        got = helper(g, a, b)
        assert np.shape(got) == np.shape(x)
        d = rng.standard_normal(np.shape(x))
        moved = [a, b]
        moved[i] = x + eps * d
        plus = np.sum(g * (moved[0] @ moved[1]))
        moved[i] = x - eps * d
        minus = np.sum(g * (moved[0] @ moved[1]))
        np.testing.assert_allclose(np.sum(got * d), (plus - minus) / (2 * eps), rtol=1e-6)


def test_symbolic_zero_cotangents_pass_through():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert grad_of_matmul_a(0.0, a, b) == 0.0
    assert grad_of_matmul_b(0.0, a, b) == 0.0
    assert grad_of_matmul_a(np.ones((2, 4)), a, 0.0) == 0.0
    np.testing.assert_array_equal(dense(0.0, a), np.zeros((2, 3)))
    assert dense(2.0, 3.0) == 2.0
    np.testing.assert_array_equal(grad_of_sum(0.0, a, 1), np.zeros((2, 3)))


def test_a_symbolic_zero_times_a_smaller_array_flows_back_as_zero():
    # 0.0 * s, s of shape (1, 3), is the cotangent of x of shape (2, 3): nothing flows
    assert unbroadcast(0.0 * np.ones((1, 3)), np.ones((2, 3))) == 0.0
    with pytest.raises(ValueError):                 # a real cotangent of the wrong shape
        unbroadcast(np.ones((1, 3)), np.ones((2, 3)))


def summed_rows_in_a_list(x):
    """Found by the fuzzer (seed 80808): the first list element's cotangent is the
    symbolic zero, and `bmul * _sum` is then zeros of the kept sum's shape (1, 3)."""
    rows = []
    for i in range(2):
        rows.append(2.0 + np.sum(x, axis=0, keepdims=True) * x)
    return np.sum(rows[-1]) + np.sum(x.ravel() ** 2)


def test_list_of_kept_sums_differentiates():
    rng = np.random.default_rng(2)
    checked_against_plain(summed_rows_in_a_list, (rng.standard_normal((2, 3)),), 0, rng)


def test_unbroadcast_fast_paths():
    g = np.arange(24.0).reshape(2, 3, 4)
    assert unbroadcast(g, np.zeros((2, 3, 4))) is g
    np.testing.assert_array_equal(unbroadcast_to(g, (4,)), g.sum(axis=(0, 1)))
    np.testing.assert_array_equal(unbroadcast_to(g, (3, 1)), g.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(unbroadcast_to(g, [1, 4]), g.sum(axis=(0, 1))[None])
    assert unbroadcast(g, np.zeros((3, 4), np.float32)).dtype == np.float32


# ---------------------------------------------------------------- through the compiler

MASK = np.array([[True, False, True], [False, True, True]])


def reductions(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.exp(x - m), axis=1).mean() + np.min(x) + np.prod(x[0])


def rare_forms(x):
    return np.sum(x * x, where=MASK) + np.mean(x, axis=0, where=MASK).sum() \
        + np.max(x, axis=1, initial=-5.0, where=MASK).sum()


def test_common_reductions_read_as_one_helper_call():
    text = tf.source(reductions)
    for call in ('grad_of_max(bm, x, m, 1, True)', 'grad_of_mean(', 'grad_of_sum(',
                 'grad_of_max(bmin, x, _min)', 'products_of_others('):
        assert call in text, text
    for slow in ('expand(', 'fit(', '_masked(', 'count('):
        assert slow not in text, text


def test_rare_forms_stay_correct():
    x = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    grad = tf.grad(rare_forms)(x)
    mean_part = MASK / MASK.sum(axis=0)
    max_part = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]) + np.array([[0, 0, 0], [0, 1.0, 0]])
    np.testing.assert_allclose(grad, 2 * x * MASK + mean_part + max_part)


def test_second_derivatives_through_the_helpers():
    x = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    hessian = tf.hessian(reductions)(x)
    gradient = tf.grad(reductions)
    eps = 1e-6
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        column = (gradient(x + e.reshape(x.shape)) - gradient(x - e.reshape(x.shape))) / (2 * eps)
        np.testing.assert_allclose(hessian[..., k // 3, k % 3], column, rtol=1e-5, atol=1e-7)
