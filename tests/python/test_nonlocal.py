"""`nonlocal` in a nested def: the names it binds given back where it is called (`sugar.nonlocals`).
Values against the plain call, gradients against central differences and forward mode,
Hessians against differences of the gradient; what stays refused, by message and line."""
from __future__ import annotations


import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order, line_of


def accumulates(x):
    total = x * 0.0
    def add(v):
        nonlocal total
        total = total + v * v
    add(x)
    for k in range(3):
        add(np.sin(x) * k)
    return np.sum(total)

def returns_and_binds(x):
    count = 0
    scale = np.sum(x)
    def step(v):
        nonlocal count, scale
        count += 1
        scale = scale * 0.5 + np.sum(v)
        if count > 2:
            return v * scale
        return v + scale
    y = step(x)
    y = step(y)
    z = step(y * 2)
    return np.sum(z) + scale + count

def early_stop(x):
    best = x[0]
    def consider(v):
        nonlocal best
        if v > best:
            best = v
            return True
        return False
    for v in [x[1], x[2], x[0] * 2]:
        consider(v)
    return best * 3.0

def with_star_params(x):
    acc = 0.0
    def push(*vs, w=1.0):
        nonlocal acc
        for v in vs:
            acc = acc + w * np.sum(v)
    push(x, x * x, w=2.0)
    push(np.cos(x))
    return acc



@pytest.mark.parametrize('f', [accumulates, returns_and_binds, early_stop, with_star_params],
                         ids=lambda f: f.__name__)
def test_nonlocal_writes_are_exact(f):
    exact_to_second_order(f, np.array([0.3, -0.4, 0.8]))


def test_a_parameter_bound_again_by_a_nested_def():
    def f(x):
        def inner():
            nonlocal x
            x = 2.0
        inner()
        return x
    assert tf.grad(f)(1.5) == 0.0 and tf.value_and_grad(f)(1.5)[0] == 2.0


def test_closed_form():
    x = np.array([0.3, -0.4, 0.8])      # accumulates: sum(x^2 + (0 + 1 + 4) sin^2 x)
    np.testing.assert_allclose(tf.grad(accumulates)(x), 2 * x + 10 * np.sin(x) * np.cos(x),
                               rtol=1e-12)


def used_as_a_value(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v
    list(map(add, [x[0], x[1]]))
    return total


def called_from_another_def(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v

    def twice(v):
        add(v)
        add(v)
    twice(x[0])
    return total


def inside_an_expression(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v
        return v
    return total + add(x[0])        # Python reads total before the call binds it


def outer(scale):
    def differentiated(x):
        nonlocal scale
        scale = scale * 2
        return x * scale
    return differentiated



@pytest.mark.parametrize('f, text, message', [
    (used_as_a_value, 'list(map(add', r'add\(\) binds total of this function \(nonlocal\) and '
                                      r'is used as a value here'),
    (called_from_another_def, '        add(v)', r'add\(\) binds total of the function around '
                                             r'it \(nonlocal\), and is called here from '
                                             r'another def'),
    (inside_an_expression, 'return total + add', r'add\(\) binds total of this function '
                                                 r'\(nonlocal\): call it as a statement'),
    (outer(1.5), 'nonlocal scale', r'nonlocal statements in the function differentiated'),
])
def test_what_stays_refused_is_located(f, text, message):
    with pytest.raises(tf.UnsupportedError, match=message) as error:
        tf.grad(f)(np.array([0.3, 0.4]))
    assert error.value.lineno == line_of(f, text)


def a_def_in_a_try_binding_a_name_of_its_own(x):
    try:
        def g1(v, **kw):
            out = v * np.exp(-x ** 2)
            for k in kw:                # g1's own k
                out = out + kw[k] * np.cos(v)
            return out
        y = g1(x, a=x)
    except ValueError:
        y = x
    k = 0                               # the function's k, bound after the try
    return np.sum(y * 2.0) + k


def test_a_nested_defs_own_names_are_not_read_from_around_it():
    """Fuzzer seed 5401 index 2945: an UnboundLocalError (the try body's closure took g1's
    own loop variable k for one it reads from the function, whose k was not bound yet)."""
    exact_to_second_order(a_def_in_a_try_binding_a_name_of_its_own, np.array([0.3, -0.4]))


def _over_one(v):
    if np.mean(v) > 1.0:
        raise ValueError('over the limit')
    return v * 1.5


def a_def_in_a_try_in_a_try(x):
    y = np.cos(x)
    try:
        try:
            t = _over_one(2.0)
            def g1(v):                  # v: g1's own, not read from around the try
                return v * 2.0
        except ValueError:
            t = 2.0
            raise
    except ValueError:
        t = t * (2.0 + x[0])
    d = {'k0': y * x}
    return sum(np.sum(v * v) for v in d.values()) + t


def test_a_def_two_guarded_bodies_deep_reads_its_own_parameters():
    """Fuzzer seed 5420 index 4742: a NameError (the outer try body's closure took the
    parameter v of a def inside the inner try body for a name it reads from the function)."""
    exact_to_second_order(a_def_in_a_try_in_a_try, np.array([0.3, -0.4]))


def lambda_reading_only_a_local(x):
    k = x * 3.0
    f = lambda v: k                     # noqa: E731 (its whole body one name from around it)
    return np.sum(f(x) * x)


def test_a_lambda_whose_body_is_one_free_name():
    exact_to_second_order(lambda_reading_only_a_local, np.array([0.3, -0.4]))
