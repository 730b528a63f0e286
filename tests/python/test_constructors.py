"""Objects made from values that carry derivatives (transforms/constructors.py): a class
whose `__init__` only stores its parameters (a dataclass's own, frozen too, or a def of
`self.a = a`), its methods and `__call__` reading them, checked against the plain call
and central differences in both modes and to second order (tf.hessian, batched). Any
other `__init__` is refused, located at the call, saying why."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, checked_against_plain, seed_of


@dataclasses.dataclass
class Gain:
    k: float

    def scale(self, v):
        return v * self.k

    def __call__(self, v):
        return np.sin(self.scale(v)) + self.scale(v) * 0.5


@dataclasses.dataclass(frozen=True)
class Shift:
    a: float
    b: float = 2.0

    def at(self, v):
        return v * self.a + self.b


class Layer:
    def __init__(self, w, b):
        """A layer: w and b stored."""
        self.w = w
        self.b = b
        self.calls = 0

    def affine(self, v):
        return v * self.w + self.b

    def __call__(self, v):
        return np.tanh(self.affine(v)) * v


class Doubled:
    def __init__(self, w):
        self.w = w * 2.0


@dataclasses.dataclass
class Posted:
    a: float

    def __post_init__(self):
        self.a = self.a * 2.0


def a_gain_from_a_sum(x):
    g = Gain(np.sum(x) * 0.5)
    return np.sum(g(x))


def layers_from_values_in_a_list(x):
    layers = [Layer(x[0], 0.1), Gain(x[1] * 2.0), Layer(1.5, x[2])]
    v = x
    for layer in layers:
        v = layer(v)
    return np.sum(v)


def an_array_attribute_read_directly(x):
    layer = Layer(x * 2.0, x[0])
    return np.sum(layer.affine(x) * layer.w) + layer.b


def objects_made_from_objects(x):
    g = Gain(x[0])
    h = Gain(g.k * x[1])
    return np.sum(h(x) * g.scale(x))


def frozen_by_keyword_in_a_dict(x):
    made = {}
    for i in range(2):
        made[i] = Shift(a=x[i], b=x[2])
    first = Shift(x[1])
    return sum(np.sum(o.at(x)) for o in made.values()) + np.sum(first.at(x)) + first.b


def _apply(fn, v):
    return fn(v) * 2.0


def called_through_a_helper_in_a_loop(x):
    g = Gain(x[0])
    out = 0.0
    for v in x:
        out = out + _apply(g, v) + g(out * 0.1)     # (fuzzer, seed 5031 index 2400:
    return out                                      # dict + dict, a TypeError)


CASES = [a_gain_from_a_sum, layers_from_values_in_a_list, an_array_attribute_read_directly,
         objects_made_from_objects, frozen_by_keyword_in_a_dict,
         called_through_a_helper_in_a_loop]


@pytest.mark.parametrize('f', CASES, ids=lambda f: f.__name__)
def test_an_object_made_from_differentiated_values(f):
    x = np.array([0.3, 0.5, 0.7])
    rng = np.random.default_rng(seed_of(f.__name__))
    checked_against_plain(f, [x.copy()], 0, rng)
    check_grads(f, x.copy(), rng, order=1)
    grad, eps = tf.grad(f), 1e-5
    numeric = np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(3)],
                       axis=1)
    np.testing.assert_allclose(tf.hessian(f)(x), numeric, rtol=1e-5, atol=1e-7)


def doubled(x):
    return np.sum(Doubled(x[0]).w * x)


def posted(x):
    return Posted(x[0]).a * x[1]


@pytest.mark.parametrize('f, cls', [(doubled, 'Doubled'), (posted, 'Posted')],
                         ids=['computes_in_init', 'post_init'])
def test_an_init_that_does_more_than_store_is_refused(f, cls):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(np.array([0.3, 0.5, 0.7]))
    line = f.__code__.co_firstlineno + 1
    assert str(info.value).startswith(f'{__file__}:{line}:')
    assert f'an instance of {cls} made from a value that carries a derivative' in str(info.value)
    assert 'does more than store its arguments' in str(info.value)
