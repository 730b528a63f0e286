"""Numeric checks for the eager tape: gradients along random directions.

`check_vjp(f, args)` compares `tape.gradient(<w, f(x)>, x)` with central
differences of `<w, f(x)>` along a random direction; `check_second_order`
does the same for the gradient itself, computed under an outer tape.
Inputs are float64 so that the differences are accurate.
"""
import numpy as np

import tapeflow as tf


def _inner(w, y):
    return float(np.sum(np.asarray(w) * np.asarray(y)))


def _tape_vjp(f, values, w):
    xs = [tf.constant(v) for v in values]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    grads = tape.gradient(y, xs, output_gradients=tf.constant(w))
    return y, grads


def check_vjp(f, values, seed=0, eps=1e-6, rtol=1e-6, atol=1e-8):
    """The tape's VJP of `f` at `values` agrees with central differences."""
    rng = np.random.default_rng(seed)
    values = [np.asarray(v, dtype=np.float64) for v in values]
    y = f(*[tf.constant(v) for v in values])
    w = rng.standard_normal(np.shape(y)).astype(y.dtype)
    _, grads = _tape_vjp(f, values, w)
    directions = [rng.standard_normal(np.shape(v)) for v in values]
    plus = f(*[tf.constant(v + eps * d) for v, d in zip(values, directions)])
    minus = f(*[tf.constant(v - eps * d) for v, d in zip(values, directions)])
    numeric = (_inner(w, plus) - _inner(w, minus)) / (2 * eps)
    analytic = sum(_inner(d, g) for d, g in zip(directions, grads) if g is not None)
    for g, v in zip(grads, values):
        assert g is not None and g.shape == v.shape and g.dtype == v.dtype
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)
    return grads


def check_second_order(f, values, seed=0, eps=1e-5, rtol=1e-5, atol=1e-7):
    """The derivative of the tape's VJP, taken by an outer tape, agrees with differences.

    With inner gradients g_i = d<w, f>/dx_i, the outer tape gives
    d(sum_i <u_i, g_i>)/dx (through output_gradients, so no reduction rule
    is needed), checked along a random direction.
    """
    rng = np.random.default_rng(seed)
    values = [np.asarray(v, dtype=np.float64) for v in values]
    y = f(*[tf.constant(v) for v in values])
    w = rng.standard_normal(np.shape(y))
    us = [rng.standard_normal(np.shape(v)) for v in values]

    def first_order(xs):
        with tf.GradientTape() as inner:
            inner.watch(xs)
            out = f(*xs)
        return inner.gradient(out, xs, output_gradients=tf.constant(w))

    xs = [tf.constant(v) for v in values]
    with tf.GradientTape() as outer:
        outer.watch(xs)
        grads = first_order(xs)
    second = outer.gradient(grads, xs, output_gradients=[tf.constant(u) for u in us])
    directions = [rng.standard_normal(np.shape(v)) for v in values]

    def scalar(sign):
        gs = first_order([tf.constant(v + sign * eps * d) for v, d in zip(values, directions)])
        return sum(_inner(u, g) for u, g in zip(us, gs))

    numeric = (scalar(1) - scalar(-1)) / (2 * eps)
    analytic = sum(_inner(d, g) for d, g in zip(directions, second) if g is not None)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)
    return second
