"""Second order (forward mode over the reverse sweep: tf.hvp, tf.jvp(tf.grad(f)),
tf.hessian) through lists and dicts the function builds, checked against central
differences of the gradient. Found by the fuzzer (tests/fuzz/test_python_fuzz.py):
an item appended to a list whose tangent nothing reads was refused (in generated
code), and a dict written in a loop crashed under batched tangents (tf.hessian).
A refusal or an error while generated code is differentiated again is told at the
user's line behind it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.transforms import forward


def numeric_hvp(f, x, v, eps=1e-5):
    """Central differences of the gradient along `v` (a list `x` stays a list)."""
    grad = tf.grad(f)
    kind = type(x)
    x, v = np.asarray(x, float), np.asarray(v, float)
    back = {list: lambda a: a.tolist(), float: float}.get(kind, lambda a: a)
    return (np.asarray(grad(back(x + eps * v))) - np.asarray(grad(back(x - eps * v)))) / (2 * eps)


def filter_then_len(xs):
    ys = list(filter(lambda v: v > 0.8, xs))
    return sum(xs) + 0.0 * len(ys)


def filter_then_square(xs):
    ys = list(filter(lambda v: v > 0.8, xs))
    return sum(xs) * sum(xs) * (1.0 + len(ys))


def filter_then_sum(xs):
    ys = list(filter(lambda v: v > 0.8, xs))
    return sum(xs) * sum(ys) + xs[0] * xs[1] * xs[2]


def appended_and_counted(xs):
    ys = []
    for v in xs:
        if v > 0.6:
            ys.append(v * v)
    return xs[0] * xs[1] * (2.0 + len(ys))


def dict_in_a_loop(s):
    d = {}
    for i in range(2):
        d[i] = s * (i + 1.0)
    return d[1] * s


def dict_updated_in_a_loop(s):
    d = {'a': s}
    for i in range(3):
        d[i] = d['a'] * s * (i + 1.0)
        d['a'] = d[i] + s
    return d['a'] * d[1]


def dict_of_arrays_in_a_loop(x):
    d = {}
    for i in range(3):
        d[i] = np.sin(x) * (i + 1.0)
    d['k'] = d[0] * d[2]
    return np.sum(d[1] * x) + np.sum(d['k'])


X_LIST = [1.1, 0.7, 0.5]
LIST_FUNCTIONS = (filter_then_len, filter_then_square, filter_then_sum, appended_and_counted)


@pytest.mark.parametrize('f', LIST_FUNCTIONS, ids=lambda f: f.__name__)
def test_hvp_through_a_list_the_function_builds(f):
    v = [0.3, -1.0, 0.6]
    expected = numeric_hvp(f, X_LIST, v)
    np.testing.assert_allclose(tf.jvp(tf.grad(f), (list(X_LIST),), (v,))[1], expected,
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.hvp(f, (list(X_LIST),), (v,)), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize('f', [dict_in_a_loop, dict_updated_in_a_loop], ids=lambda f: f.__name__)
def test_hessian_through_a_dict_written_in_a_loop(f):
    expected = numeric_hvp(f, 0.9, 1.0)
    assert tf.hessian(f)(0.9) == pytest.approx(expected, rel=1e-6)
    assert tf.jvp(tf.grad(f), (0.9,), (1.0,))[1] == pytest.approx(expected, rel=1e-6)
    assert tf.hvp(f, (0.9,), (1.0,)) == pytest.approx(expected, rel=1e-6)


def test_hessian_through_a_dict_of_arrays_written_in_a_loop():
    x = np.array([0.3, -0.4, 1.1])
    expected = np.stack([numeric_hvp(dict_of_arrays_in_a_loop, x, e) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(tf.hessian(dict_of_arrays_in_a_loop)(x), expected, rtol=1e-6,
                               atol=1e-8)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tf.hvp(dict_of_arrays_in_a_loop, (x,), (v,)), expected @ v,
                               rtol=1e-6, atol=1e-8)


def filter_refused_here(xs):
    ys = list(filter(lambda v: v > 0.8, xs))
    return sum(xs) + 0.0 * len(ys)


def test_a_refusal_in_generated_code_is_told_at_the_users_line(monkeypatch):
    # (no write to a list counted as one whose tangent goes unread: the append is refused)
    monkeypatch.setattr(forward, 'WRITING_METHODS', frozenset())
    with pytest.raises(tf.UnsupportedError) as caught:
        tf.jvp(tf.grad(filter_refused_here), (list(X_LIST),), ([1.0, 1.0, 1.0],))
    assert caught.value.filename == __file__
    assert caught.value.lineno == filter_refused_here.__code__.co_firstlineno + 1


def square_root_of_a_negative(x):
    y = x * x
    return math.sqrt(y - 1.0) * x


def test_an_error_in_second_order_is_told_at_the_users_line():
    line = square_root_of_a_negative.__code__.co_firstlineno + 2
    for run in (lambda: tf.jvp(tf.grad(square_root_of_a_negative), (0.5,), (1.0,)),
                lambda: tf.hessian(square_root_of_a_negative)(0.5)):
        with pytest.raises(ValueError, match=f'{__file__}:{line}:'):
            run()


# Batched tangents (tf.jacrev, tf.hessian: every direction in one sweep) of a list's
# cotangent (`Items`, the sparse form) were taken for unbatched: a slot's batch of
# rows was summed into one (jacrev of `two_names_of_x` gave [[1, 1.5], [0, 1.5]] for
# [[1, 0], [0, 1.5]]; the Hessian of `appended_twice` had off-diagonals 4.5 for 0).

def two_names_of_x(x):
    ys = [x, x]
    ys[1] = ys[1] * 1.5
    return np.stack([ys[0][0], ys[1][1]])


def appended_twice(x):
    ys = [x]
    for i in range(2):
        ys.append(x)
        ys[-1] = ys[-1] * 1.5
    return np.sum(np.stack(ys) ** 2)


def appended_into_a_nested_list(x):
    rows = [[x], [x * 2]]
    r = rows[0]
    r.append(x)
    return np.sum(rows[0][1] * rows[1][0]) + np.sum(rows[0][0] * r[1] ** 2)


def test_jacrev_through_a_list_with_an_item_written():
    x = np.array([0.5, -0.2])
    columns = [tf.jvp(two_names_of_x, (x,), (e,))[1] for e in np.eye(2)]
    rows = [tf.vjp(two_names_of_x, x)[1](e)[0] for e in np.eye(2)]
    np.testing.assert_allclose(np.stack(columns, axis=1), [[1.0, 0.0], [0.0, 1.5]])
    np.testing.assert_allclose(np.stack(rows), [[1.0, 0.0], [0.0, 1.5]])
    np.testing.assert_allclose(tf.jacrev(two_names_of_x)(x), [[1.0, 0.0], [0.0, 1.5]])
    np.testing.assert_allclose(tf.jacfwd(two_names_of_x)(x), [[1.0, 0.0], [0.0, 1.5]])


@pytest.mark.parametrize('f', [appended_twice, appended_into_a_nested_list],
                         ids=lambda f: f.__name__)
def test_hessian_through_a_list_of_arrays_written(f):
    x = np.array([0.5, -0.2, 0.8])
    expected = np.stack([numeric_hvp(f, x, e) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(tf.hessian(f)(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.jacrev(tf.grad(f))(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.jacfwd(tf.grad(f))(x), expected, rtol=1e-6, atol=1e-8)


def a_key_deleted_inside_a_try(x):
    d = {'w': x, 'b': x * 2.0}
    try:
        del d['b']
    except KeyError:
        pass
    return np.sum(x * x * d['w'])


def rows_of_a_matrix_and_its_transpose(x):
    s = 2.0 / (1.0 + x[0][0] ** 2)
    rows = [x.T, np.sum(x.T, axis=0, keepdims=True) * x, x]
    return np.sum(rows[0] * rows[-1]) + s


@pytest.mark.parametrize('f, x', [
    (a_key_deleted_inside_a_try, np.array([0.5, -0.2, 0.8])),
    (rows_of_a_matrix_and_its_transpose, np.array([[1.1, 0.8, 0.5], [0.5, 1.3, 1.4], [1.1, 1.2, 1.0]])),
], ids=['a_key_deleted_inside_a_try', 'rows_of_a_matrix_and_its_transpose'])
def test_hessian_where_a_batched_cotangent_meets_a_dict_or_a_number(f, x):
    """Fuzzer, seed 5001 (tf.hessian against tf.jvp(tf.grad(f))): a dict's cotangent with
    no entry for a deleted key (KeyError), and the tangent of add_adjoint's second operand
    lifted against the first's shape (a broadcasting ValueError)."""
    directions = np.eye(x.size).reshape((x.size,) + x.shape)
    expected = np.stack([numeric_hvp(f, x, e) for e in directions], axis=-1).reshape(x.shape * 2)
    np.testing.assert_allclose(tf.hessian(f)(x), expected, rtol=1e-6, atol=1e-8)
