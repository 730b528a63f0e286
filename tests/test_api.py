"""The functional API: argument forms, aux outputs, vjp, check_grads."""
import math
import numpy as np
import pytest

import tapeflow as tf


def loss_with_aux(w, x):
    pred = np.tanh(x @ w)
    loss = np.sum(pred * pred)
    return loss, pred


def three(a, b, c):
    return a * b * 2.0 + np.sum(c * a)


def scaled(x, scale=2.0):
    return x * x * scale


def wrong(x):
    return x * 3.0


def wrong_user(x):
    return wrong(x) + x


tf.defvjp(wrong, lambda g, ans, x: g * 30.0)      # deliberately wrong: check_grads must say so


def test_has_aux_returns_the_aux_value_untouched():
    w, x = np.array([0.1, -0.2]), np.array([[1.0, 2.0], [0.5, -1.0]])
    (value, aux), g = tf.value_and_grad(loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(aux, np.tanh(x @ w))
    g2, aux2 = tf.grad(loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g, g2)
    pred = np.tanh(x @ w)
    np.testing.assert_allclose(g, x.T @ (2 * pred * (1 - pred ** 2)))


def test_argnums_tuple_gives_a_tuple_in_order():
    ga, gc = tf.grad(three, argnums=(0, 2))(1.5, 2.0, np.array([1.0, 3.0]))
    assert ga == pytest.approx(2.0 * 2.0 + 4.0)
    np.testing.assert_allclose(gc, [1.5, 1.5])
    assert isinstance(ga, float) and gc.dtype == np.float64


def test_float32_gradient_stays_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = tf.grad(lambda_free)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x)


def lambda_free(x):
    return np.sum(x * x)


def test_defaults_are_used_and_can_be_overridden():
    assert tf.grad(scaled)(3.0) == 12.0
    assert tf.grad(scaled)(3.0, 1.0) == 6.0


def test_vjp_returns_one_cotangent_per_primal():
    out, pullback = tf.vjp(three, 1.5, 2.0, np.array([1.0, 3.0]))
    assert out == pytest.approx(three(1.5, 2.0, np.array([1.0, 3.0])))
    ga, gb, gc = pullback(2.0)
    assert ga == pytest.approx(2 * (4.0 + 4.0)) and gb == pytest.approx(2 * 3.0)
    np.testing.assert_allclose(gc, [3.0, 3.0])
    assert pullback(1.0)[1] == pytest.approx(3.0)          # a pullback can be called again


def test_jvp_checks_tangent_shapes():
    with pytest.raises(ValueError, match='shape'):
        tf.jvp(lambda_free, (np.ones(3),), (np.ones(2),))


def test_check_grads_passes_and_catches_a_wrong_rule():
    tf.check_grads(three, (1.5, 2.0, np.array([1.0, 3.0])), order=2)
    with pytest.raises(AssertionError, match='first derivative of wrong_user'):
        tf.check_grads(wrong_user, (1.0,), order=1)


def test_source_rejects_unknown_mode():
    with pytest.raises(ValueError, match='mode'):
        tf.source(lambda_free, mode='sideways')


def test_non_function_is_a_clear_type_error():
    with pytest.raises(TypeError, match='Python functions'):
        tf.grad(print)(1.0)          # a builtin without a rule (np.sin has one: below)


def tf_style(x, n):
    out = 1.0
    for i in range(n):
        out = tf.multiply(out, x)
    return tf.reduce_sum(tf.square(out) * tf.exp(x), axis=0, name='total')


def test_tf_style_ops_mean_their_numpy_functions_in_compiled_code():
    x = np.array([0.5, -0.25])
    g = tf.grad(tf_style)(x, 3)
    expected = (6 * x ** 5 + x ** 6) * np.exp(x)
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    assert 'np.multiply(out, x)' in tf.source(tf_style)


def tf_unsupported(a, b):
    return tf.reduce_sum(tf.matmul(a, b, transpose_a=True))


def test_tf_style_op_argument_without_a_numpy_place_is_located():
    with pytest.raises(tf.UnsupportedError, match='transpose_a'):
        tf.grad(tf_unsupported)(np.ones((2, 2)), np.ones((2, 2)))


def layer_loss(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def test_source_for_example_arguments_has_no_needless_unbroadcast():
    general = tf.source(layer_loss)
    specialised = tf.source(layer_loss, args=(np.ones((3, 2)), np.ones(2)))
    assert 'unbroadcast' in general
    assert 'unbroadcast' not in specialised
    g = tf.grad(layer_loss)(np.ones((3, 2)) * 0.1, np.ones(2))
    t = np.tanh(np.ones((3, 2)) * 0.1 @ np.ones(2))
    np.testing.assert_allclose(g, np.outer(2 * t * (1 - t ** 2), np.ones(2)), rtol=1e-12)


def mlp_loss(params, x):
    h = np.tanh(x @ params['w1'] + params['b1'])
    out = h @ params['w2']
    return np.sum(out ** 2), {'hidden': h}


def test_dict_of_arrays_as_argument_gives_a_dict_of_gradients():
    rng = np.random.default_rng(0)
    params = {'w1': rng.standard_normal((3, 4)), 'b1': rng.standard_normal(4),
              'w2': rng.standard_normal(4)}
    x = rng.standard_normal((5, 3))
    (loss, aux), g = tf.value_and_grad(mlp_loss, has_aux=True)(params, x)
    assert set(g) == set(params) and all(g[k].shape == params[k].shape for k in params)
    assert aux['hidden'].shape == (5, 4)
    eps = 1e-6
    for k in params:
        v = rng.standard_normal(params[k].shape)
        plus = dict(params, **{k: params[k] + eps * v})
        minus = dict(params, **{k: params[k] - eps * v})
        numeric = (mlp_loss(plus, x)[0] - mlp_loss(minus, x)[0]) / (2 * eps)
        assert np.isclose(np.sum(g[k] * v), numeric, rtol=1e-5)


def returns_dict(x):
    return {'double': x * 2.0, 'square': x * x}


def test_vjp_and_jvp_of_a_dict_result():
    out, pullback = tf.vjp(returns_dict, 3.0)
    assert out == {'double': 6.0, 'square': 9.0}
    assert pullback({'double': 1.0, 'square': 10.0}) == (2.0 + 60.0,)
    value, tangent = tf.jvp(returns_dict, (3.0,), (1.0,))
    assert tangent == {'double': 2.0, 'square': 6.0}


# ------------------------------------------------------------------ library functions given directly

def test_library_functions_are_differentiated_by_their_rules_when_given_directly():
    x = np.array([0.3, -1.2, 2.0])
    n = np.linalg.norm(x)
    np.testing.assert_allclose(tf.hessian(np.linalg.norm)(x),
                               (np.eye(3) - np.outer(x, x) / n ** 2) / n, rtol=1e-12)
    assert tf.grad(np.sin)(0.5) == pytest.approx(np.cos(0.5))
    assert tf.grad(math.sin)(0.5) == pytest.approx(np.cos(0.5))
    out, pullback = tf.vjp(np.sin, x)
    np.testing.assert_allclose(out, np.sin(x))
    np.testing.assert_allclose(pullback(np.ones(3))[0], np.cos(x))
    np.testing.assert_allclose(tf.jacfwd(np.exp)(x), np.diag(np.exp(x)))
    a = np.array([[2.0, 0.5], [0.3, 1.0]])
    np.testing.assert_allclose(tf.grad(np.linalg.det)(a), np.linalg.det(a) * np.linalg.inv(a).T)
    _, tangent = tf.jvp(np.tanh, (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent, 1 - np.tanh(x) ** 2)
