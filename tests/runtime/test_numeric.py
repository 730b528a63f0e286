"""Eager gradients against finite differences (random directions) and closed forms.

Every function here is built from operators and NumPy functions whose rules
are in the shared rule table; a case whose rule is not registered yet is
skipped, so the table can grow without editing this file.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import RULES
from tests.runtime.rt_numeric import check_second_order, check_vjp


rng = np.random.default_rng(1)


def _positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def _any(*shape):
    return rng.standard_normal(shape)


# (name, function of Tensors, input values, NumPy functions it needs rules for)
CASES = [
    ('mul_div', lambda x, y: x * y + x / (y * y + 1.0), [_any(3), _any(3)], []),
    ('poly', lambda x: x ** 3 - 2.0 * x + 1.0, [_any(4)], []),
    ('pow_both', lambda x, y: x ** y, [_positive(3), _any(3)], []),
    ('rpow', lambda x: 2.0 ** x, [_any(3)], []),
    ('reflected', lambda x: 1.0 / x - 3.0 - x + 2.0 * x, [_positive(2, 2)], []),
    ('neg_pos', lambda x: -x * +x, [_any(3)], []),
    ('broadcast_col_row', lambda x, y: x * y - y / (x * x + 1.0), [_any(3, 1), _any(4)], []),
    ('broadcast_row', lambda x, y: x / (y * y + 2.0), [_any(2, 3), _any(3)], []),
    ('broadcast_scalar', lambda x, y: x ** 2 * y, [_any(2, 3), _any()], []),
    ('broadcast_keep1', lambda x, y: x - y * x, [_any(2, 3), _any(1, 3)], []),
    ('matmul', lambda a, b: a @ b, [_any(3, 4), _any(4, 2)], []),
    ('matvec', lambda a, v: a @ v, [_any(3, 4), _any(4)], []),
    ('vecmat', lambda v, a: v @ a, [_any(4), _any(4, 3)], []),
    ('batched_matmul', lambda a, b: a @ b, [_any(2, 3, 4), _any(4, 2)], []),
    ('ufuncs', lambda x, y: np.multiply(np.add(x, y), np.subtract(x, y)) / np.power(y, 2),
     [_any(3), _positive(3)], []),
    ('sin_exp', lambda x: np.sin(x) * np.exp(x), [_any(3)], [np.sin, np.exp]),
    ('tanh_log', lambda x: np.tanh(x) + np.log(x), [_positive(3)], [np.tanh, np.log]),
    ('sum_axis', lambda x: np.sum(x * x, axis=0), [_any(3, 2)], [np.sum]),
    ('mean_method', lambda x: (x * x).mean(axis=1), [_any(3, 2)], [np.mean]),
    ('getitem', lambda x: x[1:, ::-1] * x[0], [_any(3, 2)], []),
]


@pytest.mark.parametrize('name, f, values, fns', CASES, ids=[c[0] for c in CASES])
def test_first_order_matches_finite_differences(name, f, values, fns):
    missing = [fn for fn in fns if fn not in RULES]
    if name == 'getitem':
        import operator
        missing += [] if operator.getitem in RULES else ['getitem']
    assert not missing, f'no rule for {missing}'
    for seed in range(3):
        check_vjp(f, values, seed=seed)


# name -> what the backward pass itself calls, run on Tensors (so needs rules for)
SECOND = {'mul_div': [], 'poly': [], 'reflected': [], 'ufuncs': [], 'matvec': [],
          'getitem': [], 'sum_axis': [], 'mean_method': [],
          'pow_both': [np.where, np.log], 'broadcast_col_row': [np.sum, np.reshape],
          'matmul': [np.swapaxes], 'sin_exp': [np.cos], 'tanh_log': []}


@pytest.mark.parametrize('name', sorted(SECOND))
def test_second_order_matches_finite_differences(name):
    (_, f, values, fns), = [c for c in CASES if c[0] == name]
    missing = [fn for fn in fns + SECOND[name] if fn not in RULES]
    assert not missing, f'no rule for {missing}'
    check_second_order(f, values, seed=0)


def test_third_derivative_with_three_tapes():
    x = tf.Variable(1.5, dtype=tf.float64)
    with tf.GradientTape() as t1:
        with tf.GradientTape() as t2:
            with tf.GradientTape() as t3:
                y = x ** 4 / 4.0 - x * x
            d1 = t3.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t1.gradient(d2, x)
    assert d1.numpy() == pytest.approx(1.5 ** 3 - 3.0)
    assert d2.numpy() == pytest.approx(3 * 1.5 ** 2 - 2.0)
    assert d3.numpy() == pytest.approx(6 * 1.5)


def test_hessian_vector_product_closed_form():
    a = rng.standard_normal((3, 3))
    a = a + a.T
    x = tf.constant(rng.standard_normal(3))
    v = rng.standard_normal(3)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = (x @ tf.constant(a)) * x / 2.0
        g = inner.gradient(y, x)             # a x
    hv = outer.gradient(g, x, output_gradients=tf.constant(v))
    np.testing.assert_allclose(g.numpy(), a @ x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hv.numpy(), a @ v, rtol=1e-12)


def test_float32_gradients_stay_float32_and_agree_with_float64():
    values = _any(4)
    grads = {}
    for dtype in (np.float32, np.float64):
        x = tf.constant(values.astype(dtype))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x ** 3 / (x * x + 1.0)
        grads[dtype] = tape.gradient(y, x)
        assert grads[dtype].dtype == dtype
    np.testing.assert_allclose(grads[np.float32].numpy(), grads[np.float64].numpy(), rtol=1e-5)


def test_shared_subexpressions_accumulate():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
        z = y * x + y * y + x       # x^3 + x^4 + x
    assert tape.gradient(z, x).numpy() == 3 * 4 + 4 * 8 + 1


def test_output_gradients_stay_differentiable_jvp_by_double_vjp():
    x = tf.constant(rng.standard_normal(3))
    u = tf.constant(np.zeros(3))
    v = rng.standard_normal(3)
    with tf.GradientTape() as outer:
        outer.watch(u)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        vjp = inner.gradient(y, x, output_gradients=u)     # 3 x^2 u, linear in u
    jvp = outer.gradient(vjp, u, output_gradients=tf.constant(v))
    np.testing.assert_allclose(jvp.numpy(), 3 * x.numpy() ** 2 * v, rtol=1e-12)


def test_a_variable_reassigned_before_the_backward_pass_uses_the_value_it_had():
    v = tf.Variable(2.0, dtype=tf.float64)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = v * v * v
        v.assign(5.0)
        dy = inner.gradient(y, v)
    assert dy.numpy() == 12.0                 # 3 * 2^2, not 3 * 5^2
