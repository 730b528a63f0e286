"""Functions written against the array API standard (`xp = array_namespace(x)`), with inputs.

The benchmark workloads W3-W6 and twenty functions in the style of tests/corpus.py,
each calling only the standard's functions through `xp`. tests/test_array_api.py
differentiates them on NumPy arrays and on `array_api_strict` arrays.
"""
from __future__ import annotations

import dataclasses

from array_api_compat import array_namespace
import numpy as np

CASES = []


@dataclasses.dataclass
class Case:
    fn: object
    shapes: tuple           # of the float arguments, in order
    wrt: tuple
    extra: tuple = ()       # further arguments (ints, flags), after the arrays

    @property
    def name(self):
        return self.fn.__name__

    def args(self, rng):
        arrays = tuple(rng.uniform(0.2, 1.0, size=s) for s in self.shapes)
        return arrays + self.extra


def case(*shapes, wrt=(0,), extra=()):
    def register(fn):
        CASES.append(Case(fn, shapes, wrt, extra))
        return fn
    return register


# ---------------------------------------------------------------- the workloads

@case((10,), (40, 10), (40,))
def w3_logistic(w, X, y):
    xp = array_namespace(w, X, y)
    z = X @ w
    return xp.mean(xp.log(1.0 + xp.exp(z)) - y * z)


@case((6, 8), (8,), (8, 3), (3,), (20, 6), (20, 3), wrt=(0, 1, 2, 3))
def w4_mlp(W1, b1, W2, b2, X, Y):
    xp = array_namespace(W1, X)
    h = xp.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return xp.mean(xp.sum((out - Y) ** 2, axis=1))


@case((4, 5), (5, 5), (5,), (6, 3, 4), (3, 5), wrt=(0, 1, 2))
def w5_rnn(Wx, Wh, b, xs, h0):
    xp = array_namespace(Wx, xs)
    h = h0
    for t in range(xs.shape[0]):
        h = xp.tanh(xs[t, ...] @ Wx + h @ Wh + b)
    return 0.5 * xp.sum(h * h) / h.shape[0]


@case((1000,))
def w6_sine_decay(x):
    xp = array_namespace(x)
    return xp.sum(xp.sin(x) ** 2 * xp.exp(-x))


# ---------------------------------------------------------------- twenty more

@case((5,))
def a_elementwise(x):
    xp = array_namespace(x)
    return xp.sum(xp.sqrt(x) * xp.log1p(x) + xp.cos(x) / (1.0 + xp.square(x)))


@case((3, 4), (4,), wrt=(0, 1))
def a_broadcast(a, b):
    xp = array_namespace(a, b)
    return xp.sum(xp.exp(-a * b) + a / (b + 1.0))


@case((3, 4))
def a_reductions_axis(x):
    xp = array_namespace(x)
    return xp.sum(xp.mean(x, axis=0) * xp.sum(x * x, axis=1, keepdims=True))


@case((3, 4), (4, 2), wrt=(0, 1))
def a_matmul(a, b):
    xp = array_namespace(a)
    c = xp.matmul(a, b)
    return xp.sum(xp.tanh(c)) + xp.sum(xp.matrix_transpose(a) * 2.0)


@case((4,))
def a_max_min(x):
    xp = array_namespace(x)
    return xp.max(x) * 2.0 - xp.min(xp.sin(x)) + xp.sum(xp.maximum(x, 0.5))


@case((6,))
def a_where(x):
    xp = array_namespace(x)
    return xp.sum(xp.where(x > 0.5, x * x, -x))


@case((6,))
def a_clip(x):
    xp = array_namespace(x)
    return xp.sum(xp.clip(x, 0.3, 0.8) * x)


@case((2, 3))
def a_reshape_permute(x):
    xp = array_namespace(x)
    r = xp.reshape(x, (3, 2))
    t = xp.permute_dims(x, (1, 0))
    return xp.sum(r * t) + xp.sum(xp.expand_dims(x, axis=0) ** 3)


@case((3,), (3,), wrt=(0, 1))
def a_concat_stack(x, y):
    xp = array_namespace(x, y)
    c = xp.concat([x, y * 2.0])
    s = xp.stack([x, y], axis=1)
    return xp.sum(c * c) + xp.sum(xp.prod(s, axis=1))


@case((5,), extra=(3,))
def a_loop(x, n):
    xp = array_namespace(x)
    s = xp.zeros_like(x)
    for i in range(n):
        s = s + xp.sin(x * (i + 1.0))
    return xp.sum(s)


@case((4,))
def a_branch(x):
    xp = array_namespace(x)
    total = xp.sum(x)
    if total > 1.0:
        y = xp.exp(x)
    else:
        y = xp.tanh(x)
    return xp.sum(y * x)


@case((5,))
def a_indexing(x):
    xp = array_namespace(x)
    return x[0] * x[3] + xp.sum(x[1:4] ** 2) + xp.sum(x[::2])


def _helper(v):
    xp = array_namespace(v)         # each function asks for its namespace
    return xp.log(1.0 + v * v)


@case((4,))
def a_helper(x):
    xp = array_namespace(x)
    return xp.sum(_helper(x) * _helper(2.0 * x))


@case((4,))
def a_list_accumulate(x):
    xp = array_namespace(x)
    parts = []
    for k in range(3):
        parts.append(xp.sum(x ** (k + 1)))
    return parts[0] + parts[1] * parts[2]


@case((3,))
def a_while(x):
    xp = array_namespace(x)
    y = x
    steps = 0
    while steps < 4:
        y = 0.5 * (y + x / y)
        steps += 1
    return xp.sum(y)


@case((4,))
def a_pow_divide(x):
    xp = array_namespace(x)
    return xp.sum(xp.pow(x, 2.5) / (1.0 + x) + xp.divide(1.0, x))


@case((3, 3))
def a_hyperbolic(x):
    xp = array_namespace(x)
    return xp.sum(xp.sinh(x) * xp.cosh(x) - xp.atan(x) + xp.asinh(x))


@case((4,), (4,), wrt=(0, 1))
def a_binary_functions(x, y):
    xp = array_namespace(x, y)
    return xp.sum(xp.atan2(x, y) + xp.hypot(x, y) + xp.logaddexp(x, y) + xp.minimum(x, y))


@case((5,))
def a_astype_asarray(x):
    xp = array_namespace(x)
    c = xp.asarray(2.0, dtype=x.dtype)
    y = xp.astype(x, xp.float64)
    return xp.sum(y * c + xp.abs(x - 0.5))


@case((2, 3), (2, 3), wrt=(0,))
def a_vecdot_flip(x, y):
    xp = array_namespace(x, y)
    return xp.sum(xp.vecdot(x, y) ** 2) + xp.sum(xp.flip(x, axis=1) * y)
