"""Assignment targets as Python stores into them (transforms/sugar/unpacking.py): a starred
name in a tuple target (`a, *b, c = v`, `for a, *rest in rows`), a nested subscript
(`x[i][j] = v`, `rows[1][0] = v`, `y[1][:] += v`). Values against the plain call,
gradients against central differences, forward mode and second order too; Python's
ValueError where there are too few values, at the user's line."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, checked_against_plain, exact_to_second_order, seed_of


def starred_in_a_loop(x):
    rows = [x, x * 2.0, x * 3.0]
    s = 0.0
    for a, *rest in [rows, rows[::-1]]:       # (an internal crash before)
        s = s + np.sum(a * rest[0]) + np.sum(rest[-1])
    return s


def starred_names(x):
    a, *b = [x, x * 2.0, x * 3.0]
    c, *d, e = (x[0], x[1], np.sin(x[2]), x[0] * x[1])
    *h, = [x * 4.0]
    return np.sum(a * b[1]) + c * e + d[0] * d[1] + np.sum(h[0])


def starred_rows_of_an_array(x):
    first, *others = np.outer(x, x)
    return np.sum(first) + np.sum(others[0] * others[-1])


def starred_and_nested(x):
    (a, *b), c = [x, x * 2.0, x * 3.0], np.cos(x)
    return np.sum(a * b[-1] * c)


def nested_subscripts(x):
    y = np.zeros((2, 3))
    y[0][1] = x[0] * 3.0              # y[0] is a view: the write reaches y
    y[1][:] += x
    rows = [x * 1.0, x * 2.0]
    rows[1][0] = x[2] ** 2            # into the array the list holds
    z = x * 1.0
    z[[0, 1]][0] = 100.0              # into a copy (an advanced index): lost, as in Python
    return np.sum(y * y) + np.sum(rows[1] * rows[0]) + np.sum(z * x)


CASES = [starred_in_a_loop, starred_names, starred_rows_of_an_array, starred_and_nested,
         nested_subscripts]
X = np.array([0.3, -0.4, 0.8])


@pytest.mark.parametrize('f', CASES, ids=lambda f: f.__name__)
def test_targets_are_differentiated_as_python_assigns_them(f):
    rng = np.random.default_rng(seed_of(f.__name__))
    checked_against_plain(f, [X.copy()], 0, rng)
    check_grads(lambda v: f(v.copy()), X.copy(), rng, order=2, modes=('fwd',))


def too_few(x):
    a, *b, c = [x]
    return a * c


def test_too_few_values_raise_pythons_error_at_the_line():
    with pytest.raises(ValueError, match='not enough values to unpack') as info:
        tf.grad(too_few)(X)
    lines, first = inspect.getsourcelines(too_few)
    assert f':{first + 1}:' in str(info.value)


def starred_from_a_tuple_then_written(x):
    state = (x,)
    for j in range(3):
        state = state + (state[-1] * state[0] * 0.25,)
    a, *cols = state
    a *= 2.0                    # a is state[0]: the write reaches state
    return np.sum(a * a) + np.sum(cols[0] * cols[-1]) + np.sum(state[0] * state[-1])


def test_a_starred_value_written_in_place_is_refused_where_written():
    """Fuzzer, seed 4006 index 997: WRONG gradient (-9.661 for -9.667): what star_items
    gave was taken for a new value, not the tuple it reads; now the write is checked
    against state, which it reaches."""
    with pytest.raises(tf.UnsupportedError, match='a shares memory with state') as info:
        tf.grad(starred_from_a_tuple_then_written)(X.copy())
    lines, first = inspect.getsourcelines(starred_from_a_tuple_then_written)
    assert f':{first + 5}:' in str(info.value)


def starred_rows_in_a_guarded_loop(x):
    ys = [x * 2.0, np.sin(x) * 3.0]
    i = 0
    while True:
        try:
            if i >= 1:
                break               # (the body gives back its rows: lists)
            s1 = 0.0
            for u, *zs in [ys, ys[::-1]]:
                s1 = s1 + u * zs[-1]
        finally:
            i += 1
    return np.sum(s1 * x)


def test_a_starred_row_that_is_a_list_accumulates_by_structure():
    """Fuzzer seed 5444 index 3207: a crash, `float + list` (the row a starred target
    unpacks added its cotangents with `+`)."""
    exact_to_second_order(starred_rows_in_a_guarded_loop, np.array([0.3, -0.8]))
