"""Calls repeated in a loop (issue 30): a derivative asked for again with a new
`grad(f)` object (`tf.hvp`, `tf.jvp(tf.grad(f))`, `tf.hessian`) compiles nothing
again, and `tf.vmap`, `tf.linearize` and `custom_vjp` leave nothing behind per call.

Memory is counted in allocated blocks (`sys.getallocatedblocks`), not with
tracemalloc: tracemalloc keeps the file name of every generated module it sees
run, which is its own growth, not tapeflow's."""
from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache

X = np.array([0.3, 0.5, 0.7])
V = np.array([1.0, -0.5, 2.0])
BATCH = np.random.default_rng(3).random((4, 3))


def f(x):
    return np.sum(np.sin(x) * x ** 2)


def looped(x):
    y = 0.0
    for i in range(3):
        y = y + np.sum(np.cos(x * i) * x)
    return y


def h(x):
    return np.sin(x) * x


@tf.custom_vjp
def cube(x):
    return x ** 3


cube.defvjp(lambda x: (x ** 3, x), lambda x, g: (3.0 * x ** 2 * g,))


def uses_cube(x):
    return np.sum(cube(x) * 2.0)


SECOND_ORDER = {
    'hvp': lambda fn: tf.hvp(fn, (X,), (V,)),
    'jvp_of_grad': lambda fn: tf.jvp(tf.grad(fn), (X,), (V,))[1],
    'hessian': lambda fn: tf.hessian(fn)(X),
}


@pytest.mark.parametrize('how', SECOND_ORDER)
@pytest.mark.parametrize('fn', [f, looped], ids=lambda fn: fn.__name__)
def test_second_order_compiles_once(how, fn):
    run = SECOND_ORDER[how]
    first = run(fn)
    before = dict(cache.stats)
    for _ in range(20):
        np.testing.assert_array_equal(run(fn), first)
    assert cache.stats['compiles'] == before['compiles']
    assert cache.stats['misses'] == before['misses']


def test_a_grad_of_new_defaults_is_compiled_for_them():
    def scaled(x, k=2.0):
        return np.sum(x ** 3) * k
    assert tf.hvp(scaled, (X,), (V,)) == pytest.approx(12.0 * X * V)
    scaled.__defaults__ = (5.0,)
    assert tf.hvp(scaled, (X,), (V,)) == pytest.approx(30.0 * X * V)


def _blocks_per_call(run, calls):
    for _ in range(300):            # (the bounded caches filled)
        run()
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(calls):
        run()
    gc.collect()
    return (sys.getallocatedblocks() - before) / calls


LOOPS = {
    'vmap': lambda: tf.vmap(h)(BATCH),
    'vmap_of_grad': lambda: tf.vmap(tf.grad(f))(BATCH),
    'linearize': lambda: tf.linearize(f, X)[1](V),
    'custom_vjp_grad': lambda: tf.grad(uses_cube)(X),
    'custom_vjp_vjp': lambda: tf.vjp(cube, X)[1](V),
    'hvp': lambda: tf.hvp(f, (X,), (V,)),
}


@pytest.mark.parametrize('name', LOOPS)
def test_memory_stays_flat_in_a_loop(name):
    # (before: vmap(grad(f)) kept every mapped function and its rule entry, ~60 blocks a
    # call; linearize kept every f_jvp's lines in linecache, ~5 a call)
    assert _blocks_per_call(LOOPS[name], 3000) < 0.05
