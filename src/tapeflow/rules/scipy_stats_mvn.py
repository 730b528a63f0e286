"""Rules for scipy.stats.multivariate_normal's logpdf and pdf, in x, mean and cov.

SciPy's conventions, kept: the last axis of x holds a point's D components (a 1-D x is
one point, or D = 1 and n points; a number is one point of D = 1); D is mean's size,
else cov's; the result has x's leading axes, squeezed (one point: a number). mean is a
vector of D (a number when D = 1), None for zeros. cov is a number (cov * I), a vector
(its diagonal) or a D x D matrix of which SciPy reads the lower triangle (`eigh`), so a
matrix cov's cotangent lives on that triangle, as np.linalg.cholesky's does: for a
symmetric perturbation it is the symmetric gradient -(inv(cov) - w w^T) / 2 summed over
the points (w = inv(cov) (x - mean)). The rules assume cov positive definite (SciPy's
`allow_singular=True` with a singular cov has a pseudo-inverse and a restricted support:
np.linalg.inv refuses an exactly singular matrix). A `scipy.stats.Covariance` object is
refused.
"""
import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.shapes import fit

try:
    import scipy.stats as st
except ImportError:  # pragma: no cover - SciPy is optional
    st = None


def _dim(mean, cov):
    if isinstance(cov, st.Covariance):
        raise NotImplementedError('no derivative rule for multivariate_normal with a '
                                  'scipy.stats.Covariance object: pass cov as an array')
    if mean is not None:
        return np.size(mean)
    return 1 if np.ndim(cov) < 2 else np.shape(cov)[0]


def _points_shape(x, dim):
    """The shape SciPy gives x: (..., dim)."""
    shape = np.shape(x)
    if len(shape) == 0:
        return (1,)
    if len(shape) == 1:
        return (shape[0], 1) if dim == 1 else (1, shape[0])
    return shape


def _matrix(cov, dim):
    """The covariance matrix SciPy reads from `cov` (a number, a diagonal, or a matrix's
    lower triangle, mirrored); linear in `cov`, so it maps a tangent of cov alike."""
    if dim == 1:
        return np.reshape(cov, (1, 1))
    if np.ndim(cov) == 0:
        return cov * np.eye(dim)
    if np.ndim(cov) == 1:
        return np.diag(cov)
    return np.tril(cov) + np.transpose(np.tril(cov, -1))


def _onto(gs, cov, dim):
    """The cotangent of `cov` from that of the matrix `_matrix` made of it (the adjoint)."""
    if dim == 1:
        return np.reshape(gs, np.shape(cov))
    if np.ndim(cov) == 0:
        return np.trace(gs)
    if np.ndim(cov) == 1:
        return np.diagonal(gs)
    return np.tril(gs + np.transpose(gs)) - gs * np.eye(dim)


def _whitened(x, mean, cov, dim):
    """inv(cov) (x - mean) at each point, shape (..., dim)."""
    points = np.reshape(x, _points_shape(x, dim))
    residual = points if mean is None else points - np.reshape(mean, (dim,))
    return residual @ np.linalg.inv(_matrix(cov, dim))


def _logpdf_vjp(g, ans, x, mean, cov, argument):
    """The cotangent of `argument` ('x', 'mean' or 'cov') from g, in ans's shape."""
    dim = _dim(mean, cov)
    shape = _points_shape(x, dim)
    w = _whitened(x, mean, cov, dim)
    gp = np.expand_dims(np.reshape(np.broadcast_to(g, np.shape(ans)), shape[:-1]), -1)
    if argument == 'x':
        return np.reshape(-gp * w, np.shape(x))
    w2, g2 = np.reshape(w, (-1, dim)), np.reshape(gp, (-1, 1))
    if argument == 'mean':
        return np.reshape(np.sum(g2 * w2, axis=0), np.shape(mean))
    precision = np.linalg.inv(_matrix(cov, dim))
    gs = -0.5 * (np.sum(g2) * precision - np.transpose(g2 * w2) @ w2)
    return _onto(gs, cov, dim)


def _logpdf_jvp(t, ans, x, mean, cov, argument):
    """The tangent of logpdf when `argument` moves along t, in ans's shape."""
    dim = _dim(mean, cov)
    w = _whitened(x, mean, cov, dim)
    if argument == 'x':
        moved = -np.sum(w * np.reshape(t, _points_shape(x, dim)), axis=-1)
    elif argument == 'mean':
        moved = np.sum(w * np.reshape(t, (dim,)), axis=-1)
    else:
        dcov = _matrix(t, dim)
        precision = np.linalg.inv(_matrix(cov, dim))
        moved = -0.5 * (np.sum(precision * dcov) - np.sum((w @ dcov) * w, axis=-1))
    return np.reshape(moved, np.shape(ans))


def mvn_logpdf_vjp_x(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g, ans, x, mean, cov, 'x'), x)
def mvn_logpdf_vjp_mean(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g, ans, x, mean, cov, 'mean'), mean)
def mvn_logpdf_vjp_cov(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g, ans, x, mean, cov, 'cov'), cov)
def mvn_logpdf_jvp_x(t, ans, x, mean=None, cov=1, allow_singular=False):
    return _logpdf_jvp(t, ans, x, mean, cov, 'x')
def mvn_logpdf_jvp_mean(t, ans, x, mean=None, cov=1, allow_singular=False):
    return _logpdf_jvp(t, ans, x, mean, cov, 'mean')
def mvn_logpdf_jvp_cov(t, ans, x, mean=None, cov=1, allow_singular=False):
    return _logpdf_jvp(t, ans, x, mean, cov, 'cov')
# pdf = exp(logpdf): its rules are logpdf's scaled by ans
def mvn_pdf_vjp_x(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g * ans, ans, x, mean, cov, 'x'), x)
def mvn_pdf_vjp_mean(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g * ans, ans, x, mean, cov, 'mean'), mean)
def mvn_pdf_vjp_cov(g, ans, x, mean=None, cov=1, allow_singular=False):
    return fit(_logpdf_vjp(g * ans, ans, x, mean, cov, 'cov'), cov)
def mvn_pdf_jvp_x(t, ans, x, mean=None, cov=1, allow_singular=False):
    return ans * _logpdf_jvp(t, ans, x, mean, cov, 'x')
def mvn_pdf_jvp_mean(t, ans, x, mean=None, cov=1, allow_singular=False):
    return ans * _logpdf_jvp(t, ans, x, mean, cov, 'mean')
def mvn_pdf_jvp_cov(t, ans, x, mean=None, cov=1, allow_singular=False):
    return ans * _logpdf_jvp(t, ans, x, mean, cov, 'cov')


if st is not None:
    _FORMS = ('x (..., D), mean (D,) or None, cov a number, diagonal or D x D matrix (its '
              'lower triangle, as SciPy reads it); SciPy squeezes the result')
    entry(st.multivariate_normal.logpdf, (mvn_logpdf_vjp_x, mvn_logpdf_vjp_mean,
                                          mvn_logpdf_vjp_cov),
          (mvn_logpdf_jvp_x, mvn_logpdf_jvp_mean, mvn_logpdf_jvp_cov), forms=_FORMS,
          name='scipy.stats.multivariate_normal.logpdf')
    entry(st.multivariate_normal.pdf, (mvn_pdf_vjp_x, mvn_pdf_vjp_mean, mvn_pdf_vjp_cov),
          (mvn_pdf_jvp_x, mvn_pdf_jvp_mean, mvn_pdf_jvp_cov), forms=_FORMS,
          name='scipy.stats.multivariate_normal.pdf')
