"""tapeflow's own array primitives: the gathers and scatters that rules call.

The adjoint of a gather (indexing, take, sort, pad...) is a scatter-add, and
the adjoint of a scatter-add is a gather. NumPy has no differentiable
scatter, so these four are primitives with rules of their own:

    gather(x, index)         x.ravel()[index]; index -1 reads as zero
    scatter_add(g, index, s) zeros(s) with g added at the flat positions index
    assign(x, idx, v)        a copy of x with x[idx] = v    (`y[i] = v`)
    add_at(x, idx, v)        a copy of x with np.add.at(x, idx, v)

Each dispatches like a NumPy function: called with an object that has its own
`__array_function__` (a tapeflow Tensor), it hands the call to that object,
so the eager tape records it and can differentiate a rule that uses it.

`positions(shape)` is the flat index of every element. A function that only
moves elements (take, diagonal, pad, repeat...) applied to it gives, for each
output element, where it came from: the one fact its adjoint needs.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules.arrays import is_foreign_array, is_lazy, library_of, numpy_dtype, to_library
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import fit

__all__ = ['dispatches', 'gather', 'scatter_add', 'assign', 'add_at', 'positions',
           'is_basic_index', 'gather_batch', 'scatter_add_batch', 'written']

_NDARRAY_DISPATCH = np.ndarray.__array_function__


def dispatches(fn):
    """Let arguments with their own `__array_function__` intercept `fn`."""
    @functools.wraps(fn)
    def public(*args, **kwargs):
        overloaded = []
        for arg in args:
            handler = getattr(type(arg), '__array_function__', None)
            if handler is not None and handler is not _NDARRAY_DISPATCH \
                    and type(arg) not in (type(a) for a in overloaded):
                overloaded.append(arg)
        if not overloaded:
            return fn(*args, **kwargs)
        foreign = getattr(public, '_foreign', None)
        if foreign is not None and not any(getattr(type(a), '__tapeflow_tensor__', False)
                                           for a in overloaded) \
                and not any(is_lazy(a) for a in overloaded):
            return foreign(*args, **kwargs)     # CuPy's arrays: its own functions, on its device
        types = tuple(type(a) for a in overloaded)
        for arg in overloaded:
            result = type(arg).__array_function__(arg, public, types, args, kwargs)
            if result is not NotImplemented:
                return result
        raise TypeError(f'no implementation of {fn.__name__} for {types}')
    public._implementation = fn
    return public


@functools.lru_cache(maxsize=256)
def positions(shape, start=0):
    """The flat index (plus `start`) of every element of an array of `shape`."""
    if any(n != n for n in shape):      # NaN: a Dask array's length unknown until computed
        raise UnsupportedError(f'an array of shape {shape}, whose length is not known until it is '
                               f'computed (Dask, after a boolean mask): compute it first '
                               f'(x.compute_chunk_sizes())')
    out = np.arange(start, start + math.prod(shape)).reshape(shape)
    out.setflags(write=False)
    return out


def is_basic_index(idx) -> bool:
    """True when `x[idx]` is a view: ints, slices, None, Ellipsis only."""
    if isinstance(idx, tuple):
        return all(_is_basic_one(i) for i in idx)
    return _is_basic_one(idx)


def _is_basic_one(i):
    return (isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis) \
        and not isinstance(i, (bool, np.bool_))


# ---------------------------------------------------------------- gather, scatter

@dispatches
def gather(x, index):
    """`x.ravel()[index]`, where an index of -1 reads as zero."""
    flat = np.ravel(x)
    if np.size(index) and np.min(index) < 0:
        flat = np.concatenate([flat, np.zeros(1, flat.dtype)])
    return flat[index]


@dispatches
def scatter_add(g, index, shape):
    """An array of `shape`, zero but for `g` summed at the flat `index`."""
    g, index = np.asarray(g), np.asarray(index)
    weights = np.ravel(np.broadcast_to(g, index.shape) if g.shape != index.shape else g)
    index = np.ravel(index)
    if index.size and index.min() < 0:
        keep = index >= 0
        index, weights = index[keep], weights[keep]
    size = math.prod(shape)
    dtype = g.dtype if np.issubdtype(g.dtype, np.inexact) else np.float64
    if np.iscomplexobj(weights):
        out = (np.bincount(index, weights.real, minlength=size)
               + 1j * np.bincount(index, weights.imag, minlength=size))
    else:
        out = np.bincount(index, weights, minlength=size)
    return out.astype(dtype, copy=False).reshape(shape)


def _gather_foreign(x, index):
    """`gather` on an array of another library (CuPy): a zero appended for index -1."""
    flat = np.ravel(x)
    flat = np.concatenate([flat, np.zeros_like(flat[:1])])
    return np.take(flat, to_library(np.asarray(index), x))


def _scatter_add_foreign(g, index, shape):
    """`scatter_add` on an array of another library (CuPy): its `bincount`, with the
    dropped index -1 counted in a slot of its own."""
    index = np.asarray(index) if not is_foreign_array(index) else index
    weights = np.ravel(np.broadcast_to(g, index.shape))
    slots = to_library(np.ravel(index) + 1, g)
    size = math.prod(shape) + 1
    if np.iscomplexobj(weights):
        out = (np.bincount(slots, np.real(weights), minlength=size)
               + 1j * np.bincount(slots, np.imag(weights), minlength=size))
    else:
        out = np.bincount(slots, weights, minlength=size)
    dtype = g.dtype if np.issubdtype(np.dtype(g.dtype), np.inexact) else np.float64
    return np.reshape(out[1:].astype(dtype), shape)


gather._foreign = _gather_foreign
scatter_add._foreign = _scatter_add_foreign


def gather_batch(t, index):
    """`gather` from each row of the batch `t`: `(B,) + shape(index)`."""
    flat = np.reshape(t, t.shape[:1] + (-1,))
    if np.size(index) and np.min(index) < 0:
        flat = np.concatenate([flat, np.zeros((flat.shape[0], 1), flat.dtype)], axis=1)
    return flat[:, index]


def scatter_add_batch(g, index, shape):
    """`scatter_add` of each row of the batch `g` (rows broadcast to `index`): `(B,) + shape`."""
    index = np.asarray(index)
    count, size = g.shape[0], math.prod(shape)
    rows = np.reshape(g, g.shape[:1] + (1,) * (index.ndim + 1 - g.ndim) + g.shape[1:])
    weights = np.reshape(np.broadcast_to(rows, (count,) + index.shape), (count, -1))
    flat = np.ravel(index)
    keep = flat >= 0
    where = (np.arange(count) * size)[:, None] + flat[keep]
    weights, where = np.ravel(weights[:, keep]), np.ravel(where)
    dtype = g.dtype if np.issubdtype(g.dtype, np.inexact) else np.float64
    if np.iscomplexobj(weights):
        out = (np.bincount(where, weights.real, minlength=count * size)
               + 1j * np.bincount(where, weights.imag, minlength=count * size))
    else:
        out = np.bincount(where, weights, minlength=count * size)
    return out.astype(dtype, copy=False).reshape((count,) + tuple(shape))


def gather_vjp(g, ans, x, index):
    return fit(scatter_add(g, index, np.shape(x)), x)


def gather_jvp(t, ans, x, index):
    return gather(t, index)


def scatter_add_vjp(g, ans, h, index, shape):
    return fit(gather(g, index), h)


def scatter_add_jvp(t, ans, h, index, shape):
    return scatter_add(t, index, shape)


def gather_jvp_batched(t, ans, x, index):
    return gather_batch(t, index)


def scatter_add_jvp_batched(t, ans, h, index, shape):
    return scatter_add_batch(t, index, shape)


entry(gather, gather_vjp, gather_jvp, batched=gather_jvp_batched, static=(1,),
      forms='index: a flat int array (-1 reads as zero)')
entry(scatter_add, scatter_add_vjp, scatter_add_jvp, batched=scatter_add_jvp_batched,
      static=(1, 2), forms='index: flat positions, -1 ignored; shape static')


# ---------------------------------------------------------------- subscript assignment

@dispatches
def assign(x, idx, v):
    """`y = x.copy(); y[idx] = v; return y`: the value of `x[idx] = v`."""
    out = np.array(x, copy=True)
    out[idx] = v
    return out


@dispatches
def add_at(x, idx, v):
    """`x` with `v` added at `idx`, repeated indices accumulating (np.add.at)."""
    out = np.array(x, copy=True, dtype=np.result_type(x, v))
    np.add.at(out, idx, v)
    return out


def _assign_foreign(x, idx, v):
    out = x.copy()
    out[idx] = to_library(v, x) if isinstance(v, np.ndarray) else v
    return out


def _add_at_foreign(x, idx, v):
    if not is_foreign_array(x):
        raise UnsupportedError(f'np.add.at adds {library_of(v)} values into a NumPy array: '
                               f'mixed array libraries -- make both arrays of one library')
    if any(is_foreign_array(i) for i in (idx if isinstance(idx, tuple) else (idx,))):
        raise UnsupportedError(f'np.add.at with an index array of {library_of(x)} values: '
                               f'index with NumPy integers')
    flat = positions(np.shape(x))[idx]
    v = v if is_foreign_array(v) else to_library(np.asarray(v), x)
    return x + _scatter_add_foreign(v, flat, np.shape(x))


assign._foreign = _assign_foreign
add_at._foreign = _add_at_foreign


def _kept(shape, idx):
    """Boolean mask: True where `x[idx] = v` leaves `x`'s element in place."""
    mask = np.ones(shape, dtype=bool)
    mask[idx] = False
    return mask


def written(g, shape, idx):
    """`g[idx]`, zero where a repeated index was overwritten by a later write (`y[idx] = v`)."""
    try:
        picked = g[idx]
    except NotImplementedError as error:   # a library's own limit (Dask: n-d fancy indices)
        if not is_foreign_array(g):
            raise
        raise UnsupportedError(f'the gradient of this write reads the elements it wrote back '
                               f'from a {library_of(g)} array, which cannot index them so '
                               f'({error}) -- write through slices or one integer array, or '
                               f'compute this part on NumPy arrays') from None
    if is_basic_index(idx):
        return picked
    if is_foreign_array(picked) and not is_lazy(picked):
        return _written_foreign(picked, shape, idx)
    return np.where(stayed(shape, idx, np.shape(picked)), picked, 0.0)   # (Dask: a NumPy mask)


def stayed(shape, idx, picked_shape):
    """Of the elements `y[idx]` writes (an array of `shape`), those no later one in the
    same write overwrote (NumPy keeps the last write of a repeated index)."""
    order = positions(picked_shape)
    last = np.full(shape, -1)
    last[idx] = order
    return last[idx] == order


def _written_foreign(picked, shape, idx):
    """`written` on CuPy's arrays: a write through an index that repeats an element is
    undefined there (which write lands is not NumPy's last), so it is refused."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    if all(_is_basic_one(i) or _is_mask(i) for i in parts):
        return picked                               # slices and masks: no element twice
    if any(is_foreign_array(i) for i in parts):
        raise UnsupportedError(f'a write through an index array of {library_of(picked)} '
                               f'integers: whether it repeats an element is not known here, and '
                               f'which repeated write lands is undefined there -- index with '
                               f'NumPy integers')
    flat = positions(shape)[idx]
    if np.unique(flat).size != flat.size:
        raise UnsupportedError(f'a write that repeats an element: which write lands is undefined '
                               f'on {library_of(picked)} arrays -- index each element once')
    return picked


def _is_mask(index) -> bool:
    dtype = getattr(index, 'dtype', None)
    return dtype is not None and numpy_dtype(index) == np.bool_


def assign_vjp_x(g, ans, x, idx, v):
    return fit(np.where(_kept(np.shape(x), idx), g, 0.0), x)


def assign_vjp_v(g, ans, x, idx, v):
    return fit(written(g, np.shape(x), idx), v)


def assign_jvp_x(t, ans, x, idx, v):
    return np.where(_kept(np.shape(x), idx), t, 0.0)


def assign_jvp_v(t, ans, x, idx, v):
    return assign(np.zeros_like(ans), idx, t)


def add_at_vjp_x(g, ans, x, idx, v):
    return fit(g, x)


def add_at_vjp_v(g, ans, x, idx, v):
    return fit(g[idx], v)


def add_at_jvp_x(t, ans, x, idx, v):
    return t + np.zeros_like(ans)


def add_at_jvp_v(t, ans, x, idx, v):
    return add_at(np.zeros_like(ans), idx, t)


# (the JVPs in x of these two take a batch as they stand)
entry(assign, (assign_vjp_x, None, assign_vjp_v), (assign_jvp_x, None, assign_jvp_v),
      batched=assign_jvp_x, static=(1,),
      forms='any index NumPy accepts; repeated fancy indices: the last write wins')
entry(add_at, (add_at_vjp_x, None, add_at_vjp_v), (add_at_jvp_x, None, add_at_jvp_v),
      batched=add_at_jvp_x, static=(1,),
      forms='any index NumPy accepts; repeated indices accumulate')

# Helpers that compute positions and masks: constant, whatever their inputs.
nondifferentiable(positions, is_basic_index, _kept)
