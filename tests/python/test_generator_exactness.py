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
    # not known to the compiler; when the code runs w is z, brought up to date after it
    # (refused before)
    grad = _check(sum_with_a_start_then_written, [np.array([1.0, 2.0])])
    np.testing.assert_allclose(grad, [2.0, 8.0])


# ---------------------------------------------------------------- made all at once: exact

def of_constants(x):
    for s in pieces(2.0, 2):    # no derivative flows in: the generator runs as written
        x = x * s
    return x


def of_constants_counted(x):
    for i, s in enumerate(pieces(2.0, 2)):
        x = x * s + i
    return x


def of_constants_in_a_comprehension(x):
    return x * sum([s * s for s in pieces(2.0, 2)])


def summed_then_scaled(x):
    return sum(pieces(x, 2)) * x


def body_writes_only_its_own(x):
    y = x * 1.0
    out = []
    for b in pieces(x * 2.0, 2):    # reads a new array the body never sees
        y += b
        out.append(b * y)
    x = x + 1.0                     # a name bound again: the generator holds the old array
    return np.sum(y * y) + np.sum(sum(out)) + np.sum(x)


def nested_generator_def(x):
    def gen(n):
        for k in range(n):
            yield x * k
    y = x
    for v in gen(3):
        y = y * v + 1.0
    return y


def test_generators_of_constants_run_as_written_and_are_read_as_lists():
    """A call with no differentiated argument runs as Python's generator: the loop reads
    its items through `iterated` (it crashed: "object of type 'generator' has no len()")."""
    for f in (of_constants, of_constants_counted, of_constants_in_a_comprehension):
        _check(f, [1.5])


def test_loops_whose_bodies_change_nothing_the_generator_reads_are_exact():
    _check(body_writes_only_its_own, [np.array([1.0, 2.0])])
    _check(nested_generator_def, [0.7])


def test_second_order_through_a_generator():
    """Forward mode over the reverse sweep of `pieces` read its tape's `range` by index (its
    zero tangent was 0.0: "'float' object is not subscriptable")."""
    for f, x in ((summed_then_scaled, 0.9), (of_constants, 1.5), (nested_generator_def, 0.7)):
        second = (tf.grad(f)(x + 1e-5) - tf.grad(f)(x - 1e-5)) / 2e-5
        assert np.isclose(tf.jvp(tf.grad(f), (x,), (1.0,))[1], second, rtol=1e-6)
        assert np.isclose(tf.hessian(f)(x), second, rtol=1e-6)


# ---------------------------------------------------------------- read lazily: refused

def read_lazily(x):
    for b in pieces(x, 2):      # pieces reads x after the body wrote into it
        x += b
    return np.sum(x * x)


def read_lazily_through_an_alias(x):
    y = x
    for b in pieces(x, 2):
        y[0] = b[1]
    return np.sum(x * x)


def read_lazily_after_a_helper_wrote(x):
    for b in pieces(x, 2):
        fill_first(x, b[0])
    return np.sum(x * x)


def read_lazily_in_a_comprehension(x):
    return np.sum(sum([fill_first(x, 2.0) or b for b in pieces(x, 2)]))


def each(vs):
    yield from vs


def read_lazily_from_a_list_the_body_lengthens(x):
    vs = [x, x * 2.0]
    t = 0.0
    for v in each(vs):
        t = t + v
        if len(vs) < 4:
            vs.append(v * 3.0)
    return t


SHARED = np.array([1.0, 2.0])


def from_a_global(n):
    for k in range(n):
        yield SHARED * k


def read_lazily_from_a_global(x):
    t = x * 1.0
    for b in from_a_global(2):
        SHARED[0] += 1.0
        t = t + b
    return np.sum(t * x)


def test_a_body_writing_into_what_the_generator_reads_is_refused_at_the_write():
    """Python makes the next item after the body wrote: the list made first gave 80, not
    180, and a gradient of 96, not 216."""
    x = np.array([1.0, 2.0])
    for f, at, name in ((read_lazily, 'x += b', 'x'), (read_lazily_through_an_alias, 'y[0] =', 'y'),
                        (read_lazily_after_a_helper_wrote, 'fill_first(x, b', 'x'),
                        (read_lazily_in_a_comprehension, 'fill_first(x, 2.0)', 'x'),
                        (read_lazily_from_a_global, 'SHARED[0] +=', 'SHARED')):
        message = _refused(f, [x], at, f'this writes into {name}, which', 'list(')
        assert 'makes its next item' in message
    _refused(read_lazily_from_a_list_the_body_lengthens, [0.5], 'vs.append',
             'this writes into vs, which each() may read')


def counting(x):
    k = 0.0
    while True:
        yield x * k
        k = k + 1.0


def left_early(x):
    t = 0.0
    for v in counting(x):       # never ends: only the break stops it
        t = t + v
        if v > 2.0:
            break
    return t


def returned_from(x):
    for v in pieces(x, 3):
        if v > 1.0:
            return v
    return x


def zipped(x):
    t = 0.0
    for a, b in zip(pieces(x, 3), [1.0, 2.0]):
        t = t + a * b
    return t


def kept(x):
    g = pieces(x, 2)
    return sum(g) + sum(g)      # the second sum reads an exhausted generator: 0


def counted(x):
    return len(pieces(x, 2)) * x


def closure_bound_again(x):
    def gen():
        for k in range(3):
            yield x * k
    t = 0.0
    for v in gen():
        x = x + 1.0             # gen reads the new x for its next item
        t = t + v
    return t


def noisy(x, n):
    for _ in range(n):
        yield x * np.random.normal()


def drawn_in_turns(x):
    np.random.seed(0)
    t = 0.0
    for v in noisy(x, 2):
        t = t + v * np.random.normal()
    return t


def writes_as_it_yields(acc, x):
    for _ in range(2):
        acc[0] += 1.0
        yield x * acc[0]


def read_while_written(x):
    acc = np.zeros(1)
    t = 0.0
    for b in writes_as_it_yields(acc, x):
        t = t + b * acc[0]
    return t


def test_what_the_whole_list_cannot_give_is_refused_located():
    _refused(left_early, [0.5], 'for v in counting', 'may stop before counting() has made its '
                                                     'last item (break, return)')
    # left early, but pieces() ends quietly: its later items, made, are never read
    for x in (0.2, 0.4, 0.6):           # not returned from; from its third, its second item
        _check(returned_from, [x])
    _check(zipped, [0.5])           # zip() stops at the list: pieces() ends quietly
    for f, at in ((kept, 'g = pieces'), (counted, 'len(pieces')):
        _refused(f, [0.5], at, 'pieces() is a generator', 'list(pieces(...))')
    _refused(closure_bound_again, [0.5], 'for v in gen', "binds 'x' again, which gen() reads")
    _refused(drawn_in_turns, [0.5], 'for v in noisy', 'both draw random numbers')
    _refused(read_while_written, [0.5], 'for b in writes_as_it_yields',
             'writes_as_it_yields() writes into its arguments')


def test_each_refused_function_gives_python_s_number_where_it_runs_as_written():
    """The refusals are of differences: the plain calls run (what the lists would change)."""
    assert kept(0.5) == sum(pieces(0.5, 2))
    assert np.isclose(read_lazily(np.array([1.0, 2.0])), 180.0)
