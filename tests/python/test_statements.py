"""Generator functions, Python's loop semantics (a name bound again, a list that grows),
`del`: each value checked against the plain call, each gradient against central
differences."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tapeflow as tf

from tests.gradcheck import checked_against_plain, seed_of


def _check(f, args, wrt=0):
    return checked_against_plain(f, args, wrt, np.random.default_rng(seed_of(f.__name__)))


def layers(w, shapes):
    for m, n in shapes:
        yield w[:m * n].reshape((m, n)), w[m * n:m * n + n]
        w = w[(m + 1) * n:]


def predict(w, x):
    for weights, bias in layers(w, [(2, 3), (3, 1)]):
        x = np.tanh(x @ weights + bias)
    return np.sum(x)


def test_a_generator_function_consumed_by_a_loop():
    w = np.random.default_rng(0).standard_normal(2 * 3 + 3 + 3 + 1)
    _check(predict, [w, np.array([[0.5, -0.2], [1.0, 0.3]])])


def test_yield_from_and_a_nested_generator():
    def f(x):
        def gen():
            yield x
            yield from [x * 2, x * 3]
            for k in range(2):
                yield x ** k
        return sum(gen()) + sum(v * v for v in gen())
    _check(f, [1.5])


def test_a_list_that_grows_while_it_is_iterated_is_read_to_its_end():
    def appended(x):
        queue = [x]
        total = 0.0
        for item in queue:
            total = total + item
            if len(queue) < 4:
                queue.append(item * 2.0)
        return total

    def extended_with_continue(x):
        queue = [x]
        total = 0.0
        for item in queue:
            if len(queue) < 5:
                queue += [item * 1.5]
                continue
            total = total + item
        return total + sum(queue)
    assert np.isclose(appended(1.3), 1.3 * 15)
    _check(appended, [1.3])
    _check(extended_with_continue, [1.3])


def test_the_iterated_name_bound_again_in_the_loop_changes_nothing():
    def f(x):
        v = x * np.ones(3)
        total = 0.0
        for e in v:
            v = v * 0.5
            total = total + e
        return total + np.sum(v)
    assert np.isclose(f(1.0), 3.0 + 3 * 0.125)
    _check(f, [1.3])


def test_del_of_a_name_and_of_items():
    def f(x):
        y = x * 2.0
        ys = [x, y, x * y]
        del ys[1]
        d = {'a': y, 'b': x}
        del d['a'], y
        return ys[0] * ys[1] + d['b']
    _check(f, [1.2])


# Fuzzer, seed 2901 index 2777: WRONG gradient. A helper tapeflow cannot read was taken
# to write into nothing; it wrote into its argument, and the caller differentiated x as it
# was before the call. (That helper, a starred target, is read now: exact.)

def _adds_and_unpacks(p, q):
    p += q * 2.0
    first, *rest = (p, p)
    return first


def calls_a_helper_that_unpacks(x):
    _adds_and_unpacks(x, x[1])
    return np.sum(np.sin(x) * x)


_CALLS = 0


def _adds_and_counts(p, q):
    global _CALLS
    _CALLS += 1
    p += q * 2.0
    return p


def calls_a_helper_it_cannot_read(x):
    _adds_and_counts(x, x[1])
    return np.sum(np.sin(x) * x)


def test_a_helper_it_cannot_read_may_write_into_its_arguments():
    _check(calls_a_helper_that_unpacks, [np.array([0.96, 1.06, 1.16])])
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(calls_a_helper_it_cannot_read)(np.array([0.96, 1.06, 1.16]))
    lines, first = inspect.getsourcelines(calls_a_helper_it_cannot_read)
    assert str(info.value).startswith(f'{__file__}:{first + 1}:')
    assert '_adds_and_counts()' in str(info.value)
