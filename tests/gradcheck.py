"""Finite-difference checks along random directions, shared by the test suites."""
from __future__ import annotations

import copy
import zlib

import numpy as np


def seed_of(name: str) -> int:
    """A random seed fixed by a test's name (`hash` changes from process to process)."""
    return zlib.crc32(name.encode())


def perturb(value, direction, eps):
    if isinstance(value, float):
        return value + eps * direction
    if isinstance(value, (list, tuple)):
        return type(value)(perturb(v, d, eps) for v, d in zip(value, direction))
    return value + eps * direction


def random_direction(value, rng):
    if isinstance(value, float):
        return float(rng.standard_normal())
    if isinstance(value, (list, tuple)):
        return type(value)(random_direction(v, rng) for v in value)
    return rng.standard_normal(np.shape(value))


def inner(a, b):
    if isinstance(a, (list, tuple)):
        return sum(inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def numeric_directional(f, args, wrt, directions, eps=1e-6):
    """(f(x + eps v) - f(x - eps v)) / 2 eps, moving the arguments at `wrt` along `directions`."""
    plus, minus = list(args), list(args)
    for i, d in zip(wrt, directions):
        plus[i] = perturb(args[i], d, eps)
        minus[i] = perturb(args[i], d, -eps)
    return (float(np.sum(f(*plus))) - float(np.sum(f(*minus)))) / (2 * eps)


def check_gradient(f, grads, args, wrt, rng, rtol=1e-5, atol=1e-6, trials=2):
    """Assert that `grads` (one per position in `wrt`) agree with central differences."""
    for _ in range(trials):
        directions = [random_direction(args[i], rng) for i in wrt]
        numeric = numeric_directional(f, args, wrt, directions)
        analytic = sum(inner(g, d) for g, d in zip(grads, directions))
        assert np.isclose(analytic, numeric, rtol=rtol, atol=atol), (analytic, numeric)


def checked_against_plain(f, args, wrt, rng):
    """`value_and_grad(f)` at `args`, its value checked against the plain call and its
    gradients against central differences (every call on copies: `f` may write into
    its arguments); the gradients."""
    import tapeflow as tf
    positions = (wrt,) if isinstance(wrt, int) else wrt
    value, grads = tf.value_and_grad(f, argnums=wrt)(*copy.deepcopy(args))
    np.testing.assert_allclose(value, f(*copy.deepcopy(args)), rtol=1e-12)
    listed = (grads,) if isinstance(wrt, int) else grads
    check_gradient(lambda *a: f(*copy.deepcopy(a)), list(listed), args, positions, rng)
    return grads
