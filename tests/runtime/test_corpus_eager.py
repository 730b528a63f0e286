"""The shared corpus through the eager tape: against differences and the compiler.

Each corpus function runs on Tensors inside a GradientTape (its float
arguments watched); its gradient must match central finite differences and
the compiled `tapeflow.grad`. A few cases cannot run eagerly, for the same
reasons as in TensorFlow; they are listed with the reason.
"""
import numpy as np
import pytest

import tapeflow as tf
from tests.corpus import CASES
from tests.gradcheck import check_gradient, seed_of

# Python's math module reads a Tensor as a float (TF: the same), and NumPy
# arrays cannot hold Tensors: such code is differentiable only when compiled.
NOT_EAGER = {
    'c_math': 'math.* on a Tensor gives a float',
    'c_projectile': 'math.* on a Tensor gives a float',
    'c_setitem': 'assigns Tensors into a NumPy array',
    'c_setitem_slice': 'assigns Tensors into a NumPy array',
    'c_setitem_overwrite': 'Tensors are immutable',
}


def _tensor(value):
    if isinstance(value, float):
        return tf.constant(np.float64(value))
    if isinstance(value, np.ndarray):
        return tf.constant(value)
    return value


def eager_gradient(case, args):
    values = [_tensor(a) if i in case.wrt else a for i, a in enumerate(args)]
    sources = [values[i] for i in case.wrt]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        out = case.fn(*values)
    grads = tape.gradient(out, sources, unconnected_gradients='zero')
    return out, [g.numpy() for g in grads]


EAGER = [c for c in CASES if c.name not in NOT_EAGER]


@pytest.mark.parametrize('case', EAGER, ids=lambda c: c.name)
def test_eager_gradient_matches_differences_and_the_compiler(case):
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    out, grads = eager_gradient(case, args)
    np.testing.assert_allclose(np.asarray(out), case.fn(*args), rtol=1e-12)
    for g, i in zip(grads, case.wrt):
        assert np.shape(g) == np.shape(args[i]) and g.dtype == np.float64
    check_gradient(case.fn, grads, args, case.wrt, rng)
    compiled = tf.grad(case.fn, argnums=case.wrt)(*args)
    for g, c in zip(grads, compiled):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-12)


def test_most_of_the_corpus_runs_eagerly():
    names = {c.name for c in CASES}
    assert set(NOT_EAGER) <= names and len(EAGER) >= 50


def fused_gradient(case, args):
    compiled = tf.function(case.fn)
    values = [_tensor(a) if i in case.wrt else a for i, a in enumerate(args)]
    sources = [values[i] for i in case.wrt]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        out = compiled(*values)
    grads = tape.gradient(out, sources, unconnected_gradients='zero')
    return out, [g.numpy() for g in grads]


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_compiled_function_under_a_tape_matches_the_compiler(case):
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    out, grads = fused_gradient(case, args)
    np.testing.assert_allclose(np.asarray(out), case.fn(*args), rtol=1e-12)
    compiled = tf.grad(case.fn, argnums=case.wrt)(*args)
    for g, c in zip(grads, compiled):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-12)
