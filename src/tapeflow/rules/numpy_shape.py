"""Rules for functions that change shape or layout without arithmetic:
reshape, transpose, swapaxes, moveaxis, expand_dims/squeeze, flip, roll,
rot90, tile, repeat, broadcast_to, atleast_*d, triu/tril, copies and casts,
`np.array([...])` of differentiable values, meshgrid (full, linspace and arange
are in `numpy_constructors`).

Each is linear: the JVP applies the function to the tangent, the VJP applies
its transpose (the inverse permutation, a sum over repeats...). The
cotangent of a list argument (`np.array([a, b])`) is a list.
"""
import numpy as np

from tapeflow.rules.array_ops import positions, scatter_add
from tapeflow.rules.batching import lift_tangent
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import defjvp, defvjp, describe, linear_pair
from tapeflow.rules.shapes import fill_zeros, fit, stack_batch, structure_shape

__all__ = ['flatten', 'astype', 'MAX_ARGS']

# Variadic primitives (atleast_1d(*arys), meshgrid, broadcast_arrays) have
# rules for this many positional arguments.
MAX_ARGS = 32


def _inverse(axes):
    if axes is None:
        return None
    return tuple(int(i) for i in np.argsort([a % len(axes) for a in axes]))


def _negated(shift):
    return tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift


def _dummy(shape):
    """A zero-cost array of `shape` to ask NumPy what shape a call gives."""
    return np.broadcast_to(np.zeros((), dtype=bool), shape)


def _rollaxis_destination(ndim, axis, start):
    axis = axis % ndim
    start = start + ndim if start < 0 else start
    return start - 1 if axis < start else start


# ---------------------------------------------------------------- reshaping

def flatten(a, order='C'):
    """`a.flatten(order)`: a copy, flattened (the method has no NumPy function)."""
    if order == 'C':            # (Dask's reshape and ravel take no order)
        return np.reshape(np.copy(a), -1)
    return np.reshape(np.copy(a), -1, order=order)


def reshape_vjp(g, ans, a, shape=None, order='C', copy=None):
    if order == 'C':            # (Dask's reshape takes no order)
        return fit(np.reshape(g, np.shape(a)), a)
    return fit(np.reshape(g, np.shape(a), order=order), a)

def reshape_jvp(t, ans, a, shape=None, order='C', copy=None):
    if order == 'C':
        return np.reshape(t, np.shape(ans))
    return np.reshape(t, np.shape(ans), order=order)

def ravel_vjp(g, ans, a, order='C'): return reshape_vjp(g, ans, a, order=order)
def ravel_jvp(t, ans, a, order='C'): return np.ravel(t) if order == 'C' else np.ravel(t, order=order)
def flatten_jvp(t, ans, a, order='C'): return flatten(t, order)
def expand_dims_vjp(g, ans, a, axis): return fit(np.reshape(g, np.shape(a)), a)
def expand_dims_jvp(t, ans, a, axis): return np.expand_dims(t, axis)
def squeeze_vjp(g, ans, a, axis=None): return fit(np.reshape(g, np.shape(a)), a)
def squeeze_jvp(t, ans, a, axis=None): return np.reshape(t, np.shape(ans))
def atleast_vjp(g, ans, *arys, _i=0):
    return fit(np.reshape(fill_zeros(g, ans)[_i] if len(arys) > 1 else g, np.shape(arys[_i])),
               arys[_i])


# ---------------------------------------------------------------- permuting axes

def transpose_vjp(g, ans, a, axes=None): return fit(np.transpose(g, _inverse(axes)), a)
def transpose_jvp(t, ans, a, axes=None): return np.transpose(t, axes)
def matrix_transpose_vjp(g, ans, x): return fit(np.swapaxes(g, -1, -2), x)
def matrix_transpose_jvp(t, ans, x): return np.swapaxes(t, -1, -2)
def swapaxes_vjp(g, ans, a, axis1, axis2): return fit(np.swapaxes(g, axis1, axis2), a)
def swapaxes_jvp(t, ans, a, axis1, axis2): return np.swapaxes(t, axis1, axis2)
def moveaxis_vjp(g, ans, a, source, destination): return fit(np.moveaxis(g, destination, source), a)
def moveaxis_jvp(t, ans, a, source, destination): return np.moveaxis(t, source, destination)
def rollaxis_vjp(g, ans, a, axis, start=0):
    return fit(np.moveaxis(g, _rollaxis_destination(np.ndim(a), axis, start), axis), a)

def rollaxis_jvp(t, ans, a, axis, start=0): return np.rollaxis(t, axis, start)


# ---------------------------------------------------------------- flips, rolls

def flip_vjp(g, ans, m, axis=None): return fit(np.flip(g, axis), m)
def flip_jvp(t, ans, m, axis=None): return np.flip(t, axis)
def fliplr_vjp(g, ans, m): return fit(np.fliplr(g), m)
def fliplr_jvp(t, ans, m): return np.fliplr(t)
def flipud_vjp(g, ans, m): return fit(np.flipud(g), m)
def flipud_jvp(t, ans, m): return np.flipud(t)
def roll_vjp(g, ans, a, shift, axis=None): return fit(np.roll(g, _negated(shift), axis), a)
def roll_jvp(t, ans, a, shift, axis=None): return np.roll(t, shift, axis)
def rot90_vjp(g, ans, m, k=1, axes=(0, 1)): return fit(np.rot90(g, -k, axes), m)
def rot90_jvp(t, ans, m, k=1, axes=(0, 1)): return np.rot90(t, k, axes)
def triu_vjp(g, ans, m, k=0): return fit(np.triu(g, k), m)
def triu_jvp(t, ans, m, k=0): return np.triu(t, k)
def tril_vjp(g, ans, m, k=0): return fit(np.tril(g, k), m)
def tril_jvp(t, ans, m, k=0): return np.tril(t, k)


# ---------------------------------------------------------------- repeats, broadcasts

def _untile(g, a, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(a)
    ndim = max(len(shape), len(reps))
    shape_full = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    interleaved = tuple(n for pair in zip(reps, shape_full) for n in pair)
    summed = np.sum(np.reshape(g, interleaved), axis=tuple(range(0, 2 * ndim, 2)))
    return np.reshape(summed, shape)


def _unrepeat(g, a, repeats, axis):
    shape = np.shape(a)
    if np.ndim(repeats) == 0:
        if axis is None:
            # (size, repeats), never (-1, repeats): -1 is ambiguous when repeats is 0
            return np.reshape(np.sum(np.reshape(g, (int(np.prod(shape)), repeats)), axis=1), shape)
        axis = axis % len(shape)
        split = shape[:axis + 1] + (repeats,) + shape[axis + 1:]
        return np.sum(np.reshape(g, split), axis=axis + 1)
    where = np.repeat(positions(shape), repeats, axis)
    return scatter_add(g, where, shape)


def tile_vjp(g, ans, A, reps): return fit(_untile(g, A, reps), A)
def tile_jvp(t, ans, A, reps): return np.tile(t, reps)
def repeat_vjp(g, ans, a, repeats, axis=None): return fit(_unrepeat(g, a, repeats, axis), a)
def repeat_jvp(t, ans, a, repeats, axis=None): return np.repeat(t, repeats, axis)
def broadcast_to_vjp(g, ans, array, shape, subok=False): return fit(g, array)
def broadcast_to_jvp(t, ans, array, shape, subok=False): return np.broadcast_to(t, shape)
def broadcast_arrays_vjp(g, ans, *args, _i=0, **kw): return fit(fill_zeros(g, ans)[_i], args[_i])
def broadcast_arrays_jvp(t, ans, *args, _i=0, **kw):
    return tuple(np.broadcast_to(t, np.shape(out)) if k == _i else np.zeros_like(out) for k,
                 out in enumerate(ans))


# ---------------------------------------------------------------- copies, casts, arrays

def astype(x, dtype, order='K', casting='unsafe', subok=True, copy=True):
    """`x.astype(dtype, ...)` as a function (the method's arguments)."""
    return x.astype(dtype, order=order, casting=casting, subok=subok, copy=copy)


def _cast_back(g, x, dtype):
    """The cotangent through a cast: zero through a cast to an integer type."""
    if not np.issubdtype(np.dtype(dtype), np.inexact):
        return 0.0 * g
    return g


def _pack(t):
    """np.array of a (nested) sequence of tangents, through np.stack (Tensors dispatch)."""
    if isinstance(t, (list, tuple)):
        return np.stack([_pack(item) for item in t])
    return t


def _ndmin(t, ndmin):
    return np.reshape(t, (1,) * (ndmin - np.ndim(t)) + np.shape(t)) if ndmin > np.ndim(t) else t


def copy_vjp(g, ans, a, order='K', subok=False):
    # `ys.copy()`, `d.copy()` of a list or dict (the method's name is NumPy's): the same slots
    return g if ans.__class__ in (list, dict) else fit(g, a)


def copy_jvp(t, ans, a, order='K', subok=False):
    return t.copy() if ans.__class__ in (list, dict) and t.__class__ in (list, dict) \
        else np.copy(t)


def astype_vjp(g, ans, x, dtype, order='K', casting='unsafe', subok=True, copy=True, device=None):
    return fit(_cast_back(g, x, dtype), x)

def astype_jvp(t, ans, x, dtype, order='K', casting='unsafe', subok=True, copy=True, device=None):
    return _in_dtype(_cast_back(t, x, dtype), ans.dtype)

def array_vjp(g, ans, obj, dtype=None, order=None, copy=None, subok=False, ndmin=0, like=None,
              device=None):
    return fit(np.reshape(g, structure_shape(obj)), obj)

def array_jvp(t, ans, obj, dtype=None, order=None, copy=None, subok=False, ndmin=0, like=None,
              device=None):
    return _in_dtype(_ndmin(_pack(t), ndmin), ans.dtype)


def _in_dtype(t, dtype):
    """The tangent `t` cast to `dtype`; a Python number (the tangent of a 0-d value, in
    generated code differentiated again) made an array first."""
    if t.__class__ in (float, int, complex):
        t = np.asarray(t)
    return t.astype(dtype)


# ---------------------------------------------------------------- meshgrid

def _meshgrid_axis(i, count, indexing):
    if indexing == 'xy' and count >= 2 and i < 2:
        return 1 - i
    return i


def meshgrid_vjp(g, ans, *xi, _i=0, indexing='xy', **kw):
    g = fill_zeros(g, ans)[_i]
    keep = _meshgrid_axis(_i, len(xi), indexing)
    summed = np.sum(g, axis=tuple(k for k in range(np.ndim(g)) if k != keep))
    return fit(np.reshape(summed, np.shape(xi[_i])), xi[_i])


def meshgrid_jvp(t, ans, *xi, _i=0, **kw):
    return tuple(np.meshgrid(*[t if k == _i else np.zeros_like(x) for k, x in enumerate(xi)], **kw))


# ---------------------------------------------------------------- batches of tangents
# `t` is `(B,) + shape(x)` (rules/batching.py): axes shift by one past the
# batch axis, and reshapes keep the batch axis whole.

def _batch_axis(axis, ndim):
    """`axis` (an int or ints, negative too) of an array of `ndim` axes, in its batch."""
    if np.ndim(axis):
        return tuple(int(a) % ndim + 1 for a in axis)
    return int(axis) % ndim + 1


def _all_axes(t):
    return tuple(range(1, np.ndim(t)))


def reshape_batch(t, shape, order='C'):
    """Each row of the batch `t` reshaped to `shape`, in `order`."""
    shape = tuple(shape)
    if order == 'F':          # F order with the batch axis last reshapes each row alone
        moved = np.reshape(np.moveaxis(t, 0, -1), shape + t.shape[:1], order='F')
        return np.moveaxis(moved, -1, 0)
    if order in ('C', None):
        return np.reshape(t, t.shape[:1] + shape)
    return np.stack([np.reshape(r, shape, order=order) for r in t])   # 'A', 'K': per layout


def reshape_jvp_batched(t, ans, a, shape=None, order='C', copy=None):
    return reshape_batch(t, np.shape(ans), order)

def ravel_jvp_batched(t, ans, a, order='C'): return reshape_batch(t, np.shape(ans), order)
def same_size_jvp_batched(t, ans, a, axis=None): return np.reshape(t, t.shape[:1] + np.shape(ans))
def transpose_jvp_batched(t, ans, a, axes=None):
    if axes is None:
        return np.transpose(t, (0,) + tuple(range(np.ndim(a), 0, -1)))
    return np.transpose(t, (0,) + _batch_axis(axes, np.ndim(a)))

def swapaxes_jvp_batched(t, ans, a, axis1, axis2):
    return np.swapaxes(t, _batch_axis(axis1, np.ndim(a)), _batch_axis(axis2, np.ndim(a)))

def moveaxis_jvp_batched(t, ans, a, source, destination):
    return np.moveaxis(t, _batch_axis(source, np.ndim(a)), _batch_axis(destination, np.ndim(a)))

def rollaxis_jvp_batched(t, ans, a, axis, start=0):
    ndim = np.ndim(a)
    return np.moveaxis(t, axis % ndim + 1, _rollaxis_destination(ndim, axis, start) + 1)

def flip_jvp_batched(t, ans, m, axis=None):
    return np.flip(t, _all_axes(t) if axis is None else _batch_axis(axis, np.ndim(m)))

def fliplr_jvp_batched(t, ans, m): return np.flip(t, 2)
def flipud_jvp_batched(t, ans, m): return np.flip(t, 1)
def roll_jvp_batched(t, ans, a, shift, axis=None):
    if axis is None:
        return np.reshape(np.roll(np.reshape(t, t.shape[:1] + (-1,)), shift, 1), t.shape)
    return np.roll(t, shift, _batch_axis(axis, np.ndim(a)))

def rot90_jvp_batched(t, ans, m, k=1, axes=(0, 1)):
    return np.rot90(t, k, _batch_axis(axes, np.ndim(m)))

def triu_jvp_batched(t, ans, m, k=0):
    return np.triu(t, k) if np.ndim(m) >= 2 else np.stack([np.triu(r, k) for r in t])

def tril_jvp_batched(t, ans, m, k=0):
    return np.tril(t, k) if np.ndim(m) >= 2 else np.stack([np.tril(r, k) for r in t])

def tile_jvp_batched(t, ans, A, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(len(reps), np.ndim(A))
    rows = np.reshape(t, t.shape[:1] + (1,) * (ndim - np.ndim(A)) + np.shape(A))
    return np.tile(rows, (1,) * (ndim + 1 - len(reps)) + reps)

def repeat_jvp_batched(t, ans, a, repeats, axis=None):
    if axis is None:
        return np.repeat(np.reshape(t, t.shape[:1] + (-1,)), repeats, 1)
    return np.repeat(t, repeats, _batch_axis(axis, np.ndim(a)))

def broadcast_to_jvp_batched(t, ans, array, shape, subok=False):
    return np.broadcast_to(lift_tangent(t, array, ans), t.shape[:1] + np.shape(ans))

def array_jvp_batched(t, ans, obj, dtype=None, order=None, copy=None, subok=False, ndmin=0,
                      like=None, device=None):
    batch = stack_batch(t, obj)
    return np.reshape(batch, batch.shape[:1] + np.shape(ans)).astype(ans.dtype)


# ---------------------------------------------------------------- registration

RESHAPE = 'any shape (-1 allowed), order C/F'
entry(np.reshape, reshape_vjp, reshape_jvp, batched=reshape_jvp_batched, static=(1,),
      forms=RESHAPE)
entry(np.ravel, ravel_vjp, ravel_jvp, batched=ravel_jvp_batched, forms=RESHAPE)
entry(flatten, ravel_vjp, flatten_jvp, batched=ravel_jvp_batched, forms=RESHAPE)
entry(np.expand_dims, expand_dims_vjp, expand_dims_jvp, batched=same_size_jvp_batched,
      static=(1,), forms='axis int or tuple')
entry(np.squeeze, squeeze_vjp, squeeze_jvp, batched=same_size_jvp_batched, static=(1,),
      forms='axis int or tuple')
entry(np.transpose, transpose_vjp, transpose_jvp, batched=transpose_jvp_batched, static=(1,),
      forms='axes None or any permutation')
AXES = 'any axes, negative too'
entry(np.matrix_transpose, matrix_transpose_vjp, matrix_transpose_jvp,
      batched=matrix_transpose_jvp,       # the last two axes: as it stands
      also=(np.linalg.matrix_transpose,), forms=AXES)
entry(np.swapaxes, swapaxes_vjp, swapaxes_jvp, batched=swapaxes_jvp_batched, static=(1, 2),
      forms=AXES)
entry(np.moveaxis, moveaxis_vjp, moveaxis_jvp, batched=moveaxis_jvp_batched, static=(1, 2),
      forms=AXES)
entry(np.rollaxis, rollaxis_vjp, rollaxis_jvp, batched=rollaxis_jvp_batched, static=(1, 2),
      forms=AXES)
entry(np.flip, flip_vjp, flip_jvp, batched=flip_jvp_batched, static=(1,),
      forms='axis None/int/tuple')
entry(np.fliplr, fliplr_vjp, fliplr_jvp, batched=fliplr_jvp_batched, forms=None)
entry(np.flipud, flipud_vjp, flipud_jvp, batched=flipud_jvp_batched, forms=None)
entry(np.roll, roll_vjp, roll_jvp, batched=roll_jvp_batched, static=(1, 2),
      forms='shift int or tuple, axis None/int/tuple')
entry(np.rot90, rot90_vjp, rot90_jvp, batched=rot90_jvp_batched, static=(1, 2), forms='k, axes')
entry(np.triu, triu_vjp, triu_jvp, batched=triu_jvp_batched, static=(1,), forms='k; batched')
entry(np.tril, tril_vjp, tril_jvp, batched=tril_jvp_batched, static=(1,), forms='k; batched')
entry(np.tile, tile_vjp, tile_jvp, batched=tile_jvp_batched, static=(1,),
      forms='reps int or tuple (fewer or more dims than the input)')
entry(np.repeat, repeat_vjp, repeat_jvp, batched=repeat_jvp_batched, static=(1, 2),
      forms='repeats int or array, axis None/int')
entry(np.broadcast_to, broadcast_to_vjp, broadcast_to_jvp, batched=broadcast_to_jvp_batched,
      static=(1,), forms='any broadcastable shape (leading and size-1 axes)')
entry(np.copy, copy_vjp, copy_jvp, batched=copy_jvp, forms='order, subok')
entry(np.astype, astype_vjp, astype_jvp, batched=astype_jvp, static=(1,), also=(astype,),
      forms='float or complex dtype; a cast to an integer type has zero derivative')
entry(np.array, array_vjp, array_jvp, batched=array_jvp_batched,
      also=(np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray),
      forms='arrays, or (nested) lists/tuples of differentiable scalars and arrays '
            '(cotangent: the same structure); dtype, ndmin')


def _variadic(fn, vjp, jvp):
    """Rules for each argument of `fn(*arrays)`; each pair linear and transposed (the
    functions only place numbers), so `linear_pair` makes them differentiable again."""
    for i in range(MAX_ARGS):
        vjp_i = _at_argument(vjp, i)
        defvjp(fn, vjp_i, argnums=[i])
        if jvp is not None:
            jvp_i = _at_argument(jvp, i)
            defjvp(fn, jvp_i, argnums=[i])
            linear_pair(vjp_i, jvp_i)


def _at_argument(rule, i):
    def at(g, ans, *args, **kw):
        return rule(g, ans, *args, _i=i, **kw)
    return at


def _atleast_jvp(fn):
    def jvp(t, ans, *arys, _i=0):
        if len(arys) == 1:
            return fn(t)
        return tuple(fn(t) if k == _i else np.zeros_like(out) for k, out in enumerate(ans))
    return jvp


for _fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    _variadic(_fn, atleast_vjp, _atleast_jvp(_fn))
_variadic(np.broadcast_arrays, broadcast_arrays_vjp, broadcast_arrays_jvp)
_variadic(np.meshgrid, meshgrid_vjp, meshgrid_jvp)

describe('any number of arrays (cotangent per argument)', np.atleast_1d, np.atleast_2d,
         np.atleast_3d, np.broadcast_arrays)
describe('any number of 1-D inputs; indexing xy/ij, sparse', np.meshgrid)
