"""Decorated functions are differentiated as called: the wrapper, unless it only passes on."""
import functools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.syntax import parse


def clipped(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(np.clip(x, 0.0, 1.0))
    return wrapper


def scaled_by(k):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return fn(x) * k
        return wrapper
    return decorate


def passthrough(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        """Calls fn."""
        return fn(*args, **kwargs)
    return wrapper


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        print('calling', fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


def cube(x):
    return x ** 3


def calls_cube_instead(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return cube(*args, **kwargs)      # not the function it claims to wrap
    return wrapper


@clipped
def square_clipped(x):
    return x * x


@scaled_by(2.0)
def square_scaled(x):
    return x * x


@passthrough
def product(x, y):
    return x * x * y


@passthrough
@passthrough
def twice_passed(x):
    return np.sin(x)


@logged
def logged_square(x):
    return x * x


@calls_cube_instead
def not_cube(x):
    return x * x


@functools.lru_cache(maxsize=None)
def cached(x):
    return x ** 3


@clipped
@tf.function
def clipped_compiled(x):
    return x * x


@passthrough
@tf.function
def passed_compiled(x):
    return x ** 3


def uses_clipped(x):
    return square_clipped(x) + x


def test_the_wrapper_is_differentiated():
    df = tf.grad(square_clipped)
    assert df(2.0) == 0.0                  # clip saturates: the square never sees x
    assert df(0.5) == pytest.approx(1.0)   # 2x inside [0, 1]
    tf.check_grads(square_clipped, (2.0,))
    tf.check_grads(square_clipped, (0.5,))
    assert tf.grad(square_scaled)(1.5) == pytest.approx(6.0)
    tf.check_grads(square_scaled, (1.5,))


def test_a_call_of_a_decorated_function_inside_compiled_code():
    assert tf.grad(uses_clipped)(2.0) == pytest.approx(1.0)
    assert tf.grad(uses_clipped)(0.25) == pytest.approx(1.5)
    tf.check_grads(uses_clipped, (0.25,))


def test_forward_mode_sees_the_wrapper_too():
    assert tf.jvp(square_clipped, (2.0,), (1.0,))[1] == 0.0
    assert tf.jvp(square_clipped, (0.5,), (1.0,))[1] == pytest.approx(1.0)
    assert 'np.clip' in tf.source(square_clipped)


def test_a_pass_through_wrapper_stands_for_the_function_it_wraps():
    assert parse.pass_through_target(product) is product.__wrapped__
    gx, gy = tf.grad(product, (0, 1))(1.5, 2.0)
    assert (gx, gy) == (pytest.approx(6.0), pytest.approx(2.25))
    tf.check_grads(product, (1.5, 2.0))
    assert tf.grad(twice_passed)(0.3) == pytest.approx(np.cos(0.3))


def test_a_wrapper_that_does_more_is_read_as_written(capsys):
    assert parse.pass_through_target(logged_square) is None
    assert tf.grad(logged_square)(2.0) == pytest.approx(4.0)       # its `*args, **kwargs` too
    assert 'calling logged_square' in capsys.readouterr().out      # (what it does more)
    tf.check_grads(logged_square, (0.7,))


def test_a_pass_through_to_another_function_is_not_followed():
    assert parse.pass_through_target(not_cube) is None
    assert not_cube(2.0) == 8.0
    assert tf.grad(not_cube)(2.0) == pytest.approx(12.0)   # the function it calls: never 2x,
    tf.check_grads(not_cube, (0.7,))                       # the gradient of the one it names


def test_lru_cache_and_tf_function_stand_for_their_function():
    assert tf.grad(cached)(2.0) == pytest.approx(12.0)
    assert tf.grad(tf.function(cube))(2.0) == pytest.approx(12.0)


def test_a_wrapper_around_tf_function_is_not_skipped():
    # functools.wraps copies the tf.function's attributes onto the wrapper: they
    # must not make it stand for the function inside (whose gradient is 4.0 here)
    try:
        gradient = tf.grad(clipped_compiled)(2.0)
    except tf.UnsupportedError as e:       # a tf.function called in compiled code
        assert 'clipped_compiled' in str(e)
    else:
        assert gradient == 0.0
    assert tf.grad(passed_compiled)(2.0) == pytest.approx(12.0)


def sin_times(x):
    return np.sin(x) * x


def jacobian_inside(x):
    return tf.jacfwd(sin_times)(x)


def hessian_inside(x):
    return np.sum(tf.hessian(sin_times)(x))


def test_jacobian_functions_are_refused_where_they_would_be_compiled():
    # they wrap the function they differentiate; reading that one instead would
    # give its derivative, one order short
    for fn, arg in [(jacobian_inside, 0.7), (hessian_inside, np.array([0.3, 0.5]))]:
        with pytest.raises(tf.UnsupportedError, match=r'sin_times: its Jacobian function \(made '
                                                      r'by jac(fwd|rev) or hessian\)'):
            tf.grad(fn)(arg)
    expected = 2 * np.cos(0.7) - 0.7 * np.sin(0.7)
    assert tf.grad(tf.grad(sin_times))(0.7) == pytest.approx(expected)      # the way that works
    # outside compiled code, grad of a (scalar) Jacobian function is the second derivative
    for jacobian in (tf.jacfwd, tf.jacrev):
        assert tf.grad(jacobian(sin_times))(0.7) == pytest.approx(expected)


@tf.custom_gradient
def tape_only(x):
    def grad_fn(upstream):
        return upstream * 2.0 * x
    return x * x, grad_fn


def uses_tape_only(x):
    return tape_only(x) * 3.0


def test_a_custom_gradient_function_is_refused_by_the_compiler():
    for fn in (tape_only, uses_tape_only):
        with pytest.raises(tf.UnsupportedError, match='tape_only: a @custom_gradient function'):
            tf.grad(fn)(2.0)
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:                         # on the tape it is what it was
        tape.watch(x)
        y = tape_only(x)
    assert tape.gradient(y, x).numpy() == 4.0


def _recording(make):
    """A driver's wrapper (benchmarks/autograd_examples): it copies the gradient function's
    marks onto a `(*args, **kwargs)` function that calls it."""
    def operator(fun):
        made = make(fun)

        def recorded(*call_args, **call_kwargs):
            return made(*call_args, **call_kwargs)
        recorded.__tapeflow_transform__ = made.__tapeflow_transform__
        return recorded
    return operator


def _summed_gradient(fun):
    def summed(*args):
        return np.sum(fun(*args))
    return tf.grad(summed)


def test_a_wrapper_carrying_a_gradients_marks_stands_for_it_when_called_inside():
    """autograd's tanh.py, egrad(egrad(egrad(tanh))): refused ('reverse mode over a gradient
    through a call whose function is known only when it runs') once `(*args, **kwargs)`
    functions were read as written: the wrapper, called inside the outer gradient, was
    made a variant of its own text, not read as the gradient it carries the marks of."""
    egrad = _recording(_summed_gradient)

    def tanh(x):
        return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))
    x = np.linspace(-2.0, 2.0, 5)
    t = np.tanh(x)
    np.testing.assert_allclose(egrad(egrad(tanh))(x), -2 * t * (1 - t ** 2), rtol=1e-10)
    third = 2 * (1 - t ** 2) * (3 * t ** 2 - 1)     # the third derivative of tanh
    np.testing.assert_allclose(egrad(egrad(egrad(tanh)))(x), third, rtol=1e-10, atol=1e-12)
