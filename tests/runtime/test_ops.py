"""TF-style ops: values always; gradients (through the NumPy rules) once those exist."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import METHODS, RULES
from tests.runtime.rt_numeric import check_vjp

rng = np.random.default_rng(3)
A = rng.uniform(0.5, 2.0, (2, 3))
B = rng.uniform(0.5, 2.0, (2, 3))


def test_creation_ops():
    assert tf.ones((2, 2)).dtype == np.float32 and tf.ones([2]).numpy().tolist() == [1.0, 1.0]
    assert tf.zeros(3, dtype=tf.float64).numpy().tolist() == [0.0, 0.0, 0.0]
    assert tf.ones_like(tf.constant([1, 2])).numpy().tolist() == [1, 1]
    assert tf.zeros_like([1.0, 2.0]).dtype == np.float32
    assert tf.fill([2, 2], 7.0).numpy().tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert tf.range(5).numpy().tolist() == [0, 1, 2, 3, 4] and tf.range(5).dtype == np.int32
    assert tf.range(1.0, 2.0, 0.5).numpy().tolist() == [1.0, 1.5]
    assert tf.range(1.0, 2.0, 0.5).dtype == np.float32
    assert tf.shape(tf.ones((2, 3))).numpy().tolist() == [2, 3]
    assert tf.size(tf.ones((2, 3))).numpy() == 6 and tf.rank(tf.ones((2, 3))).numpy() == 2
    for op in (tf.ones, tf.zeros, tf.ones_like, tf.range, tf.fill):
        assert op.__module__ == 'tapeflow.runtime.ops'


VALUE_CASES = [
    (lambda a, b: tf.reduce_sum(a), lambda a, b: a.sum()),
    (lambda a, b: tf.reduce_sum(a, axis=1, keepdims=True), lambda a, b: a.sum(1, keepdims=True)),
    (lambda a, b: tf.reduce_mean(a, axis=[0, 1]), lambda a, b: a.mean()),
    (lambda a, b: tf.reduce_max(a, 0), lambda a, b: a.max(0)),
    (lambda a, b: tf.reduce_min(a), lambda a, b: a.min()),
    (lambda a, b: tf.reduce_prod(a, axis=-1), lambda a, b: a.prod(-1)),
    (tf.add, np.add), (tf.subtract, np.subtract), (tf.multiply, np.multiply),
    (tf.divide, np.divide), (tf.maximum, np.maximum), (tf.minimum, np.minimum), (tf.pow, np.power),
    (lambda a, b: tf.square(a), lambda a, b: a * a),
    (lambda a, b: tf.sqrt(a), lambda a, b: np.sqrt(a)),
    (lambda a, b: tf.exp(a), lambda a, b: np.exp(a)),
    (lambda a, b: tf.log(a), lambda a, b: np.log(a)),
    (lambda a, b: tf.sin(a), lambda a, b: np.sin(a)),
    (lambda a, b: tf.cos(a), lambda a, b: np.cos(a)),
    (lambda a, b: tf.tanh(a), lambda a, b: np.tanh(a)),
    (lambda a, b: tf.sigmoid(a), lambda a, b: 1 / (1 + np.exp(-a))),
    (lambda a, b: tf.abs(-a), lambda a, b: a),
    (lambda a, b: tf.negative(a), lambda a, b: -a),
    (lambda a, b: tf.identity(a), lambda a, b: a),
    (lambda a, b: tf.matmul(a, b, transpose_b=True), lambda a, b: a @ b.T),
    (lambda a, b: tf.matmul(a, b, transpose_a=True), lambda a, b: a.T @ b),
    (lambda a, b: tf.reshape(a, [3, -1]), lambda a, b: a.reshape(3, 2)),
    (lambda a, b: tf.transpose(a), lambda a, b: a.T),
    (lambda a, b: tf.concat([a, b], axis=0), lambda a, b: np.concatenate([a, b])),
    (lambda a, b: tf.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1)),
    (lambda a, b: tf.where(a > b, a, b), lambda a, b: np.where(a > b, a, b)),
    (lambda a, b: tf.cast(a, tf.float64), lambda a, b: a),
]


@pytest.mark.parametrize('op, reference', VALUE_CASES)
def test_op_values(op, reference):
    for a, b in [(A, B), (tf.constant(A), tf.constant(B))]:
        out = op(a, b)
        assert isinstance(out, tf.Tensor)
        np.testing.assert_allclose(out.numpy(), reference(np.asarray(a), np.asarray(b)),
                                   rtol=1e-6)


def test_op_dtypes():
    x = tf.constant([1.0, 2.0])
    assert tf.cast(x, tf.int32).dtype == np.int32 and tf.cast(x, tf.float32) is x
    assert tf.multiply(1.0, x).dtype == np.float32 and tf.add(x, 1).dtype == np.float32
    assert tf.where(tf.constant([True, False, True])).numpy().tolist() == [[0], [2]]
    with pytest.raises(ValueError):
        tf.where(x > 1.0, x)


GRADIENT_CASES = [
    ('reduce_sum', lambda a, b: tf.reduce_sum(a * b, axis=1), [np.sum]),
    ('reduce_mean', lambda a, b: tf.reduce_mean(a * b), [np.mean]),
    ('reduce_max', lambda a, b: tf.reduce_max(a + b, axis=0), [np.max]),
    ('reduce_min', lambda a, b: tf.reduce_min(a - b, axis=1), [np.min]),
    ('reduce_prod', lambda a, b: tf.reduce_prod(a * b, axis=0), [np.prod]),
    ('arithmetic', lambda a, b: tf.divide(tf.multiply(a, b), tf.add(tf.subtract(a, b), 3.0)), []),
    ('pow', lambda a, b: tf.pow(a, b), [np.where, np.log]),
    ('square', lambda a, b: tf.square(a) + b, [np.square]),
    ('sqrt_exp_log', lambda a, b: tf.sqrt(a) * tf.exp(b) - tf.log(a), [np.sqrt, np.exp, np.log]),
    ('trig', lambda a, b: tf.sin(a) * tf.cos(b) + tf.tanh(a * b), [np.sin, np.cos, np.tanh]),
    ('sigmoid', lambda a, b: tf.sigmoid(a - b), [np.exp]),
    ('max_min_abs', lambda a, b: tf.maximum(a, b) + tf.minimum(a, 2.0 * b) + tf.abs(a - b),
     [np.maximum, np.minimum, np.absolute]),
    ('matmul', lambda a, b: tf.matmul(a, b, transpose_b=True), [np.swapaxes]),
    ('shape_ops', lambda a, b: tf.transpose(tf.reshape(a, [3, 2])) * b + tf.identity(a[:, :1]),
     [np.reshape, np.transpose, 'getitem']),
    ('concat_stack', lambda a, b: tf.concat([a, b], 0) * tf.stack([a, b], 0)[1, :1],
     [np.concatenate, np.stack, 'getitem']),
    ('where', lambda a, b: tf.where(a > b, a * a, b), [np.where]),
]


@pytest.mark.parametrize('name, f, fns', GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_op_gradients_match_finite_differences(name, f, fns):
    import operator
    have = {'getitem': operator.getitem in RULES, 'astype': 'astype' in METHODS}
    missing = [fn for fn in fns if not (have[fn] if isinstance(fn, str) else fn in RULES)]
    assert not missing, f'no rule for {missing}'
    check_vjp(f, [A, B])


def test_cast_gradient_has_the_source_dtype_and_integer_casts_cut_the_path():
    assert 'astype' in METHODS
    x = tf.Variable(np.array([1.5, 2.5]))
    with tf.GradientTape(persistent=True) as tape:
        y = tf.cast(x, tf.float32) * 3.0
        n = tf.cast(x, tf.int32)
    assert y.dtype == np.float32
    g = tape.gradient(y, x)
    assert g.dtype == np.float64 and g.numpy().tolist() == [3.0, 3.0]
    assert n.numpy().tolist() == [1, 2] and tape.gradient(n, x) is None
