"""eigh and eigvalsh of complex matrices: the Hermitian matrix LAPACK sees (one
triangle, mirrored and conjugated, the diagonal's real part), differentiated in
the pairing the other rules use, df = Re(sum(G * dA)). The eigenvectors of a
complex matrix carry a free phase each: refused in reverse, NaN forward."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))   # not Hermitian
C = RNG.standard_normal(4)


def _numeric_gradient(f, z, eps=1e-6):
    """G with df = Re(sum(G * dz)): d/dRe - i d/dIm."""
    g = np.zeros(z.shape, complex)
    for idx in np.ndindex(z.shape):
        e = np.zeros(z.shape, complex)
        e[idx] = eps
        re = (f(z + e) - f(z - e)) / (2 * eps)
        im = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        g[idx] = re - 1j * im
    return g


@pytest.mark.parametrize('uplo', ['L', 'U'])
@pytest.mark.parametrize('which', ['eigh', 'eigvalsh'])
def test_eigenvalues_of_a_complex_matrix(which, uplo):
    def f(z):
        w = np.linalg.eigh(z, uplo)[0] if which == 'eigh' else np.linalg.eigvalsh(z, uplo)
        return np.sum(C * w ** 2)
    np.testing.assert_allclose(tf.grad(f)(A), _numeric_gradient(f, A), atol=1e-6)
    v = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))
    _, tangent = tf.jvp(f, (A,), (v,))
    assert tangent == pytest.approx((f(A + 1e-6 * v) - f(A - 1e-6 * v)) / 2e-6, abs=1e-6)


def test_the_eigenvectors_of_a_complex_matrix_are_refused_in_reverse():
    def f(z):
        w, v = np.linalg.eigh(z)
        return np.sum(np.abs(v))
    with pytest.raises(NotImplementedError, match='eigenvectors of np.linalg.eigh'):
        tf.grad(f)(A)


def test_the_eigenvectors_of_a_complex_matrix_have_nan_tangents():
    def f(z):
        return np.linalg.eigh(z)[1]
    _, tangent = tf.jvp(f, (A,), (A,))
    assert np.all(np.isnan(tangent))


def test_real_matrices_keep_their_eigenvector_derivatives():
    a = np.real(A)

    def f(x):
        w, v = np.linalg.eigh(x)
        return np.sum(np.abs(v[:, 0]) * C) + np.sum(w)
    g = tf.grad(f)(a)
    d = RNG.standard_normal((4, 4))
    assert np.sum(g * d) == pytest.approx((f(a + 1e-6 * d) - f(a - 1e-6 * d)) / 2e-6, abs=1e-6)


@pytest.mark.parametrize('upper', [False, True])
def test_cholesky_of_a_complex_matrix_forward_and_refused_in_reverse(upper):
    m = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
    a = m @ np.conj(m.T) + np.eye(3)
    d = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))

    def f(x):
        return np.linalg.cholesky(x, upper=upper)
    _, tangent = tf.jvp(f, (a,), (d,))
    np.testing.assert_allclose(tangent, (f(a + 1e-6 * d) - f(a - 1e-6 * d)) / 2e-6, atol=1e-6)
    with pytest.raises(NotImplementedError, match='cholesky of a complex matrix'):
        tf.grad(lambda x: np.abs(f(x)[1, 0]))(a)
