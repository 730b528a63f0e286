"""Gradients on a GPU with CuPy: the workloads and the corpus, beside the NumPy path.

Marked `gpu`: they run where CuPy imports and sees a CUDA device, and are skipped
elsewhere with that reason in pytest's summary (`-rs`). Without a GPU the same
code paths are tested against tests/duck_gpu.py (tests/test_array_libraries.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.test_array_libraries import (CUPY_MEANS_ANOTHER_VALUE, NUMPY_VALUES_MEET_ARRAYS, WORKLOADS,
                                       another_value_and_its_gradient, assert_same_gradient, convert,
                                       corpus_cases, numpy_values_meet, plain_runs,
                                       fills_a_numpy_array_with_a_gpu_number, transposed_write_then_reshape)


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:       # noqa: BLE001 -- not installed, no driver, no device
        return None
    return cupy


cp = _cupy()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cp is None, reason='gpu: CuPy with a CUDA GPU is not available here')]


def to_gpu(a):
    return cp.asarray(a)


def on_gpu(value):
    return isinstance(value, cp.ndarray)


def host(value):
    return cp.asnumpy(value) if on_gpu(value) else value


@pytest.mark.parametrize('name, fn, args, wrt', WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_workloads_on_the_gpu(name, fn, args, wrt):
    expected = tf.value_and_grad(fn, argnums=wrt)(*args)
    value, grads = tf.value_and_grad(fn, argnums=wrt)(*convert(args, to_gpu))
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert all(on_gpu(g) for g in grads)
    assert_same_gradient((host(value), tuple(host(g) for g in grads)), expected, lambda g: True)


@pytest.mark.parametrize('case', corpus_cases(), ids=lambda c: c.name)
def test_corpus_on_the_gpu(case):
    args = case.args(np.random.default_rng(0))
    gpu_args = convert(args, to_gpu)
    if not plain_runs(case.fn, gpu_args):
        return      # the function itself mixes NumPy and CuPy arrays
    expected = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    value, grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*gpu_args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert_same_gradient((host(value), tuple(host(g) for g in grads)), expected, lambda g: True)


@pytest.mark.parametrize('name, fn, args, wrt', NUMPY_VALUES_MEET_ARRAYS,
                         ids=[c[0] for c in NUMPY_VALUES_MEET_ARRAYS])
def test_numpy_values_that_meet_a_gpu_array_get_their_cotangent_on_the_host(name, fn, args, wrt):
    (value, grads), expected = numpy_values_meet(name, fn, args, wrt, to_gpu, np.random.default_rng(3))
    assert_same_gradient((host(value), tuple(host(g) for g in grads)), expected, lambda g: True)
    assert not any(on_gpu(g) and g.ndim == 0 for g in grads)


def test_a_write_in_place_keeps_its_layout_on_the_gpu():
    y, c = np.arange(1.0, 10.0).reshape(3, 3) / 7, np.linspace(0.5, 1.5, 9).reshape(3, 3)
    expected = tf.value_and_grad(transposed_write_then_reshape, argnums=(0, 1))(y.copy(), c)
    plain = transposed_write_then_reshape(to_gpu(y), to_gpu(c))
    value, grads = tf.value_and_grad(transposed_write_then_reshape, argnums=(0, 1))(to_gpu(y), to_gpu(c))
    np.testing.assert_allclose(host(plain), expected[0], rtol=1e-12)
    assert_same_gradient((host(value), tuple(host(g) for g in grads)), expected, lambda g: True)


def test_a_numpy_array_filled_with_a_gpu_number():
    x, z = np.linspace(0.2, 0.8, 4), 0.7
    expected = tf.value_and_grad(fills_a_numpy_array_with_a_gpu_number, argnums=(0, 1))(x, z)
    value, grads = tf.value_and_grad(fills_a_numpy_array_with_a_gpu_number, argnums=(0, 1))(to_gpu(x), z)
    assert_same_gradient((host(value), tuple(host(g) for g in grads)), expected, lambda g: True)


@pytest.mark.parametrize('name, fn', CUPY_MEANS_ANOTHER_VALUE, ids=[c[0] for c in CUPY_MEANS_ANOTHER_VALUE])
def test_zero_d_arrays_mean_what_they_mean_on_the_gpu(name, fn):
    another_value_and_its_gradient(fn, to_gpu, host)
