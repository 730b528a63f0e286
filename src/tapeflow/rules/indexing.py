"""Rules for reading elements: `x[idx]`, and the NumPy functions that only
move elements around (take, diagonal, pad, sort...).

`x[idx]` takes any index NumPy accepts: integers, slices with negative bounds
and steps, None, Ellipsis, integer arrays (repeated indices accumulate in the
cotangent), boolean masks, and mixes of them. Its cotangent is dense: zeros
of `x`'s shape with `g` added where `idx` read. For a Python list or tuple
`x` the cotangent is a list (tuple) with 0.0 elsewhere.

A *gather* rule serves every function that moves elements without doing
arithmetic on them: applied to `positions(shape) + 1`, the function tells
where each output element came from (0 where it came from nowhere: padding,
the zeros of `diag`), and the adjoint is a scatter-add of `g` there.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from tapeflow.rules.array_ops import (gather, gather_batch, is_basic_index, positions,
                                      scatter_add, scatter_add_batch)
from tapeflow.errors import UnsupportedError
from tapeflow.rules.arrays import is_api_only, is_foreign_array, library_of, to_library
from tapeflow.rules.array_api import zeros_api
from tapeflow.rules.batching import batch_size, defjvp_batched, is_batched, rows_at, set_rows_at
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import defjvp, defvjp, describe, linear_pair, nondifferentiable, static
from tapeflow.rules.sequences import Items
from tapeflow.rules.shapes import fit, is_symbolic_zero, rebuild, structure_shape, zeros_like_value

__all__ = ['untake', 'def_gather', 'untake_batch']


# ---------------------------------------------------------------- x[idx]


def _batch_array(t, x):
    """A batch of tangents of `x` as one array `(B,) + shape(x)`: of a list (`np.place`'s
    values given as `[v]`), its items' stacked, the unbatched ones (zeros) broadcast."""
    if not isinstance(t, (list, tuple)):
        return t
    size = batch_size(t, x)
    shape = structure_shape(x)
    return np.stack([_batch_array(u, v) if is_batched(u, v) else
                     np.broadcast_to(np.asarray(u, float), (size,) + shape[1:])
                     for u, v in zip(t, x)], axis=1)


def untake(g, x, idx):
    """The cotangent of `x` from the cotangent `g` of `x[idx]`.

    For one element of a list, a sparse `Items` (O(1), whatever the length);
    of a tuple (a fixed, small structure, often a function's results), a tuple.
    """
    if isinstance(x, dict):
        out = zeros_like_value(x)
        out[idx] = g
        return out
    if isinstance(x, range):
        return 0.0                      # (its items are integers: no derivative)
    if isinstance(x, (list, Items)) and isinstance(idx, (int, np.integer)) \
            and not isinstance(idx, bool):
        return Items(len(x)).added(int(idx), g)
    if isinstance(x, (list, tuple, Items)):
        return _untake_sequence(g, x, idx)
    shape = np.shape(x)
    if is_foreign_array(g) or is_foreign_array(x):
        return _untake_foreign(g, x, idx, shape)
    if type(g) in (np.ndarray, float, int) or isinstance(g, np.generic):
        dtype = x.dtype if np.issubdtype(getattr(x, 'dtype', float), np.inexact) \
            else np.result_type(g, float)
        g = np.real(g) if np.iscomplexobj(g) and not np.iscomplexobj(x) else g
        if is_basic_index(idx):
            out = np.zeros(shape, dtype)
            out[idx] = g
            return out
        return scatter_add(g, positions(shape)[idx], shape).astype(dtype, copy=False)
    return fit(scatter_add(g, positions(shape)[idx], shape), x)


def _untake_foreign(g, x, idx, shape):
    """`untake` for CuPy, Dask and other arrays NumPy dispatches to: zeros made like
    the foreign operand, with `g` written at `idx` (a lazy write on Dask). An index
    that reads one element twice would need a scatter-add those libraries do not
    share: refused (located at the subscript) rather than summed wrongly."""
    like = g if is_foreign_array(g) else x
    if is_api_only(like):
        out = zeros_api(x if is_foreign_array(x) else g, shape)
        out[idx] = g
        return out
    dtype = np.dtype(getattr(x, 'dtype', np.float64))
    dtype = dtype if np.issubdtype(dtype, np.inexact) else np.result_type(g.dtype, np.float64)
    if not is_basic_index(idx):
        flat = positions(shape)[idx]
        if np.unique(flat).size != flat.size:
            raise UnsupportedError(       # (located at the subscript by `sourcemap`)
                f'this index reads an element more than once; its gradient on a '
                f'{library_of(like)} array would add the repeats, which tapeflow does only for '
                f'NumPy arrays -- index with distinct positions, or compute on NumPy arrays')
    if np.iscomplexobj(g) and not np.issubdtype(dtype, np.complexfloating):
        g = np.real(g)
    out = np.zeros_like(like, dtype=dtype, shape=shape)
    out[idx] = g
    return out


def _untake_sequence(g, x, idx):
    out = [zeros_like_value(item) for item in x]
    rebuilt = list if isinstance(x, Items) else functools.partial(rebuild, x)
    if g.__class__ is float and g == 0.0:      # the symbolic zero of generated code
        return rebuilt(out)
    if isinstance(idx, slice):
        for k, i in enumerate(range(len(x))[idx]):
            out[i] = g[k]
    else:
        out[idx] = g
    return rebuilt(out)


def untake_vjp(h, ans, g, x, idx):
    return 0.0 if is_symbolic_zero(h) else h[idx]


def untake_jvp(t, ans, g, x, idx):
    return untake(t, x, idx)


# Batches of tangents (rules/batching.py). Moved to the end, the batch axis is
# out of an index's way: `x[idx]` of each row is `t_last[batch_last(idx)]` (`rows_at`),
# whatever mix of slices, None and (adjacent or not) advanced indices `idx` holds.

def untake_batch(t, x, idx):
    """`untake` for a batch `t` of cotangents of `x[idx]`: `(B,) + shape(x)`."""
    if isinstance(x, (dict, list, tuple)):
        return untake(t, x, idx)            # a container whose items may be batches
    shape = np.shape(x)
    dtype = x.dtype if np.issubdtype(getattr(x, 'dtype', float), np.inexact) \
        else np.result_type(t, float)
    t = np.real(t) if np.iscomplexobj(t) and not np.iscomplexobj(x) else t
    if is_basic_index(idx):
        out = np.zeros(t.shape[:1] + shape, dtype)
        set_rows_at(out, idx, t)
        return out
    return scatter_add_batch(t, positions(shape)[idx], shape).astype(dtype, copy=False)


def untake_jvp_batched(t, ans, g, x, idx):
    return untake_batch(t, x, idx)


# Generated code calls `untake`: it is a primitive, linear in g.
entry(untake, untake_vjp, untake_jvp, batched=untake_jvp_batched, static=(1, 2), forms=None)


def getitem_vjp(g, ans, x, idx):
    return untake(g, x, idx)


def getitem_jvp(t, ans, x, idx):
    return t[idx]


def getitem_jvp_batched(t, ans, x, idx):
    if isinstance(x, (dict, list, tuple)):
        return t[idx]                       # a container of tangents, some batches
    return rows_at(t, idx)


entry(operator.getitem, getitem_vjp, getitem_jvp, batched=getitem_jvp_batched, static=(1,),
      forms='int, slice (negative bounds/steps), None, Ellipsis, int arrays (repeats '
            'accumulate), boolean masks, tuples mixing them; lists and tuples as x')


# ---------------------------------------------------------------- gathers

def def_gather(fn, argnum=0, prepare=None, forms=''):
    """Rules for `fn`, which only moves the elements of argument `argnum`.

    `prepare(args, kwargs)` may rewrite the call used to trace positions
    (for instance to pad with zeros whatever the fill value).
    """
    def where_from(x, args, kwargs):
        args = list(args)
        if prepare is not None:
            args, kwargs = prepare(args, dict(kwargs))
        args[argnum] = positions(structure_shape(x), 1)     # (a list may hold a library's
        return fn(*args, **kwargs) - 1                      # arrays: not np.shape's)

    def vjp(g, ans, *args, **kwargs):
        x = args[argnum]
        return fit(scatter_add(g, where_from(x, args, kwargs), structure_shape(x)), x)

    def jvp(t, ans, *args, **kwargs):
        return gather(t, where_from(args[argnum], args, kwargs))

    def jvp_batched(t, ans, *args, **kwargs):
        x = args[argnum]
        return gather_batch(_batch_array(t, x), where_from(x, args, kwargs))

    defvjp(fn, vjp, argnums=[argnum])
    defjvp(fn, jvp, argnums=[argnum])
    defjvp_batched(fn, jvp_batched, argnums=[argnum])
    linear_pair(vjp, jvp)
    if forms:
        describe(forms, fn)


def _pad_prepare(args, kwargs):
    mode = args[2] if len(args) > 2 else kwargs.get('mode', 'constant')
    if callable(mode) or mode not in ('constant', 'edge', 'reflect', 'symmetric', 'wrap',
                                      'empty'):
        raise NotImplementedError(f'no derivative rule for np.pad with mode={mode!r}')
    if kwargs.get('reflect_type', 'even') != 'even':
        raise NotImplementedError("no derivative rule for np.pad with reflect_type='odd'")
    kwargs.pop('constant_values', None)
    if mode == 'empty':
        kwargs['mode'] = 'constant'
        args = args[:2]
    return args, kwargs


def _insert_prepare(args, kwargs):
    args[2] = 0
    return args, kwargs


def_gather(np.take, forms='indices: any int array; axis None/int; mode raise/wrap/clip')
def_gather(np.take_along_axis, forms='axis int or None')
def_gather(np.compress, argnum=1, forms='condition: bool sequence; axis None/int')
def_gather(np.extract, argnum=1, forms='condition array')
def_gather(np.diagonal, forms='offset, axis1, axis2')
def_gather(np.diag, forms='1-D input (builds a matrix) or 2-D (reads a diagonal); k')
def_gather(np.diagflat, forms='k')
def_gather(np.resize, forms='any new_shape')
def_gather(np.delete, forms='obj: int, slice or int array; axis')
def_gather(np.insert, prepare=_insert_prepare, forms='derivative in arr only; obj, axis')
def_gather(np.pad, prepare=_pad_prepare,
           forms='pad_width any form; mode constant (any constant_values), edge, reflect, '
                 'symmetric, wrap, empty')
def_gather(np.linalg.diagonal, forms='offset (last two axes)')
def_gather(np.fft.fftshift, forms='axes')
def_gather(np.fft.ifftshift, forms='axes')
static(np.take, 1)
static(np.take_along_axis, 1)
static(np.compress, 0)
static(np.extract, 0)


# trace: a sum over a gathered diagonal.

def trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return _untrace(g, a, np.diagonal(positions(np.shape(a)), offset, axis1, axis2))


def trace_jvp(t, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return np.trace(t, offset, axis1, axis2)


def trace_jvp_batched(t, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return np.trace(t, offset, axis1 % np.ndim(a) + 1, axis2 % np.ndim(a) + 1)


def _untrace(g, a, where):
    spread = np.broadcast_to(np.expand_dims(g, -1), np.shape(where))
    return fit(scatter_add(spread, where, np.shape(a)), a)


def linalg_trace_vjp(g, ans, x, offset=0, dtype=None):
    return _untrace(g, x, np.diagonal(positions(np.shape(x)), offset, -2, -1))


def linalg_trace_jvp(t, ans, x, offset=0, dtype=None):
    return np.linalg.trace(t, offset=offset)


entry(np.trace, trace_vjp, trace_jvp, batched=trace_jvp_batched, forms='offset, axis1, axis2')
entry(np.linalg.trace, linalg_trace_vjp, linalg_trace_jvp,
      batched=linalg_trace_jvp,       # the last two axes: a batch as it stands
      forms='offset (last two axes)')


# ---------------------------------------------------------------- sort, partition

def _sorted_sources(x, order, axis):
    sources = to_library(positions(np.shape(x)), order)     # (CuPy: on its device)
    if axis is None:
        return np.take_along_axis(np.ravel(sources), order, 0)
    return np.take_along_axis(sources, order, axis)


def sort_vjp(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    return fit(scatter_add(g, _sorted_sources(a, np.argsort(a, axis, kind='stable'), axis),
                           np.shape(a)), a)


def sort_jvp(t, ans, a, axis=-1, kind=None, order=None, stable=None):
    return gather(t, _sorted_sources(a, np.argsort(a, axis, kind='stable'), axis))


def sort_jvp_batched(t, ans, a, axis=-1, kind=None, order=None, stable=None):
    return gather_batch(t, _sorted_sources(a, np.argsort(a, axis, kind='stable'), axis))


def partition_vjp(g, ans, a, kth, axis=-1, kind='introselect', order=None):
    return fit(scatter_add(g, _sorted_sources(a, np.argpartition(a, kth, axis), axis),
                           np.shape(a)), a)


def partition_jvp(t, ans, a, kth, axis=-1, kind='introselect', order=None):
    return gather(t, _sorted_sources(a, np.argpartition(a, kth, axis), axis))


def partition_jvp_batched(t, ans, a, kth, axis=-1, kind='introselect', order=None):
    return gather_batch(t, _sorted_sources(a, np.argpartition(a, kth, axis), axis))


nondifferentiable(_sorted_sources)
entry(np.sort, sort_vjp, sort_jvp, batched=sort_jvp_batched,
      forms='any shape; axis int or None; ties share no gradient (one order is chosen)')
entry(np.partition, partition_vjp, partition_jvp, batched=partition_jvp_batched, static=(1,),
      forms='kth int or sequence; axis int or None')


# ---------------------------------------------------------------- select, choose

def _first_true(condlist):
    """Index of the first true condition per element (len(condlist): none)."""
    conds = np.broadcast_arrays(*condlist)
    return np.select(conds, list(range(len(conds))), len(conds))


def select_vjp_choices(g, ans, condlist, choicelist, default=0):
    chosen = _first_true(condlist)
    return rebuild(choicelist, [fit(np.where(chosen == i, g, 0), c)
                                for i, c in enumerate(choicelist)])


def select_vjp_default(g, ans, condlist, choicelist, default=0):
    return fit(np.where(_first_true(condlist) == len(condlist), g, 0), default)


def select_jvp_choices(t, ans, condlist, choicelist, default=0):
    return np.select(condlist, t, 0) + np.zeros_like(ans)


def select_jvp_default(t, ans, condlist, choicelist, default=0):
    return np.where(_first_true(condlist) == len(condlist), t, np.zeros_like(ans))


nondifferentiable(_first_true)
entry(np.select, (None, select_vjp_choices, select_vjp_default),
      (None, select_jvp_choices, select_jvp_default), static=(0,),
      forms='choicelist: list of arrays (cotangent: a list); default broadcastable')


def choose_vjp(g, ans, a, choices, out=None, mode='raise'):
    picked = np.choose(a, list(range(len(choices))), mode=mode)
    return rebuild(choices, [fit(np.where(picked == i, g, 0), c) for i, c in enumerate(choices)])


def choose_jvp(t, ans, a, choices, out=None, mode='raise'):
    return np.choose(a, t, mode=mode) + np.zeros_like(ans)


entry(np.choose, (None, choose_vjp), (None, choose_jvp), static=(0,),
      forms='choices: sequence of arrays (cotangent: a list); mode raise/wrap/clip')
