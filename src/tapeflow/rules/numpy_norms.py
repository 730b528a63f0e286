"""Rules for np.linalg's norms: norm (vector and matrix ords), vector_norm,
matrix_norm; axis None, an int or a pair, keepdims. The VJP spreads `g` over the
reduced axes times the norm's weights (`norm_weights`); the JVP is the sum of the
tangent times those weights.
"""
import numpy as np

from tapeflow.rules.numpy_reductions import kept_shape, reduced_axes
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import fit


def _norm_axes(x, ord, axis, vector=False):
    """('vector' or 'matrix', axes) for np.linalg.norm's `ord` and `axis`."""
    ndim = np.ndim(x)
    if vector:
        return 'vector', reduced_axes(ndim, axis)
    if axis is None:
        if ord is None or ndim == 1:
            return 'vector', tuple(range(ndim))
        return 'matrix', (0, 1)
    if isinstance(axis, (tuple, list)):
        axes = tuple(a % ndim for a in axis)
        return ('matrix', axes) if len(axes) == 2 else ('vector', axes)
    return 'vector', (axis % ndim,)


def _picked(values, axis, pick):
    hit = values == pick(values, axis=axis, keepdims=True)
    return hit / np.sum(hit, axis=axis, keepdims=True)


# Which axes a norm reduces, and the share of a max/min among ties: constant
# (piecewise), so the rules of the rules (second order) do not look inside.
nondifferentiable(_norm_axes, _picked)


def _vector_weights(x, norm, axes, ord):
    sign = np.conj(np.sign(x))
    if ord is None or ord == 2:
        return np.conj(x) / np.where(norm == 0, 1.0, norm)
    if ord == np.inf or ord == -np.inf:
        return sign * _picked(np.abs(x), axes, np.max if ord > 0 else np.min)
    if ord == 0:
        return 0.0 * sign
    if ord == 1:
        return sign
    return sign * np.abs(x) ** (ord - 1) / np.where(norm == 0, 1.0, norm) ** (ord - 1)


def _matrix_weights(x, norm, axes, ord):
    row, col = axes
    if ord is None or ord == 'fro':
        return np.conj(x) / np.where(norm == 0, 1.0, norm)
    if ord in (1, -1, np.inf, -np.inf):
        summed, across = (row, col) if ord in (1, -1) else (col, row)
        sums = np.sum(np.abs(x), axis=summed, keepdims=True)
        return np.conj(np.sign(x)) * _picked(sums, across, np.max if ord > 0 else np.min)
    moved = np.moveaxis(x, (row, col), (-2, -1))
    u, s, vh = np.linalg.svd(moved, full_matrices=False)
    if ord == 'nuc':
        weights = u @ vh
    else:
        k = 0 if ord == 2 else -1
        weights = np.expand_dims(u[..., :, k], -1) * np.expand_dims(vh[..., k, :], -2)
    # d sigma = Re(u^H dX v): the cotangent per unit is conj(u v^H) (real: u v^T)
    return np.moveaxis(np.conj(weights), (-2, -1), (row, col))


def norm_weights(x, ans, ord, axis, keepdims, vector=False):
    """d norm / d x, broadcast over x's shape (one norm per reduced block)."""
    kind, axes = _norm_axes(x, ord, axis, vector)
    norm = ans if keepdims else np.reshape(ans, kept_shape(np.shape(x), axes))
    if kind == 'vector':
        return _vector_weights(x, norm, axes, ord), axes
    return _matrix_weights(x, norm, axes, ord), axes


def _norm_vjp(g, ans, x, ord, axis, keepdims, vector=False):
    weights, axes = norm_weights(x, ans, ord, axis, keepdims, vector)
    g = g if keepdims else np.reshape(g, kept_shape(np.shape(x), axes))
    return np.real(g) * weights            # a norm is real: the real part of g pairs with it


def _norm_jvp(t, ans, x, ord, axis, keepdims, vector=False):
    weights, axes = norm_weights(x, ans, ord, axis, keepdims, vector)
    return np.real(np.sum(t * weights, axis=axes, keepdims=keepdims))


def norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    return fit(_norm_vjp(g, ans, x, ord, axis, keepdims), x)

def norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    return _norm_jvp(t, ans, x, ord, axis, keepdims)

def vector_norm_vjp(g, ans, x, axis=None, keepdims=False, ord=2):
    return fit(_norm_vjp(g, ans, x, ord, axis, keepdims, True), x)

def vector_norm_jvp(t, ans, x, axis=None, keepdims=False, ord=2):
    return _norm_jvp(t, ans, x, ord, axis, keepdims, True)

def matrix_norm_vjp(g, ans, x, keepdims=False, ord='fro'):
    return fit(_norm_vjp(g, ans, x, ord, (-2, -1), keepdims), x)

def matrix_norm_jvp(t, ans, x, keepdims=False, ord='fro'):
    return _norm_jvp(t, ans, x, ord, (-2, -1), keepdims)


# ---------------------------------------------------------------- registration

entry(np.linalg.norm, norm_vjp, norm_jvp, name='numpy.linalg.norm',
      forms='vector ords (None, 2, 1, inf, -inf, 0, any p) and matrix ords (fro, nuc, '
            '1, -1, 2, -2, inf, -inf); axis None/int/pair; keepdims')
entry(np.linalg.vector_norm, vector_norm_vjp, vector_norm_jvp, name='numpy.linalg.vector_norm',
      forms='any ord, axis None/int/tuple, keepdims')
entry(np.linalg.matrix_norm, matrix_norm_vjp, matrix_norm_jvp, name='numpy.linalg.matrix_norm',
      forms='ord fro, nuc, 1, -1, 2, -2, inf, -inf; keepdims')
