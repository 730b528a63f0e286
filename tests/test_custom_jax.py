"""JAX's `custom_vjp` / `custom_jvp` and `linearize`: the custom rule is the one used,
values against closed forms and finite differences, in every transformation."""
import functools

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, seed_of


# ------------------------------------------------------------------ custom_vjp

@tf.custom_vjp
def clip_gradient(x):
    """The identity, whose gradient is clipped to [-1, 1] (deliberately not the true one)."""
    return x * 1.0


def clip_gradient_fwd(x):
    return x * 1.0, None


def clip_gradient_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def scaled_clip(x):
    return np.sum(clip_gradient(x) * 3.0)


def test_custom_vjp_value_is_the_function():
    x = np.array([-2.0, 0.5, 4.0])
    assert np.allclose(clip_gradient(x), x)
    assert np.allclose(scaled_clip(x), 3.0 * np.sum(x))


def test_custom_vjp_rule_is_used_by_grad():
    x = np.array([-2.0, 0.5, 4.0])
    assert np.allclose(tf.grad(scaled_clip)(x), np.ones(3))           # not 3.0
    value, g = tf.value_and_grad(scaled_clip)(x)
    assert np.isclose(value, 3.0 * np.sum(x)) and np.allclose(g, 1.0)


def test_custom_vjp_differentiated_directly():
    assert tf.grad(clip_gradient)(2.5) == 1.0
    out, pullback = tf.vjp(clip_gradient, np.array([1.0, 2.0]))
    assert np.allclose(out, [1.0, 2.0])
    assert np.allclose(pullback(np.array([0.5, -7.0]))[0], [0.5, -1.0])


def test_custom_vjp_in_jacrev_and_forward_mode():
    x = np.array([-2.0, 0.5, 4.0])

    def f(x):
        return clip_gradient(x) * 3.0

    assert np.allclose(tf.jacrev(f)(x), np.eye(3))      # rows: bwd(3 e_k), clipped to 1
    # a clip is not linear in g: forward mode has no Jacobian to use, and says so
    with pytest.raises(tf.UnsupportedError, match='not linear'):
        tf.jacfwd(f)(x)
    with pytest.raises(tf.UnsupportedError, match='not linear'):
        tf.jvp(f, (x,), (np.ones(3),))


@tf.custom_vjp
def stable_log1pexp(x):
    return np.log1p(np.exp(x))


def stable_log1pexp_fwd(x):
    return stable_log1pexp(x), x


def stable_log1pexp_bwd(x, g):
    return (g * (1.0 - 1.0 / (1.0 + np.exp(x))),)


stable_log1pexp.defvjp(stable_log1pexp_fwd, stable_log1pexp_bwd)


def test_custom_vjp_numerically_stable_gradient():
    def f(x):
        return np.sum(stable_log1pexp(x))

    x = np.array([-3.0, 0.0, 2.0, 800.0])
    with np.errstate(over='ignore'):
        g = tf.grad(f)(x)
    assert np.all(np.isfinite(g))
    assert np.allclose(g, 1.0 / (1.0 + np.exp(-x)))     # the logistic sigmoid


@tf.custom_vjp
def weighted(x, y):
    return np.sin(x) * y


def weighted_fwd(x, y):
    return weighted(x, y), (np.cos(x), np.sin(x), y)


def weighted_bwd(res, g):
    cos_x, sin_x, y = res
    return g * cos_x * y, np.sum(g * sin_x)


weighted.defvjp(weighted_fwd, weighted_bwd)


def test_custom_vjp_two_arguments_closed_form_and_finite_differences():
    rng = np.random.default_rng(seed_of('weighted'))
    x, y = rng.random(4), 1.7

    def loss(x, y):
        return np.sum(weighted(x, y) ** 2)

    gx, gy = tf.grad(loss, (0, 1))(x, y)
    assert np.allclose(gx, 2 * np.sin(x) * y * np.cos(x) * y)
    assert np.isclose(gy, np.sum(2 * np.sin(x) * y * np.sin(x)))
    assert isinstance(gy, float)
    check_gradient(loss, [gx, gy], (x, y), [0, 1], rng)
    v = rng.standard_normal(4)
    assert np.isclose(tf.jvp(loss, (x, y), (v, 0.3))[1], gx @ v + gy * 0.3)
    # forward mode: the transpose of bwd, against the closed-form Jacobian
    assert np.allclose(tf.jacfwd(weighted)(x, y), np.diag(np.cos(x) * y))
    assert np.allclose(tf.jacfwd(weighted, 1)(x, y), np.sin(x))
    assert np.allclose(tf.jacrev(weighted)(x, y), np.diag(np.cos(x) * y))


@functools.partial(tf.custom_vjp, nondiff_argnums=(0,))
def apply_twice(fn, x):
    return fn(fn(x))


def apply_twice_fwd(fn, x):
    return apply_twice(fn, x), x


def apply_twice_bwd(fn, x, g):
    return (2.0 * g,)           # deliberately not the true derivative


apply_twice.defvjp(apply_twice_fwd, apply_twice_bwd)


def test_custom_vjp_nondiff_argnums():
    def loss(x):
        return np.sum(apply_twice(np.sin, x))

    x = np.array([0.3, 1.2])
    assert np.isclose(loss(x), np.sum(np.sin(np.sin(x))))
    assert np.allclose(tf.grad(loss)(x), [2.0, 2.0])


def test_custom_vjp_without_rule_is_an_error():
    @tf.custom_vjp
    def no_rule(x):
        return x * 2.0

    def loss(x):
        return no_rule(x)

    with pytest.raises(tf.MissingRule):
        tf.grad(loss)(1.0)


def test_custom_vjp_wrong_shape_is_an_error():
    @tf.custom_vjp
    def bad(x):
        return np.sum(x)

    bad.defvjp(lambda x: (np.sum(x), None), lambda res, g: (g,))

    def loss(x):
        return bad(x)

    with pytest.raises(ValueError, match='shape'):
        tf.grad(loss)(np.ones(3))


def test_custom_vjp_on_the_eager_tape():
    x = tf.constant(np.array([-2.0, 0.5, 4.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(clip_gradient(x) * 3.0)
    assert np.isclose(y.numpy(), 7.5)
    assert np.allclose(tape.gradient(y, x).numpy(), 1.0)


def test_custom_vjp_in_a_tf_function_under_a_tape():
    @tf.function
    def f(x):
        return np.sum(weighted(x, 2.0))

    x = np.array([0.1, 0.9])
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt)
    assert np.allclose(tape.gradient(y, xt).numpy(), 2.0 * np.cos(x))


# ------------------------------------------------------------------ custom_jvp

@tf.custom_jvp
def log1pexp(x):
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + np.exp(x)))


def test_custom_jvp_forward_mode():
    x = np.array([-1.0, 0.0, 3.0, 1000.0])
    v = np.array([1.0, 2.0, -1.0, 1.0])
    with np.errstate(over='ignore'):
        out, tangent = tf.jvp(log1pexp, (x,), (v,))
    assert np.allclose(tangent, v / (1.0 + np.exp(-x)))
    assert np.all(np.isfinite(tangent))
    assert np.allclose(tf.jacfwd(log1pexp)(x[:3]), np.diag(1.0 / (1.0 + np.exp(-x[:3]))))


def test_custom_jvp_reverse_mode_is_its_transpose():
    def loss(x):
        return np.sum(log1pexp(x) * np.arange(1.0, 5.0))

    x = np.array([-1.0, 0.0, 3.0, 1000.0])
    with np.errstate(over='ignore'):
        g = tf.grad(loss)(x)
        assert np.allclose(tf.jacrev(log1pexp)(x), np.diag(1.0 / (1.0 + np.exp(-x))))
    assert np.allclose(g, np.arange(1.0, 5.0) / (1.0 + np.exp(-x)))
    assert tf.grad(log1pexp)(0.0) == 0.5


@tf.custom_jvp
def f_clipped_slope(x, y):
    return x * y


@f_clipped_slope.defjvp
def f_clipped_slope_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return x * y, 0.5 * tx * y + x * ty        # half the true slope in x


def test_custom_jvp_two_arguments_is_used_everywhere():
    x, y = np.array([1.0, -2.0]), np.array([3.0, 0.5])

    def loss(x, y):
        return np.sum(f_clipped_slope(x, y))

    gx, gy = tf.grad(loss, (0, 1))(x, y)
    assert np.allclose(gx, 0.5 * y) and np.allclose(gy, x)
    u, v = np.array([1.0, 1.0]), np.array([0.0, 2.0])
    assert np.isclose(tf.jvp(loss, (x, y), (u, v))[1], gx @ u + gy @ v)


def test_custom_jvp_defjvps():
    @tf.custom_jvp
    def f(x, y):
        return np.sin(x) * y

    f.defjvps(lambda t, ans, x, y: np.cos(x) * y * t, lambda t, ans, x, y: np.sin(x) * t)

    def loss(x, y):
        return np.sum(f(x, y))

    x, y = np.array([0.2, 0.7]), np.array([1.5, -1.0])
    gx, gy = tf.grad(loss, (0, 1))(x, y)
    assert np.allclose(gx, np.cos(x) * y) and np.allclose(gy, np.sin(x))
    rng = np.random.default_rng(3)
    check_gradient(loss, [gx, gy], (x, y), [0, 1], rng)


def test_custom_jvp_nondiff_argnums():
    @functools.partial(tf.custom_jvp, nondiff_argnums=(1,))
    def power(x, n):
        return x ** n

    @power.defjvp
    def power_jvp(n, primals, tangents):
        x, = primals
        t, = tangents
        return x ** n, n * x ** (n - 1) * t

    def loss(x):
        return np.sum(power(x, 3))

    x = np.array([1.0, 2.0])
    assert np.allclose(tf.grad(loss)(x), 3 * x ** 2)
    assert np.allclose(tf.jvp(loss, (x,), (np.ones(2),))[1], np.sum(3 * x ** 2))


def test_custom_jvp_rule_not_linear_in_tangents_is_refused():
    @tf.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return np.sin(x), np.cos(x) * t ** 2      # not linear

    def loss(x):
        return np.sum(f(x))

    with pytest.raises(tf.UnsupportedError, match='not linear'):
        tf.grad(loss)(np.array([0.3, 0.4]))


def test_custom_jvp_on_the_eager_tape():
    x = tf.constant(np.array([-1.0, 0.0, 3.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(log1pexp(x))
    g = tape.gradient(y, x).numpy()
    assert np.allclose(g, 1.0 / (1.0 + np.exp(-x.numpy())))
    assert np.isclose(y.numpy(), np.sum(np.log1p(np.exp(x.numpy()))))


def test_old_api_still_works():
    def cube(x):
        return x ** 3

    tf.defvjp(cube, lambda g, ans, x: g * 3.0 * x ** 2)

    def uses_cube(x):
        return cube(x) + 1.0

    assert tf.grad(uses_cube)(2.0) == 12.0


# ------------------------------------------------------------------ linearize

def poly_sin(x, y):
    return np.sin(x) * y + np.sum(x ** 2)


def test_linearize_value_and_jvp_closed_form():
    rng = np.random.default_rng(seed_of('linearize'))
    x, y = rng.standard_normal(3), 2.0
    out, f_jvp = tf.linearize(poly_sin, x, y)
    assert np.allclose(out, poly_sin(x, y))
    for _ in range(3):                   # the same linear map, call after call
        t, s = rng.standard_normal(3), float(rng.standard_normal())
        expected = np.cos(x) * y * t + 2 * np.sum(x * t) + np.sin(x) * s
        assert np.allclose(f_jvp(t, s), expected)
        assert np.allclose(f_jvp(t, s), tf.jvp(poly_sin, (x, y), (t, s))[1])


def test_linearize_keeps_its_point_when_the_primal_is_written():
    x = np.array([0.1, 0.7])
    _, f_jvp = tf.linearize(poly_sin, x, 1.0)
    t = np.array([1.0, -1.0])
    before = f_jvp(t, 0.0)
    x[:] = 5.0
    assert np.allclose(f_jvp(t, 0.0), before)
    assert np.allclose(before, np.cos([0.1, 0.7]) * t + 2 * np.sum(np.array([0.1, 0.7]) * t))


def test_linearize_f_jvp_is_differentiable_its_transpose():
    x = np.array([0.3, -0.4, 1.1])
    _, f_jvp = tf.linearize(poly_sin, x, 1.5)
    jac = tf.jacfwd(poly_sin)(x, 1.5)

    def energy(t):
        return np.sum(f_jvp(t, 0.0) ** 2)

    t = np.array([1.0, 2.0, -0.5])
    assert np.allclose(tf.grad(energy)(t), 2 * jac.T @ (jac @ t))


def test_linearize_with_a_structured_primal_and_vmap_of_tangents():
    def f(p):
        return np.tanh(p['w'] * p['b'])

    p = {'w': np.array([0.5, -1.0]), 'b': 0.8}
    out, f_jvp = tf.linearize(f, p)
    assert np.allclose(out, f(p))
    sech2 = 1.0 - np.tanh(p['w'] * p['b']) ** 2
    t = {'w': np.array([1.0, 0.0]), 'b': 1.0}
    assert np.allclose(f_jvp(t), sech2 * (t['w'] * p['b'] + p['w'] * t['b']))
    ws = np.eye(2)
    batch = tf.vmap(lambda w: f_jvp({'w': w, 'b': 0.0}))(ws)
    assert np.allclose(batch, np.diag(sech2 * p['b']))


# ------------------------------------------------------------------ higher order on the tape

def test_custom_rules_second_order_on_the_eager_tape():
    x = tf.constant(np.array([-1.0, 0.0, 2.0]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(log1pexp(x)) + tf.reduce_sum(weighted(x, 2.0))
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    s = 1.0 / (1.0 + np.exp(-x.numpy()))
    assert np.allclose(g.numpy(), s + 2.0 * np.cos(x.numpy()))
    assert np.allclose(h.numpy(), s * (1 - s) - 2.0 * np.sin(x.numpy()))


# ------------------------------------------------------------------ structured arguments, outputs

@tf.custom_vjp
def dense_layer(p, x):
    return np.tanh(p['w'] @ x + p['b']), np.sum(x)


def dense_layer_fwd(p, x):
    h = np.tanh(p['w'] @ x + p['b'])
    return (h, np.sum(x)), (p, x, h)


def dense_layer_bwd(res, g):
    p, x, h = res
    gh, gs = g
    d = gh * (1 - h ** 2)
    return {'w': np.outer(d, x), 'b': d}, p['w'].T @ d + gs


dense_layer.defvjp(dense_layer_fwd, dense_layer_bwd)


def test_custom_vjp_with_a_dict_argument_and_a_tuple_output():
    def loss(p, x):
        h, s = dense_layer(p, x)
        return np.sum(h ** 2) + 2.0 * s

    def plain(p, x):
        h = np.tanh(p['w'] @ x + p['b'])
        return np.sum(h ** 2) + 2.0 * np.sum(x)

    rng = np.random.default_rng(seed_of('dense_layer'))
    p = {'w': rng.standard_normal((2, 3)), 'b': rng.standard_normal(2)}
    x = rng.standard_normal(3)
    (gp, gx), (ep, ex) = tf.grad(loss, (0, 1))(p, x), tf.grad(plain, (0, 1))(p, x)
    assert np.allclose(gp['w'], ep['w']) and np.allclose(gp['b'], ep['b'])
    assert np.allclose(gx, ex)
    # forward mode, both arguments moving: the tangents of the two add leaf by leaf
    tp = {'w': rng.standard_normal((2, 3)), 'b': rng.standard_normal(2)}
    v = rng.standard_normal(3)
    expected = np.sum(ep['w'] * tp['w']) + ep['b'] @ tp['b'] + ex @ v
    assert np.isclose(tf.jvp(loss, (p, x), (tp, v))[1], expected)


def test_a_differentiated_value_in_nondiff_argnums_is_refused():
    @functools.partial(tf.custom_vjp, nondiff_argnums=(1,))
    def scale(x, k):
        return x * k

    scale.defvjp(lambda x, k: (x * k, None), lambda k, res, g: (g * k,))

    def loss(x, k):
        return np.sum(scale(x, k))

    x = np.array([1.0, 2.0])
    assert np.allclose(tf.grad(loss)(x, 3.0), [3.0, 3.0])       # k not differentiated: fine
    with pytest.raises(tf.TapeflowError, match='nondiff_argnums'):
        tf.grad(loss, 1)(x, 3.0)
    k = tf.constant(3.0)
    with pytest.raises(tf.TapeflowError, match='nondiff_argnums'):
        with tf.GradientTape() as tape:
            tape.watch(k)
            scale(tf.constant(x), k)


def test_second_derivative_through_a_custom_rule_in_compiled_code_is_refused():
    def loss(x):
        return np.sum(weighted(x, 2.0) ** 2)

    with pytest.raises(tf.UnsupportedError, match='not differentiated again'):
        tf.hessian(loss)(np.array([0.1, 0.2]))
