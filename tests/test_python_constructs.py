"""Ordinary Python the compiler must differentiate exactly, or refuse where it is
written (`file:line:col`): never a crash inside tapeflow, never a wrong number."""
import functools
import inspect

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import TapeflowError, UnsupportedError
from tests.gradcheck import check_gradient, numeric_directional, random_direction, seed_of


def check(f, *args, wrt=0, name=None):
    """Value against plain Python; gradient (reverse) and tangent (forward) against
    central differences along random directions."""
    rng = np.random.default_rng(seed_of(name or f.__name__))
    value, gradient = tf.value_and_grad(f, argnums=wrt)(*args)
    assert np.allclose(value, f(*args))
    check_gradient(f, [gradient], args, [wrt], rng)
    direction = random_direction(args[wrt], rng)
    tangents = tuple(direction if i == wrt else np.zeros_like(a) if isinstance(a, np.ndarray)
                     else 0.0 for i, a in enumerate(args))
    _, tangent = tf.jvp(f, args, tangents)
    numeric = numeric_directional(f, args, [wrt], [direction])
    assert np.isclose(float(np.sum(tangent)), numeric, rtol=1e-5, atol=1e-6)
    return gradient


def line_of(fn, text):
    """The line of `fn`'s file holding `text` (within `fn`)."""
    lines, first = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return first + offset
    raise AssertionError(f'{text!r} not in {fn.__name__}')


# ------------------------------------------------------------------ reversed(...)

def reversed_range(x, n):
    s = 0.0
    for i in reversed(range(n)):
        s = s * x + i
    return s


def reversed_array_enumerated(x):
    s = 0.0
    for k, v in enumerate(reversed(x)):
        s = s * 2.0 + np.sin(v) * k
    return s


def reversed_list_zipped(x):
    items = [x, 2.0 * x, x * x]
    s = 0.0
    for a, b in zip(reversed(items), items):
        s = s + a * np.sin(b)
    return s


def reversed_rows(x):
    s = np.zeros(x.shape[1])
    for row in reversed(x):
        s = s * 0.5 + np.cos(row)
    return np.sum(s * s)


def test_reversed_range():
    gradient = check(reversed_range, 1.5, 4)
    # s = ((3 x + 2) x + 1) x: ds/dx = 9 x^2 + 4 x + 1
    assert np.isclose(gradient, 9 * 1.5 ** 2 + 4 * 1.5 + 1)


@pytest.mark.parametrize('f, arg', [
    (reversed_array_enumerated, np.array([0.3, -1.2, 2.0])),
    (reversed_list_zipped, 0.3),
    (reversed_rows, np.arange(6.0).reshape(3, 2) / 5),
])
def test_reversed_sequences(f, arg):
    check(f, arg)


# ------------------------------------------------------------------ nested defs with defaults

def default_bound_in_loop(x):
    s = 0.0
    for k in range(3):
        def g(v, k=k):
            return v * k * x
        s = s + g(x)
    return s


def defaults_and_keywords(x):
    def g(v, w=2.0, u=x * x):
        return v * w * u + x
    return g(x) + g(x, 3.0) + g(x, u=np.sin(x)) + g(w=x, v=1.0)


def default_of_a_global(x):
    def g(v, w=SCALE):
        return np.sum(v * w)
    return g(x) * g(np.cos(x))


SCALE = np.array([1.0, -2.0, 0.5])


def test_default_bound_in_a_loop_is_each_trips_value():
    gradient = check(default_bound_in_loop, 1.5)
    assert np.isclose(gradient, 2 * 1.5 * (0 + 1 + 2))


def test_defaults_and_keywords_of_a_nested_def():
    gradient = check(defaults_and_keywords, 1.5)
    assert np.isclose(defaults_and_keywords(1.5), tf.value_and_grad(defaults_and_keywords)(1.5)[0])
    assert np.isfinite(gradient)


def test_default_of_a_global():
    check(default_of_a_global, np.array([0.2, -0.7, 1.1]))


def nested_call_with_unknown_keyword(x):
    def g(v, w=1.0):
        return v * w
    return g(x, q=2.0)


def test_nested_call_with_an_unknown_keyword_is_refused_where_it_is_written():
    with pytest.raises(TypeError):
        nested_call_with_unknown_keyword(1.0)              # as Python does
    with pytest.raises(UnsupportedError) as error:
        tf.grad(nested_call_with_unknown_keyword)(1.0)
    line = line_of(nested_call_with_unknown_keyword, 'return g(x, q=2.0)')
    assert error.value.lineno == line
    assert f'test_python_constructs.py:{line}:12: g() got an unexpected' in str(error.value)


# ------------------------------------------------------------------ np.r_, np.c_, np.mgrid

def c_columns(x):
    c = np.array([1.0, 2.0])
    return np.sum(np.c_[x, c, x] ** 2)


def c_weighted(x):
    c = np.array([1.0, 2.0])
    return np.sum(np.c_[x, c, np.sin(x)] ** 2 * np.arange(6.0).reshape(2, 3))


def c_matrix_and_columns(x):
    return np.sum(np.c_[np.outer(x, x), x, 2.0 * x] ** 3)


def r_scalars_and_arrays(x):
    return np.sum(np.r_[x, 3.0, x * x] ** 2 * np.arange(5.0))


def r_matrices(x):
    m = np.outer(x, x)
    return np.sum(np.r_[m, np.ones((1, 2)), np.cos(m)] ** 2 * np.arange(10.0).reshape(5, 2))


def r_single(x):
    return np.sum(np.r_[x] * np.r_[2.0] * x)


def mgrid_bounds(x):
    g = np.mgrid[0:x:5j]
    return np.sum(g * x)


def mgrid_count(x, n):
    g = np.mgrid[0:n]
    return np.sum(g * x)


@pytest.mark.parametrize('f', [c_columns, c_weighted, c_matrix_and_columns,
                               r_scalars_and_arrays, r_matrices, r_single])
def test_index_trick_concatenations_are_differentiated(f):
    x = np.array([0.5, -1.0])
    gradient = check(f, x)
    _, pullback = tf.vjp(f, x)
    assert np.allclose(pullback(1.0)[0], gradient)
    assert np.any(gradient != 0.0)


def test_c_columns_closed_form():
    x = np.array([0.5, -1.0])
    assert np.allclose(tf.grad(c_columns)(x), 4 * x)


def test_mgrid_from_constant_bounds_is_a_constant():
    gradient = check(mgrid_count, 1.5, 4)
    assert np.isclose(gradient, 0 + 1 + 2 + 3)


def test_mgrid_with_bounds_that_carry_derivatives_is_refused():
    line = line_of(mgrid_bounds, 'g = np.mgrid')
    for differentiate in (lambda: tf.grad(mgrid_bounds)(1.5),
                          lambda: tf.jvp(mgrid_bounds, (1.5,), (1.0,))):
        with pytest.raises(UnsupportedError) as error:
            differentiate()
        assert f'test_python_constructs.py:{line}:5: ' in str(error.value)
        assert 'np.mgrid' in str(error.value) and 'np.linspace' in str(error.value)


def r_with_a_slice(x):
    return np.sum(np.r_[x, 0:3] * 2.0 * np.r_[x, :3] * np.r_[x, 1:7:2])


def r_with_a_count(x):
    return np.sum(np.r_[x, 0:1:4j, -1.0:1.0:3j] ** 2 * np.arange(9.0))


def c_with_a_slice(x):
    return np.sum(np.c_[x, 3:5] ** 2 * np.arange(4.0).reshape(2, 2))


def r_from_a_moving_start(x, s):
    return np.sum(np.r_[x, s:4.0] ** 2)


@pytest.mark.parametrize('f', [r_with_a_slice, r_with_a_count, c_with_a_slice])
def test_slices_in_index_trick_concatenations(f):
    # `a:b:c` is np.arange(a, b, c), `a:b:nj` np.linspace(a, b, n): NumPy's reading
    x = np.array([0.5, -1.0])
    assert np.any(check(f, x) != 0.0)


def test_a_slice_start_that_moves_is_differentiated():
    # r_[x, s:4.0] holds s, s + 1, ... below 4: d/ds of their squares' sum
    s = 0.5
    count = len(np.arange(s, 4.0))
    assert np.isclose(tf.grad(r_from_a_moving_start, argnums=1)(np.ones(2), s),
                      sum(2 * (s + k) for k in range(count)))
    check(r_from_a_moving_start, np.ones(2), s, wrt=1)


def r_with_a_string(x):
    return np.sum(np.r_['0,2', x, x])


def r_with_a_computed_step(x, n):
    return np.sum(np.r_[x, 0:1:n])


@pytest.mark.parametrize('f, args, text, reason', [
    (r_with_a_string, (np.ones(2),), "'0,2'", 'string directive'),
    (r_with_a_computed_step, (np.ones(2), 3j), 'n]', 'must be a number written out')])
def test_r_with_what_it_cannot_read_is_refused(f, args, text, reason):
    line = line_of(f, 'np.r_[')
    with pytest.raises(UnsupportedError) as error:
        tf.grad(f)(*args)
    assert f'test_python_constructs.py:{line}:' in str(error.value)
    assert reason in str(error.value)


# ------------------------------------------------------------------ errors at the user's line

def returns_a_tuple(x):
    return x * 2.0, x


def returns_a_list(x):
    return [x * 2.0]


def returns_a_dict(x):
    return {'y': x}


@pytest.mark.parametrize('f, kind', [(returns_a_tuple, 'tuple'), (returns_a_list, 'list'),
                                     (returns_a_dict, 'dict')])
def test_grad_of_a_structured_output_is_a_type_error(f, kind):
    line = f.__code__.co_firstlineno + 1        # its return
    for transform, name in ((tf.grad, 'grad'), (tf.value_and_grad, 'value_and_grad')):
        with pytest.raises(TypeError) as error:
            transform(f)(0.7)
        message = str(error.value)
        assert message.startswith(f'{__file__}:{line}:5: {name} requires a scalar output')
        assert f'returned a {kind}' in message and 'has_aux=True' in message


def test_a_pair_with_has_aux_is_fine():
    value, gradient = tf.value_and_grad(returns_a_tuple, has_aux=True)(0.7)
    assert value == returns_a_tuple(0.7) and gradient == 2.0


def max_plus_min(x):
    return max(x) + min(x)


def max_plus_min_of_rows(x):
    return np.sum(max(x) * 2.0 + min(x))


def test_builtin_max_of_an_array_is_pythons_over_the_first_axis():
    x = np.array([1.0, 3.0, 2.0])
    assert np.allclose(check(max_plus_min, x), [1.0, 1.0, 0.0])
    column = np.array([[1.0], [3.0], [2.0]])       # rows of one element compare as numbers
    assert np.allclose(check(max_plus_min_of_rows, column), [[1.0], [2.0], [0.0]])


def test_builtin_max_of_a_matrix_fails_as_in_python_at_the_users_line():
    x = np.ones((2, 2))
    with pytest.raises(ValueError) as plain:
        max_plus_min(x)
    line = line_of(max_plus_min, 'return max(x)')
    for differentiate in (lambda: tf.grad(max_plus_min)(x),
                          lambda: tf.jvp(max_plus_min, (x,), (x,)),
                          lambda: tf.vjp(max_plus_min, x)):
        with pytest.raises(ValueError) as error:
            differentiate()
        assert isinstance(error.value, TapeflowError)
        assert str(error.value) == f'{__file__}:{line}:12: {plain.value}'


def mismatched_dot(x):
    y = np.sin(x)
    return np.dot(y, np.ones(4))


def calls_mismatched(x):
    return mismatched_dot(x) * 2.0


def test_an_error_inside_generated_code_names_the_users_line():
    x = np.ones(3)
    line = line_of(mismatched_dot, 'return np.dot')
    for f in (mismatched_dot, calls_mismatched):
        for differentiate in (lambda: tf.grad(f)(x), lambda: tf.jvp(f, (x,), (x,)),
                              lambda: tf.jacfwd(f)(x)):
            with pytest.raises(ValueError) as error:
                differentiate()
            assert isinstance(error.value, TapeflowError)
            assert str(error.value).startswith(f'{__file__}:{line}:12: shapes (3,) and (4,)')


def divides(x):
    y = x * 2.0
    return 1.0 / (y - y)


def test_a_python_error_keeps_its_kind_and_names_the_users_line():
    line = line_of(divides, 'return 1.0')
    for differentiate in (lambda: tf.grad(divides)(1.0), lambda: tf.vjp(divides, 1.0),
                          lambda: tf.jvp(divides, (1.0,), (1.0,))):
        with pytest.raises(ZeroDivisionError) as error:
            differentiate()
        assert isinstance(error.value, TapeflowError)
        assert str(error.value) == f'{__file__}:{line}:12: float division by zero'
        assert isinstance(error.value.__cause__, ZeroDivisionError)


# ------------------------------------------------------------------ third derivatives

def sin_times(x):
    return np.sin(x) * x


def calls_a_helper(x):
    return sin_times(x) * x


def appends(x):
    items = []
    items.append(x * x)
    items.append(np.sin(x))
    return items[0] * items[1]


def helper_in_a_loop(x):
    s = 0.0
    for k in range(3):
        s = s + sin_times(x * (k + 1.0))
    return s


def third_of_x2_sin(x):
    """d^3/dx^3 of x^2 sin(x)."""
    return -x * x * np.cos(x) - 6 * x * np.sin(x) + 6 * np.cos(x)


@pytest.mark.parametrize('f', [calls_a_helper, appends])
def test_third_derivative_through_calls_and_appends(f):
    x = 0.7
    assert np.isclose(tf.grad(tf.grad(tf.grad(f)))(x), third_of_x2_sin(x))
    second = tf.grad(tf.grad(f))
    numeric = (second(x + 1e-5) - second(x - 1e-5)) / 2e-5
    assert np.isclose(tf.grad(tf.grad(tf.grad(f)))(x), numeric, rtol=1e-5)


def test_third_derivative_of_a_helper_called_in_a_loop():
    # d^3/dx^3 of g(c x), g(t) = t sin t: c^3 g'''(c x), g'''(t) = -3 sin t - t cos t
    x = 0.4
    expected = sum(c ** 3 * (-3 * np.sin(c * x) - c * x * np.cos(c * x)) for c in (1.0, 2.0, 3.0))
    assert np.isclose(tf.grad(tf.grad(tf.grad(helper_in_a_loop)))(x), expected)


# ------------------------------------------------------------------ vjp inside compiled code

def pulled(x):
    y, pb = tf.vjp(sin_times, x)
    return pb(1.0)[0] * y


def vjp_of_a_ufunc(x):
    y, pb = tf.vjp(np.sin, x)
    return pb(1.0)[0]


def make_pullback(x):
    y, pb = tf.vjp(sin_times, x)
    return pb


def uses_a_returned_pullback(x):
    pb = make_pullback(x)
    return pb(2.0)[0] * x


def returns_vjp(x):
    return tf.vjp(sin_times, x)


def uses_returned_vjp(x):
    y, pb = returns_vjp(x)
    return pb(2.0)[0] * y


def test_a_pullback_called_where_vjp_is():
    # (sin x + x cos x) * x sin x
    gradient = check(pulled, 0.7)
    assert np.isfinite(gradient)


@pytest.mark.parametrize('f, where, text', [
    (vjp_of_a_ufunc, 'tf.vjp(np.sin', "write `def f(x): return np.sin(x)` and pass f"),
    (make_pullback, 'return pb', 'return pb(cotangent) instead'),
    (uses_a_returned_pullback, 'return pb', 'return pb(cotangent) instead'),
    (uses_returned_vjp, 'return tf.vjp', '`out, pullback = vjp(f, x, ...)`'),
])
def test_vjp_forms_that_cannot_be_compiled_are_refused_where_written(f, where, text):
    fn = make_pullback if f is uses_a_returned_pullback else \
        returns_vjp if f is uses_returned_vjp else f
    line = line_of(fn, where)
    with pytest.raises(UnsupportedError) as error:
        tf.grad(f)(0.7)
    assert f'test_python_constructs.py:{line}:' in str(error.value)
    assert text in str(error.value)


# ------------------------------------------------------------------ pass-through decorators

def passes_on(f):
    @functools.wraps(f)
    def w(*args, **kw):
        return f(*args, **kw)
    return w


def passes_on_without_wraps(f):
    def w(*args, **kw):
        return f(*args, **kw)
    return w


def scales(f):
    def w(*args, **kw):
        return 2.0 * f(*args, **kw)
    return w


@passes_on
def decorated(x, y=2.0):
    return np.sin(x) * x * y


@passes_on_without_wraps
def decorated_without_wraps(x):
    return np.sin(x) * x


@scales
def decorated_scaled(x):
    return np.sin(x) * x


def calls_decorated(x):
    return decorated(x) + decorated_without_wraps(x * x)


@pytest.mark.parametrize('f', [decorated, decorated_without_wraps, calls_decorated])
def test_pass_through_decorators(f):
    args = (0.7, 2.0) if f is decorated else (0.7,)    # (jvp takes every primal)
    gradient = check(f, *args)
    assert np.isfinite(gradient)
    assert np.isclose(tf.grad(tf.grad(f))(0.7),
                      (tf.grad(f)(0.7 + 1e-6) - tf.grad(f)(0.7 - 1e-6)) / 2e-6, rtol=1e-5)


def test_decorated_closed_form():
    x = 0.7
    assert np.isclose(tf.grad(decorated)(x), 2.0 * (np.sin(x) + x * np.cos(x)))
    assert np.isclose(tf.grad(decorated_without_wraps)(x), np.sin(x) + x * np.cos(x))


def test_a_wrapper_that_does_more_than_pass_on_is_read_as_written():
    x = 0.7      # `w(*args, **kw)` passing them on: read as written, `2.0 * f(x)`
    assert np.isclose(tf.grad(decorated_scaled)(x), 2.0 * (np.sin(x) + x * np.cos(x)))
    check(decorated_scaled, x)


# ------------------------------------------------------------------ nested Jacobians

WEIGHTS = np.array([1.0, 2.0, 3.0])


def reads_globals(x):
    return np.sum(WEIGHTS * x ** 3) * SCALE[0]


def test_hessian_of_a_function_reading_globals():
    x = np.array([0.1, 0.2, 0.3])
    assert np.allclose(tf.hessian(reads_globals)(x), np.diag(6 * WEIGHTS * x * SCALE[0]))


@pytest.mark.parametrize('outer', [tf.jacfwd, tf.jacrev])
@pytest.mark.parametrize('inner', [tf.jacfwd, tf.jacrev, tf.grad])
def test_a_jacobian_of_a_jacobian_of_a_function_reading_globals(outer, inner):
    x = np.array([0.1, 0.2, 0.3])
    assert np.allclose(outer(inner(reads_globals))(x), np.diag(6 * WEIGHTS * x * SCALE[0]))


# ------------------------------------------------------------------ lambdas

def test_a_lambda_is_read_exactly_whatever_its_line_holds():
    square = lambda x: x * x; cube = lambda x: x * x * x  # noqa: E731,E702
    assert tf.grad(square)(3.0) == 6.0
    assert tf.grad(cube)(2.0) == 12.0


def test_a_lambda_inside_differentiated_code_is_differentiated():
    def uses(x):
        square = lambda v: v * v  # noqa: E731
        return square(x) + (lambda v: v * x)(2.0)
    assert tf.grad(uses)(3.0) == 2 * 3.0 + 2.0
