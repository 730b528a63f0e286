"""Every pairing of the derivative transforms, to second order, on 36 functions.

For each function, each of `jacfwd`, `jacrev` and (where the inner value is a
scalar) `grad`, applied over each of `jacfwd`, `jacrev` and `grad`, and
`hessian`, must give the Jacobian of the first derivative that central finite
differences of `grad` give: no NaN, no crash, one answer whatever the modes.
The functions come from the compiler's corpus (arrays, loops, branches, calls,
lists, in-place writes) and from linear algebra.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests import corpus
from tests.gradcheck import seed_of

CORPUS = [
    'c_arith', 'c_math', 'c_numpy_elementwise', 'c_log_sqrt', 'c_broadcast_div_pow',
    'c_broadcast_outer', 'c_matvec', 'c_matmul_dot', 'c_reductions_axis', 'c_where',
    'c_if_else', 'c_elif', 'c_ifexp', 'c_seed_loop', 'c_range_loop', 'c_nested_loops',
    'c_for_over_array', 'c_while', 'c_break', 'c_call_helper', 'c_call_two', 'c_recursion',
    'c_global_read', 'c_closure', 'c_nested_def', 'c_helper_in_loop', 'c_list_append',
    'c_setitem', 'c_logistic', 'c_rnn', 'c_softmax_loop', 'c_cumulative',
]


def l_det(a):
    return np.linalg.det(a)


def l_inv(a):
    return np.sum(np.linalg.inv(a) * np.arange(1.0, 10.0).reshape(3, 3))


def l_solve(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


def l_norm(x):
    return np.linalg.norm(x)


def l_slogdet_quad(a):
    sign, logdet = np.linalg.slogdet(a)
    v = np.array([1.0, -2.0, 0.5])
    return logdet + v @ a @ v


def _well_conditioned(rng):
    return np.eye(3) * 3.0 + rng.uniform(-0.5, 0.5, (3, 3))


LINALG = [
    (l_det, lambda rng: (_well_conditioned(rng),)),
    (l_inv, lambda rng: (_well_conditioned(rng),)),
    (l_solve, lambda rng: (_well_conditioned(rng), rng.uniform(-1, 1, 3))),
    (l_norm, lambda rng: (rng.uniform(-1, 1, 4),)),
    (l_slogdet_quad, lambda rng: (_well_conditioned(rng),)),
]

CASES = {c.name: (c.fn, c.make_args, c.wrt[0]) for c in corpus.CASES if c.name in CORPUS}
CASES.update({fn.__name__: (fn, make, 0) for fn, make in LINALG})
assert len(CASES) == len(CORPUS) + len(LINALG)


def _moved(args, i, direction, eps):
    moved = list(args)
    moved[i] = args[i] + eps * direction
    return moved


def second_derivative_by_differences(f, args, i, eps=1e-5):
    """Central differences of `grad(f)` along each coordinate of `args[i]`:
    shape `x.shape + x.shape`."""
    g = tf.grad(f, argnums=i)
    x = args[i]
    shape = np.shape(x)
    columns = []
    for k in range(int(np.size(x))):
        e = np.zeros(int(np.size(x)))
        e[k] = 1.0
        e = e.reshape(shape) if shape else 1.0
        plus, minus = g(*_moved(args, i, e, eps)), g(*_moved(args, i, e, -eps))
        columns.append((np.asarray(plus) - np.asarray(minus)) / (2 * eps))
    return np.stack(columns, axis=-1).reshape(shape + shape)


def pairings(x):
    inner = {'jacfwd': tf.jacfwd, 'jacrev': tf.jacrev, 'grad': tf.grad}
    outer = {'jacfwd': tf.jacfwd, 'jacrev': tf.jacrev}
    if np.ndim(x) == 0:
        outer['grad'] = tf.grad         # the inner derivative is a scalar there
    for o_name, o in outer.items():
        for i_name, i in inner.items():
            yield f'{o_name}({i_name}(f))', lambda f, a, o=o, i=i: o(i(f, argnums=a), argnums=a)
    yield 'hessian(f)', lambda f, a: tf.hessian(f, argnums=a)


@pytest.mark.parametrize('name', sorted(CASES))
def test_every_pairing_gives_the_second_derivative(name):
    fn, make_args, i = CASES[name]
    args = make_args(np.random.default_rng(seed_of(name)))
    expected = second_derivative_by_differences(fn, args, i)
    assert np.all(np.isfinite(expected))
    checked = []
    for label, transform in pairings(args[i]):
        got = np.asarray(transform(fn, i)(*args))
        assert np.all(np.isfinite(got)), f'{name}: {label} has NaN or inf: {got}'
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f'{name}: {label}')
        checked.append(label)
    assert len(checked) == (10 if np.ndim(args[i]) == 0 else 7)


@pytest.mark.parametrize('name', sorted(CASES))
def test_vmap_of_grad_is_the_loop_of_grads(name):
    fn, make_args, i = CASES[name]
    rng = np.random.default_rng(seed_of(name) + 1)
    batch = [make_args(rng) for _ in range(3)]
    in_axes = tuple(0 if k == i else None for k in range(len(batch[0])))
    others = batch[0]
    stacked = np.stack([np.asarray(b[i]) for b in batch])
    args = tuple(stacked if k == i else others[k] for k in range(len(others)))
    got = tf.vmap(tf.grad(fn, argnums=i), in_axes=in_axes)(*args)
    g = tf.grad(fn, argnums=i)
    loop = [g(*(b[i] if k == i else others[k] for k in range(len(others)))) for b in batch]
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, np.stack([np.asarray(v) for v in loop]), rtol=1e-12, atol=1e-14)
    # and the loop is right: each slice against finite differences
    x = batch[1][i]
    direction = rng.standard_normal(np.shape(x)) if np.ndim(x) else 1.0
    at = lambda t: fn(*(x + t * direction if k == i else others[k] for k in range(len(others))))
    numeric = (at(1e-6) - at(-1e-6)) / 2e-6
    assert np.sum(np.asarray(got[1]) * direction) == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_the_jacobian_of_a_jacobian_in_two_arguments():
    def f(x, y):
        return np.sin(x) * y ** 2

    x, y = np.array([0.3, -0.8]), np.array([1.1, 0.4])
    for outer in (tf.jacfwd, tf.jacrev):
        for inner in (tf.jacfwd, tf.jacrev):
            got = outer(inner(f, argnums=0), argnums=1)(x, y)
            # d^2 f_i / dx_j dy_k = cos(x_i) 2 y_i delta_ij delta_ik
            expected = np.zeros((2, 2, 2))
            for k in range(2):
                expected[k, k, k] = np.cos(x[k]) * 2 * y[k]
            np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_the_jacobian_of_a_jacobian_of_a_vector_function():
    def f(x):
        return np.array([x[0] * x[1] ** 2, np.exp(x[0]) * x[1]])

    x = np.array([0.4, -1.3])
    expected = np.array([[[0.0, 2 * x[1]], [2 * x[1], 2 * x[0]]],
                         [[np.exp(x[0]) * x[1], np.exp(x[0])], [np.exp(x[0]), 0.0]]])
    for outer in (tf.jacfwd, tf.jacrev):
        for inner in (tf.jacfwd, tf.jacrev):
            np.testing.assert_allclose(outer(inner(f))(x), expected, rtol=1e-12)


def test_a_jacobian_of_a_jacobian_refuses_integer_arguments():
    def f(x, n):
        return x * n

    with pytest.raises(TypeError, match=r"got int64 for argument 1 \('n'\) of f\(\)"):
        tf.jacfwd(tf.jacrev(f), argnums=1)(np.array([1.0, 2.0]), np.array([1, 2]))


def test_derivatives_of_a_real_function_through_complex_values_are_real():
    def f(x):
        return np.real(np.sum(np.exp(1j * x) * x))

    x = np.array([0.3, 1.1, -0.4])
    # f = sum x cos x: f' = cos x - x sin x, f'' = -2 sin x - x cos x
    second = np.diag(-2 * np.sin(x) - x * np.cos(x))
    assert not np.iscomplexobj(tf.grad(f)(x))
    for got in (tf.hessian(f)(x), tf.jacrev(tf.grad(f))(x), tf.jacfwd(tf.jacrev(f))(x)):
        assert not np.iscomplexobj(got)
        np.testing.assert_allclose(got, second, rtol=1e-12, atol=1e-14)
    assert tf.grad(tf.grad(lambda_free_scalar))(0.7) == pytest.approx(-2 * np.sin(0.7) - 0.7 * np.cos(0.7))


def lambda_free_scalar(x):
    return (np.exp(1j * x) * x).real
