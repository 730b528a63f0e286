"""`custom_vjp` keeps its residuals (JAX's semantics, issue 30): `bwd` gets the residuals of
the very `fwd` call that produced the value, in every path, and `fwd` runs once per forward
evaluation. A dropout whose `fwd` draws its mask is the witness: another mask's gradient
would be a plausible wrong number."""
import numpy as np
import pytest

import tapeflow as tf

CALLS = {'fun': 0, 'fwd': 0, 'bwd': 0}


@tf.custom_vjp
def dropout(x):
    CALLS['fun'] += 1
    return x * (np.random.rand(*np.shape(x)) > 0.5)


def dropout_fwd(x):
    CALLS['fwd'] += 1
    mask = np.random.rand(*np.shape(x)) > 0.5
    return x * mask, mask


def dropout_bwd(mask, g):
    CALLS['bwd'] += 1
    return (g * mask,)


dropout.defvjp(dropout_fwd, dropout_bwd)


def loss(x):
    return np.sum(dropout(x * 2.0) * x)


def layer(x, w):
    return np.tanh(dropout(x) * w)


def network(x, w):
    h = layer(x, w)
    return np.sum(layer(h, w) ** 2)


def counted(fn):
    CALLS.update(fun=0, fwd=0, bwd=0)
    out = fn()
    return out, dict(CALLS)


def mask_of(seed, n):
    np.random.seed(seed)
    return np.random.rand(n) > 0.5


X = np.linspace(0.5, 3.0, 6)


def test_grad_uses_the_mask_of_the_value():
    m = mask_of(7, 6)
    np.random.seed(7)
    (value, grad), calls = counted(lambda: tf.value_and_grad(loss)(X))
    assert value == np.sum(2.0 * X * m * X)
    assert np.allclose(grad, 4.0 * X * m, rtol=1e-15)            # d/dx sum(2 x^2 m)
    assert calls == {'fun': 0, 'fwd': 1, 'bwd': 1}                 # fwd once, as in JAX
    assert np.random.rand() == np.random.RandomState(7).rand(7)[6]     # one draw of 6


def test_vjp_keeps_the_residuals_for_every_pullback():
    m = mask_of(3, 6)
    np.random.seed(3)
    (out, pullback), calls = counted(lambda: tf.vjp(dropout, X))
    assert np.array_equal(out, X * m) and calls['fwd'] == 1
    for u in (np.ones(6), np.arange(6.0)):
        assert np.array_equal(pullback(u)[0], u * m)
    assert CALLS['fwd'] == 1 and CALLS['bwd'] == 2


def test_a_custom_function_nested_in_user_functions():
    w = 0.8
    np.random.seed(5)
    m1, m2 = np.random.rand(6) > 0.5, np.random.rand(6) > 0.5
    np.random.seed(5)
    (value, grads), calls = counted(lambda: tf.value_and_grad(network, (0, 1))(X, w))
    h = np.tanh(X * m1 * w)
    y = np.tanh(h * m2 * w)
    assert np.isclose(value, np.sum(y ** 2), rtol=1e-14)
    dy = 2 * y * (1 - y ** 2)
    dh = dy * m2 * w * (1 - h ** 2)
    assert np.allclose(grads[0], dh * m1 * w, rtol=1e-13)
    assert np.isclose(grads[1], np.sum(dy * h * m2) + np.sum(dh * X * m1), rtol=1e-13)
    assert calls['fwd'] == 2 and calls['fun'] == 0


def test_jacrev_sweeps_with_the_mask_of_the_value():
    m = mask_of(2, 6)
    np.random.seed(2)
    jac = tf.jacrev(dropout)(X)         # (a sweep per row, each replaying the value's draws)
    assert np.array_equal(jac, np.diag(m.astype(float)))
    assert np.random.rand() == np.random.RandomState(2).rand(7)[6]    # the plain call's state


def test_under_tf_function_on_a_gradient_tape():
    f = tf.function(loss)
    m = mask_of(4, 6)
    np.random.seed(4)
    x = tf.constant(X)
    CALLS.update(fun=0, fwd=0, bwd=0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    grad = tape.gradient(y, x).numpy()
    assert np.isclose(y.numpy(), np.sum(2.0 * X * m * X))
    assert np.allclose(grad, 4.0 * X * m, rtol=1e-15)
    assert CALLS['fwd'] == 1 and CALLS['fun'] == 0


def test_on_the_eager_tape():
    m = mask_of(6, 6)
    np.random.seed(6)
    x = tf.constant(X)
    CALLS.update(fun=0, fwd=0, bwd=0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(dropout(x) * x)
    assert np.allclose(tape.gradient(y, x).numpy(), 2.0 * X * m)
    assert CALLS['fwd'] == 1


def test_forward_mode_replays_the_draws_of_the_value():
    m = mask_of(8, 6)
    np.random.seed(8)
    value, tangent = tf.jvp(loss, (X,), (np.ones(6),))
    assert np.random.rand() == np.random.RandomState(8).rand(7)[6]    # the plain call's state
    assert value == np.sum(2.0 * X * m * X)
    assert np.isclose(tangent, np.sum(4.0 * X * m), rtol=1e-15)


def test_forward_mode_refuses_residuals_of_another_value():
    @tf.custom_vjp
    def scale(x):
        return x * 2.0

    def scale_fwd(x):                   # not scale's value: residuals of another evaluation
        return x * 3.0, None

    scale.defvjp(scale_fwd, lambda res, g: (g * 2.0,))
    assert tf.grad(scale)(1.5) == 2.0
    with pytest.raises(tf.UnsupportedError) as error:
        tf.jvp(scale, (1.5,), (1.0,))
    assert 'gave another value than scale()' in str(error.value)
    assert f'{__file__}:{scale_fwd.__code__.co_firstlineno}:' in str(error.value)


def test_a_checkpointed_loop_over_a_dropout_replays_the_masks():
    def deep(x):
        s = x
        for i in range(6):
            s = np.sin(dropout(s)) + x
        return np.sum(s)

    np.random.seed(0)
    plain = tf.value_and_grad(deep)(X)
    np.random.seed(0)
    checkpointed = tf.value_and_grad(deep, checkpoint=True)(X)
    np.random.seed(0)
    assert plain[0] == checkpointed[0] == deep(X)
    assert np.allclose(plain[1], checkpointed[1], rtol=1e-14)


def test_source_shows_fwd_once_and_the_residuals_on_the_tape():
    text = tf.source(loss)
    assert 'dropout_fwd(_a0)    # custom_vjp: fwd, once' in text
    assert '_tape.append((_residuals, _value, (_a0,)))' in text
    assert 'dropout_bwd(_residuals, bout)' in text
