"""Generator functions compiled as the lists they yield (`transforms.sugar.generators`):
each value against the plain call, each gradient against central differences along
random directions (first and second order), and where the eager list could give
another number than Python's lazy generator, a refusal located in the user's code.
The cases the fuzzer found (tests/fuzz/test_python_fuzz.py) and their neighbours."""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain, seed_of


def _check(f, args, wrt=0):
    return checked_against_plain(f, args, wrt, np.random.default_rng(seed_of(f.__name__)))


def line_of(fn, text):
    """The line of `fn`'s file holding `text` (within `fn`)."""
    lines, first = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return first + offset
    raise AssertionError(f'{text!r} not in {fn.__name__}')


def _refused(f, args, at, *words):
    """`f`'s gradient refused, located at the line of `f` holding `at`, saying `words`."""
    with pytest.raises(tf.UnsupportedError) as caught:
        tf.grad(f)(*copy.deepcopy(args))
    message = str(caught.value)
    assert f'test_generator_exactness.py:{line_of(f, at)}:' in message, message
    for word in words:
        assert word in message, message
    return message


def pieces(v, n):
    for k in range(n):
        yield v * (k + 1.0)


def made(v):
    return [v * 1.0]


def fill_first(v, s):
    v[0] = s


# ---------------------------------------------------------------- what a returned list holds

def loop_variable_aliased(x):
    for a in pieces(x, 1):
        b = a
    a[1:] *= 2.0                # reaches b: the same array
    return np.sum(a * a) + np.sum(b * b)


def list_of_new_arrays_aliased(x):
    for a in made(x):
        b = a
    a[1:] *= 2.0
    return np.sum(a * a) + np.sum(b * b)


def item_read_before_the_loop(x):
    xs = made(x)
    c = xs[0]
    for a in xs:
        b = a
    a[1:] *= 2.0                # reaches b and c
    return np.sum(c * c) + np.sum(b * b)


def test_a_callee_s_list_holds_arrays_a_write_reaches_through_every_name():
    """The items of a list a user function returns (what it yields) are objects it made:
    `b = a` of one of them sees a write into `a` (the gradient was 64, not 84)."""
    for f in (loop_variable_aliased, list_of_new_arrays_aliased, item_read_before_the_loop):
        _check(f, [np.array([1.0, 2.0, 3.0])])


# ---------------------------------------------------------------- sum, abs: new arrays

def sum_of_a_generator_then_written(y):
    y = sum(pieces(y * y, 1))   # 0 + item: a new array
    fill_first(y, 2.0)
    return np.sum(y * y)


def sum_of_a_list_then_written(y):
    y = sum([y * y, y])
    fill_first(y, 2.0)
    return np.sum(y * y)


def abs_then_written(y):
    y = abs(y * y - 3.0)
    fill_first(y, 2.0)
    return np.sum(y * y)


def sum_with_a_start_then_written(y):
    z = y * 1.0
    w = sum([], z)              # z itself: the write reaches it
    fill_first(w, 2.0)
    return np.sum(z * z) + np.sum(w * y)


def test_sum_and_abs_of_arrays_are_arrays_a_callee_writes_into():
    """`sum(xs)`, `abs(a)`, `round`, `pow` of arrays make new arrays, not numbers: a helper's
    write into one (`v[0] = s`) is followed (the gradient was 40, not 32)."""
    for f in (sum_of_a_generator_then_written, sum_of_a_list_then_written, abs_then_written):
        _check(f, [np.array([1.0, 2.0])])
    # sum(xs, start) of no items is `start` itself: that a write through it reaches z is
    # not known to the compiler, which checks it when the code runs
    _refused(sum_with_a_start_then_written, [np.array([1.0, 2.0])], 'fill_first(w',
             'w shares memory with z')
