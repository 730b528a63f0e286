"""Tuples joined and repeated, lists repeated, `zip(*pairs)`, `sorted(key=)`, `map` and
`filter` read at once: each checked against the plain call and central differences."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tapeflow as tf

from tests.gradcheck import check_grads, checked_against_plain, seed_of


def _check(f, args, wrt=0):
    return checked_against_plain(f, args, wrt, np.random.default_rng(seed_of(f.__name__)))


def test_tuples_joined_in_a_loop_and_in_place():
    def joined(x):
        state = (x,)
        for _ in range(3):
            state = state + (state[-1] * x,)
        t = (x,)
        t += (x * 2.0,)
        return sum(state) + t[0] * t[1]
    _check(joined, [1.3])


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def test_star_arguments_joined_with_a_tuple_as_rnn_py_writes_them():
    def f(w, h):
        return np.sum(np.tanh(concat_and_multiply(w, h, h * 2.0)))
    rng = np.random.default_rng(3)
    _check(f, [rng.standard_normal((5, 2)), rng.standard_normal((4, 2))], (0, 1))


def test_lists_repeated_and_joined():
    def helper(ys):
        zs = ys * 2
        return zs[0] * zs[3] + (ys + [1.0])[2]

    def f(x):
        return helper([x, x * 2, x * x])
    _check(f, [1.5])


def test_zip_of_star_and_unpacking():
    def f(x):
        params = ([x, 2 * x], [x * x, 1.0])
        total = 0.0
        for a, b in zip(*params):
            total = total + a * b
        firsts, seconds = zip(*[(x, 1.0), (2.0, x * 3)])
        return total + firsts[0] * seconds[1]
    _check(f, [1.2])


def test_sorted_with_a_key_and_reverse():
    def f(x):
        rows = np.array([[3.0, x[0]], [1.0, 2 * x[1]], [2.0, x[0] * x[1]]])
        ordered = sorted(rows, key=lambda r: r[0], reverse=True)
        return np.sum(np.array(ordered) * np.arange(6.0).reshape(3, 2))
    _check(f, [np.array([0.7, -1.2])])


def log_partition(p, d):
    return np.sin(p * d)


def test_map_and_filter_read_at_once():
    def f(x):
        mapped = sum(map(functools.partial(log_partition, x), [1.0, 2.0, 3.0]))
        kept = sum(filter(lambda v: v > 1.0, [x, 2 * x, 0.1 * x]))
        pairs = list(map(lambda a, b: a * b, [x, 2.0], [x, x]))
        return mapped + kept + sum(pairs)
    _check(f, [1.4])


# Found by the fuzzer (seed 2901): crashes, now right.

def worklist_then_repeated_from_the_left(x):
    ys = [2.0]
    s = 0.0
    for t in ys:
        s = s + t
        if len(ys) < 2:
            ys.append(t * x[0])
    for _ in range(2):
        ys = 2 * ys             # a list, not a number: n * ys as ys * n
    return sum(ys) + s


class _Gain:
    def __init__(self, k):
        self.k = k

    def __call__(self, v):
        return np.sin(v * self.k) + v


GAIN = _Gain(1.5)


def a_callable_object_and_a_closure_called_twice_each(x):
    a = x
    fns = [GAIN, lambda v: v * (2.0 + np.sum(x))]
    for layer in fns:
        a = layer(a)
    for layer in fns:           # the object's cotangents (by attribute) added up
        a = layer(a)
    return np.sum(a * a)


def test_a_list_repeated_from_the_left_after_a_worklist():
    _check(worklist_then_repeated_from_the_left, [np.array([1.1, 0.7, 0.5])])


def test_callable_objects_called_twice_from_a_list():
    _check(a_callable_object_and_a_closure_called_twice_each, [np.array([0.4, -0.2, 0.3])])


def a_list_argument_repeated_in_place(x, ys):
    d = {i: 2.0 for i in range(1)}
    s = 0.0
    for key in d:
        ys *= 2                 # no derivative through ys: run as Python does
        a = x[1:]
        x[1:] += 2.0
        s = s + d[key]
    return s + np.sum(x * x) + np.sum(a * a) + len(ys)


def test_a_list_repeated_in_place_outside_the_derivative():
    """The generated code was not Python (inplace_op(ys, 2, *)): fuzzer, seed 2901."""
    _check(a_list_argument_repeated_in_place, [np.array([0.5, 0.6, 1.4, 1.0]), [1.0, 2.0]])


FNS = [lambda v: v * 2.0]


def a_tuple_from_zip_extended_in_place(y):
    a, tup = zip(*[(y[0], 1.5), (y[1], y[2])])
    tup += (y[0] * 2.0,)        # a tuple, though nothing said so when compiling
    return sum(tup) + sum(a)


def an_array_of_unknown_kind_plus_a_tuple(x):
    y = FNS[0](x)               # nothing tells y's kind when compiling: NumPy adds
    s = x[0]
    y = y + (s, 2.0 * s, 3.0 * s)
    z = FNS[0](x)
    z += (s, s, 2.0 * s)
    return np.sum(y ** 2) + np.sum(z ** 3)


def test_plus_of_a_tuple_decided_when_the_code_runs():
    """Fuzzer, seed 2901 index 1724: a crash ('list' object has no attribute 'shape'); an
    array of unknown kind plus a tuple of differentiated numbers: IndexError."""
    _check(a_tuple_from_zip_extended_in_place, [np.array([0.3, 0.5, 0.7])])
    _check(an_array_of_unknown_kind_plus_a_tuple, [np.array([0.3, 0.5, 0.7])])


# `ys *= n` of a list that carries derivatives: the same list object made n times as
# long, seen by every other name holding it (refused before: "changes the list ys in
# place and is not differentiated").

def repeated_in_place_seen_through_an_alias(x):
    ys = [x, 2.0 * x]
    zs = ys
    ys *= 3
    return np.sum(zs[5] * ys[0]) + len(zs)


def repeated_in_place_by_zero_then_appended(x):
    ys = [x * x, np.sin(x)]
    k = 0
    ys *= k
    ys.append(x ** 3)
    return np.sum(ys[0]) + len(ys)


def repeated_in_place_in_a_loop(x):
    ys = [x]
    for i in range(2):
        ys *= 2
        ys[-1] = ys[-1] * 1.5
    return np.sum(np.stack(ys) ** 2)


def repeated_in_place_inside_a_nested_list(x):
    rows = [[x], [x * 2.0]]
    r = rows[0]
    r *= 2
    return np.sum(rows[0][1] * rows[1][0])


@pytest.mark.parametrize('f', [repeated_in_place_seen_through_an_alias,
                               repeated_in_place_by_zero_then_appended,
                               repeated_in_place_in_a_loop,
                               repeated_in_place_inside_a_nested_list], ids=lambda f: f.__name__)
def test_a_list_repeated_in_place(f):
    x = np.array([0.3, -0.7, 1.1])
    _check(f, [x.copy()])
    check_grads(lambda v: f(v.copy()), x.copy(), np.random.default_rng(seed_of(f.__name__)),
                order=2)


def copied_after_a_closure_appended(xs):
    def record(p):
        xs.append(p)
    record(xs[0] + xs[0])
    record(np.ones(3) * 2.0)          # no derivative: its tangent is the symbolic zero
    rows = xs.copy()
    return np.sum(rows[0] * rows[-1]) + np.sum(rows[2] * xs[1])


def test_a_list_copied_in_forward_mode():
    """Fuzzer, seed 5000 index 1068: ys.copy() of a list was NumPy's copy in forward mode
    (a ValueError: an inhomogeneous array of tangents)."""
    xs = [np.array([0.5, 0.2, 0.9]), np.array([1.5, -0.3, 0.4])]
    _check(copied_after_a_closure_appended, [[a.copy() for a in xs]])
    check_grads(lambda v: copied_after_a_closure_appended([a.copy() for a in v]),
                [a.copy() for a in xs], np.random.default_rng(5), order=1)


def an_item_read_before_a_deletion(xs):
    a = np.ones(3) * 2.0
    try:
        a = (xs[-1] + a) / 5.0
    except ValueError:
        pass
    a[1:] += a[1:]
    del xs[0]
    s = xs[-1]
    del xs[1]                   # s still binds what it read: xs[-1] is another item now
    return s + np.sum(a * a)


def items_read_before_pops_and_updates(x):
    ys = [x[0], x[1] * 2.0, x[2] * 3.0]
    d = {'a': x[0] * x[1], 'b': x[2]}
    first, last, a = ys[0], ys[-1], d['a']
    ys.pop(0)
    ys.insert(0, x[1])
    del ys[-1]
    d.update({'a': x[2] * 5.0})
    d.pop('b')
    return first * last + a * ys[-1] + d['a'] * len(ys)


def test_a_name_bound_to_an_item_keeps_it_when_slots_are_removed():
    """SILENT WRONG (fuzzer, seed 5010 index 113): after del xs[1], s = xs[-1] (read
    before) was read again from the slot -1 (value 2.95 for 2.75): a deletion, pop or dict
    update moves or replaces slots, never what a name read from one binds."""
    _check(an_item_read_before_a_deletion, [[1.1, 0.7, 0.5]])
    _check(items_read_before_pops_and_updates, [np.array([0.3, 0.8, 1.3])])
    x = np.array([0.3, 0.8, 1.3])
    check_grads(lambda v: items_read_before_pops_and_updates(v.copy()), x.copy(),
                np.random.default_rng(8), order=1)
    grad, v, eps = tf.grad(items_read_before_pops_and_updates), np.array([0.5, -1.0, 0.3]), 1e-5
    numeric = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(tf.jvp(grad, (x.copy(),), (v,))[1], numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.hessian(items_read_before_pops_and_updates)(x.copy()) @ v,
                               numeric, rtol=1e-6, atol=1e-8)


def a_comprehension_over_the_name_it_binds(x):
    s = 0.0
    q = [x, 2.0 * x]
    for t in q:
        q = [q * 0.5 for q in q]        # the first iterable is the function's q
        s = s + t
    return s + sum(q) + sum({k: k * x for k in q}.values())


def test_a_comprehension_whose_variable_shadows_its_iterable():
    """Fuzzer, seed 5030 index 153: [q * 0.5 for q in q] read the comprehension's own q
    for the iterable (UnboundLocalError)."""
    f = a_comprehension_over_the_name_it_binds
    _check(f, [1.5])
    check_grads(f, 1.5, np.random.default_rng(9), order=1)
    grad, eps = tf.grad(f), 1e-5
    assert np.isclose(tf.jvp(grad, (1.5,), (1.0,))[1], (grad(1.5 + eps) - grad(1.5 - eps)) / (2 * eps),
                      rtol=1e-6, atol=1e-8)


def sorted_rows_of_a_worklist(x):
    s = 0.0
    rows = [x]
    for a in rows:
        s = s + np.sum(a)
        if len(rows) < 3:
            rows.append(np.tanh(a) * 2.0)
    cols = sorted(rows, key=lambda r: r[0])
    return np.sum(cols[0] * cols[-1]) + s


def sorted_pair(x):
    cols = sorted([x, 2.0 * x[::-1]], key=lambda r: r[0], reverse=True)
    return np.sum(cols[0] * np.sin(cols[-1]))


@pytest.mark.parametrize('f', [sorted_rows_of_a_worklist, sorted_pair], ids=lambda f: f.__name__)
def test_the_hessian_through_sorted(f):
    """Fuzzer, seed 5060 index 5000: tf.hessian (every direction at once) through
    sorted(key=) crashed in the batched sweep of its rule's own source; the rule and its
    transpose are one linear pair now, against central differences of the gradient."""
    x = np.array([1.1, 0.7, 0.5])
    grad, eps = tf.grad(f), 1e-5
    numeric = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(tf.hessian(f)(x.copy()), numeric, rtol=1e-4, atol=1e-6)
    check_grads(f, x.copy(), np.random.default_rng(seed_of(f.__name__)), order=1)
