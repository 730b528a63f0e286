"""`slots`: a top-level range loop saves its values in lists indexed by the trip.

The same operations in the same order: gradients are the same bits as with the tape,
and right (finite differences) on loops that exercise every case the pass leaves alone.
"""
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tapeflow.transforms import slots
from tests.gradcheck import check_gradient
from tests.transforms.test_lean_goldens import W1


def scalar_loop(x):
    for i in range(100):
        x = math.sin(x) * x + 0.5 * x
    return x


def reads_its_index(x, w):
    h = x
    for t in range(w.shape[0]):
        h = np.tanh(h * w[t] + 0.1 * t)
    return np.sum(h * h)


def two_loops(x):
    for i in range(4):
        x = np.sin(x) * x
    y = x
    for j in range(3):
        y = np.cos(y) + y * x
    return np.sum(y)


def from_one(x):
    for i in range(1, 5):
        x = np.sin(x) * x * i
    return np.sum(x)


def index_rebound(x):
    for i in range(4):
        i = i + 1
        x = np.sin(x) * x * i
    return np.sum(x)


def nested(x):
    for i in range(3):
        for j in range(2):
            x = np.sin(x) * x + 0.25 * j
        x = np.cos(x) * x
    return np.sum(x)


def branch_inside(x):
    for i in range(5):
        if i % 2 == 0:
            x = np.sin(x) * x
        else:
            x = np.exp(-x * x) + x
        x = np.tanh(x) * x
    return np.sum(x)


def breaks_early(x):
    for i in range(10):
        x = np.sin(x) * x
        if np.sum(x) < 0.01:
            break
    return np.sum(x)


FUNCTIONS = [reads_its_index, two_loops, from_one, index_rebound, nested, branch_inside,
             breaks_early]


def _arguments(fn, rng):
    x = rng.uniform(0.3, 1.2, 4)
    return (x, rng.uniform(0.5, 1.5, 6)) if fn is reads_its_index else (x,)


def test_the_scalar_loop_keeps_its_iterates_in_one_list():
    text = tf.source(scalar_loop, args=(0.7,))
    assert text == W1               # (the benchmark's loop: the same function, the same code)
    assert '_xs[i] = x' in text and 'x = _xs[_trip]' in text and '_tape' not in text


def test_a_loop_reading_its_index_backwards_indexes_by_it():
    text = tf.source(reads_its_index, args=_arguments(reads_its_index, np.random.default_rng(0)))
    assert '_hs[t] = h' in text and 'for t in reversed(_range):' in text and '_hs[t]\n' in text
    assert '_tape' not in text


@pytest.mark.parametrize('fn', FUNCTIONS, ids=lambda f: f.__name__)
def test_gradients_are_the_tapes_bits_and_right(fn, monkeypatch):
    rng = np.random.default_rng(5)
    args = _arguments(fn, rng)
    wrt = tuple(range(len(args)))
    cache.clear()
    value, grads = tf.value_and_grad(fn, argnums=wrt)(*args)
    assert value == fn(*args)
    check_gradient(fn, grads, args, wrt, rng)
    monkeypatch.setattr(slots, 'transform', lambda fdef, names, namer: False)
    cache.clear()
    _, taped = tf.value_and_grad(fn, argnums=wrt)(*args)
    for got, want in zip(grads, taped):
        assert np.array_equal(got, want)
    cache.clear()


def test_what_the_pass_leaves_on_the_tape():
    rng = np.random.default_rng(1)
    assert '[None]' not in tf.source(from_one, args=_arguments(from_one, rng))      # from 1
    assert '[None]' not in tf.source(index_rebound, args=_arguments(index_rebound, rng))
    text = tf.source(nested, args=_arguments(nested, rng))
    assert text.count('[None]') == 2 and '_push(x)' in text     # the inner loop keeps the tape
    text = tf.source(branch_inside, args=_arguments(branch_inside, rng))
    assert '[None]' in text and '_push(' in text          # a branch's values stay on the tape


def test_checkpointed_loops_keep_their_snapshots():
    text = tf.source(scalar_loop, args=(0.7,), checkpoint=True)
    assert '[None]' not in text
    assert tf.grad(scalar_loop, checkpoint=True)(0.7) == pytest.approx(tf.grad(scalar_loop)(0.7),
                                                                       rel=1e-12)


def test_the_split_pair_keeps_its_tape():
    assert '[None]' in tf.source(two_loops)

    def caller(x):
        return two_loops(x) * 2.0
    shown = tf.source(caller)
    pair = shown[shown.index('def two_loops_forward'):]
    assert '[None]' not in pair and '_push(' in pair
    x = np.linspace(0.3, 1.0, 4)
    check_gradient(caller, (tf.grad(caller)(x),), (x,), (0,), np.random.default_rng(3))
