"""Tensor and Variable as values: conversion, printing, protocols, operators."""
import operator

import numpy as np
import pytest

import tapeflow as tf


# ---------------------------------------------------------------- conversion

@pytest.mark.parametrize('value, dtype', [
    (3.0, np.float32), ([1.0, 2.0], np.float32), ([[1, 2], [3, 4]], np.int32), (3, np.int32),
    (True, np.bool_), (np.float64(2.0), np.float64), (np.arange(3.0), np.float64),
    (np.arange(3, dtype=np.int16), np.int16), (2 ** 40, np.int64), (1 + 2j, np.complex128),
])
def test_conversion_follows_tensorflow(value, dtype):
    for make in (tf.constant, tf.convert_to_tensor, tf.Tensor, tf.Variable):
        t = make(value)
        assert t.dtype == dtype, make
        np.testing.assert_array_equal(t.numpy(), np.asarray(value))


def test_explicit_dtype_and_shape():
    t = tf.constant(2.0, dtype=tf.float64)
    assert t.dtype == np.float64 and t.numpy() == 2.0
    filled = tf.constant(0.5, shape=(2, 3))
    assert filled.shape == (2, 3) and np.all(filled.numpy() == 0.5)
    assert tf.constant([1, 2, 3, 4], shape=[2, 2]).numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        tf.constant([1.0, 2.0, 3.0], shape=(2, 2))


def test_convert_to_tensor_returns_tensors_as_they_are_and_checks_dtype():
    t = tf.constant([1.0, 2.0])
    assert tf.convert_to_tensor(t) is t
    with pytest.raises(ValueError, match='float64'):
        tf.convert_to_tensor(t, dtype=tf.float64)
    assert tf.convert_to_tensor([1.0], dtype_hint=tf.float64).dtype == np.float64
    v = tf.Variable(1.0)
    read = tf.convert_to_tensor(v)
    assert type(read) is tf.Tensor and read.numpy() == 1.0


def test_objects_that_are_not_numbers_are_rejected():
    with pytest.raises(TypeError):
        tf.constant(object())


# ---------------------------------------------------------------- printing

def test_printing_like_tensorflow():
    assert str(tf.constant(6.0)) == 'tf.Tensor(6.0, shape=(), dtype=float32)'
    assert repr(tf.constant(6.0)) == '<tf.Tensor: shape=(), dtype=float32, numpy=6.0>'
    assert str(tf.constant([1.0, 2.0])) == 'tf.Tensor([1. 2.], shape=(2,), dtype=float32)'
    assert str(tf.ones((2, 2)) * 8) == ('tf.Tensor(\n[[8. 8.]\n [8. 8.]], shape=(2, 2), '
                                        'dtype=float32)')


def test_variable_printing_like_tensorflow():
    assert repr(tf.Variable(3.0, name='x0')) == \
        "<tf.Variable 'x0:0' shape=() dtype=float32, numpy=3.0>"
    assert str(tf.Variable([1.0, 2.0])) == \
        "<tf.Variable 'Variable:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)>"


# ---------------------------------------------------------------- protocols

def test_python_protocols():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert len(t) == 2 and t.ndim == 2 and t.size == 4 and t.shape == (2, 2)
    assert t[1][0].numpy() == 3.0 and isinstance(t[1], tf.Tensor)
    assert [row.numpy().tolist() for row in t] == [[1.0, 2.0], [3.0, 4.0]]
    s = tf.constant(2.5)
    assert float(s) == 2.5 and int(s) == 2 and bool(s) and f'{s:.1f}' == '2.5'
    assert list(range(tf.constant(3))) == [0, 1, 2]
    np.testing.assert_array_equal(np.asarray(t), [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError, match='len'):
        len(s)
    with pytest.raises(TypeError):
        iter(s).__next__()


def test_tensors_are_immutable_and_unhashable():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError):
        t[0] = 5.0
    with pytest.raises(TypeError):
        hash(t)
    ref = t.ref()
    assert {ref: 1}[t.ref()] == 1 and ref.deref() is t
    with pytest.raises(TypeError, match='immutable'):
        np.add(t, 1.0, out=t)
    u = t
    u += 1.0                     # rebinds, the original is untouched
    assert t.numpy().tolist() == [1.0, 2.0] and u.numpy().tolist() == [2.0, 3.0]


# ---------------------------------------------------------------- operators

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.floordiv, operator.mod, operator.lt, operator.le, operator.gt,
          operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize('op', BINARY, ids=lambda op: op.__name__)
def test_binary_operators_and_their_reflections(op):
    a = np.array([1.5, 2.0, 3.0], np.float32)
    b = np.array([0.5, 2.0, 4.0], np.float32)
    for x, y in [(tf.constant(a), tf.constant(b)), (tf.constant(a), b), (a, tf.constant(b)),
                 (tf.constant(a), 2.0), (2.0, tf.constant(b))]:
        out = op(x, y)
        assert type(out) is tf.Tensor
        np.testing.assert_allclose(out.numpy(), op(np.asarray(x), np.asarray(y)), rtol=1e-6)


def test_python_scalars_take_the_tensor_dtype():
    x = tf.constant([1.0, 2.0])
    assert (x * 2.0).dtype == np.float32 and (2 * x).dtype == np.float32
    assert (x + [1.0, 1.0]).dtype == np.float32
    assert (tf.constant(3) * 2).dtype == np.int32


def test_unary_matmul_and_boolean_operators():
    x = tf.constant([[1.0, -2.0], [3.0, 4.0]])
    assert (-x).numpy().tolist() == [[-1.0, 2.0], [-3.0, -4.0]]
    assert (+x).numpy().tolist() == x.numpy().tolist()
    assert abs(x).numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_allclose((x @ x).numpy(), x.numpy() @ x.numpy())
    np.testing.assert_allclose((np.eye(2) @ x).numpy(), x.numpy())
    m = tf.constant([True, False])
    assert (m & True).numpy().tolist() == [True, False] and (~m).numpy().tolist() == [False, True]
    assert ((x > 0) == [[True, False], [True, True]]).numpy().all()


def test_numpy_functions_on_tensors_return_tensors():
    x = tf.constant([0.5, 1.0])
    y = np.multiply(x, 3.0)
    assert type(y) is tf.Tensor and y.numpy().tolist() == [1.5, 3.0]
    assert np.shape(x) == (2,) and np.ndim(x) == 1       # non-array results stay as they are
    assert type(np.add(np.ones(2), x)) is tf.Tensor


# ---------------------------------------------------------------- Variable

def test_variable_is_mutable_and_arithmetic_gives_tensors():
    v = tf.Variable(2.0, name='x2')
    w = v + 1.0
    assert type(w) is tf.Tensor and w.numpy() == 3.0
    assert v.name == 'x2:0' and v.trainable and not tf.Variable(1.0, trainable=False).trainable
    assert v.assign(5.0) is v and v.numpy() == 5.0
    v.assign_add(1.0)
    assert v.numpy() == 6.0
    v.assign_sub(tf.constant(2.0))
    assert v.numpy() == 4.0 and v.dtype == np.float32
    assert w.numpy() == 3.0                 # values already computed do not change


def test_variable_assign_checks_the_shape():
    v = tf.Variable([1.0, 2.0], name='x')
    with pytest.raises(ValueError, match="variable 'x:0'.*Shape mismatch"):
        v.assign([1.0, 2.0, 3.0])
    v.assign(np.array([3.0, 4.0]))
    assert v.dtype == np.float32 and v.numpy().tolist() == [3.0, 4.0]


def test_variable_numpy_is_a_copy():
    v = tf.Variable([1.0, 2.0])
    v.numpy()[0] = 10.0
    assert v.numpy()[0] == 1.0


def test_variable_needs_a_value():
    with pytest.raises(ValueError):
        tf.Variable()
    assert tf.Variable(lambda: 3.0).numpy() == 3.0


def test_every_array_method_and_attribute_of_the_rule_table_is_available():
    from tapeflow.rules import ATTRIBUTES, METHODS
    x = tf.constant([[3.0, 1.0], [2.0, 5.0]])
    for name in list(METHODS) + list(ATTRIBUTES):
        assert hasattr(x, name), name
    assert x.argsort().numpy().tolist() == [[1, 0], [0, 1]]
    assert x.reshape(4).shape == (4,) and x.reshape(1, 4).shape == (1, 4)
    assert x.transpose(1, 0).numpy().tolist() == x.T.numpy().tolist() == [[3.0, 2.0], [1.0, 5.0]]
    assert x.sum(axis=0).numpy().tolist() == [5.0, 6.0] and x.astype(np.float64).dtype == np.float64
    with pytest.raises(AttributeError, match='no attribute'):
        x.no_such_method


def test_tensors_and_variables_copy_the_arrays_they_are_given():
    a = np.array([1.0, 2.0])
    t, v, c = tf.Tensor(a), tf.Variable(a), tf.constant(a)
    b = np.array([5.0, 6.0])
    v.assign(b)
    a[0] = 100.0
    b[0] = 100.0
    assert t.numpy()[0] == 1.0 and c.numpy()[0] == 1.0 and v.numpy()[0] == 5.0
