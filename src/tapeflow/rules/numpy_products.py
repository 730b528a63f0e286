"""Rules for products: dot, vdot, inner, outer, tensordot, kron, cross,
vecdot, matvec, vecmat (and their np.linalg twins), convolve, correlate
(interp and polyval are in `numpy_interp`).

(matmul and `@` live in `operators`.) All products are bilinear; each VJP is
the other factor contracted with `g`, permuted back to the operand's axis
order and summed over broadcast batch axes. The complex pairing is bilinear
(no conjugation) except where the function itself conjugates (vdot, vecdot,
vecmat).
"""
import operator

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import alias, describe
from tapeflow.rules.shapes import fit


# ---------------------------------------------------------------- tensordot and dot

def _contracted(a_ndim, b_ndim, axes):
    """tensordot's `axes` as two lists of non-negative, paired axes."""
    if isinstance(axes, (int, np.integer)):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    return [i % a_ndim for i in a_axes], [i % b_ndim for i in b_axes]


def _permutation(order):
    """The inverse of the permutation `order`, as a tuple of ints (Dask's transpose
    takes no array of axes)."""
    return tuple(int(i) for i in np.argsort(order))


def tensordot_grad_a(g, a, b, axes):
    """The cotangent of `a` in `np.tensordot(a, b, axes)`."""
    a_ax, b_ax = _contracted(np.ndim(a), np.ndim(b), axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_ax]
    b_free = [i for i in range(np.ndim(b)) if i not in b_ax]
    g_b = list(range(len(a_free), len(a_free) + len(b_free)))
    out = np.tensordot(g, b, axes=(g_b, b_free))
    order = a_free + [a_ax[k] for k in np.argsort(b_ax)]
    return np.transpose(out, _permutation(order)) if order else out


def tensordot_grad_b(g, a, b, axes):
    """The cotangent of `b` in `np.tensordot(a, b, axes)`."""
    a_ax, b_ax = _contracted(np.ndim(a), np.ndim(b), axes)
    a_free = [i for i in range(np.ndim(a)) if i not in a_ax]
    b_free = [i for i in range(np.ndim(b)) if i not in b_ax]
    out = np.tensordot(a, g, axes=(a_free, list(range(len(a_free)))))
    order = [b_ax[k] for k in np.argsort(a_ax)] + b_free
    return np.transpose(out, _permutation(order)) if order else out


def _dot_axes(a, b):
    return [np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]


def _scalar_operand(a, b):
    return np.ndim(a) == 0 or np.ndim(b) == 0


def _dot_grad_a(g, a, b):
    return g * b if _scalar_operand(a, b) else tensordot_grad_a(g, a, b, _dot_axes(a, b))


def _dot_grad_b(g, a, b):
    return g * a if _scalar_operand(a, b) else tensordot_grad_b(g, a, b, _dot_axes(a, b))


def _inner_grad_a(g, a, b):
    return g * b if _scalar_operand(a, b) else tensordot_grad_a(g, a, b, ([-1], [-1]))


def _inner_grad_b(g, a, b):
    return g * a if _scalar_operand(a, b) else tensordot_grad_b(g, a, b, ([-1], [-1]))


def tensordot_vjp_a(g, ans, a, b, axes=2): return fit(tensordot_grad_a(g, a, b, axes), a)
def tensordot_vjp_b(g, ans, a, b, axes=2): return fit(tensordot_grad_b(g, a, b, axes), b)
def tensordot_jvp_a(t, ans, a, b, axes=2): return np.tensordot(t, b, axes)
def tensordot_jvp_b(t, ans, a, b, axes=2): return np.tensordot(a, t, axes)
def dot_vjp_a(g, ans, a, b, out=None): return fit(_dot_grad_a(g, a, b), a)
def dot_vjp_b(g, ans, a, b, out=None): return fit(_dot_grad_b(g, a, b), b)
def dot_jvp_a(t, ans, a, b, out=None): return np.dot(t, b)
def dot_jvp_b(t, ans, a, b, out=None): return np.dot(a, t)
def inner_vjp_a(g, ans, a, b): return fit(_inner_grad_a(g, a, b), a)
def inner_vjp_b(g, ans, a, b): return fit(_inner_grad_b(g, a, b), b)
def inner_jvp_a(t, ans, a, b): return np.inner(t, b)
def inner_jvp_b(t, ans, a, b): return np.inner(a, t)
def outer_vjp_a(g, ans, a, b, out=None):
    return fit(np.reshape(np.dot(g, np.ravel(b)), np.shape(a)), a)

def outer_vjp_b(g, ans, a, b, out=None):
    return fit(np.reshape(np.dot(np.ravel(a), g), np.shape(b)), b)

def outer_jvp_a(t, ans, a, b, out=None): return np.outer(t, b)
def outer_jvp_b(t, ans, a, b, out=None): return np.outer(a, t)
def vdot_vjp_a(g, ans, a, b): return fit(np.reshape(np.conj(g * np.ravel(b)), np.shape(a)), a)
def vdot_vjp_b(g, ans, a, b): return fit(np.reshape(g * np.conj(np.ravel(a)), np.shape(b)), b)
def vdot_jvp_a(t, ans, a, b): return np.vdot(t, b)
def vdot_jvp_b(t, ans, a, b): return np.vdot(a, t)


# ---------------------------------------------------------------- kron, cross

def _kron_parts(g, a, b):
    ndim = max(np.ndim(a), np.ndim(b))
    a_shape = (1,) * (ndim - np.ndim(a)) + np.shape(a)
    b_shape = (1,) * (ndim - np.ndim(b)) + np.shape(b)
    interleaved = tuple(n for pair in zip(a_shape, b_shape) for n in pair)
    return np.reshape(g, interleaved), a_shape, b_shape, ndim


def _kron_grad_a(g, a, b):
    blocks, a_shape, b_shape, ndim = _kron_parts(g, a, b)
    b_axes = list(range(1, 2 * ndim, 2))
    out = np.tensordot(blocks, np.reshape(b, b_shape), axes=(b_axes, list(range(ndim))))
    return np.reshape(out, np.shape(a))


def _kron_grad_b(g, a, b):
    blocks, a_shape, b_shape, ndim = _kron_parts(g, a, b)
    a_axes = list(range(0, 2 * ndim, 2))
    out = np.tensordot(np.reshape(a, a_shape), blocks, axes=(list(range(ndim)), a_axes))
    return np.reshape(out, np.shape(b))


def kron_vjp_a(g, ans, a, b): return fit(_kron_grad_a(g, a, b), a)
def kron_vjp_b(g, ans, a, b): return fit(_kron_grad_b(g, a, b), b)
def kron_jvp_a(t, ans, a, b): return np.kron(t, b)
def kron_jvp_b(t, ans, a, b): return np.kron(a, t)
def _fit_vectors(cot, x, axis):
    """`cot` (vectors along `axis`) summed over broadcast batch axes to x's shape."""
    moved = fit(np.moveaxis(cot, axis, -1), np.moveaxis(x, axis, -1))
    return np.moveaxis(moved, -1, axis)


def cross_vjp_a(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return _fit_vectors(np.cross(b, g, axisb, axisc, axisa, axis), a,
                        axisa if axis is None else axis)

def cross_vjp_b(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return _fit_vectors(np.cross(g, a, axisc, axisa, axisb, axis), b,
                        axisb if axis is None else axis)

def cross_jvp_a(t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return np.cross(t, b, axisa, axisb, axisc, axis)

def cross_jvp_b(t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return np.cross(a, t, axisa, axisb, axisc, axis)

def linalg_cross_vjp_a(g, ans, x1, x2, axis=-1):
    return _fit_vectors(np.linalg.cross(x2, g, axis=axis), x1, axis)

def linalg_cross_vjp_b(g, ans, x1, x2, axis=-1):
    return _fit_vectors(np.linalg.cross(g, x1, axis=axis), x2, axis)

def linalg_cross_jvp_a(t, ans, x1, x2, axis=-1): return np.linalg.cross(t, x2, axis=axis)
def linalg_cross_jvp_b(t, ans, x1, x2, axis=-1): return np.linalg.cross(x1, t, axis=axis)


# ---------------------------------------------------------------- vecdot, matvec, vecmat

def vecdot_vjp_a(g, ans, x1, x2, axis=-1):
    return fit(np.conj(np.expand_dims(g, axis) * x2), x1)

def vecdot_vjp_b(g, ans, x1, x2, axis=-1):
    return fit(np.expand_dims(g, axis) * np.conj(x1), x2)

def vecdot_jvp_a(t, ans, x1, x2, axis=-1): return np.vecdot(t, x2, axis=axis)
def vecdot_jvp_b(t, ans, x1, x2, axis=-1): return np.vecdot(x1, t, axis=axis)
def matvec_vjp_a(g, ans, x1, x2):
    return fit(np.expand_dims(g, -1) * np.expand_dims(x2, -2), x1)

def matvec_vjp_b(g, ans, x1, x2): return fit(np.matvec(np.swapaxes(x1, -1, -2), g), x2)
def matvec_jvp_a(t, ans, x1, x2): return np.matvec(t, x2)
def matvec_jvp_b(t, ans, x1, x2): return np.matvec(x1, t)
def vecmat_vjp_a(g, ans, x1, x2): return fit(np.conj(np.matvec(x2, g)), x1)
def vecmat_vjp_b(g, ans, x1, x2):
    return fit(np.expand_dims(np.conj(x1), -1) * np.expand_dims(g, -2), x2)

def vecmat_jvp_a(t, ans, x1, x2): return np.vecmat(t, x2)
def vecmat_jvp_b(t, ans, x1, x2): return np.vecmat(x1, t)


# ---------------------------------------------------------------- convolve, correlate

def _full(g, mode, na, nv, correlate):
    """`g` placed in the 'full'-mode output it is a window of."""
    overlap = min(na, nv) - 1
    start = {'full': 0, 'valid': overlap}.get(mode)
    if start is None:
        start = overlap - overlap // 2 if correlate and na < nv else overlap // 2
    return np.pad(g, (start, na + nv - 1 - start - np.shape(g)[0]))


def convolve_vjp_a(g, ans, a, v, mode='full'):
    return fit(np.correlate(_full(g, mode, np.size(a), np.size(v), False), np.conj(v), 'valid'), a)

def convolve_vjp_v(g, ans, a, v, mode='full'):
    return fit(np.correlate(_full(g, mode, np.size(a), np.size(v), False), np.conj(a), 'valid'), v)

def convolve_jvp_a(t, ans, a, v, mode='full'): return np.convolve(t, v, mode)
def convolve_jvp_v(t, ans, a, v, mode='full'): return np.convolve(a, t, mode)
def correlate_vjp_a(g, ans, a, v, mode='valid'):
    return fit(np.correlate(_full(g, mode, np.size(a), np.size(v), True), np.flip(v), 'valid'), a)

def correlate_vjp_v(g, ans, a, v, mode='valid'):
    full = _full(g, mode, np.size(a), np.size(v), True)
    return fit(np.conj(np.flip(np.correlate(full, np.conj(a), 'valid'))), v)

def correlate_jvp_a(t, ans, a, v, mode='valid'): return np.correlate(t, v, mode)
def correlate_jvp_v(t, ans, a, v, mode='valid'): return np.correlate(a, t, mode)


# ---------------------------------------------------------------- batches of tangents
# `t` is `(B,) + shape` of one operand (rules/batching.py); each rule gives
# `(B,) + shape(ans)`, the batch axis kept out of contractions and broadcasting.

def _rows(t, ndim):
    """The batch `t` with 1s after the batch axis, up to `1 + ndim` axes."""
    missing = ndim + 1 - np.ndim(t)
    return np.reshape(t, t.shape[:1] + (1,) * missing + t.shape[1:]) if missing > 0 else t


def _scaled_batch(t, other):
    """`t * other` for a scalar operand moving along the batch `t` (B,)."""
    return _rows(t, np.ndim(other)) * other


def tensordot_jvp_a_batched(t, ans, a, b, axes=2):
    a_ax, b_ax = _contracted(np.ndim(a), np.ndim(b), axes)
    return np.tensordot(t, b, ([i + 1 for i in a_ax], b_ax))

def tensordot_jvp_b_batched(t, ans, a, b, axes=2):
    a_ax, b_ax = _contracted(np.ndim(a), np.ndim(b), axes)
    out = np.tensordot(a, t, (a_ax, [i + 1 for i in b_ax]))
    return np.moveaxis(out, np.ndim(a) - len(a_ax), 0)

def dot_jvp_a_batched(t, ans, a, b, out=None):
    return _scaled_batch(t, b) if np.ndim(a) == 0 else np.dot(t, b)

def dot_jvp_b_batched(t, ans, a, b, out=None):
    if _scalar_operand(a, b):
        return _scaled_batch(t, a) if np.ndim(b) == 0 else a * t
    # np.dot(a, rows) puts the batch axis after a's free axes; b 1-D: rows as columns
    rows = np.moveaxis(t, 0, -1) if np.ndim(b) == 1 else t
    return np.moveaxis(np.dot(a, rows), np.ndim(a) - 1, 0)

def inner_jvp_a_batched(t, ans, a, b):
    return _scaled_batch(t, b) if np.ndim(a) == 0 else np.inner(t, b)

def inner_jvp_b_batched(t, ans, a, b):
    if _scalar_operand(a, b):
        return _scaled_batch(t, a) if np.ndim(b) == 0 else a * t
    return np.moveaxis(np.inner(a, t), np.ndim(a) - 1, 0)

def outer_jvp_a_batched(t, ans, a, b, out=None):
    return np.reshape(t, t.shape[:1] + (-1, 1)) * np.ravel(b)

def outer_jvp_b_batched(t, ans, a, b, out=None):
    return np.reshape(np.ravel(a), (-1, 1)) * np.reshape(t, t.shape[:1] + (1, -1))

def vdot_jvp_a_batched(t, ans, a, b):
    return np.conj(np.reshape(t, t.shape[:1] + (-1,))) @ np.ravel(b)

def vdot_jvp_b_batched(t, ans, a, b):
    return np.reshape(t, t.shape[:1] + (-1,)) @ np.conj(np.ravel(a))

# generalized ufuncs: the batch axis goes first among the loop axes, which
# `_rows` lines up (an operand's core axes: 1 for a vector, 2 for a matrix)

def vecdot_jvp_a_batched(t, ans, x1, x2, axis=-1):
    moved = np.moveaxis(t, axis % np.ndim(x1) + 1, -1)
    return np.vecdot(_rows(moved, np.ndim(ans) + 1), np.moveaxis(x2, axis, -1))

def vecdot_jvp_b_batched(t, ans, x1, x2, axis=-1):
    moved = np.moveaxis(t, axis % np.ndim(x2) + 1, -1)
    return np.vecdot(np.moveaxis(x1, axis, -1), _rows(moved, np.ndim(ans) + 1))

def matvec_jvp_a_batched(t, ans, x1, x2): return np.matvec(_rows(t, np.ndim(ans) + 1), x2)
def matvec_jvp_b_batched(t, ans, x1, x2): return np.matvec(x1, _rows(t, np.ndim(ans)))
def vecmat_jvp_a_batched(t, ans, x1, x2): return np.vecmat(_rows(t, np.ndim(ans)), x2)
def vecmat_jvp_b_batched(t, ans, x1, x2): return np.vecmat(x1, _rows(t, np.ndim(ans) + 1))


# ---------------------------------------------------------------- registration

for _fn in (np.tensordot, np.linalg.tensordot):
    entry(_fn, (tensordot_vjp_a, tensordot_vjp_b), (tensordot_jvp_a, tensordot_jvp_b),
          batched=(tensordot_jvp_a_batched, tensordot_jvp_b_batched),
          forms='axes int or pair of ints/sequences (negative too)')
entry(np.dot, (dot_vjp_a, dot_vjp_b), (dot_jvp_a, dot_jvp_b),
      batched=(dot_jvp_a_batched, dot_jvp_b_batched),
      forms='any ranks (0-d multiplies); complex (bilinear)')
entry(np.inner, (inner_vjp_a, inner_vjp_b), (inner_jvp_a, inner_jvp_b),
      batched=(inner_jvp_a_batched, inner_jvp_b_batched),
      forms='any ranks (0-d multiplies); complex (bilinear)')
for _fn, _forms in [(np.outer, 'any shapes (flattened)'), (np.linalg.outer, '1-D operands')]:
    entry(_fn, (outer_vjp_a, outer_vjp_b), (outer_jvp_a, outer_jvp_b),
          batched=(outer_jvp_a_batched, outer_jvp_b_batched), forms=_forms)
entry(np.vdot, (vdot_vjp_a, vdot_vjp_b), (vdot_jvp_a, vdot_jvp_b),
      batched=(vdot_jvp_a_batched, vdot_jvp_b_batched), forms='any shapes (flattened)')
entry(np.kron, (kron_vjp_a, kron_vjp_b), (kron_jvp_a, kron_jvp_b),
      forms='any ranks (padded with leading 1s)')
entry(np.cross, (cross_vjp_a, cross_vjp_b), (cross_jvp_a, cross_jvp_b),
      forms='3-vectors, broadcasting batches; axisa, axisb, axisc, axis')
entry(np.linalg.cross, (linalg_cross_vjp_a, linalg_cross_vjp_b),
      (linalg_cross_jvp_a, linalg_cross_jvp_b), forms='3-vectors, broadcasting batches; axis')
for _fn in (np.vecdot, np.linalg.vecdot):
    entry(_fn, (vecdot_vjp_a, vecdot_vjp_b), (vecdot_jvp_a, vecdot_jvp_b),
          batched=(vecdot_jvp_a_batched, vecdot_jvp_b_batched), forms='broadcasting batches; axis')
entry(np.matvec, (matvec_vjp_a, matvec_vjp_b), (matvec_jvp_a, matvec_jvp_b),
      batched=(matvec_jvp_a_batched, matvec_jvp_b_batched), forms='broadcasting batches')
entry(np.vecmat, (vecmat_vjp_a, vecmat_vjp_b), (vecmat_jvp_a, vecmat_jvp_b),
      batched=(vecmat_jvp_a_batched, vecmat_jvp_b_batched), forms='broadcasting batches')
for _fn, _vjps, _jvps in [
        (np.convolve, (convolve_vjp_a, convolve_vjp_v), (convolve_jvp_a, convolve_jvp_v)),
        (np.correlate, (correlate_vjp_a, correlate_vjp_v), (correlate_jvp_a, correlate_jvp_v))]:
    entry(_fn, _vjps, _jvps, forms='1-D real operands; mode full/same/valid')

alias(np.linalg.matmul, operator.matmul)

describe('every rank NumPy accepts (1-D, batched, broadcast)', np.linalg.matmul)
