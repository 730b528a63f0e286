"""Functions of `*args`, and functions passed to functions: compiled for what a call
gives them (`variants.arity_variant`, `variants.bound_variant`), checked against plain
Python and central differences; what cannot be made so is refused where it is written."""
import inspect

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import UnsupportedError
from tests.gradcheck import check_gradient, check_grads, seed_of


def checked(f, args, wrt):
    """`value_and_grad(f, argnums=wrt)` against the plain call and central differences."""
    rng = np.random.default_rng(seed_of(f.__name__))
    value, grads = tf.value_and_grad(f, argnums=wrt)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    check_gradient(f, list(grads), args, list(wrt), rng)
    return grads


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


# ------------------------------------------------------------------ *args

def product(x, *rest):
    out = x
    for r in rest:
        out = out * r
    return out + sum(rest)


def passes_on(*args):
    return np.sum(product(np.sin(args[0]), *args[1:]) + product(*args) + product(args[-1]))


def first_times_last(*xs):
    return xs[0] * xs[-1] + len(xs)


def test_a_star_parameter_is_made_for_the_values_a_call_gives():
    x, y, z = 1.5, 2.0, 3.0
    assert checked(product, (x, y, z), (0, 1, 2)) == pytest.approx((y * z, x * z + 1, x * y + 1))
    assert checked(product, (x,), (0,)) == (1.0,)               # no star values at all
    assert checked(first_times_last, (x, y, z), (0, 2)) == (z, x)


def test_star_calls_of_the_star_parameter_and_its_slices_pass_its_values():
    args = (0.3, np.array([1.0, -2.0]), 0.7)
    checked(passes_on, args, (0, 1, 2))
    v = np.array([0.2, 0.4])
    np.testing.assert_allclose(tf.jvp(passes_on, args, (1.0, v, 0.5))[1],
                               tf.jvp(lambda *a: passes_on(*a), args, (1.0, v, 0.5))[1])


def test_a_lambda_of_star_arguments_around_a_closure():
    # autograd's check_symmetric_matrix_grads: `lambda *args: fun(sym(args[0]), *args[1:])`
    def symmetric(fun):
        def symmetrize(a):
            lower = np.tril(a)
            return (lower + lower.T) / 2.0
        return lambda *args: fun(symmetrize(args[0]), *args[1:])
    chol = symmetric(lambda a: np.linalg.cholesky(a))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    a = a @ a.T + 3 * np.eye(3)
    check_grads(chol, a, rng, order=2)           # a matrix out: vjp and jvp, both orders


def rebinds_its_star(*xs):
    xs = xs[1:]
    return np.sum(np.stack(xs))


def star_of_another_tuple(x, y):
    pair = (x, y)
    return product(*pair)


def test_a_rebound_star_parameter_and_a_spread_tuple():
    # the star parameter bound again: the tuple it names from there on (`g(*xs)` is then
    # spread when it runs, not written out as the names it held)
    assert tf.grad(rebinds_its_star, argnums=(0, 1, 2))(1.0, 2.0, 3.0) == (0.0, 1.0, 1.0)
    check_grads(lambda v: rebinds_its_star(v, 2.0 * v, v * v), 0.7, np.random.default_rng(2),
                order=2)
    # a tuple spread into a call: as many arguments as it holds when it runs
    assert tf.grad(star_of_another_tuple, argnums=(0, 1))(1.5, 2.0) == (2.0, 1.5 + 1.0)


# ------------------------------------------------------------------ functions as arguments

def activated(x, act):
    return np.sum(act(x) ** 2)


def with_default(a, _r=np.sum):
    return _r(np.exp(a) * np.array([0.5, 1.5, 2.0]))


def relu(z):
    return np.maximum(z, 0.0)


def square(z):
    return z * z


def two_activations(x):
    return activated(x, np.sin) + activated(x, act=relu) + activated(x, square)


def test_a_function_passed_as_an_argument_is_called_as_that_function():
    x = np.array([0.3, -0.8, 1.1])
    gradient = tf.grad(activated)
    np.testing.assert_allclose(gradient(x, np.tanh), 2 * np.tanh(x) / np.cosh(x) ** 2)
    np.testing.assert_allclose(gradient(x, np.sin), np.sin(2 * x))
    np.testing.assert_allclose(gradient(x, relu), 2 * np.maximum(x, 0))
    np.testing.assert_allclose(gradient(x, lambda z: z ** 3), 6 * x ** 5)
    np.testing.assert_allclose(gradient(x, np.tanh), 2 * np.tanh(x) / np.cosh(x) ** 2)
    for act in (np.tanh, relu, np.exp):
        checked(lambda x: activated(x, act), (x,), (0,))


def test_a_function_default_and_one_passed_in_its_place():
    # autograd's test_plain_numpy_reductions_on_box: a reduction as a default argument
    for reduction in (np.sum, np.prod, np.max, np.min):
        checked(lambda a: with_default(a, reduction), (0.7,), (0,))
    assert tf.grad(with_default)(0.7) == pytest.approx(np.exp(0.7) * 4.0)
    assert tf.grad(with_default)(0.7, np.max) == pytest.approx(np.exp(0.7) * 2.0)
    assert tf.grad(with_default)(0.7) == pytest.approx(np.exp(0.7) * 4.0)


def test_functions_passed_in_compiled_code_by_position_and_keyword():
    x = np.array([0.3, -0.8, 1.1])
    checked(two_activations, (x,), (0,))
    np.testing.assert_allclose(tf.hessian(lambda x: activated(x, np.sin))(x),
                               np.diag(2 * np.cos(2 * x)), atol=1e-12)
    _, tangent = tf.jvp(two_activations, (x,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(tf.grad(two_activations)(x)))


def calls_a_computed_function(x, fns):
    return fns[0](x)


def test_a_function_computed_at_run_time_is_read_when_it_runs():
    # the callee is read when the call runs (`tapeflow.calls`): its rule, or its own adjoint
    assert np.isclose(tf.grad(calls_a_computed_function)(0.5, [np.sin]), np.cos(0.5))
    assert np.isclose(tf.grad(calls_a_computed_function)(0.5, [square]), 1.0)
    with pytest.raises(UnsupportedError) as error:
        tf.grad(calls_a_computed_function)(0.5, [float.hex])
    assert f':{line_of(calls_a_computed_function, "fns[0](x)")}:' in str(error.value)
    assert 'no derivative rule and no Python source' in str(error.value)


# ------------------------------------------------------------------ keyword-only and ** parameters

def powered(x, *, k=2.0, p):
    return np.sum(x ** p) * k


def with_options(x, **options):
    s = np.sum(x)
    for name in options:                # in the order the call passed them
        s = s * options[name]
    return s + options.get('b', 0.0) * np.sum(x * x)


def every_kind(x, *rest, scale=1.5, **weights):
    t = scale * np.sum(x)
    for r in rest:
        t = t + np.sum(r * x)
    return t * weights['w']


def calls_them(x):
    a = powered(x, p=3)
    b = powered(x * 2.0, k=np.sum(x), p=2)          # a keyword argument that moves
    c = with_options(x, a=np.sin(x[0]), b=3.0)
    d = with_options(x)
    e = every_kind(x, x * 2.0, x[0] * x, w=np.cos(x[1]))
    return a + b + c + d + e


X = np.array([0.3, -0.4, 0.8])


@pytest.mark.parametrize('f, kwargs', [
    (powered, {'p': 3}), (powered, {'k': 0.5, 'p': 2}),
    (with_options, {'a': 2.0, 'b': 3.0}), (with_options, {}),
], ids=lambda v: getattr(v, '__name__', str(v)))
def test_keyword_only_and_double_star_parameters_of_the_function(f, kwargs):
    rng = np.random.default_rng(seed_of(f.__name__))
    value, grad = tf.value_and_grad(f)(X, **kwargs)
    np.testing.assert_allclose(value, f(X, **kwargs), rtol=1e-12)
    check_gradient(lambda x: f(x, **kwargs), [grad], [X], [0], rng)


def test_every_kind_of_parameter_at_once():
    value, grads = tf.value_and_grad(every_kind, argnums=(0, 1))(X, X * 2.0, X * 3.0, w=2.0)
    np.testing.assert_allclose(value, every_kind(X, X * 2.0, X * 3.0, w=2.0), rtol=1e-12)
    check_gradient(lambda x, r: every_kind(x, r, X * 3.0, w=2.0), list(grads), [X, X * 2.0],
                   [0, 1], np.random.default_rng(4))


def test_helpers_called_with_keyword_only_and_double_star_arguments():
    checked(calls_them, [X], (0,))
    check_grads(calls_them, X, np.random.default_rng(5), order=2)


def test_a_call_python_would_refuse_is_refused_as_python_says():
    with pytest.raises(TypeError, match=r"powered\(\) missing a required argument: 'p'"):
        tf.grad(powered)(X)
    with pytest.raises(TypeError, match=r"powered\(\) got an unexpected keyword argument 'q'"):
        tf.grad(powered)(X, p=2, q=1)

    def leaves_p_out(x):
        return powered(x, k=2.0)
    with pytest.raises(UnsupportedError) as error:
        tf.grad(leaves_p_out)(X)
    assert f':{line_of(leaves_p_out, "return powered")}:' in str(error.value)
    assert "powered() missing a required argument: 'p'" in str(error.value)
