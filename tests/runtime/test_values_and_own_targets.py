"""Two TF rules at the edges of the eager runtime (issue 30).

- `Tensor.numpy()` returns a copy: a Tensor is immutable, so writing into what
  `.numpy()` gives never changes it (before: the Tensor's own buffer, and
  `s = y.numpy(); s /= s.max()` on a tape changed `y` and the loss). `np.asarray(t)`
  gives a read-only view: a write into it is NumPy's error, not a changed Tensor.
- A target that is itself a source has gradient one (TF's `sources_that_are_targets`):
  `with tape: r = v` then `tape.gradient(r, v)` is 1.0 for a Variable the tape never saw
  read (before: None), `tape.gradient(r, [v0, v1])` is `[1.0, None]`, and with
  `output_gradients=` the gradient is the output gradient.
"""
import numpy as np
import pytest

import tapeflow as tf


# ---------------------------------------------------------------- .numpy() is a copy


def test_writing_into_numpy_leaves_the_tensor_and_the_loss_alone():
    x = tf.Variable(np.array([1.0, 2.0, 7.0]))
    with tf.GradientTape() as tape:
        y = x * x
        s = y.numpy()
        s /= s.max()
        loss = tf.reduce_sum(y)
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 49.0])
    assert float(loss) == 54.0
    np.testing.assert_array_equal(tape.gradient(loss, x), [2.0, 4.0, 14.0])
    np.testing.assert_allclose(s, np.array([1.0, 4.0, 49.0]) / 49.0)


@pytest.mark.parametrize('make', [tf.constant, tf.Variable], ids=['Tensor', 'Variable'])
def test_numpy_is_writable_and_a_copy(make):
    t = make(np.array([1.0, 2.0]))
    a = t.numpy()
    assert a.flags.writeable
    a[0] = 10.0
    assert t.numpy().tolist() == [1.0, 2.0]
    assert not np.shares_memory(t.numpy(), t.numpy())


def test_numpy_of_a_scalar_is_a_numpy_scalar():
    value = tf.constant(2.5).numpy()
    assert isinstance(value, np.float32) and value == 2.5


def test_asarray_is_a_read_only_view():
    t = tf.constant(np.array([1.0, 2.0]))
    a = np.asarray(t)
    with pytest.raises(ValueError, match='read-only'):
        a[0] = 10.0
    assert t.numpy().tolist() == [1.0, 2.0]
    b = np.array(t)                 # np.array copies: writable, and t stays
    b[0] = 10.0
    assert t.numpy().tolist() == [1.0, 2.0]


# ---------------------------------------------------------------- a target that is a source


def test_a_variable_never_read_is_its_own_gradient():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        r = v
    g = tape.gradient(r, v)
    assert isinstance(g, tf.Tensor) and g.dtype == np.float32 and g.numpy() == 1.0


def test_only_the_source_that_is_the_target_gets_one():
    v0, v1 = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        r = v0
    g0, g1 = tape.gradient(r, [v0, v1])
    assert g0.numpy() == 1.0 and g1 is None


def test_unconnected_zero_for_the_others():
    v0, v1 = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        r = v0
    g0, g1 = tape.gradient(r, [v0, v1], unconnected_gradients='zero')
    assert g0.numpy() == 1.0 and g1.numpy() == 0.0


def test_output_gradients_is_the_gradient_of_a_target_that_is_a_source():
    v = tf.Variable(np.array([1.0, 2.0]))
    with tf.GradientTape() as tape:
        r = v
    g = tape.gradient(r, v, output_gradients=tf.constant(np.array([5.0, -3.0])))
    assert g.numpy().tolist() == [5.0, -3.0]


def test_a_watched_constant():
    c = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(c)
        y = c * c
    assert tape.gradient(c, c).numpy().tolist() == [1.0, 1.0]
    # [y, c]: d(sum y + sum c)/dc = 2c + 1
    assert tape.gradient([y, c], c).numpy().tolist() == [3.0, 5.0]
    assert tape.gradient(c, c, output_gradients=[2.0, 3.0]).numpy().tolist() == [2.0, 3.0]


def test_an_unwatched_constant_as_target_and_source():
    c = tf.constant([1.0, 2.0])
    d = tf.constant(4.0)
    with tf.GradientTape() as tape:
        pass
    gc, gd = tape.gradient(c, [c, d])
    assert gc.numpy().tolist() == [1.0, 1.0] and gd is None


def test_a_variable_read_and_also_the_target():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v * v
    # y depends on v (2v = 6) and v is a target too (+1)
    assert tape.gradient([y, v], v).numpy() == 7.0


def test_an_integer_target_that_is_a_source_has_no_gradient():
    i = tf.Variable(3, trainable=False)
    with tf.GradientTape() as tape:
        r = i
    assert tape.gradient(r, i) is None
