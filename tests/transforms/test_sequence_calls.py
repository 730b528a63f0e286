"""`tuple(...)`, `list(...)` and `zip(...)` on differentiated values (issue 17).

A tuple or list of an array is the sequence of its rows; of a list or tuple, a
shallow copy (holding the same array objects); `zip(...)` consumed by a call or a
loop is the list of its pairs. Each function is checked against the plain call's
value and against central differences along random directions (`value_and_grad`),
and with `tf.check_grads` (forward and reverse, to second order where the rules
it uses have second derivatives). What cannot be exact is a located refusal.
"""
import copy
import inspect

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain

RNG = np.random.default_rng(17)
X = np.array([1.5, 2.0, 3.0])
Y = np.array([0.5, -1.0, 2.0])
M = np.array([[1.0, 2.0], [3.0, -0.5], [0.25, 4.0]])


def checked(f, *args, wrt=0, order=2):
    """The gradient of `f` at `args`, after checking value and derivatives against the plain call."""
    grads = checked_against_plain(f, args, wrt, RNG)
    tf.check_grads(f, args, order=order)
    return grads


def refused(f, *args, match, text):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(*args)
    assert match in info.value.reason, info.value.reason
    assert info.value.filename == __file__
    lines, start = inspect.getsourcelines(f)
    expected = start + next(k for k, line in enumerate(lines) if text in line)
    assert info.value.lineno == expected, (info.value.lineno, expected)


# ------------------------------------------------------------------ tuple / list of an array

def tuple_of_vector(x):
    t = tuple(x)
    return t[0] * t[1] + t[2] ** 2


def tuple_of_matrix(x):
    t = tuple(x)
    return np.sum(t[0] * t[1]) + np.sum(t[2])


def list_of_matrix_loop(x):
    s = 0.0
    for r in list(x):
        s = s + np.sum(np.sin(r) * r)
    return s


def array_of_list_of_array(x):
    return np.sum(np.array(list(x)) ** 3)


@pytest.mark.parametrize('f, x', [(tuple_of_vector, X), (tuple_of_matrix, M),
                                  (list_of_matrix_loop, M), (array_of_list_of_array, X)])
def test_sequence_of_an_array_is_its_rows(f, x):
    g = checked(f, x)
    assert isinstance(g, np.ndarray) and g.shape == x.shape


def test_tuple_of_vector_closed_form():
    g = tf.grad(tuple_of_vector)(X)
    np.testing.assert_allclose(g, [X[1], X[0], 2 * X[2]], rtol=1e-12)


# ------------------------------------------------------------------ copies of lists and tuples

def copy_and_append(xs):
    ys = list(xs)
    ys.append(xs[0] * 2.0)
    return np.sum(ys[0] * ys[-1])


def copy_and_overwrite(xs):
    ys = list(xs)
    ys[0] = ys[0] * 3.0
    return np.sum(ys[0] * xs[0]) + np.sum(ys[1])


def tuple_of_list(xs):
    t = tuple(xs)
    return np.sum(t[0] * t[1])


def list_of_tuple(xs):
    t = list(xs)
    return t[0] * t[1]


@pytest.mark.parametrize('f, xs', [
    (copy_and_append, [1.5, 2.5]), (copy_and_append, [X, Y]),
    (copy_and_overwrite, [X, Y]), (copy_and_overwrite, [1.5, -2.0]),
    (tuple_of_list, [X, Y]), (tuple_of_list, (X, Y)), (list_of_tuple, (1.5, 2.5))])
def test_copy_of_a_sequence(f, xs):
    g = checked(f, xs)
    assert type(g) is type(xs) and len(g) == len(xs)


def test_copy_and_append_closed_form():
    # ys[0] * ys[-1] = 2 x0^2: the copy's items are the original's, the appended one new
    assert tf.grad(copy_and_append)([1.5, 2.5]) == [6.0, 0.0]


def aliased_in_place(xs):
    ys = list(xs)
    ys[0] *= 3.0                    # multiplies the array xs[0] too: ys[0] is xs[0]
    return np.sum(ys[0] * xs[0])


def test_in_place_write_through_a_copy_is_not_a_guess():
    xs = [X.copy(), Y.copy()]
    try:
        g = tf.grad(aliased_in_place)(copy.deepcopy(xs))
    except tf.UnsupportedError as error:
        assert error.filename == __file__
        return
    # if differentiated, it is 9 * x0^2 (the write reached xs[0]): 18 * x0
    np.testing.assert_allclose(g[0], 18 * X, rtol=1e-12)


# ------------------------------------------------------------------ zip

def sum_of_listed_zip(x, y):
    return sum(a * b for a, b in list(zip(x, y)))


def loop_over_listed_zip(x, y):
    s = 0.0
    for a, b in list(zip(x, y)):
        s = s + a * b ** 2
    return s


def loop_over_tupled_zip(x, y):
    s = 0.0
    for a, b in tuple(zip(x, y)):
        s = s + np.sin(a) * b
    return s


def enumerate_zip(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + i * a * b
    return s


def pairs_by_index(x, y):
    p = list(zip(x, y))
    return p[0][0] * p[1][1] + p[2][0] * p[2][1]


def pair_not_unpacked(x, y):
    s = 0.0
    for p in zip(x, y):
        s = s + p[0] * p[1] ** 2
    return s


def zip_of_copies(x, y):
    return sum(a * b for a, b in list(zip(list(x), tuple(y))))


def append_to_pairs(x, y):
    ps = list(zip(x, y))
    ps.append((x[0] * 2.0, y[0]))
    return ps[-1][0] * ps[1][1]


def length_of_listed_zip(x, y):
    return len(list(zip(x, y))) * x[0] + len(tuple(zip(x, y, y[:2]))) * y[1]


@pytest.mark.parametrize('f, order', [
    (loop_over_listed_zip, 2), (loop_over_tupled_zip, 2), (enumerate_zip, 2),
    (pairs_by_index, 2), (pair_not_unpacked, 2), (append_to_pairs, 2),
    (length_of_listed_zip, 2),
    # builtin sum of a list has no forward-over-reverse rule yet: first order
    (sum_of_listed_zip, 1), (zip_of_copies, 1)])
def test_zip_consumed_once_is_its_pairs(f, order):
    gx, gy = checked(f, X, Y, wrt=(0, 1), order=order)
    assert gx.shape == X.shape and gy.shape == Y.shape


def test_zip_of_lists_of_floats():
    gx, gy = checked(sum_of_listed_zip, [1.0, 2.0], [3.0, 4.0], wrt=(0, 1), order=1)
    assert gx == [3.0, 4.0] and gy == [1.0, 2.0]


def test_listed_zip_closed_form():
    gx, gy = tf.grad(loop_over_listed_zip, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, Y ** 2, rtol=1e-12)
    np.testing.assert_allclose(gy, 2 * X * Y, rtol=1e-12)


def zip_with_inactive_indices(x, y):
    ks = [k for k in range(3)]
    s = 0.0
    for k, a in zip(ks, x):
        s = s + k * a
    return s * y[0]


def test_zip_with_an_inactive_sequence():
    checked(zip_with_inactive_indices, X, Y, wrt=(0, 1))


# ------------------------------------------------------------------ refusals

def length_of_zip(x, y):
    return len(zip(x, y)) * x[0]


def zip_kept_in_a_name(x, y):
    z = zip(x, y)
    s = 0.0
    for a, b in z:
        s = s + a * b
    return s


def zip_strict(x, y):
    return sum(a * b for a, b in list(zip(x, y, strict=True)))


def test_len_of_zip_is_refused():
    refused(length_of_zip, X, Y, match='len(list(zip(', text='len(zip(')


def test_zip_kept_in_a_name_is_refused():
    refused(zip_kept_in_a_name, X, Y, match='list(zip(...))', text='z = zip(')


def test_zip_with_keywords_is_refused():
    refused(zip_strict, X, Y, match='zip(x, y, ...)', text='strict=True')
