"""jacobian and batch_jacobian: values (closed forms, differences) and TF's errors."""
import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(2)


def _numeric_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    y = np.asarray(f(tf.constant(x)))
    jac = np.zeros(y.shape + x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        diff = (np.asarray(f(tf.constant(x + step))) - np.asarray(f(tf.constant(x - step))))
        jac[(Ellipsis,) + index] = diff / (2 * eps)
    return jac


def test_jacobian_of_elementwise_product_is_diagonal():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    jac = tape.jacobian(y, x)
    assert jac.shape == (3, 3) and jac.dtype == np.float32
    np.testing.assert_array_equal(jac.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_jacobian_shape_is_target_shape_plus_source_shape():
    a = rng.standard_normal((2, 3))
    w = rng.standard_normal((3, 4))
    x, v = tf.constant(a), tf.constant(w)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, v])
        y = x @ v * 2.0
    jx, jv = tape.jacobian(y, [x, v])
    assert jx.shape == (2, 4, 2, 3) and jv.shape == (2, 4, 3, 4)
    np.testing.assert_allclose(jx.numpy(), _numeric_jacobian(lambda t: t @ v * 2.0, a), atol=1e-7)
    np.testing.assert_allclose(jv.numpy(), _numeric_jacobian(lambda t: x @ t * 2.0, w), atol=1e-7)
    jac = tape.jacobian(y, {'x': x})
    assert set(jac) == {'x'} and jac['x'].shape == (2, 4, 2, 3)


def test_jacobian_of_a_scalar_is_the_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = (x * x) @ tf.constant([1.0, 1.0])
    jac = tape.jacobian(y, x)
    assert jac.shape == (2,) and jac.numpy().tolist() == [2.0, 4.0]


def test_jacobian_unconnected():
    x, lonely = tf.constant([1.0, 2.0]), tf.constant([[1.0], [2.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, lonely])
        y = x * 3.0
    assert tape.jacobian(y, lonely) is None
    zeros = tape.jacobian(y, lonely, unconnected_gradients='zero')
    assert zeros.shape == (2, 2, 1) and not zeros.numpy().any()
    with pytest.raises(ValueError, match='unconnected_gradients'):
        tape.jacobian(y, x, unconnected_gradients='nope')


def test_jacobian_on_a_non_persistent_tape_works_once():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.jacobian(y, x).shape == (2, 2)
    with pytest.raises(RuntimeError):
        tape.jacobian(y, x)


def test_batch_jacobian_matches_per_example_jacobians():
    a = rng.standard_normal((4, 3))
    w = tf.constant(rng.standard_normal((3, 2)))
    x = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = (x * x) @ w                        # rows are independent
    jac = tape.batch_jacobian(y, x)
    assert jac.shape == (4, 2, 3)
    for b in range(4):
        expected = _numeric_jacobian(lambda t: (t * t) @ w, a[b])
        np.testing.assert_allclose(jac.numpy()[b], expected, atol=1e-7)


def test_batch_jacobian_of_higher_rank_values():
    x = tf.constant(rng.standard_normal((2, 3, 2)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    jac = tape.batch_jacobian(y, x)
    assert jac.shape == (2, 3, 2, 3, 2)
    np.testing.assert_array_equal(jac.numpy()[1], 2.0 * np.eye(6).reshape(3, 2, 3, 2))


@pytest.mark.parametrize('tshape, sshape, match', [
    ((3,), (3, 2), 'rank at least 2'),
    ((3, 2), (3,), 'rank at least 2'),
    ((3, 2), (4, 2), 'first dimension'),
])
def test_batch_jacobian_errors(tshape, sshape, match):
    x = tf.constant(np.ones(sshape))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.constant(np.ones(tshape)) * 1.0
    with pytest.raises(ValueError, match=match):
        tape.batch_jacobian(y, x)


def test_batch_jacobian_unconnected():
    x, y = tf.constant(np.ones((2, 2))), tf.constant(np.ones((2, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = y * 2.0
    assert tape.batch_jacobian(z, x) is None
    assert tape.batch_jacobian(z, x, unconnected_gradients='zero').shape == (2, 3, 2)


def test_hessian_as_jacobian_of_gradient_under_an_outer_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = (x * x * x) @ tf.constant([1.0, 1.0])
        g = inner.gradient(y, x)               # 3x^2
    hessian = outer.jacobian(g, x)
    np.testing.assert_array_equal(hessian.numpy(), np.diag([6.0, 12.0]))
