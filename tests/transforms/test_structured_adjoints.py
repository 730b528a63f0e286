"""Adjoints of tuples and lists accumulate by structure, never with `+` (which concatenates).

A tangent that is a tuple (the tangent of a tuple argument) is made concrete by
`dense(dt, t)` once per item read; the reverse sweep of that forward code adds
the items' cotangents into the tangent's cotangent. When the tangent came into
the function as a subscript of the caller's argument, nothing said it was a
tuple, and the two cotangents were joined with `+` into a tuple of four: the
derivative in the tangent's first item read as zero.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient, seed_of


def product(p):
    return p[0] * p[1]


def appended(p):
    return np.append(p[0], p[1])


def tangent_of(f):
    def tangent(p, v):
        out, t = tf.jvp(f, (p,), (v,))
        return t
    return tangent


def _cases():
    a = np.array([1.0, 2.0, 3.0])
    v = (np.array([0.5, -1.0, 2.0]), np.array(0.7))
    return [(product, ((a, 4.0), v)), (appended, ((a, 4.0), v))]


@pytest.mark.parametrize('f, x', _cases(), ids=['product', 'append'])
def test_reverse_over_forward_with_a_tuple_tangent_taken_from_an_argument(f, x):
    tangent = tangent_of(f)

    def packed(x):                      # the tangent is x[1]: a subscript of the argument
        return tangent(x[0], x[1])

    def separate(p, v):
        return tangent(p, v)

    rng = np.random.default_rng(seed_of(f.__name__))
    out, pullback = tf.vjp(packed, x)
    np.testing.assert_allclose(out, packed(x))
    (cotangent,), = [pullback(np.ones_like(out))]
    _, expected = tf.vjp(separate, *x)
    for got, want in zip(cotangent, expected(np.ones_like(out))):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
    check_gradient(lambda x: np.sum(packed(x)), [cotangent], [x], [0], rng)
