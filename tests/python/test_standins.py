"""`functools.reduce` and the iterator builders of `itertools`, compiled as the Python
stand-ins of `rules.standins`: values against the plain call, gradients against central
differences and forward mode, Hessians against differences of the gradient."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order


def reduce_by_a_rule(x):
    return functools.reduce(operator.mul, [x[0], x[1], x[2]], 1.0) + \
        np.sum(functools.reduce(np.add, [x, x * x]))


def reduce_by_a_lambda(x):
    c = np.sum(x)
    return functools.reduce(lambda a, b: a * b + c, [x[0], x[1], x[2]])


def accumulated(x):
    return sum(itertools.accumulate([x[0], x[1], x[2]])) + \
        sum(itertools.accumulate([x[0], x[1]], operator.mul, initial=2.0))


def chained(x):
    return sum(np.sum(v) for v in itertools.chain([x, x * 2], (np.sin(x),))) + \
        sum(itertools.chain.from_iterable([[x[0], x[1]], [x[2]]]))


def products(x):
    return sum(a * b for a, b in itertools.product([x[0], x[1]], [2.0, x[2]])) + \
        sum(a * b for a, b in itertools.product([x[0], x[1]], repeat=2))


def picks(x):
    items = [x[0], x[1] * 2, x[2]]
    return sum(a * b for a, b in itertools.combinations(items, 2)) + \
        sum(a - b * b for a, b in itertools.permutations(items, 2)) + \
        sum(a * b for a, b in itertools.combinations_with_replacement(items[:2], 2))


def slices_and_pairs(x):
    items = [x[0], x[1], x[2], x[0] * x[1]]
    out = sum(itertools.islice(items, 1, None, 2)) + sum(itertools.islice(items, 2))
    out = out + sum(a * b for a, b in zip(items, items[1:]))
    return out + sum(a * (b if b is not None else 1.0)
                     for a, b in itertools.zip_longest(items, items[:2]))


def mapped_and_repeated(x):
    pairs = [(x[0], x[1]), (x[2], 2.0)]
    return sum(itertools.starmap(operator.mul, pairs)) + \
        sum(np.sum(v) for v in itertools.repeat(x * x, 3)) + \
        sum(itertools.compress([x[0], x[1], x[2]], [1, 0, 1]))


def tuples_repeated(x):
    ps = [(x[0],), (x[1] * x[2],)] * 2           # a list of tuples repeated: sums of copies
    return sum(p[0] * p[0] for p in ps)


def first_items(x):
    d = dict(a=x * 2, b=x)                      # dict(k=v): a dict display
    rows = [x[1:], x[:2]]
    return np.sum(next(iter(d.values()))) * d['b'][0] + np.sum(next(iter(rows))) + \
        next(iter([]), x[2]) + next(iter((x[0], x[1])))


CASES = [first_items, reduce_by_a_rule, reduce_by_a_lambda, accumulated, chained, products, picks,
         slices_and_pairs, mapped_and_repeated, tuples_repeated]
if hasattr(itertools, 'pairwise'):
    def paired(x):
        return sum(a * b for a, b in itertools.pairwise([x[0], x[1], x[2]]))
    CASES.append(paired)


@pytest.mark.parametrize('f', CASES, ids=lambda f: f.__name__)
def test_standins_are_exact(f):
    exact_to_second_order(f, np.array([0.3, -0.4, 0.8]))


def test_closed_forms():
    x = np.array([0.3, -0.4, 0.8])
    a, b, c = x       # reduce_by_a_rule: abc + sum(x + x^2)
    np.testing.assert_allclose(tf.grad(reduce_by_a_rule)(x),
                               np.array([b * c, a * c, a * b]) + 1 + 2 * x, rtol=1e-12)
    # accumulated: a + (a + b) + (a + b + c), then 2 + 2a + 2ab
    np.testing.assert_allclose(tf.grad(accumulated)(x),
                               np.array([3 + 2 + 2 * b, 2 + 2 * a, 1]), rtol=1e-12)


def test_a_write_into_what_a_lazy_one_reads_is_refused():
    def writes_while_reading(x):
        items = [x[0], x[1]]
        total = 0.0
        for v in itertools.accumulate(items):
            items.append(v)                 # Python's accumulate would read it: endless
            total = total + v
            if len(items) > 4:
                break
        return total
    with pytest.raises(tf.UnsupportedError, match=r'this writes into items, which '
                                                  r'itertools\.accumulate\(\) may read') as error:
        tf.grad(writes_while_reading)(np.array([0.3, 0.4]))
    assert error.value.lineno == writes_while_reading.__code__.co_firstlineno + 4


def test_next_of_iter_of_a_generator_is_refused_located():
    def endless(x):
        while True:
            yield x
            x = x * 2

    def reads_one(x):
        return np.sum(next(iter(endless(x))))
    with pytest.raises(tf.UnsupportedError, match=r'endless\(\) is a generator: tapeflow makes '
                                                  r'all its items where it is called') as error:
        tf.grad(reads_one)(np.array([0.3]))
    assert error.value.lineno == reads_one.__code__.co_firstlineno + 1
