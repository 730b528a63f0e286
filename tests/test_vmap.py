"""`tf.vmap`: values against a Python loop, derivatives against loops and finite differences."""
import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, seed_of


def _loop(f, xs, *rest):
    return np.stack([np.asarray(f(x, *rest)) for x in xs])


# functions of one example, each with the shape of one example and of its extra argument
def sq_tanh(x, w):
    return np.sum(np.tanh(x * w) ** 2)


def branchy(x, w):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            total = total + x[i] * w[i]
        else:
            total = total - np.sin(x[i]) * w[i] ** 2
    return total


def logsumexp(x, w):
    m = np.max(x * w)
    return m + np.log(np.sum(np.exp(x * w - m)))


def quadratic(x, w):
    a = np.outer(w, w) + np.eye(w.shape[0])
    return 0.5 * x @ a @ x + np.dot(w, x)


def norm_ratio(x, w):
    return np.sqrt(np.sum(x ** 2) + 1.0) / (1.0 + np.sum(np.abs(w * x)))


FUNCTIONS = [sq_tanh, branchy, logsumexp, quadratic, norm_ratio]


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_vmap_values_match_loop(f):
    rng = np.random.default_rng(seed_of(f.__name__))
    xs, w = rng.random((6, 4)), rng.random(4)
    assert np.allclose(tf.vmap(f, in_axes=(0, None))(xs, w), _loop(f, xs, w))


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_vmap_of_grad_matches_loop_of_grad(f):
    rng = np.random.default_rng(seed_of('grad' + f.__name__))
    xs, w = rng.random((5, 4)), rng.random(4)
    g = tf.grad(f)
    batched = tf.vmap(g, in_axes=(0, None))(xs, w)
    assert batched.shape == xs.shape
    assert np.allclose(batched, _loop(g, xs, w))
    for x, gx in zip(xs, batched):       # and each row is the true gradient
        check_gradient(f, [gx], (x, w), [0], rng)


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_through_vmap(f):
    rng = np.random.default_rng(seed_of('through' + f.__name__))
    xs, w = rng.random((4, 4)), rng.random(4)

    def loss(w):
        return np.sum(tf.vmap(f, in_axes=(0, None))(xs, w) ** 2)

    def looped(w):
        return float(np.sum(_loop(f, xs, w) ** 2))

    gw = tf.grad(loss)(w)
    check_gradient(looped, [gw], (w,), [0], rng)
    assert np.allclose(tf.jacrev(loss)(w), gw)
    assert np.allclose(tf.jacfwd(loss)(w), gw)


def test_grad_through_vmap_with_respect_to_the_batch():
    rng = np.random.default_rng(1)
    xs, w = rng.random((3, 4)), rng.random(4)

    def loss(xs):
        return np.sum(tf.vmap(sq_tanh, in_axes=(0, None))(xs, w))

    expected = np.stack([tf.grad(sq_tanh)(x, w) for x in xs])
    assert np.allclose(tf.grad(loss)(xs), expected)


def test_jvp_of_vmap_matches_loop():
    rng = np.random.default_rng(2)
    xs, w = rng.random((5, 3)), rng.random(3)
    vx, vw = rng.standard_normal(xs.shape), rng.standard_normal(w.shape)
    out, tangent = tf.jvp(tf.vmap(sq_tanh, (0, None)), (xs, w), (vx, vw))
    expected = [tf.jvp(sq_tanh, (x, w), (v, vw))[1] for x, v in zip(xs, vx)]
    assert np.allclose(out, _loop(sq_tanh, xs, w))
    assert np.allclose(tangent, expected)


def test_in_axes_and_out_axes():
    rng = np.random.default_rng(3)
    a = rng.random((3, 5))       # batch along axis 1
    b = rng.random((5, 2))       # batch along axis 0

    def outer(x, y):
        return np.outer(x, y)

    out = tf.vmap(outer, in_axes=(1, 0), out_axes=2)(a, b)
    expected = np.stack([np.outer(a[:, k], b[k]) for k in range(5)], axis=2)
    assert out.shape == (3, 2, 5)
    assert np.allclose(out, expected)
    neg = tf.vmap(outer, in_axes=(-1, 0), out_axes=-1)(a, b)
    assert np.allclose(neg, expected)


def test_pytrees_in_and_out():
    rng = np.random.default_rng(4)
    params = {'w': rng.random((4, 3)), 'b': rng.random(4)}
    xs = (rng.random((6, 3)), [rng.random(6)])

    def f(p, x):
        h = np.tanh(p['w'] @ x[0] + p['b']) * x[1][0]
        return {'h': h, 'total': np.sum(h)}, [np.max(h)]

    out = tf.vmap(f, in_axes=(None, 0))(params, xs)
    rows = [f(params, (xs[0][k], [xs[1][0][k]])) for k in range(6)]
    assert isinstance(out, tuple) and isinstance(out[0], dict) and isinstance(out[1], list)
    assert np.allclose(out[0]['h'], np.stack([r[0]['h'] for r in rows]))
    assert np.allclose(out[0]['total'], [r[0]['total'] for r in rows])
    assert np.allclose(out[1][0], [r[1][0] for r in rows])


def test_axes_given_as_a_prefix_of_the_argument():
    rng = np.random.default_rng(5)
    pair = (rng.random((4, 2)), rng.random(3))        # only the first part is mapped

    def f(p):
        return np.sum(p[0]) * np.sum(p[1])

    out = tf.vmap(f, in_axes=((0, None),))(pair)
    assert np.allclose(out, [np.sum(r) * np.sum(pair[1]) for r in pair[0]])


def test_vmap_of_vmap():
    rng = np.random.default_rng(6)
    xs = rng.random((3, 4, 2))

    def f(x):
        return np.sum(x ** 3)

    out = tf.vmap(tf.vmap(f))(xs)
    assert np.allclose(out, np.sum(xs ** 3, axis=-1))


def test_out_axes_none_checks_the_output_is_constant():
    xs = np.arange(6.0).reshape(3, 2)
    assert np.allclose(tf.vmap(lambda x: np.ones(2), out_axes=None)(xs), np.ones(2))
    with pytest.raises(ValueError, match='changes along the batch'):
        tf.vmap(lambda x: x, out_axes=None)(xs)


def test_errors():
    with pytest.raises(ValueError, match='inconsistent sizes'):
        tf.vmap(lambda x, y: x + y)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match='at least one'):
        tf.vmap(lambda x: x, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match='axis 1'):
        tf.vmap(lambda x: x, in_axes=1)(np.ones(3))
    with pytest.raises(TypeError):          # in_axes says two arguments
        tf.vmap(lambda x: x, in_axes=(0, 0))(np.ones(3))


def test_vmap_on_the_eager_tape():
    rng = np.random.default_rng(7)
    xs, w = rng.random((4, 3)), rng.random(3)
    wt = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(wt)
        y = tf.reduce_sum(tf.vmap(sq_tanh, in_axes=(0, None))(tf.constant(xs), wt))
    g = tape.gradient(y, wt)
    assert np.allclose(y.numpy(), np.sum(_loop(sq_tanh, xs, w)))
    expected = sum(tf.grad(sq_tanh, 1)(x, w) for x in xs)
    assert np.allclose(g.numpy(), expected)


def test_function_with_a_default_and_grad_through_it():
    def f(x, scale=2.0):
        return np.sum(x ** 2) * scale

    xs = np.arange(6.0).reshape(3, 2)
    assert np.allclose(tf.vmap(f)(xs), 2.0 * np.sum(xs ** 2, axis=1))
    assert np.allclose(tf.vmap(f, in_axes=(0, None))(xs, 3.0), 3.0 * np.sum(xs ** 2, axis=1))

    def total(xs):
        return np.sum(tf.vmap(f)(xs))

    assert np.allclose(tf.grad(total)(xs), 4.0 * xs)


def test_vmap_of_the_same_function_is_made_once():
    assert tf.vmap(sq_tanh, (0, None)) is tf.vmap(sq_tanh, (0, None))
    assert tf.vmap(sq_tanh, (0, None)) is not tf.vmap(sq_tanh, (None, 0))


def test_jvp_through_vmap_with_a_tuple_output_and_two_moving_arguments():
    def f(x, w):
        return np.sin(x) * w, np.sum(x * w)

    def loss(xs, w):
        a, b = tf.vmap(f, in_axes=(0, None))(xs, w)
        return np.sum(a ** 2) + np.sum(b)

    def looped(xs, w):
        rows = [f(x, w) for x in xs]
        return float(sum(np.sum(r[0] ** 2) + r[1] for r in rows))

    rng = np.random.default_rng(8)
    xs, w = rng.random((3, 2)), rng.random(2)
    gx, gw = tf.grad(loss, (0, 1))(xs, w)
    check_gradient(looped, [gx, gw], (xs, w), [0, 1], rng)
    vx, vw = rng.standard_normal(xs.shape), rng.standard_normal(w.shape)
    assert np.isclose(tf.jvp(loss, (xs, w), (vx, vw))[1], np.sum(gx * vx) + gw @ vw)


def test_second_derivative_through_vmap_in_compiled_code_is_refused():
    xs = np.random.default_rng(9).random((3, 2))

    def total(xs):
        return np.sum(tf.vmap(sq_tanh, in_axes=(0, None))(xs, np.ones(2)) ** 2)

    with pytest.raises(tf.UnsupportedError, match='not differentiated again'):
        tf.hessian(total)(xs)


def test_vmap_of_hessian_and_of_jacobians():
    rng = np.random.default_rng(10)
    xs = rng.random((3, 2))

    def f(x):
        return np.sum(np.sin(x) * x[0])

    def closed_form(x):
        h = np.diag(-np.sin(x) * x[0])
        h[0, :] += np.cos(x)
        h[:, 0] += np.cos(x)
        return h

    assert np.allclose(tf.vmap(tf.hessian(f))(xs), [closed_form(x) for x in xs])
    assert np.allclose(tf.vmap(tf.jacrev(tf.grad(f)))(xs), [closed_form(x) for x in xs])
