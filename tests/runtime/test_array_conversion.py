"""Arrays built from Tensors under a tape: `np.stack` is recorded, `np.array` raises.

NumPy builds `np.array([x, y])` by calling `Tensor.__array__` on each element,
which no dispatch can record; a silently unconnected gradient would be a
plausible wrong answer, so the conversion of a Tensor a recording tape tracks
is an error that names the fix.
"""
import numpy as np
import pytest

import tapeflow as tf

DROPPED = r'would drop it from the tape.*tf\.stack\(\[\.\.\.\]\) or np\.stack\(\[\.\.\.\]\)'


def test_np_stack_of_recorded_tensors_is_recorded():
    x = tf.constant([0.5, -1.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = np.stack([x[0], x[1] * 2.0, x[0] * x[1]])
        y = tf.reduce_sum(z * z)
    # y = a^2 + 4 b^2 + a^2 b^2
    a, b = 0.5, -1.5
    expected = [2 * a + 2 * a * b * b, 8 * b + 2 * a * a * b]
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-6)


def test_tf_stack_and_axis_are_recorded():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.stack([x[0] * x[1], x[1]], axis=1)           # shape (2, 2)
        y = tf.reduce_sum(z * w)
    # columns: z[:, 0] = x0 * x1, z[:, 1] = x1 (rows x0, x1 of x)
    expected = np.stack([w[:, 0] * x.numpy()[1], w[:, 0] * x.numpy()[0] + w[:, 1]])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-6)


def test_np_array_of_recorded_tensors_raises():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match=DROPPED):
            np.array([x[0], x[1] * 2.0])
        with pytest.raises(TypeError, match=DROPPED):
            np.asarray(x)                                    # watched itself
        with pytest.raises(TypeError, match=DROPPED):
            np.sum([x[0], x[1]])                             # a list: no dispatch


def test_a_trainable_variable_read_by_conversion_raises():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape():
        with pytest.raises(TypeError, match=DROPPED):
            np.array([v[0], v[1]])
    with tf.GradientTape(watch_accessed_variables=False):
        assert np.array(v).tolist() == [1.0, 2.0]           # this tape would not watch it


def test_forward_accumulator_conversion_raises():
    x = tf.constant(2.0)
    with tf.ForwardAccumulator(x, tf.constant(1.0)):
        with pytest.raises(TypeError, match=DROPPED):
            np.array([x * 3.0])


def test_conversions_outside_tapes_and_of_untracked_tensors_work():
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(np.array([x[0], x[1] * 2.0]), [1.0, 4.0])
    c = tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
        np.testing.assert_array_equal(np.array([c, c * 2.0]), [5.0, 10.0])   # not tracked
        assert np.asarray(x.numpy()).tolist() == [1.0, 2.0]                  # the value, on purpose
        with tape.stop_recording():
            assert np.array([x[0]]).tolist() == [1.0]                        # not recording
        print(x, repr(y))                                                    # printing
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])
    assert np.asarray(x).tolist() == [1.0, 2.0]             # after the tape


def test_a_persistent_tape_computing_gradients_inside_its_block_still_works():
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(np.stack([x[0] * x[1], x[1]]))
        g = tape.gradient(y, x)
        h = tf.reduce_sum(g * g)
    np.testing.assert_allclose(g.numpy(), [3.0, 2.0])
    # g = (x1, x0 + 1), h = x1^2 + (x0 + 1)^2
    np.testing.assert_allclose(tape.gradient(h, x).numpy(), [4.0, 6.0])
