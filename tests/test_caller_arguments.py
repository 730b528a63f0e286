"""The caller's arguments after a transform: left exactly as the plain call `f(*args)`
leaves them (`compilation.entry`, `runtime.helpers.write_back`). A function that writes
into an argument is run as its variant giving back the argument's final state; the
transform writes that state into the caller's object after the reverse sweep (which
restores memory in place), or leaves it where nothing changed it. Before, a subscript
write reached the caller, `y += v` did not, a dict's write was undone. Each function:
the arguments after `grad`, `value_and_grad`, `vjp`, `jvp`, `jacfwd`, `jacrev` and `hessian` against the plain
call's,
the value against the plain call's, the gradient against central differences."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient


def subscript_write(y, x):
    y[0] = x * 2.0
    return np.sum(y * x)


def augmented(y, x):
    y += x
    return np.sum(y * x)


def augmented_then_subscript(y, x):
    y *= x
    y[1] = 3.0 * x
    return np.sum(y * y)


def through_a_view(y, x):
    z = y[1:]
    z *= x
    return np.sum(y * x)


def out_argument(y, x):
    np.multiply(y, x, out=y)
    return np.sum(y * y)


def rebound_after_writing(y, x):
    y[2] = x
    y = y * 10.0                # the caller's y keeps the write, not this
    return np.sum(y) * x


def dict_item(d, x):
    d['a'] = x * 3.0
    return d['a'] * x + d['b']


def list_append(rows, x):
    rows.append(x * 2.0)
    return rows[-1] * x + rows[0]


def list_item(rows, x):
    rows[0] = rows[0] * x
    return rows[0] * x


def list_of_arrays_written(rows, x):
    rows[0][1] = x * x
    rows.append(np.ones(2) * x)
    return np.sum(rows[0] * rows[-1])


def helper_writes(y, v):
    y[1:] = y[1:] * v


def through_a_helper(y, x):
    helper_writes(y, x)
    return np.sum(y * y)


def _array():
    return [np.array([0.5, -1.5, 2.0]), 1.3]


CASES = [
    (subscript_write, _array), (augmented, _array), (augmented_then_subscript, _array),
    (through_a_view, _array), (out_argument, _array), (rebound_after_writing, _array),
    (through_a_helper, _array),
    (dict_item, lambda: [{'a': 0.0, 'b': 0.5}, 1.3]),
    (list_append, lambda: [[0.25], 1.3]),
    (list_item, lambda: [[0.25, 4.0], 1.3]),
    (list_of_arrays_written, lambda: [[np.array([1.0, 2.0])], 1.3]),
]


def _same(after, plain):
    if isinstance(plain, dict):
        assert after.keys() == plain.keys()
        return all(_same(after[k], plain[k]) for k in plain)
    if isinstance(plain, list):
        assert len(after) == len(plain)
        return all(_same(a, p) for a, p in zip(after, plain))
    return np.array_equal(after, plain)


def _plain(f, make):
    args = make()
    value = f(*args)
    return value, args


def _numeric(f, make, x, eps=1e-6):
    return (f(make()[0], x + eps) - f(make()[0], x - eps)) / (2 * eps)


@pytest.mark.parametrize('f, make', CASES, ids=[f.__name__ for f, _ in CASES])
def test_value_and_grad_and_grad_leave_the_arguments_as_the_plain_call(f, make):
    value, plain = _plain(f, make)
    args = make()
    got, g = tf.value_and_grad(f, argnums=1)(*args)
    assert got == pytest.approx(value, rel=1e-12)
    assert _same(args, plain), (args, plain)
    assert g == pytest.approx(_numeric(f, make, args[1]), rel=1e-6, abs=1e-8)
    args = make()
    assert tf.grad(f, argnums=1)(*args) == pytest.approx(g, rel=1e-12)
    assert _same(args, plain), (args, plain)


@pytest.mark.parametrize('f, make', CASES, ids=[f.__name__ for f, _ in CASES])
def test_vjp_jvp_and_jacobians_leave_the_arguments_as_the_plain_call(f, make):
    value, plain = _plain(f, make)
    numeric = _numeric(f, make, make()[1])
    args = make()
    out, pullback = tf.vjp(f, *args)
    assert out == pytest.approx(value, rel=1e-12)
    assert _same(args, plain), (args, plain)
    assert pullback(1.0)[1] == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    assert _same(args, plain), (args, plain)      # (the pullback writes nothing of theirs)
    args = make()
    zero = copy.deepcopy(args[0])
    if isinstance(zero, np.ndarray):
        zero[...] = 0.0
    elif isinstance(zero, dict):
        zero = {k: 0.0 for k in zero}
    else:
        zero = [np.zeros_like(v) if isinstance(v, np.ndarray) else 0.0 for v in zero]
    out, tangent = tf.jvp(f, (args[0], args[1]), (zero, 1.0))
    assert out == pytest.approx(value, rel=1e-12)
    assert tangent == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    assert _same(args, plain), (args, plain)
    args = make()
    assert tf.jacfwd(f, argnums=1)(*args) == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    assert _same(args, plain), (args, plain)
    args = make()
    assert tf.jacrev(f, argnums=1)(*args) == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    assert _same(args, plain), (args, plain)
    args, eps = make(), 1e-5
    second = (tf.grad(f, argnums=1)(make()[0], args[1] + eps) -
              tf.grad(f, argnums=1)(make()[0], args[1] - eps)) / (2 * eps)
    assert tf.hessian(f, argnums=1)(*args) == pytest.approx(second, rel=1e-5, abs=1e-7)
    assert _same(args, plain), (args, plain)


def test_the_gradient_of_a_written_array_argument_is_at_the_point_given():
    """The gradient in the written argument itself: of the function at the values given
    (the caller's array then holds the final ones)."""
    y, x = np.array([0.5, -1.5, 2.0]), 1.3
    grads = tf.grad(augmented_then_subscript, argnums=(0, 1))(y, x)
    plain_y = np.array([0.5, -1.5, 2.0])
    augmented_then_subscript(plain_y, x)
    np.testing.assert_array_equal(y, plain_y)
    start = np.array([0.5, -1.5, 2.0])
    check_gradient(lambda a, b: augmented_then_subscript(a.copy(), b), grads, (start, x),
                   (0, 1), np.random.default_rng(0))


def append_to_arrays(rows, x):
    rows.append(x * 2.0)
    return np.sum(rows[0] * rows[1]) * x


def test_an_array_a_list_argument_holds_unchanged_stays_the_callers_object():
    keep, other = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    rows = [keep, other]
    assert tf.grad(append_to_arrays, argnums=1)(rows, 1.3) == pytest.approx(11.0)
    assert rows[0] is keep and rows[1] is other and rows[2] == pytest.approx(2.6)


def cube_in_place(y, x):
    y *= x
    return np.sum(y * y * y)


def test_jacobians_of_a_writing_function_are_at_the_point_given():
    """jacrev called the function itself on the caller's arguments first, then swept at
    what it left there (pre-existing WRONG: 52.9 for 24.1, and jacrev of grad 81.4 for
    37.05). Closed forms: f = x^3 sum(y^3), f' = 3x^2 sum(y^3), f'' = 6x sum(y^3)."""
    y0, x = np.array([0.5, -1.5, 2.0]), 1.3
    cubes = np.sum(y0 ** 3)
    for jacobian, expected in [
            (tf.jacrev(cube_in_place, argnums=1), 3 * x ** 2 * cubes),
            (tf.jacrev(tf.grad(cube_in_place, argnums=1), argnums=1), 6 * x * cubes),
            (tf.jacfwd(tf.grad(cube_in_place, argnums=1), argnums=1), 6 * x * cubes),
            (tf.hessian(cube_in_place, argnums=1), 6 * x * cubes)]:
        y = y0.copy()
        assert jacobian(y, x) == pytest.approx(expected, rel=1e-12)
    y = y0.copy()
    tf.jacrev(tf.grad(cube_in_place, argnums=1), argnums=1)(y, x)
    np.testing.assert_array_equal(y, y0 * x)


def sorted_rows_written(y, zs):
    rows = sorted(zs, key=lambda r: r[0])
    rows[-1] /= (1.0 + (y + 0.5) ** 2)          # into an array the caller's list holds
    return np.sum(rows[0] * rows[-1])


def rows_written_then_rebound(x, y):
    s = 0.0
    for a in x:                 # each row of the x given: written through it
        rows = [x, x * 2.0]
        a /= (1.0 + np.sin(a[-1]) ** 2)
        x = x[::-1] * 0.5       # x bound again: the rows are still the caller's
        s = s + np.sum(a)
    return s + np.sum(x) * y + np.sum(rows[-1])


def test_where_the_variant_cannot_follow_the_argument_the_plain_call_runs_on_a_copy():
    """What the caller's list became cannot be followed to the end (its array written
    through another list, sorted(zs)), nor the caller's array through its rows once its
    name is bound again: the function's own code gives the gradient, and the plain call
    on a copy taken before (the same random numbers) the state the caller's objects are
    brought to, in place: the caller's own arrays hold the new numbers (the first refused
    when its variant runs, the second when it compiles)."""
    zs = [np.array([0.9, 0.7]), np.array([0.8, 0.6])]
    held = list(zs)
    plain = [z.copy() for z in zs]
    value = sorted_rows_written(1.4, plain)
    got, g = tf.value_and_grad(sorted_rows_written)(1.4, zs)
    assert got == pytest.approx(value, rel=1e-12)
    assert all(a is b for a, b in zip(zs, held)) and _same(zs, plain)
    a, b = np.array([0.9, 0.7]), np.array([0.8, 0.6])
    expected = -np.sum(a * b) * 2 * (1.4 + 0.5) / (1 + (1.4 + 0.5) ** 2) ** 2
    assert g == pytest.approx(expected, rel=1e-12)

    x0 = np.array([[0.9, 0.6, 0.2], [1.3, 0.8, 1.1]])
    plain_x = x0.copy()
    value = rows_written_then_rebound(plain_x, 0.9)
    x = x0.copy()
    got, (gx, gy) = tf.value_and_grad(rows_written_then_rebound, argnums=(0, 1))(x, 0.9)
    assert got == pytest.approx(value, rel=1e-12)
    np.testing.assert_array_equal(x, plain_x)
    check_gradient(lambda a, b: rows_written_then_rebound(a.copy(), b), [gx, gy],
                   (x0, 0.9), (0, 1), np.random.default_rng(5))


def rows_written_and_viewed(x, w, y):
    s = 0.0
    for a in x:
        rows = [x, x * 2.0]
        a /= (1.0 + np.sin(a[-1]) ** 2)
        x = x[::-1] * 0.5
        s = s + np.sum(a)
    return s + np.sum(x) * y + np.sum(rows[-1]) + np.sum(w)


def test_arguments_sharing_memory_where_the_plain_call_must_run_on_a_copy_are_refused():
    """A copy would hold the view and its base apart: refused, at the function's line."""
    x = np.array([[0.9, 0.6, 0.2], [1.3, 0.8, 1.1]])
    with pytest.raises(tf.UnsupportedError) as info:
        tf.value_and_grad(rows_written_and_viewed, argnums=(0, 2))(x, x[1], 0.9)
    assert info.value.lineno == rows_written_and_viewed.__code__.co_firstlineno
    assert 'share memory (a view and its base)' in str(info.value)


def into_a_tuple_of_arrays(t, x):
    t[0][1] = x * 2.0
    return np.sum(t[0] * x)


class _Held:
    def __init__(self):
        self.w = np.array([1.0, -0.5, 2.0])


def into_an_objects_array(o, x):
    w = o.w
    w[1] = x * 3.0
    w += x
    return np.sum(w * x)


@pytest.mark.parametrize('f, make, read', [
    (into_a_tuple_of_arrays, lambda: (np.array([1.0, -0.5, 2.0]),), lambda t: t[0]),
    (into_an_objects_array, _Held, lambda o: o.w)], ids=lambda v: getattr(v, '__name__', ''))
def test_arrays_a_tuple_or_an_object_holds(f, make, read):
    """A tuple argument (crashed: the write-back took it for a list) and an object's array
    attribute: written into in place, as the plain call writes them."""
    plain = make()
    value = f(plain, 1.3)
    numeric = (f(make(), 1.3 + 1e-6) - f(make(), 1.3 - 1e-6)) / 2e-6
    transforms = [tf.value_and_grad(f, argnums=1)]
    if isinstance(plain, tuple):        # (vjp differentiates in every argument: a pytree)
        transforms.append(lambda a, x: tf.vjp(f, a, x)[0:2])
    for transform in transforms:
        arg = make()
        got, second = transform(arg, 1.3)
        assert got == pytest.approx(value, rel=1e-12)
        np.testing.assert_array_equal(read(arg), read(plain))
        g = second if not callable(second) else second(1.0)[1]
        assert g == pytest.approx(numeric, rel=1e-6)


def scaled_in_place(y, x):
    y[0] = x * 2.0
    y *= 1.5
    return np.sum(y * x)


def test_a_function_on_the_tape_leaves_the_arguments_as_the_plain_call():
    """A tapeflow.function under a GradientTape (one fused node): its sweeps run on a copy,
    the plain call on another gives the arguments' state (before: the forward left y half
    written, the backward restored it)."""
    y0 = np.array([1.0, 2.0, 3.0])
    fused = tf.function(scaled_in_place)
    x = tf.Variable(1.3, dtype=np.float64)
    plain = y0.copy()
    value = scaled_in_place(plain, 1.3)
    y = y0.copy()
    with tf.GradientTape() as tape:
        out = fused(y, x)
    np.testing.assert_array_equal(y, plain)
    g = tape.gradient(out, x)
    np.testing.assert_array_equal(y, plain)
    assert float(out) == pytest.approx(value, rel=1e-12)
    numeric = (scaled_in_place(y0.copy(), 1.3 + 1e-6) - scaled_in_place(y0.copy(), 1.3 - 1e-6)) / 2e-6
    assert float(g) == pytest.approx(numeric, rel=1e-6)
