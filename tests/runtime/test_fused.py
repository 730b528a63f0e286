"""Compiled functions under a tape (tapeflow.function): the per-call decisions.

A call is re-examined every time: which arguments the tape watches, which
Variables the function's globals and closure hold now, the arguments' kinds
and shapes (the compiled code is specialised to them). These tests change
each of them between calls and check the gradients against the eager tape.
"""
import numpy as np
import pytest

import tapeflow as tf


def _eager_and_fused(fn, args, sources):
    compiled = tf.function(fn)
    results = []
    for f in (fn, compiled):
        with tf.GradientTape() as tape:
            out = f(*args)
        results.append((out, tape.gradient(out, sources)))
    return results


# ---------------------------------------------------------------- free variables

_w = tf.Variable(np.array([1.0, 2.0, 3.0]))


def _uses_global_w(x):
    return np.sum(np.sin(x * _w))


def test_a_global_variable_rebound_between_calls_is_the_one_differentiated():
    global _w
    compiled = tf.function(_uses_global_w)
    x = tf.constant(np.array([0.5, -0.5, 0.25]))
    first = _w
    with tf.GradientTape() as tape:
        out = compiled(x)
    g_first = tape.gradient(out, first).numpy()
    np.testing.assert_allclose(g_first, x.numpy() * np.cos(x.numpy() * first.numpy()))
    try:
        _w = tf.Variable(np.array([-1.0, 0.5, 2.0]))
        with tf.GradientTape() as tape:
            out = compiled(x)
        assert tape.watched_variables() == (_w,)
        g_new, g_old = tape.gradient(out, [_w, first])
        np.testing.assert_allclose(g_new.numpy(), x.numpy() * np.cos(x.numpy() * _w.numpy()))
        assert g_old is None
        _w = 2.0        # no longer a Variable: nothing is lifted, x alone is watched
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = compiled(x)
        assert tape.watched_variables() == ()
        np.testing.assert_allclose(tape.gradient(out, x).numpy(), 2.0 * np.cos(2.0 * x.numpy()))
    finally:
        _w = first


def _scaled_by_global_w(x, scale=2.0, shift=0.5):
    return np.sum(x * _w * scale + shift)


def test_parameters_left_to_their_defaults_beside_a_lifted_variable():
    # The Variable is passed after all the parameters: the defaults are filled in
    # first (this call once failed: `missing 1 required positional argument: '_w'`).
    x = tf.constant(np.array([0.5, -0.5, 0.25]))
    for args in ((x,), (x, 3.0), (x, 3.0, -1.0)):
        (eager, eager_grads), (fused, fused_grads) = _eager_and_fused(
            _scaled_by_global_w, args, [_w])
        np.testing.assert_array_equal(fused.numpy(), eager.numpy())
        np.testing.assert_array_equal(fused_grads[0].numpy(), eager_grads[0].numpy())
        scale = args[1] if len(args) > 1 else 2.0
        np.testing.assert_array_equal(fused_grads[0].numpy(), x.numpy() * scale)


def test_a_closure_variable_is_lifted_and_its_cell_read_at_each_call():
    v = tf.Variable(np.array([1.0, -2.0]))

    @tf.function
    def loss(x):
        return np.sum(x * v * v)

    x = tf.constant(np.array([3.0, 4.0]))
    for value in ([1.0, -2.0], [0.5, 0.25]):
        v.assign(value)
        with tf.GradientTape() as tape:
            out = loss(x)
        assert tape.watched_variables() == (v,)
        np.testing.assert_allclose(tape.gradient(out, v).numpy(), 2 * x.numpy() * np.array(value))


def test_untrainable_or_unwatched_inputs_give_a_plain_call():
    frozen = tf.Variable(np.array([1.0, 2.0]), trainable=False)

    @tf.function
    def f(x):
        return np.sum(x * frozen)

    x = tf.constant(np.array([3.0, 4.0]))
    with tf.GradientTape() as tape:
        out = f(x)
    assert isinstance(out, tf.Tensor) and out.numpy() == 11.0
    assert tape.gradient(out, [x, frozen]) == [None, None]


# ---------------------------------------------------------------- arguments

def test_the_same_variable_twice_and_a_constant_beside_it():
    def f(a, b, c):
        return np.sum(a * b * c)

    v = tf.Variable(np.array([1.0, 2.0]))
    c = tf.constant(np.array([3.0, 5.0]))
    (out_e, g_e), (out_f, g_f) = _eager_and_fused(f, (v, v, c), [v, c])
    assert out_e.numpy() == out_f.numpy()
    np.testing.assert_allclose(g_f[0].numpy(), 2 * v.numpy() * c.numpy())
    np.testing.assert_allclose(g_f[0].numpy(), g_e[0].numpy())
    assert g_e[1] is None and g_f[1] is None


def test_new_shapes_compile_anew_and_stay_right():
    @tf.function
    def f(x, y):
        return np.sum(np.tanh(x * y + x))

    for shape in [(3,), (2, 3), (3,), (1, 3)]:
        x = tf.Variable(np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape))
        y = tf.constant(np.full((3,), 0.5))
        with tf.GradientTape() as tape:
            out = f(x, y)
        g = tape.gradient(out, [x, y])
        t = np.tanh(x.numpy() * y.numpy() + x.numpy())
        np.testing.assert_allclose(g[0].numpy(), (1 - t ** 2) * (y.numpy() + 1))
        assert g[0].shape == shape and g[1] is None


def test_scalar_and_array_arguments_of_one_function():
    @tf.function
    def f(x, k):
        return x * x * k

    for x in (tf.Variable(np.float64(3.0)), tf.Variable(np.array([3.0, 1.0]))):
        for k in (2.0, np.float32(2.0), np.array(2.0)):
            with tf.GradientTape() as tape:
                out = f(x, k)
            g = tape.gradient(out, x)
            np.testing.assert_allclose(g.numpy(), 4.0 * x.numpy())
            assert g.dtype == x.dtype and g.shape == x.shape


def test_several_outputs():
    @tf.function
    def f(x):
        return np.sin(x), x * x

    x = tf.Variable(np.array([0.5, 1.5]))
    with tf.GradientTape(persistent=True) as tape:
        s, q = f(x)
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), np.cos(x.numpy()))
    np.testing.assert_allclose(tape.gradient(q, x).numpy(), 2 * x.numpy())
    np.testing.assert_allclose(tape.gradient([s, q], x).numpy(), np.cos(x.numpy()) + 2 * x.numpy())


def test_a_persistent_tape_runs_the_backward_sweep_many_times():
    @tf.function
    def f(x):
        out = 0.0
        for i in range(4):
            out = out + x * i
        return np.sum(out)

    x = tf.Variable(np.array([1.0, 2.0]))
    with tf.GradientTape(persistent=True) as tape:
        out = f(x)
    for _ in range(3):
        np.testing.assert_allclose(tape.gradient(out, x).numpy(), [6.0, 6.0])
    np.testing.assert_allclose(tape.jacobian(out, x).numpy(), [6.0, 6.0])


# ---------------------------------------------------------------- gradient() forms

@pytest.mark.parametrize('kind', [list, tuple])
def test_flat_sources_keep_their_kind(kind):
    a = tf.Variable(np.array([1.0, 2.0]))
    b = tf.Variable(np.float32(3.0))
    unused = tf.Variable(np.array(1.0))
    with tf.GradientTape(persistent=True) as tape:
        out = np.sum(a * a) * b
    g = tape.gradient(out, kind([a, b, unused]))
    assert type(g) is kind and g[2] is None
    np.testing.assert_allclose(g[0].numpy(), 2 * a.numpy() * 3.0)
    assert g[1].dtype == np.float32 and g[1].numpy() == np.float32(5.0)
    zeros = tape.gradient(out, kind([unused]), unconnected_gradients='zero')
    assert type(zeros) is kind and zeros[0].numpy() == 0.0


def test_variable_read_twice_in_one_operation_reaches_custom_gradient_once():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def f(x):
        y = x * v * v

        def grad_fn(dy, variables=None):
            assert list(variables) == [v]
            return dy * v * v, [dy * 2.0 * x * v]
        return y, grad_fn

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = f(x)
    gx, gv = tape.gradient(out, [x, v])
    assert gx.numpy() == 4.0 and gv.numpy() == 12.0


SCALE = tf.Variable(np.array([1.0, 2.0]), trainable=False)
WEIGHT = tf.Variable(np.array([0.5, -1.0]))


def reads_variables(x):
    return np.sum(np.sin(x) * SCALE * WEIGHT)


def test_a_forward_accumulator_sees_through_a_call_reading_variables():
    """A WRONG RESULT before: under a ForwardAccumulator, a compiled function reading a
    global Variable ran its NumPy sweep on the Variable itself, and `acc.jvp` was None
    (unconnected) where the eager function gives the tangent."""
    compiled = tf.function(reads_variables)
    x = tf.constant(np.array([0.3, 0.5]))
    t = np.array([1.0, -1.0])
    results = []
    for fn in (compiled, reads_variables):
        with tf.ForwardAccumulator(x, t) as acc:
            y = fn(x)
        results.append((y.numpy(), acc.jvp(y).numpy()))
    expected = np.sum(np.cos(x.numpy()) * SCALE.numpy() * WEIGHT.numpy() * t)
    np.testing.assert_allclose(results[0][1], expected, rtol=1e-14)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-14)
    for fn in (compiled, reads_variables):      # nested tapes: the unwatched stays None
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = fn(x)
            gx, gscale, gweight = inner.gradient(y, [x, SCALE, WEIGHT])
        assert gscale is None
        np.testing.assert_allclose(gweight.numpy(), np.sin(x.numpy()) * SCALE.numpy(), rtol=1e-14)
        np.testing.assert_allclose(outer.gradient(gx, x).numpy(),
                                   -np.sin(x.numpy()) * SCALE.numpy() * WEIGHT.numpy(), rtol=1e-14)
