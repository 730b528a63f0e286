"""Aliases, views and in-place writes: each differentiates right or is a located refusal.

Every function here is checked three ways: the value `value_and_grad` returns
is the plain call's, the gradient agrees with central differences along
random directions, and, where one is easy to write, with its closed form.
"""
import functools

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, checked_against_plain

RNG = np.random.default_rng(11)
X3 = np.array([1.0, 2.0, 3.0])


def checked(f, *args, wrt=0):
    """The gradient of `f` at `args`, after checking value and gradient against the plain call."""
    return checked_against_plain(f, args, wrt, RNG)


def refused(f, *args, match, line):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(*args)
    assert match in info.value.reason, info.value.reason
    assert info.value.filename == __file__
    assert info.value.lineno == line, (info.value.lineno, line)
    return info.value


def line_of(f, text):
    """The line number of the first line of `f`'s source containing `text`."""
    import inspect
    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, l in enumerate(lines) if text in l)


# ---------------------------------------------------------------- NumPy calls that write

def out_multiply(x):
    y = np.zeros(3)
    np.multiply(x, 2.0, out=y)
    return np.sum(y * y)


def out_returned(x):
    y = np.zeros(3)
    r = np.sin(x, out=y)
    r *= 2.0
    return np.sum(y * y) + np.sum(r)


def copyto(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y * y)


def copyto_where(x):
    y = np.ones(3)
    np.copyto(y, x * x, where=np.array([True, False, True]))
    return np.sum(y * x)


def put(x):
    y = np.zeros(3)
    np.put(y, [0, 1], x[:2])
    return np.sum(y * y)


def add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 0, 1], x[:3])
    return np.sum(y * y)


def subtract_at(x):
    y = x * 1.0
    np.subtract.at(y, [2, 2], x[:2] * x[:2])
    return np.sum(y * y)


def place_putmask(x):
    y = np.zeros(4)
    np.place(y, np.array([True, False, True, False]), x[1:])
    z = x * 1.0
    np.putmask(z, z > 1.5, x[::-1])
    return np.sum(y * y) + np.sum(z * z * z)


def fill_diagonal(x):
    a = np.ones((3, 3))
    np.fill_diagonal(a, x)
    return np.sum(a @ a)


def methods(x):
    y = x * x
    y.sort()
    z = np.zeros(3)
    z.fill(x[0])
    return np.sum(y * np.arange(3.0)) + np.sum(z * x)


def test_out_keyword_writes_its_array():
    np.testing.assert_allclose(checked(out_multiply, X3), 8.0 * X3)
    checked(out_returned, X3)


@pytest.mark.parametrize('f', [copyto, copyto_where, put, add_at, subtract_at, place_putmask,
                               fill_diagonal, methods])
def test_numpy_functions_and_methods_that_write(f):
    checked(f, X3 + RNG.uniform(0.0, 0.1, 3))


def test_closed_forms_of_put_and_add_at():
    np.testing.assert_allclose(checked(put, X3), [2.0, 4.0, 0.0])
    np.testing.assert_allclose(checked(add_at, X3), [6.0, 6.0, 6.0])


# ---------------------------------------------------------------- repeated indices

def repeated_add(x):
    y = np.zeros(3)
    idx = [0, 0, 1]
    y[idx] += x[:3]
    return np.sum(y * y)


def repeated_set(x):
    y = np.zeros(3)
    y[[0, 0]] = x[:2]
    return np.sum(y * y)


def repeated_negative(x):
    y = np.ones(3)
    y[np.array([0, -3, 2])] = x * x
    return np.sum(y * x)


def test_repeated_indices_the_last_write_wins():
    np.testing.assert_allclose(checked(repeated_add, X3), [0.0, 4.0, 6.0])
    np.testing.assert_allclose(checked(repeated_set, X3), [0.0, 4.0, 0.0])
    checked(repeated_negative, X3)


# ---------------------------------------------------------------- views

def view_inplace(x):
    y = x * 1.0
    v = y[:2]
    v *= 3.0
    return np.sum(y * y)


def reshape_view(x):
    y = x * 1.0
    v = y.reshape(-1)
    v[0] = 10.0
    return np.sum(y * y)


def base_write_seen_by_view(x):
    y = x * 1.0
    v = y[1:]
    y[2] = x[0] * x[1]
    return np.sum(v * v)


def transpose_view(x):
    a = np.outer(x, x)
    t = a.T
    t[0] += x
    return np.sum(a * a)


def views_of_views(x):
    a = np.outer(x, x)
    row = a[1]
    part = row[1:]
    part *= x[0]
    return np.sum(a * np.sin(a))


def noncontiguous_reshape(x):
    a = np.outer(x, x).T
    flat = a.reshape(-1)           # a copy: `a` is not contiguous
    flat[0] = 5.0
    return np.sum(a * a) + np.sum(flat)


def test_writes_through_views_reach_their_base():
    np.testing.assert_allclose(checked(view_inplace, X3), [18.0, 36.0, 6.0])
    np.testing.assert_allclose(checked(reshape_view, X3), [0.0, 4.0, 6.0])
    for f in (base_write_seen_by_view, transpose_view, views_of_views, noncontiguous_reshape):
        checked(f, X3)


# ---------------------------------------------------------------- aliases

def alias_inplace(x):
    y = x
    y += 1.0
    return np.sum(y * x)


def list_alias(x):
    a = [1.0, 2.0]
    b = a
    b[0] = 3.0 * x
    return a[0] * a[1]


def list_argument(xs):
    return sum(xs) + max(xs)


def element_of_list(x):
    rows = [x * 1.0, x * 2.0]
    row = rows[0]
    row *= 3.0
    return np.sum(rows[0] * rows[1])


def test_aliases_see_each_others_writes():
    np.testing.assert_allclose(checked(alias_inplace, np.array([1.0, 2.0])), [4.0, 6.0])
    assert checked(list_alias, 3.0) == pytest.approx(6.0)
    assert checked(list_argument, [1.0, 2.0, 0.5]) == pytest.approx([1.0, 2.0, 1.0])
    checked(element_of_list, X3)


# ---------------------------------------------------------------- lists

def pops(x):
    ys = [x, x * 2.0, x * 3.0]
    last = ys.pop()
    first = ys.pop(0)
    return last * first * ys[0]


def extends(x):
    ys = [x]
    ys.extend([x * 2.0, x * 3.0])
    ys += [x * x]
    return sum(ys)


def test_list_methods():
    assert checked(pops, 1.5) == pytest.approx(3 * 6.0 * 1.5 ** 2)
    checked(extends, 1.5)


# ---------------------------------------------------------------- helpers that write

def scale(v, c):
    v *= c


def fill_first(v, s):
    v[0] = s


def push(ys, v):
    ys.append(v)


def scaled_copy(v, c):
    v *= c
    return v


def calls_writing_helpers(x):
    y = x * 1.0
    scale(y, 2.0)
    fill_first(y, x[1] * x[2])
    ys = []
    push(ys, np.sum(y))
    z = scaled_copy(y, 3.0)
    return ys[0] + np.sum(z * y)


def nested_append(x):
    ys = []

    def add(v):
        ys.append(v)
    add(x * 5.0)
    return ys[0]


def test_helpers_that_write_into_their_arguments():
    checked(calls_writing_helpers, X3)
    assert checked(nested_append, 1.0) == pytest.approx(5.0)


# ---------------------------------------------------------------- rebinding

def h(v):
    return v * 1.1


def h0():
    return 1.0


def rebound_by_call(x):
    b = x * x
    b = h(3.0)
    return b * x


def parameter_rebound(x):
    x = h(3.0)
    return x * 2.0


def rebound_by_call_without_arguments(x):
    b = x * x
    b = h0()
    return b * x


def rebound_in_branch_and_loop(x):
    b = x * x
    if x > 0.0:
        b = h(2.0)
    for i in range(2):
        c = x * b
        c = h0()
    return b * x + c


def test_rebinding_kills_the_old_adjoint():
    assert checked(rebound_by_call, 3.0) == pytest.approx(3.3)
    assert checked(parameter_rebound, 3.0) == 0.0
    assert checked(rebound_by_call_without_arguments, 3.0) == pytest.approx(1.0)
    assert checked(rebound_in_branch_and_loop, 3.0) == pytest.approx(2.2)


# ---------------------------------------------------------------- `or` and `and`

def or_value(s):
    s = s or 1.0
    return s * s


def and_value(s, t):
    u = s and t
    return u * s


def test_or_and_and_carry_the_operand_python_returns():
    assert checked(or_value, 1.0) == pytest.approx(2.0)
    assert checked(or_value, 0.0) == 0.0
    assert checked(and_value, 2.0, 3.0, wrt=(0, 1)) == pytest.approx((3.0, 2.0))
    # at s == 0.0, `s and t` is s: the derivative of s * s (no differences across the jump)
    assert tf.grad(and_value, argnums=(0, 1))(0.0, 3.0) == (0.0, 0.0)


# ---------------------------------------------------------------- refusals

def branch_alias(x, y):
    a = x[:2] if np.sum(x) > 0.0 else y
    a[0] = 1.0
    return np.sum(x * y)


def branch_same_or_apart(x, y):
    x = x * 1.0
    a = x if np.sum(x) > 0.0 else y * 2.0
    a[0] = np.cos(y[1])         # x itself, or apart from it: the same object comes up to date
    return np.sum(x * y) + np.sum(a * a)


def test_a_name_that_is_either_another_or_apart_from_it():
    """Refused before ('a shares memory with x in a way not known here'): where the two
    turn out to be one object when the write runs, the other is that object after it;
    where apart, nothing changes. Both branches against the plain call."""
    for x in (X3, -X3):
        checked(branch_same_or_apart, x, X3 + 1.0, wrt=(0, 1))


def real_view(x):
    z = x * 1.0
    r = z.real
    r[0] = 1.0
    return np.sum(z * x)


GLOBAL = np.zeros(3)


def writes_global(x):
    GLOBAL[0] = x[0]
    return np.sum(GLOBAL * x)


def _into_global(x):
    GLOBAL[0] = x[0]


def a_helper_writes_global(x):
    _into_global(x)             # WRONG before: the helper's summary missed the global write
    return np.sum(GLOBAL * x)


def sorts_active_list(x):
    ys = [x[0], x[1], x[2]]
    ys.sort()
    return ys[0]


def overlapping_arguments(x):
    y = x * 1.0
    scale(y, y[0])
    return np.sum(y)


def test_refusals_name_the_alias_and_the_place():
    error = refused(branch_alias, X3, X3 + 1.0, match='a shares memory with x',
                    line=line_of(branch_alias, 'a[0] = 1.0'))
    assert 'copy' in error.reason
    np.testing.assert_allclose(checked(real_view, X3), [1.0, 4.0, 6.0])   # z.real is z
    refused(writes_global, X3, match='GLOBAL is a global', line=line_of(writes_global, 'GLOBAL[0]'))
    refused(a_helper_writes_global, X3, match='writes into a global or closure value',
            line=line_of(a_helper_writes_global, '_into_global(x)'))
    refused(sorts_active_list, X3, match='.sort() changes ys in place',
            line=line_of(sorts_active_list, 'ys.sort()'))


def test_inactive_writes_run_as_written():
    def indices(x):
        order = [2, 0, 1]
        a = x[order]
        order.sort()
        return np.sum(a * x[order])
    checked(indices, X3)


def add_into(v, w):
    v += w[:2] * 2.0


def add_to(v, w):
    v += w * w


def views_as_arguments(x):
    y = x * 1.0
    add_into(y[1:], y)              # the callee sees its first parameter is a view of the second
    z = x * 1.0
    add_to(z, z)                    # ... or the same array
    return np.sum(y * y) + np.sum(z * np.sin(z))


def test_helper_writing_into_an_argument_that_shares_memory_with_another():
    checked(views_as_arguments, X3)


def unrelated_views(x, c):
    y = x * 1.0
    a = y[1:] if c > 0.0 else y[:2]
    add_into(a, y)
    return np.sum(y * y)


def test_helper_writing_into_an_argument_that_shares_memory_in_an_unknown_way():
    with pytest.raises(tf.UnsupportedError, match='shares memory with its argument y in a way'):
        tf.grad(unrelated_views)(X3, 1.0)


# ---------------------------------------------------------------- sharing known only when it runs

def pick(v, c):
    out = v * 1.0
    if c > 0.0:
        out = v
    return out


def maybe_the_same(x, c):
    y = x * 1.0
    w = pick(y, c)                  # y itself, or a copy of it
    y[0] = 5.0 * c
    return np.sum(w * y)


def pick_part(v, c):
    out = v * 1.0
    if c > 0.0:
        out = v[:2]
    return out


def maybe_a_part(x, c):
    y = x * 1.0
    w = pick_part(y, c)             # a view of part of y, or a copy of it
    y[0] = 5.0 * c
    return np.sum(w) * np.sum(y)


def test_sharing_not_known_when_compiled_is_checked_when_it_runs():
    grad = checked(maybe_the_same, X3, -1.0)             # apart: exact
    np.testing.assert_allclose(grad, [-5.0, 4.0, 6.0])
    grad = checked(maybe_the_same, X3, 1.0, wrt=(0, 1))  # the same object: exact
    np.testing.assert_allclose(grad[0], [0.0, 4.0, 6.0])
    assert grad[1] == pytest.approx(50.0)
    checked(maybe_a_part, X3, -1.0)
    refused(maybe_a_part, X3, 1.0, match='y shares memory with w',
            line=line_of(maybe_a_part, 'y[0] = 5.0 * c'))


def shifted(x):
    y = x * 1.0
    y[1:] = y[:-1]                  # NumPy copies as if it read all of y[:-1] first
    return np.sum(y * x)


def column_from_row(x):
    a = x.reshape(3, 3) * 1.0
    a[:, 2] = a[1]                  # a[1, 2] is written before it is read
    return np.sum(a * a)


def test_a_write_reading_memory_it_writes():
    # y = [x0, x0, x1]: x0^2 + x0 x1 + x1 x2
    assert checked(shifted, X3) == pytest.approx([2.0 * 1.0 + 2.0, 1.0 + 3.0, 2.0])
    refused(column_from_row, np.arange(9.0) + 1.0, match='the value this writes shares memory with a',
            line=line_of(column_from_row, 'a[:, 2] = a[1]'))


def inserts(x):
    ys = [x, 2.0 * x]
    ys.insert(1, x * x)
    ys.insert(-1, 3.0 * x)
    ys.insert(10, np.sin(x))
    zs = ys
    zs.insert(-10, 0.5 * x)
    return ys[0] * ys[1] + ys[2] - ys[3] * ys[-1] + len(zs)


def test_list_insert():
    # [0.5x, x, x*x, 3x, 2x, sin x]: 0.5x^2 + x^2 - 3x sin x + 6
    x = 1.5
    assert checked(inserts, x) == pytest.approx(3 * x - 3 * np.sin(x) - 3 * x * np.cos(x))


# ---------------------------------------------------------------- callees and the memory they hold

def double_last(p):
    a = p[-1]
    a *= 2.0


def writes_through_a_list(x, ys):
    ys.extend([x, x])
    double_last(ys)                 # doubles x: ys[-1] is x
    return np.sum(ys[0] * ys[-1]) + np.sum(x * x)


def halves_a_view(p):
    b = p.reshape(-1)
    np.multiply(b, 0.5, out=b)


def result_nobody_reads(x, y, z):
    scale(y, np.sin(x))
    a = y.T @ z[:2]
    halves_a_view(y)                # its cotangent is zero: its rules still get arrays
    return np.sum(a * a)


def smooth(v):
    return np.tanh(v) * v


def overwritten_after_a_call(x):
    a = smooth(x)                   # smooth's tape holds x itself
    np.multiply(2.0, 2.0, out=x)
    return np.sum(x * x) + np.sum(a * a)


def written_twice_over(p, q, r):
    p[1:] = 2.0 + r
    q[0] += np.sum(p)


def same_array_twice(x):
    written_twice_over(x, x, 2.0 + np.sum(x))
    return np.sum(x * x)


def inactive_call_writes(x, y):
    d = y[1:]
    y[::2] = x @ d
    scale(x, 2.0)                   # no derivative flows, but the reverse sweep reads x
    return np.sum(y * y) + np.sum(d * d)


def two_reads_of_one_slot(xs, y):
    a = xs[-1]
    b = xs[-1]
    b *= 2.0
    return np.sum(a * a) + np.sum(xs[0] * xs[-1]) + y


def test_callees_and_the_memory_they_hold():
    x, ys = X3 + 0.25, [X3 - 0.5, X3 * 0.5]
    grads = checked(writes_through_a_list, x, ys, wrt=(0, 1))
    np.testing.assert_allclose(grads[0], 2.0 * ys[0] + 8.0 * x)
    checked(result_nobody_reads, 1.2, RNG.uniform(0.5, 1.5, (2, 3)), X3, wrt=(0, 1, 2))
    grad = checked(overwritten_after_a_call, X3 * 0.5)
    v = X3 * 0.5
    np.testing.assert_allclose(grad, 2 * np.tanh(v) * v * (np.tanh(v) + v * (1 - np.tanh(v) ** 2)))
    checked(same_array_twice, X3)
    checked(inactive_call_writes, RNG.uniform(0.5, 1.5, (2, 3)), RNG.uniform(0.5, 1.5, 4), wrt=1)
    checked(two_reads_of_one_slot, [X3, X3 + 1.0], 0.5, wrt=(0, 1))


# An item read on one path only (`rows[0] + x` in the else branch) related its
# name to x there; the join kept that, and a write after it derived x again
# from `rows[0]`, which after `pop(0)` on the other path is y (a wrong value
# and gradient), or out of range (a crash, found by the fuzzer, seed 21).

def pop_on_one_path_read_on_the_other(x, y, t):
    rows = [x, y, x]
    if t < 1.0:
        rows.pop(0)
    else:
        b = rows[0] + x         # noqa: F841
    c = rows[-1]
    c[c > 1.0] = 2.0
    return np.sum(rows[-1] * rows[0]) + np.sum(x * x)


def pop_on_one_path_out_of_range(x):
    rows = [x, x]
    if 0.25 < 1.0:
        rows.pop()
    else:
        b = (rows[1] + x) + x   # noqa: F841
    c = rows[0]
    c[c > 1.0] = 2.0
    return np.sum(rows[0] * rows[-1]) + np.sum(c * c) + np.sum(x * x)


@pytest.mark.parametrize('t', [0.5, 2.0])
def test_an_equation_of_one_path_does_not_outlive_the_join(t):
    x, y = np.array([1.13, 0.77, 0.54]), np.array([0.3, 0.2, 0.1])
    checked(pop_on_one_path_read_on_the_other, x, y, t, wrt=(0, 1))
    checked(pop_on_one_path_out_of_range, x)


def _aliased_list_grows(x):
    rows = [x]
    cols = rows
    a = rows[-1]
    a *= 2.0
    cols.append(np.ones((3,)) * 2.0)
    x[0] = 2.0
    return np.sum(x * x) + np.sum(cols[0] * cols[-1]) + np.sum(rows[0] * rows[-1]) + np.sum(a * a)


def test_name_read_from_a_list_slot_keeps_its_object_when_the_list_grows():
    """Found by the mutation fuzzer (a wrong value): after `x[0] = 2.0` the pass read `a`
    again as `rows[-1]`, which the append had moved to the new element."""
    x = np.array([1.13, 0.77, 0.54])
    value, grad = tf.value_and_grad(_aliased_list_grows)(x.copy())
    assert value == _aliased_list_grows(x.copy())
    check_gradient(lambda v: _aliased_list_grows(v.copy()), [grad], (x,), (0,),
                   np.random.default_rng(1))


def appends_through_a_name(x, y):
    t = [x]
    add = t.append
    add(y * x)
    return t[0] * t[1]


def fills_through_a_name(x, y):
    a = np.array([x, y])
    fill = a.fill
    fill(y)
    return a[0] * x


def appends_through_a_tuple(x, y):
    t = [x]
    ops = (t.append,)
    ops[0](y * x)
    return t[0] * t[1]


def appends_directly(x, y):
    t = [x]
    t.append(y * x)
    return t[0] * t[1]


def test_a_method_that_writes_taken_as_a_value_is_refused():
    """A WRONG GRADIENT before: `add = t.append; add(v)` wrote where no pass looked
    (value right, gradient (0.91, 0.0) for (1.82, 0.49))."""
    for f, method, text in ((appends_through_a_name, 'append', 'add = t.append'),
                            (fills_through_a_name, 'fill', 'fill = a.fill'),
                            (appends_through_a_tuple, 'append', 'ops = (t.append,)')):
        error = refused(f, 0.7, 1.3, match=f'.{method} is taken as a value',
                        line=line_of(f, text))
        assert f'obj.{method}(...)' in error.reason
    grads = checked_against_plain(appends_directly, (0.7, 1.3), (0, 1), np.random.default_rng(3))
    np.testing.assert_allclose(grads, (2 * 0.7 * 1.3, 0.7 ** 2), rtol=1e-12)


def places_its_own_values(x, y):
    a = y[1:]
    np.place(a, np.array([True, False, True]), y[:2])
    return np.sum(a * a)


def places_copied_values(x, y):
    a = y[1:]
    np.place(a, np.array([True, False, True]), y[:2].copy())
    return np.sum(a * a) + np.sum(x)


def test_values_sharing_memory_with_the_array_written_are_refused():
    """A WRONG VALUE before (found by the fuzzer, seed 42424): np.place reads its values
    as it writes, so values that are a view of the array written are read changed; the
    lowering read them first (3.99 for NumPy's 2.53). Now a located refusal where the
    memory is shared when it runs; a copy differentiates (finite differences)."""
    x, y = np.ones(3), np.array([0.5, 1.3, 1.4, 1.1])
    error = refused(places_its_own_values, x, y.copy(), match='np.place() reads share memory with a',
                    line=line_of(places_its_own_values, 'np.place('))
    assert '.copy()' in error.reason
    checked_against_plain(places_copied_values, (x, y), (0, 1), np.random.default_rng(4))


def divides_in_place_then_writes_out(x):
    y = x * 1.0
    y /= (1.0 + np.sum(x) ** 2)
    np.tanh(y, out=y)
    return np.sum(y * y)


def divides_its_argument_in_place(xs, y):
    y /= (1.0 + (xs[1][2] + y) ** 2)
    np.tanh(y, out=y)
    np.copyto(y, y)
    y /= (1.0 + 0.5 ** 2)
    return np.sum(y) + np.sum(xs[0] * xs[-1])


def test_a_write_into_what_an_in_place_op_made_keeps_the_ops_result():
    """A WRONG GRADIENT before (the mutation fuzzer, seed 777, program 65): `y /= v` made
    `y` the quotient `_y = y / v`, whose derivative reads `_y`; `np.tanh(y, out=y)` then
    wrote into `_y`, and nothing put its old contents back (-0.0085788 for -0.0086261)."""
    rng = np.random.default_rng(8)
    x = np.array([1.1066357757671799, 1.2294965609839985, 1.043624991465423])
    checked_against_plain(divides_in_place_then_writes_out, (x,), 0, rng)
    xs = [rng.uniform(0.5, 1.5, 3), rng.uniform(0.5, 1.5, 3)]
    checked_against_plain(divides_its_argument_in_place, (xs, rng.uniform(0.5, 1.5, 3)), (0, 1), rng)
    pullback = tf.vjp(divides_in_place_then_writes_out, x.copy())[1]
    np.testing.assert_allclose(pullback(1.0)[0], tf.grad(divides_in_place_then_writes_out)(x.copy()),
                               rtol=1e-13)


def _checked_below(v, c):
    if np.mean(v) > c:
        raise ValueError('over')
    return v * 1.5


def a_loop_writing_the_array_it_iterates(x, y):
    try:
        x = _checked_below(x, 0.8)      # its kind known only when it runs
    except ValueError:
        x = np.ones((3,)) * 0.5
    s = 0.0
    for t in x:
        x -= y + 2.0            # the iterated array itself, the first time round
        x = x * 2.0
        s = s + t
    return np.sum(x * x) + t + s


def test_a_loop_over_an_array_written_while_it_is_iterated():
    """Fuzzer, seed 5111 index 1051: WRONG gradient (3095.03 for 3094.03, in y) after the
    write through a name that is one object with the loop's sequence was followed: the
    loop read its items through a name the pass made (`_items = iterated(seq)`), which the
    write did not bring up to date. It does now."""
    for x in (np.array([1.13, 0.77, 0.54]), np.array([0.3, 0.2, 0.1])):
        checked(a_loop_writing_the_array_it_iterates, x, 0.51, wrt=(0, 1))


def test_a_refusal_never_names_what_the_compiler_made():
    """Found by the fuzzer (seed 5340): `a[2] += ...` refused as '_item shares memory with
    b ... write _item = _item.copy()', a name the user never wrote. A name the compiler
    made is said as what it is."""
    import types

    from tapeflow.syntax.naming import Namer
    from tapeflow.transforms.mutation_checks import Checks
    namer = Namer({'a', 'b'})
    item = namer.new('_item')
    checks = types.SimpleNamespace(ctx=types.SimpleNamespace(namer=namer),
                                   made_at=lambda name, stmt: ' (line 47)')
    said = Checks.shares_reason(checks, item, 'b', None)
    assert said == ('the value this writes into shares memory with b (line 47) in a way not '
                    'known here; writing into it changes b -- copy it first (.copy()), or '
                    'avoid the in-place write')
    said = Checks.shares_reason(checks, 'a', 'b', None)
    assert said.startswith('a shares memory with b (line 47)') and 'write a = a.copy()' in said
