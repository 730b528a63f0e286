"""`class` statements inside a differentiated function (`syntax.classes`): the class made
once while compiling, its methods read from their text. Values against the plain call,
gradients against central differences and forward mode, Hessians against differences of
the gradient; what would differ from Python refused, by message and line."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order, line_of

def inner_class(x):
    class Layer:
        """A layer."""
        scale = 2.0
        def __init__(self, w, b):
            self.w = w
            self.b = b
        def __call__(self, v):
            return np.tanh(v * self.w + self.b) * self.scale
        def twice(self, v):
            return self(self(v))
    layer = Layer(0.5, 0.1)
    return np.sum(layer.twice(x)) + np.sum(Layer(x[0], 0.2)(x))

def inner_dataclass(x):
    @dataclasses.dataclass
    class Gain:
        k: float
        def apply(self, v, **kw):
            return v * self.k + kw.get('shift', 0.0)
    g = Gain(1.5)
    return np.sum(g.apply(x, shift=x * x)) + np.sum(Gain(x[1]).apply(x))

def two_classes(x):
    class A:
        def f(self, v):
            return v * v
    class B:
        def g(self, v):
            return A().f(v) + np.sin(v)
    return np.sum(B().g(x))



@pytest.mark.parametrize('f', [inner_class, inner_dataclass, two_classes],
                         ids=lambda f: f.__name__)
def test_classes_made_inside_are_exact(f):
    exact_to_second_order(f, np.array([0.3, -0.4, 0.8]))


def test_closed_form():
    x = np.array([0.3, -0.4, 0.8])      # two_classes: sum(x^2 + sin x)
    np.testing.assert_allclose(tf.grad(two_classes)(x), 2 * x + np.cos(x), rtol=1e-12)


def reads_a_local(x):
    scale = 2.0

    class Scaled:
        def apply(self, v):
            return v * scale
    return Scaled().apply(x)


def holds_a_list(x):
    class Registry:
        items = []
    return x


def named_twice(x):
    class Point:
        pass
    Point = 3.0
    return x * Point


def writes_its_object(x):
    class Acc:
        def __init__(self):
            self.v = 0.0

        def add(self, u):
            self.v = self.v + u
    a = Acc()
    a.add(x)
    return a.v



@pytest.mark.parametrize('f, text, message', [
    (reads_a_local, 'return v * scale', r'the class Scaled, made in this function, reads scale, '
                                        r'a local of the function'),
    (holds_a_list, 'items = []', r'the class Registry, made in this function, holds a class '
                                 r'attribute that is not a constant'),
    (named_twice, 'Point = 3.0', r'Point names a class made in this function and is bound '
                                 r'here too'),
    # as for a class of the module: a method writing its object's attribute, called through
    # the object, is refused (never a silent zero: its text is the user's, read as such)
    (writes_its_object, 'a.add(x)', r'Acc.add\(\), called here through a value, writes into'),
])
def test_what_would_differ_from_python_is_refused_located(f, text, message):
    with pytest.raises(tf.UnsupportedError, match=message) as error:
        tf.grad(f)(0.5)
    assert error.value.lineno == line_of(f, text)
