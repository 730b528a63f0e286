"""GradientTape behaviours, one TF 2.x rule per test."""
import gc
import weakref

import numpy as np
import pytest

import tapeflow as tf


# ---------------------------------------------------------------- watching

def test_constants_are_not_watched_unless_asked():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0


def test_watch_accepts_nested_structures():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch({'a': a, 'rest': [b, (c,)]})
        y = a * b * c
    assert [g.numpy() for g in tape.gradient(y, [a, b, c])] == [6.0, 3.0, 2.0]


@pytest.mark.parametrize('bad', [3.0, np.ones(2), 'x', None, [tf.constant(1.0), 2.0]])
def test_watching_a_non_tensor_is_a_value_error(bad):
    with tf.GradientTape() as tape:
        with pytest.raises(ValueError, match='not tf.Tensor or tf.Variable'):
            tape.watch(bad)


def test_watching_an_integer_tensor_warns_and_gives_none():
    i = tf.constant(3)
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match='floating'):
            tape.watch(i)
        y = i * i
    assert tape.gradient(y, i) is None


def test_trainable_variables_are_watched_when_read():
    v, frozen = tf.Variable(2.0), tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * frozen
    assert tape.gradient(y, [v, frozen])[0].numpy() == 2.0
    with tf.GradientTape() as tape:
        y = v * frozen
    assert tape.gradient(y, [v, frozen])[1] is None


def test_watch_accessed_variables_false():
    a, b = tf.Variable(3.0), tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(a)
        y = a * b
    assert tape.gradient(y, a).numpy() == 2.0
    assert tape.gradient(y, b) is None
    assert tape.watched_variables() == (a,)


def test_watched_variables_in_order_of_construction():
    first, second, frozen = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        y = second * first * frozen
        tape.watch(frozen)
    watched = tape.watched_variables()
    assert len(watched) == 3 and watched[0] is first and watched[1] is second
    assert watched[2] is frozen


def test_variables_read_before_the_tape_are_not_connected():
    v = tf.Variable(2.0)
    y0 = v * v
    with tf.GradientTape() as tape:
        y = y0 * 3.0
    assert tape.gradient(y, v) is None


def test_assign_is_not_differentiated_through():
    v = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = v * v                # 4, dy/dv = 4
        v.assign(v * 10.0)
        z = v * 1.0              # a fresh read of the variable: dz/dv = 1
    assert tape.gradient(y, v).numpy() == 4.0   # the value read before assign is used
    assert tape.gradient(z, v).numpy() == 1.0


# ---------------------------------------------------------------- gradient

def test_gradient_of_non_scalar_and_several_targets_is_of_their_sum():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = x * 3.0
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 4.0, 6.0]
    assert tape.gradient([y, z], x).numpy().tolist() == [5.0, 7.0, 9.0]
    assert tape.gradient({'a': y, 'b': [z, z]}, x).numpy().tolist() == [8.0, 10.0, 12.0]


def test_result_has_the_structure_of_sources():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = a * b
    grads = tape.gradient(y, {'w': [a, (b,)], 'v': a})
    assert grads['v'].numpy() == 2.0 and grads['w'][0].numpy() == 2.0
    assert isinstance(grads['w'][1], tuple) and grads['w'][1][0].numpy() == 1.0


def test_gradient_with_respect_to_intermediate_values():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y + x
    dz_dy, dz_dx = tape.gradient(z, [y, x])
    assert dz_dy.numpy() == 8.0           # 2y, not counting the path through x
    assert dz_dx.numpy() == 33.0          # 4x^3 + 1


def test_gradient_of_a_source_with_respect_to_itself_is_one():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
    assert tape.gradient(x, x).numpy().tolist() == [1.0, 1.0]


def test_gradients_have_the_dtype_of_their_source():
    for dtype in (np.float32, np.float64):
        x = tf.constant(np.array([1.0, 2.0], dtype))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * 2.0
        g = tape.gradient(y, x)
        assert g.dtype == dtype and isinstance(g, tf.Tensor)


def test_unconnected_gradients():
    x, lonely = tf.Variable([1.0, 2.0]), tf.Variable(5.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * 2.0
    assert tape.gradient(y, lonely) is None
    for zero in ('zero', tf.UnconnectedGradients.ZERO):
        g = tape.gradient(y, [x, lonely], unconnected_gradients=zero)
        assert g[1].numpy() == 0.0 and g[1].dtype == np.float32
        assert g[0].numpy().tolist() == [2.0, 2.0]
    assert tape.gradient(y, lonely, unconnected_gradients=tf.UnconnectedGradients.NONE) is None
    for bad in ('zeros', 'None', 0, None):
        with pytest.raises(ValueError, match='unconnected_gradients'):
            tape.gradient(y, x, unconnected_gradients=bad)


def test_a_constant_target_is_unconnected():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
    assert tape.gradient(1.0, x) is None


def test_output_gradients_weight_the_targets():
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        z = x * 3.0
    g = tape.gradient(y, x, output_gradients=tf.constant([10.0, 100.0]))
    assert g.numpy().tolist() == [20.0, 400.0]
    g = tape.gradient([y, z], x, output_gradients=[[1.0, 0.0], None])
    assert g.numpy().tolist() == [5.0, 3.0]
    g = tape.gradient(y, x, output_gradients=np.array([1.0, 1.0], np.float32))
    assert g.numpy().tolist() == [2.0, 4.0]


@pytest.mark.parametrize('bad, match', [
    (tf.constant([1.0, 2.0, 3.0]), 'shape'),
    (tf.constant(1.0), 'shape'),
    (tf.constant([1.0, 2.0], dtype=tf.float64), 'dtype'),
    ([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0])], 'shape'),
])
def test_output_gradients_are_checked(bad, match):
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match=match):
        tape.gradient(y, x, output_gradients=bad)


def test_output_gradients_need_one_entry_per_target():
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = x * x
        z = x * 2.0
    with pytest.raises(ValueError, match='entries'):
        tape.gradient([y, z], x, output_gradients=[tf.constant([1.0, 2.0])])


@pytest.mark.parametrize('bad', [3.0, None, [tf.constant(1.0), 'x']])
def test_sources_must_be_tensors(bad):
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match='sources'):
        tape.gradient(y, bad)


def test_target_none_is_a_type_error():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        x * x
    with pytest.raises(TypeError, match='target'):
        tape.gradient(None, x)


# ---------------------------------------------------------------- lifetime

def test_non_persistent_tape_gives_one_set_of_gradients():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0
    with pytest.raises(RuntimeError, match='non-persistent'):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match='non-persistent'):
        tape.jacobian(y, x)


def test_persistent_tape_gives_many():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        z = y * y
    assert [tape.gradient(z, x).numpy() for _ in range(3)] == [108.0] * 3
    assert tape.gradient(y, x).numpy() == 6.0


def test_non_persistent_tape_frees_what_it_recorded():
    x = tf.Variable(np.ones(1000))
    with tf.GradientTape() as tape:
        y = x * 2.0
        z = y * y
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is not None              # the tape keeps intermediate values
    tape.gradient(z, x)
    gc.collect()
    assert ref() is None


def test_gradient_inside_a_non_persistent_context_stops_recording():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
        assert tape.gradient(y, x).numpy() == 6.0
        z = x * y                          # not recorded any more
        assert not tf.is_recording()


def test_gradient_inside_a_persistent_context_records_the_backward_pass():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x * x
        dy = tape.gradient(y, x)           # 3x^2, itself recorded
    assert dy.numpy() == 27.0
    assert tape.gradient(dy, x).numpy() == 18.0


def test_reset_forgets_everything():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
        tape.reset()
        z = x * 2.0
    assert tape.gradient(y, x) is None
    x2 = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        x2 * x2
    tape.reset()
    assert tape.watched_variables() == ()


def test_stop_recording():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
        with tape.stop_recording():
            z = x * x
            assert not tf.is_recording()
        w = x * 2.0
    dy, dz, dw = tape.gradient([y], [x])[0], None, None
    assert dy.numpy() == 6.0
    with tf.GradientTape(persistent=True) as tape:
        with tape.stop_recording():
            z = x * x
        w = x * 2.0
    assert tape.gradient(z, x) is None and tape.gradient(w, x).numpy() == 2.0
    with pytest.raises(RuntimeError, match='not recording'):
        with tape.stop_recording():
            pass


def test_stop_recording_pauses_only_this_tape():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape(persistent=True) as inner:
            with inner.stop_recording():
                y = x * x
    assert inner.gradient(y, x) is None and outer.gradient(y, x).numpy() == 6.0


def test_reentering_an_active_tape_is_an_error_and_a_used_tape_can_be_reused():
    tape = tf.GradientTape()
    with tape:
        with pytest.raises(ValueError, match='still recording'):
            tape.__enter__()
    x = tf.Variable(2.0)
    with tape:
        y = x * x
    tape.gradient(y, x)
    with tape:                             # a fresh recording
        y = x * x * x
    assert tape.gradient(y, x).numpy() == 12.0


def test_persistent_tape_keeps_recording_when_reentered():
    x = tf.Variable(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        y = x * x
    with tape:
        z = y * x
    assert tape.gradient(z, x).numpy() == 12.0


def test_control_flow_is_recorded_as_executed():
    def f(x, n):
        out = 1.0
        for i in range(n):
            if i > 1 and i < 5:
                out = out * x
            elif i >= 5 and x > 1.0:
                out = out + x
        return out

    for n, expected in [(0, None), (3, 1.0), (4, 4.0), (5, 12.0), (7, 14.0)]:
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x, n)
        g = tape.gradient(y, x)
        assert (g is None if expected is None else g.numpy() == expected), n
