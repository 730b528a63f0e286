"""`*args`, keyword-only parameters and `**kwargs` wherever a function is defined (a
nested def, a lambda, a method, a function used as a value), and `f(**d)` at any call:
bound as Python binds them, differentiated through. Each: the value against the plain
call, the gradient against central differences and forward mode, the Hessian against
differences of the gradient; what stays refused, by message and line."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order, line_of


def nested_star(x):
    c = np.sum(x)

    def inner(a, *rest):
        return a * c + sum(r * r for r in rest)
    return np.sum(inner(x, x, np.sin(x))) + np.sum(inner(x))


def nested_keyword_only(x):
    s = np.cos(x)

    def inner(a, *, b=s, scale=2.0):            # a default read where the def stands
        return a * b * scale
    return np.sum(inner(x)) + np.sum(inner(x, b=x * x)) + np.sum(inner(x, scale=3.0, b=x))


def nested_kwargs(x):
    w = np.sum(x ** 2)

    def inner(a, **kw):
        out = a * w
        for k in sorted(kw):
            out = out + kw[k] * a
        return out
    return np.sum(inner(x, p=x, q=np.exp(x)))


def lambdas_as_values(x):
    fs = [lambda *a: a[0] * a[1], lambda *a, k=1.0: sum(a) * k]
    return np.sum(fs[0](x, x)) + np.sum(fs[1](x, np.sin(x), k=2.0)) + np.sum(fs[1](x, x))


def closure_in_a_dict(x):
    c = np.sum(np.sin(x))

    def act(v, *, slope=0.5, **extra):
        return np.tanh(v * slope) * c + extra.get('bias', 0.0)
    table = {'a': act}
    return np.sum(table['a'](x, slope=1.5, bias=x * x)) + np.sum(table['a'](x))


def mapped_star_lambda(x):
    c = np.sum(x)
    g = lambda *vs: vs[0] * vs[1] * c          # noqa: E731 (a lambda is the case)
    return sum(np.sum(v) for v in map(g, [x, x * 2], [np.cos(x), x]))


def defaults_of_each_trip(x):
    fs = []
    for k in range(3):
        def inner(a, *rest, m=x * k):
            return a * m + sum(rest)
        fs.append(inner)
    return sum(np.sum(f(x, x)) for f in fs)


def a_local_named_like_a_keyword(x):
    a = np.sum(x)                               # read by g: positional-only, never keyed

    def g(v, **kw):
        return v * a + kw.get('a', 0.0)
    return np.sum(g(x, a=x * x))


class Model:
    def __init__(self, w):
        self.w = w

    def apply(self, x, *extra, scale=1.0, **kw):
        out = np.tanh(self.w * x) * scale
        for e in extra:
            out = out + e
        return out + kw.get('shift', 0.0)

    def loss(self, x):
        return np.sum(self.apply(x, x * x, scale=2.0, shift=np.sin(x))) + np.sum(self.apply(x))

    def __call__(self, x, **opts):
        return self.apply(x, **opts)


def method_calls_method(x):
    return Model(1.5).loss(x)


def bound_method_as_a_value(x):
    fs = [Model(0.5).apply]
    return np.sum(fs[0](x, scale=x, shift=x * 2)) + np.sum(fs[0](x, np.cos(x)))


def callable_object_with_kwargs(x):
    m = Model(0.7)
    return np.sum(m(x, scale=x[2])) + np.sum(m(x, shift=x))


def inner(x, scale=1.0, shift=0.0):
    return np.tanh(x * scale) + shift


def wrap(x, **kw):
    return inner(x, **kw) * 2.0


def passes_kwargs_on(x):
    return np.sum(wrap(x, scale=np.sum(x), shift=x * x)) + np.sum(wrap(x))


def spreads_a_local_dict(x):
    d = {'scale': x[0], 'shift': np.sin(x)}
    return np.sum(inner(x, **d))


def spreads_beside_a_keyword(x):
    d = {'shift': np.cos(x)}
    return np.sum(inner(x, scale=x[1], **d))


def spreads_into_numpy(x):
    opts = {'axis': 0}
    return np.sum(np.cumsum(x * x, **opts) * x)


def spreads_in_a_loop(x):
    out = 0.0
    for cfg in [{'scale': 1.0}, {'scale': x[0], 'shift': x}]:
        out = out + np.sum(inner(x, **cfg))
    return out


def star_and_double_star(x):
    args, kw = (x,), {'scale': np.sum(x ** 2)}
    return np.sum(inner(*args, **kw))


def nested_passes_kwargs_on(x):
    c = np.sum(x)

    def g(v, **kw):
        return inner(v * c, **kw)
    return np.sum(g(x, shift=x)) + np.sum(g(x))


def rebinds_its_star_parameters(x, *rest, **options):
    options = {'scale': x * sum(rest)}
    rest = rest + (x,)
    return np.sum(inner(*rest[2:], **options) * options["scale"]) * np.sum(rest[-1])


CASES = [nested_star, nested_keyword_only, nested_kwargs, lambdas_as_values, closure_in_a_dict,
         mapped_star_lambda, defaults_of_each_trip, a_local_named_like_a_keyword,
         method_calls_method, bound_method_as_a_value, callable_object_with_kwargs,
         passes_kwargs_on, spreads_a_local_dict, spreads_beside_a_keyword, spreads_into_numpy,
         spreads_in_a_loop, star_and_double_star, nested_passes_kwargs_on]


@pytest.mark.parametrize('f', CASES, ids=lambda f: f.__name__)
def test_star_signatures_and_spread_calls_are_exact(f):
    x = np.random.default_rng(3).normal(size=3) * 0.5
    exact_to_second_order(f, x)


def test_closed_forms():
    x = np.array([0.3, -0.2, 0.5])
    c = np.sum(x)        # nested_star: x c + (x^2 + sin^2 x), then x c
    expected = 2 * c + 2 * np.sum(x) + 2 * x + 2 * np.sin(x) * np.cos(x)
    np.testing.assert_allclose(tf.grad(nested_star)(x), expected, rtol=1e-12)
    a = np.sum(x)        # a_local_named_like_a_keyword: sum(x a + x^2): the keyword is kw's
    np.testing.assert_allclose(tf.grad(a_local_named_like_a_keyword)(x), a + np.sum(x) + 2 * x,
                               rtol=1e-12)


def test_rebound_star_parameters_and_the_caller_keywords():
    def f(x):
        return rebinds_its_star_parameters(x, 2.0, 0.5, shift=3.0)
    exact_to_second_order(f, np.array([0.4, -0.3]))


def test_positional_only_parameters():
    def f(x, /, y=2.0):
        return np.sum(x * y)
    assert tf.grad(f)(np.array([3.0]))[0] == 2.0
    assert tf.grad(f, argnums=1)(np.array([3.0]), 4.0) == 3.0


def cube(x):
    return x ** 3


def calls_cube(fn):
    @functools.wraps(fn)                   # its signature is not `fn`'s: `(*args, **kwargs)`
    def wrapper(*args, **kwargs):
        return cube(*args) + kwargs.get("c", 0.0) * args[0]
    return wrapper


@calls_cube
def not_cube(x, c=0.0):
    return x * x


def test_a_wrapper_is_bound_by_its_own_signature():
    assert tf.grad(not_cube)(2.0) == pytest.approx(12.0)
    assert tf.grad(not_cube)(2.0, c=5.0) == pytest.approx(17.0)


def grows_its_arguments(n, *acc):
    if n == 0:
        return sum(acc)
    return grows_its_arguments(n - 1, *acc, acc[-1] * 2.0)


def calls_growing(x):
    return np.sum(grows_its_arguments(2, x))


def two_spreads(x):
    a, b = {'scale': x[0]}, {'shift': x}
    return np.sum(inner(x, **a, **b))


def test_two_spreads_are_exact_and_a_repeated_key_is_pythons_error():
    exact_to_second_order(two_spreads, np.array([0.3, -0.4]))

    def repeats(x):
        return np.sum(inner(x, **{'scale': x[0]}, **{'scale': x}))
    with pytest.raises(TypeError, match="multiple values for keyword argument 'scale'"):
        tf.grad(repeats)(np.array([0.3, 0.4]))



@pytest.mark.parametrize('f, where, message', [
    (calls_growing, (grows_its_arguments, 'return grows_its_arguments'),
     r'grows_its_arguments\(\) calls itself with more values for its star parameter \(2\) '
     r'than it was given \(1\)'),
])
def test_what_stays_refused_is_located(f, where, message):
    with pytest.raises(tf.UnsupportedError, match=message) as error:
        tf.grad(f)(np.array([0.3, 0.4]))
    assert error.value.lineno == line_of(*where)
    assert error.value.filename.endswith('test_star_signatures.py')
