"""Attribute writes on an object the function makes (transforms/sugar/attributes.py): the
object's attributes are a dict written and read by key. Values against the plain call,
gradients against central differences in both modes; every other attribute write refused
at the write, saying why."""
from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, checked_against_plain, seed_of


class State:
    def __init__(self):
        self.n = 0


def written_and_read_back(x):
    s = State()
    s.v = x * 2.0
    s.v = s.v + np.sin(x)
    s.n += 1
    return s.v * x + s.n


def an_accumulator_in_a_loop(x):
    acc = types.SimpleNamespace()
    acc.total = 0.0
    for k in range(3):
        acc.total += x ** (k + 1.0)
    return acc.total


def deleted_and_written_again(x):
    s = State()
    s.w = x
    del s.w
    s.w = x * 3.0
    return s.w


def one_object_per_trip(x):
    out = 0.0
    for k in range(3):
        s = State()
        s.v = x * k
        if k > 0:
            s.v = s.v * s.v
        out = out + np.sum(s.v)
    return out


def arrays_in_attributes(x):
    s = State()
    s.a = x * 2.0
    s.b = np.cumsum(s.a)
    s.a = s.a * s.b
    return np.sum(s.a) + s.n


CASES = [(written_and_read_back, 1.3), (an_accumulator_in_a_loop, 0.7),
         (deleted_and_written_again, 1.3), (one_object_per_trip, np.array([0.5, -1.0])),
         (arrays_in_attributes, np.array([0.3, 0.2, -0.4]))]


@pytest.mark.parametrize('f, x', CASES, ids=lambda v: getattr(v, '__name__', ''))
def test_value_and_gradient_in_both_modes(f, x):
    rng = np.random.default_rng(seed_of(f.__name__))
    checked_against_plain(f, [x], 0, rng)
    check_grads(f, x, rng, order=1)


def test_a_closed_form():
    assert tf.grad(an_accumulator_in_a_loop)(0.7) == pytest.approx(1 + 2 * 0.7 + 3 * 0.7 ** 2)


class Slotted:
    __slots__ = ('v',)


class WithProperty:
    @property
    def v(self):
        return 1.0


def _reader(s):
    return s.v * 2.0


def passed_on(x):
    s = State()
    s.v = x
    return _reader(s)


def slotted(x):
    s = Slotted()
    s.v = x
    return s.v


def over_a_property(x):
    s = WithProperty()
    s.v = x
    return s.v


def into_a_parameter(x, s):
    s.v = x
    return s.v


def a_method_reads_it(x):
    s = State()
    s.v = x
    return s.__repr__() and s.v


def a_closure_sets_it(x):
    s = State()
    s.v = x * 2.0

    def setter(p):
        s.v = p * 3.0
    setter(x)
    return s.v


def a_lambda_gives_it_back(x):
    s = State()
    s.v = x * 2.0
    back = lambda: s            # noqa: E731
    return back().v


@pytest.mark.parametrize('f, marker, why', [
    (passed_on, '_reader(s)', 's is used as a value here'),
    (slotted, 's.v = x', 'Slotted controls its attributes'),
    (over_a_property, 's.v = x', "a class attribute, property or method named 'v'"),
    (into_a_parameter, 's.v = x', 's is a parameter'),
    (a_method_reads_it, 's.__repr__', 'a method of s is called'),
    (a_closure_sets_it, 's.v = p', 'a nested function uses s other than by reading'),
    (a_lambda_gives_it_back, 'lambda: s', 'a nested function uses s other than by reading'),
], ids=lambda v: getattr(v, '__name__', None) or '')
def test_other_attribute_writes_refused_where_they_are(f, marker, why):
    args = (1.3, State()) if f is into_a_parameter else (1.3,)
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(*args)
    lines, first = inspect.getsourcelines(f)
    line = first + next(k for k, text in enumerate(lines) if marker in text)
    assert str(info.value).startswith(f'{__file__}:{line}:')
    assert 'assignment to an attribute of s is not supported here' in str(info.value)
    assert why in str(info.value)


# A nested def or lambda reading the object's attributes reads the closure's `_attrs`:
# what they hold when it runs (fuzzer: 'a nested function reads st' was refused).

def read_by_a_nested_def(x):
    st = types.SimpleNamespace()
    st.v = x * 2.0
    st.w = 1.5

    def scaled(p):
        return p * st.v + st.w
    st.v = st.v * 0.5 + np.sin(x)
    return np.sum(scaled(x) * x)


def read_by_a_lambda_between_writes(x):
    st = State()
    st.v = x * 2.0
    f = lambda p: p * st.v      # noqa: E731
    a = f(x)
    st.v += x
    return np.sum(a * f(x))


def read_by_a_def_in_a_loop(x):
    out = 0.0
    for i in range(2):
        st = types.SimpleNamespace()
        st.v = x * (i + 1.0)
        g = lambda p: p * st.v  # noqa: E731
        st.v = st.v * x
        out = out + np.sum(g(x))
    return out


@pytest.mark.parametrize('f', [read_by_a_nested_def, read_by_a_lambda_between_writes,
                               read_by_a_def_in_a_loop], ids=lambda f: f.__name__)
def test_attributes_read_by_a_nested_function(f):
    x = np.array([0.3, 0.5, 0.7])
    rng = np.random.default_rng(seed_of(f.__name__))
    checked_against_plain(f, [x.copy()], 0, rng)
    check_grads(f, x.copy(), rng, order=1)
    grad, v, eps = tf.grad(f), np.array([0.5, -1.0, 0.3]), 1e-5
    numeric = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(tf.hessian(f)(x) @ v, numeric, rtol=1e-5, atol=1e-7)


def _augmented_attribute(r):
    ns = State()
    ns.v = r ** 2
    ns.v += 4.0
    return ns.v * 2.0


def _augmented_dict_item(r):
    d = {}
    d['v'] = r ** 2
    d['v'] += 4.0
    return d['v'] * r


def calls_helpers_on_numbers(x):
    return _augmented_attribute(np.sin(x)) + _augmented_dict_item(x * 1.5)


def test_a_helper_augmenting_an_attribute_in_forward_mode():
    """Fuzzer, seed 5030 index 504: forward mode compiled the helper for an argument of
    shape () as an array (x[...] = v into a float: TypeError)."""
    for x in (1.3, np.float64(0.4)):
        checked_against_plain(calls_helpers_on_numbers, [x], 0, np.random.default_rng(10))
        check_grads(calls_helpers_on_numbers, x, np.random.default_rng(11), order=1)
        grad, eps = tf.grad(calls_helpers_on_numbers), 1e-5
        numeric = (grad(x + eps) - grad(x - eps)) / (2 * eps)
        assert np.isclose(tf.jvp(grad, (x,), (1.0,))[1], numeric, rtol=1e-6, atol=1e-8)
