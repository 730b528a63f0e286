"""stop_gradient, custom_gradient (TF's form) and record_node (one fused node)."""
import pytest

import tapeflow as tf
from tapeflow.rules import RULES


# ---------------------------------------------------------------- stop_gradient

def test_stop_gradient_blocks_the_path():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * tf.stop_gradient(x * x)     # d/dx = x^2 only
    assert tape.gradient(y, x).numpy() == 9.0


def test_stop_gradient_keeps_values_and_structures():
    x = tf.constant([1.0, 2.0])
    out = tf.stop_gradient({'a': x, 'b': [x, 3.0]})
    assert out['a'].numpy().tolist() == [1.0, 2.0] and out['b'][1] == 3.0
    assert out['a'] is not x
    assert tf.stop_gradient(2.5) == 2.5
    assert RULES[tf.stop_gradient].nondiff      # the compiler sees it too


# ---------------------------------------------------------------- custom_gradient

@tf.custom_gradient
def clip_gradient_norm(x):
    def grad(upstream):
        return upstream * 0.5
    return x * 1.0, grad


@tf.custom_gradient
def cube(x):
    def grad(upstream):
        return upstream * 3.0 * x * x
    return x * x * x, grad


def test_custom_gradient_replaces_the_derivative():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = clip_gradient_norm(x) * 4.0
    assert y.numpy() == 8.0 and tape.gradient(y, x).numpy() == 2.0


def test_custom_gradient_without_a_tape_is_just_the_value():
    assert clip_gradient_norm(tf.constant(2.0)).numpy() == 2.0
    assert clip_gradient_norm.__name__ == 'clip_gradient_norm'


def test_custom_gradient_is_differentiable_again():
    x = tf.Variable(2.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = cube(x)
        dy = inner.gradient(y, x)
    assert dy.numpy() == 12.0
    assert outer.gradient(dy, x).numpy() == 12.0      # d(3x^2)/dx at 2


def test_custom_gradient_with_several_inputs_and_outputs():
    @tf.custom_gradient
    def f(a, b):
        def grad(da, db):
            return da * 10.0 + db, da + db * 100.0
        return (a * b, a + b), grad

    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        p, s = f(a, b)
    assert (p.numpy(), s.numpy()) == (2.0, 3.0)
    assert [g.numpy() for g in tape.gradient(p, [a, b])] == [10.0, 1.0]
    assert [g.numpy() for g in tape.gradient(s, [a, b])] == [1.0, 100.0]   # zero cotangent for p


def test_custom_gradient_must_return_one_gradient_per_input():
    @tf.custom_gradient
    def f(a, b):
        return a * b, lambda g: g
    a = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = f(a, tf.constant(2.0))
    with pytest.raises(ValueError, match='expected to return 2 gradients'):
        tape.gradient(y, a)


def test_custom_gradient_with_variables():
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        def grad(upstream, variables):
            assert variables == [w] or variables[0] is w
            return upstream * w, [upstream * x * 100.0]
        return x * w, grad

    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = scale(x)
    gx, gw = tape.gradient(y, [x, w])
    assert gx.numpy() == 3.0 and gw.numpy() == 200.0


def test_custom_gradient_reading_variables_needs_a_variables_argument():
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        return x * w, lambda upstream: upstream
    with tf.GradientTape():
        with pytest.raises(TypeError, match="'variables'"):
            scale(tf.Variable(1.0))


# ---------------------------------------------------------------- record_node

def test_record_node_is_one_fused_node():
    x, y = tf.Variable(2.0), tf.constant(5.0)
    calls = []

    def backward(cotangents):
        calls.append(cotangents)
        (g,) = cotangents
        return g * 3.0 * x.numpy() ** 2, None, None

    with tf.GradientTape() as tape:
        out = tf.Tensor(x.numpy() ** 3)
        assert tf.record_node([x, y, 'static'], [out], backward)
    assert tape.gradient(out, x).numpy() == 12.0
    assert len(calls) == 1 and not isinstance(calls[0][0], tf.Tensor)


def test_record_node_backward_runs_on_tensors_under_an_outer_tape():
    x = tf.Variable(2.0)

    def fused_square(v):
        out = tf.Tensor(v.numpy() ** 2)

        def backward(cotangents):
            (g,) = cotangents
            assert isinstance(g, tf.Tensor) == tf.is_recording()
            return [g * 2.0 * v]                  # on Tensors when a tape records
        tf.record_node([v], [out], backward)
        return out

    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = fused_square(x)
        dy = inner.gradient(y, x)
    assert dy.numpy() == 4.0 and outer.gradient(dy, x).numpy() == 2.0


def test_record_node_is_not_recorded_when_no_input_is_watched():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        out = tf.Tensor(4.0)
        assert not tf.record_node([x], [out], lambda c: [c[0]])
    assert tape.gradient(out, x) is None
    assert not tf.record_node([x], [out], lambda c: [c[0]])       # no tape at all


def test_record_node_reads_trainable_variables_and_rejects_reused_outputs():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        assert tf.record_node([v], [tf.Tensor(1.0)], lambda c: [c[0]])
        assert tape.watched_variables() == (v,)
        with pytest.raises(ValueError, match='new Tensors'):
            tf.record_node([v], [v], lambda c: [c[0]])


def test_variable_accessed_and_is_watched():
    v, frozen = tf.Variable(1.0), tf.Variable(1.0, trainable=False)
    with tf.GradientTape() as tape:
        assert not tf.is_watched(v)
        tf.variable_accessed(v)
        tf.variable_accessed(frozen)
        assert tf.is_watched(v) and not tf.is_watched(frozen)
    assert tape.watched_variables() == (v,)
    assert not tf.is_watched(v)                     # no tape is active any more


def test_record_node_on_chosen_tapes_only():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape(persistent=True) as inner:
            out = tf.Tensor(9.0)
            assert tf.record_node([x], [out], lambda c: [c[0] * 6.0], tapes=[inner])
    assert inner.gradient(out, x).numpy() == 6.0 and outer.gradient(out, x) is None
