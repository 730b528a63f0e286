"""`defer`: `grad` compiles the combined function; the split pair waits until asked for.

The pair then gets the same passes, and the same text, as when the three functions are
compiled together (an export, a recorded compilation, the disk cache).
"""
import sys
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache, compilation, disk_cache
from tapeflow.compilation import Spec
from tests import corpus
from tests.gradcheck import check_gradient


def helper(v):
    return np.sin(v) * v


def model(x, w=1.5):
    t = helper(x) * w
    total = 0.0
    for i in range(3):
        total = total + np.sum(t * x) * 0.5
    return total + np.sum(np.exp(-x * x))


def caller(x):
    return model(x) * model(x * 0.5)


def _cached(fn, spec=Spec('reverse', (0,))):
    cache.clear()
    return compilation.compile(fn, spec)


def _eager(fn, spec=Spec('reverse', (0,))):
    return compilation.compile(fn, spec, fresh=True)


def test_grad_compiles_the_combined_function_and_sets_the_pair_aside():
    compiled = _cached(model)
    assert compiled.split_later is not None
    assert compiled.combined is not None
    x = np.linspace(-1.0, 1.0, 5)
    value, grad = compiled.combined(x)
    assert compiled.split_later is not None          # running `grad` needs no pair
    assert value == model(x)
    check_gradient(model, (tf.grad(model)(x),), (x,), (0,), np.random.default_rng(1))


def test_the_pair_asked_for_is_the_pair_compiled_with_the_unit():
    eager = _eager(model)
    lazy = _cached(model)
    assert lazy.source == eager.source
    forward = lazy.forward                           # completes the split
    assert lazy.split_later is None and forward is lazy.forward
    assert lazy.split_source == eager.split_source
    assert lazy.module_source == eager.module_source
    assert list(lazy.trees) == ['forward', 'backward', 'combined']
    x = np.linspace(-1.0, 1.0, 5)
    tape = []
    value = lazy.forward(tape, x)
    assert value == model(x)
    assert np.array_equal(lazy.backward(tape, 1.0), lazy.combined(x)[1])
    assert tape == []


def test_a_caller_binds_its_callees_pair_and_its_gradient_holds():
    cache.clear()
    x = np.linspace(-1.0, 1.0, 5)
    check_gradient(caller, (tf.grad(caller)(x),), (x,), (0,), np.random.default_rng(2))
    callee = compilation.compile(model, Spec('reverse', (0,), kinds=(None,)))
    assert callee.split_later is None or callee.forward is not None


def test_a_function_under_a_tape_runs_the_pair():
    cache.clear()
    fn = tf.function(model)
    x = tf.Variable(np.linspace(-1.0, 1.0, 5))
    with tf.GradientTape() as tape:
        y = fn(x)
    got = tape.gradient(y, x)
    assert np.allclose(np.asarray(got), tf.grad(model)(np.linspace(-1.0, 1.0, 5)), rtol=1e-12)


def test_threads_asking_for_the_pair_at_once_get_one_pair():
    """A thread asking while another completed the pair read None before (seen in CI's
    clean run; 25 of 30 tries here with the interpreter switching threads often)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            cache.clear()
            compiled = _cached(model)
            seen, start = [], threading.Barrier(8)

            def ask():
                start.wait()
                seen.append((compiled.forward, compiled.backward))

            threads = [threading.Thread(target=ask) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(seen) == 8 and seen[0][0] is not None and seen[0][1] is not None
            assert len({id(f) for f, _ in seen}) == 1 and len({id(b) for _, b in seen}) == 1
    finally:
        sys.setswitchinterval(interval)


def test_the_disk_cache_keeps_the_unit_whole(tmp_path):
    old = disk_cache.cache_dir()
    tf.set_cache_dir(tmp_path)
    try:
        compiled = _cached(model)
        assert compiled.split_later is None
        assert compiled.forward is not None and compiled.split_source
    finally:
        tf.set_cache_dir(old)
        cache.clear()


def test_source_shows_the_callees_pair_as_compiled_with_its_unit():
    shown = tf.source(caller)
    lazy, eager = _cached(caller), _eager(caller)
    assert lazy.callees[0].split_source == eager.callees[0].split_source
    assert 'def model_forward(' in shown and lazy.callees[0].split_source in shown


@pytest.mark.parametrize('case', corpus.CASES, ids=lambda c: c.name)
def test_every_corpus_pair_set_aside_is_the_pair_compiled_with_its_unit(case):
    spec = Spec('reverse', tuple(case.wrt))
    try:
        eager = _eager(case.fn, spec)
    except tf.UnsupportedError:
        return                                  # (refused either way: the fence's tests)
    lazy = _cached(case.fn, spec)
    assert lazy.split_later is not None
    assert (lazy.source, lazy.split_source, lazy.module_source) == \
        (eager.source, eager.split_source, eager.module_source)
