"""Code written against the array API standard on complex inputs: the rules of
rules/array_api.py in the pairing the NumPy rules use, df = Re(sum(G * dz)), so a
real-valued f of a complex z has G = df/dRe(z) - 1j df/dIm(z). Checked against
central differences along the real and the imaginary direction of each element
(reverse) and along a random complex direction (forward), on NumPy and on
array_api_strict. |z|, sign(z) and vecdot (which conjugates its first argument)
are not holomorphic: each has its own complex form."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

from array_api_compat import array_namespace  # noqa: E402  (comes with the dev extras)

RNG = np.random.default_rng(11)
Z = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
W = (RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).tolist()   # in z's namespace: xp.asarray(W)
WEIGHT = 0.7 - 0.4j


def numeric_gradient(f, z, eps=1e-6):
    """G with df = Re(sum(G * dz)): d/dRe - i d/dIm, element by element."""
    g = np.zeros(z.shape, complex)
    for i in range(z.size):
        e = np.zeros(z.shape, complex)
        e[i] = eps
        g[i] = (f(z + e) - f(z - e)) / (2 * eps) - 1j * (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
    return g


def f_abs(z):
    xp = array_namespace(z)
    return xp.sum(xp.abs(z) * xp.abs(z - 0.3))


def f_sign(z):
    xp = array_namespace(z)
    return xp.sum(xp.real(xp.sign(z) * WEIGHT))


def f_vecdot_first(z):
    xp = array_namespace(z)
    return xp.real(xp.vecdot(z, xp.asarray(W)) * WEIGHT)


def f_vecdot_second(z):
    xp = array_namespace(z)
    return xp.real(xp.vecdot(xp.asarray(W), z) * WEIGHT)


def f_imag_conj(z):
    xp = array_namespace(z)
    return xp.sum(xp.imag(z * z) * xp.real(xp.conj(z) * WEIGHT))


def f_holomorphic(z):
    xp = array_namespace(z)
    y = xp.sqrt(z) * xp.exp(z * 0.3) + xp.log(z) / xp.square(z + 2.0) + xp.sin(z) * xp.reciprocal(z)
    y = y + xp.pow(z, 2.5) + xp.divide(xp.mean(z), z + 3.0) + xp.pow(z, z)
    m = xp.reshape(z, (2, 2))
    return xp.real(xp.sum(y * WEIGHT)) + xp.real(xp.prod(xp.tanh(z))) + xp.imag(xp.sum(m @ m))


def f_abs_of_holomorphic(z):
    xp = array_namespace(z)
    return xp.sum(xp.abs(xp.exp(z) * xp.sign(z)) ** 2) + xp.sum(xp.abs(xp.sqrt(z)))


FUNCTIONS = [f_abs, f_sign, f_vecdot_first, f_vecdot_second, f_imag_conj, f_holomorphic,
             f_abs_of_holomorphic]


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_reverse_mode_on_complex_inputs(f):
    np.testing.assert_allclose(tf.grad(f)(Z), numeric_gradient(f, Z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_forward_mode_on_complex_inputs(f):
    v = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
    value, tangent = tf.jvp(f, (Z,), (v,))
    assert value == pytest.approx(f(Z))
    assert tangent == pytest.approx((f(Z + 1e-6 * v) - f(Z - 1e-6 * v)) / 2e-6, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize('f', FUNCTIONS, ids=lambda f: f.__name__)
def test_array_api_strict_gives_the_same_gradient(f):
    xs = pytest.importorskip('array_api_strict')
    g = tf.grad(f)(xs.asarray(Z))
    assert isinstance(g, xs._array_object.Array) and g.dtype == xs.complex128
    np.testing.assert_allclose(np.asarray(g), tf.grad(f)(Z), rtol=1e-12, atol=1e-14)


def test_abs_at_zero_has_zero_slope():
    def f(z):
        xp = array_namespace(z)
        return xp.sum(xp.abs(z))
    z = np.array([0j, 3.0 + 4.0j])
    np.testing.assert_allclose(tf.grad(f)(z), [0.0, 0.6 - 0.8j], rtol=1e-15, atol=0)
    assert tf.jvp(f, (z,), (np.array([1.0 + 1.0j, 0j]),))[1] == 0.0


def test_real_inputs_keep_their_real_rules():
    x = np.array([0.4, -1.3, 2.0])
    np.testing.assert_allclose(tf.grad(f_abs)(x), np.sign(x) * np.abs(x - 0.3) + np.abs(x) * np.sign(x - 0.3))

    def f_sign_real(x):
        xp = array_namespace(x)
        return xp.sum(xp.sign(x) * x)
    np.testing.assert_allclose(tf.grad(f_sign_real)(x), np.sign(x))
