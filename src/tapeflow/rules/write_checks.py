"""What generated code calls around a write, at run time: the positions the rewrites
of `np.put`, `np.fill_diagonal`, `np.place`... write, and the checks that refuse a
write the compiler could not rule out (a view of a lazy array, a write into memory a
container still holds, overlapping operands). They carry no derivative, but
`like_layout`, `cycled` and `to_library`, whose rules are here too.

`rules.mutation` re-exports every name (the rewrites find helpers there); the
reads of a container after a write are in `rules.container_reads`.
"""
from __future__ import annotations

import math
import operator
import types

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules.arrays import (is_api_only, is_foreign_array, is_lazy, library_of,
                                   numpy_dtype, same_library, shares_views, to_library,
                                   to_numpy_of)
from tapeflow.rules.holders import function_leaves, holds_values
from tapeflow.rules.indexing import def_gather
from tapeflow.rules.registry import defjvp, defvjp, nondifferentiable, static


# ---------------------------------------------------------------- positions for the rewrites

def put_index(a, ind, mode='raise'):
    """The index `a[...]` of `np.put(a, ind, v, mode)`'s writes, in the order NumPy makes them."""
    flat = np.asarray(ind, dtype=np.intp).ravel()
    size = np.size(a)
    if mode == 'raise':
        if flat.size and (flat.max() >= size or flat.min() < -size):
            raise IndexError(f'index {flat.max() if flat.max() >= size else flat.min()} is out '
                             f'of bounds for size {size}')
        flat = flat % size if size else flat
    elif mode == 'wrap':
        flat = flat % size
    else:
        flat = np.clip(flat, 0, size - 1)
    return np.unravel_index(flat, np.shape(a))


def diagonal_index(a, wrap=False):
    """The index of the elements `np.fill_diagonal(a, val, wrap)` writes."""
    shape = np.shape(a)
    if len(shape) == 2:
        step = shape[1] + 1
        end = None if wrap else shape[1] * shape[1]
        flat = np.arange(np.size(a))[:end:step]
    else:
        flat = np.arange(min(shape)) * np.sum(np.cumprod((1,) + shape[:0:-1]))
    return np.unravel_index(flat, shape)


def is_array(value) -> bool:
    """Whether `y += v` writes into `value` (an ndarray, a CuPy array) or makes a new
    object (a number, a Dask array: Dask has no in-place arithmetic)."""
    return isinstance(value, np.ndarray) or \
        (is_foreign_array(value) and hasattr(value.__class__, '__iadd__'))


def check_memory(value, reason, filename, lineno, col):
    """Before a write that the mutation pass follows with updates of the names sharing
    the written memory (views, aliases): NumPy's memory model. A Dask array's views are
    new graphs that a write does not reach, so there the plain code means something
    else: the located refusal `reason`."""
    if value.__class__ is not np.ndarray and is_lazy(value):
        raise UnsupportedError(reason, filename, lineno, col)


def is_list(value) -> bool:
    """Whether `y += v` extends `value` (a list) in place."""
    return isinstance(value, list)


def shares(part, whole) -> bool:
    """Whether `part`, made from `whole` by a view NumPy may make or not (`reshape`...), is
    one; or, after `whole <op>= v` on what may be a number, whether it is still `part`."""
    if part is whole:
        return True
    if part.__class__ is np.ndarray and isinstance(whole, np.ndarray):
        return np.may_share_memory(part, whole)
    if isinstance(whole, (list, dict, tuple)):      # `part = whole[k]` of a container the
        items = whole.values() if isinstance(whole, dict) else whole   # compiler did not
        if any(item is part for item in items):    # know for one: its slot holds `part`
            if isinstance(whole, tuple):
                raise UnsupportedError('a write into an item of a tuple read here, which '
                                       'tapeflow did not know was one: the tuple cannot be '
                                       'brought up to date -- copy the item first')
            return True
        return False
    if is_api_only(part) or is_api_only(whole):
        raise UnsupportedError(f'whether this is a view of the array it is made from is not '
                               f'known for {library_of(part)} arrays, and a write follows -- '
                               f'copy it first (xp.asarray(x, copy=True))')
    return shares_views(part) and shares_views(whole) and same_library(part, whole) and \
        bool(np.may_share_memory(part, whole))


_IN_PLACE = {'+': '__iadd__', '-': '__isub__', '*': '__imul__', '/': '__itruediv__',
             '**': '__ipow__', '@': '__imatmul__', '//': '__ifloordiv__', '%': '__imod__'}


def inplace_op(value, operand, op):
    """`value <op>= operand` as Python runs it (in place where `value` allows), its result."""
    return getattr(operator, _IN_PLACE[op].strip('_'))(value, operand)


def index_size(index) -> int:
    """How many elements `x[index]` selects: a boolean mask, or an index of `np.unravel_index` form."""
    if (isinstance(index, np.ndarray) or is_foreign_array(index)) and numpy_dtype(index) == np.bool_:
        return int(np.count_nonzero(index))
    return int(np.size(index[0])) if isinstance(index, tuple) and index else int(np.size(index))


def as_mask(mask, shape):
    """`mask` as a boolean array of `shape` (NumPy's `place`/`putmask` read it flat)."""
    if is_foreign_array(mask):
        return np.reshape(mask.astype(bool), shape)      # in its own library (CuPy)
    return np.reshape(np.asarray(mask, dtype=bool), shape)


# ---------------------------------------------------------------- a container sees a write

def insert_index(container, index) -> int:
    """The position `container.insert(index, v)` puts `v` at, counted from the start
    (Python clips an index past either end)."""
    size = len(container)
    index = operator.index(index)
    if index < 0:
        index += size
    return min(max(index, 0), size)


def check_apart(value, other, deep, reason, filename, lineno, col):
    """The located refusal `reason` where `value` (with `deep`, what it holds too) shares
    memory with `other` or anything `other` holds: the mutation pass asks this before a
    write where it could not tell how the two are related."""
    mine = memory_parts(value, deep)
    if mine and any(overlap(a, b) for a in mine for b in memory_parts(other, True)):
        raise UnsupportedError(reason, filename, lineno, col)


def check_refresh(container, written, holders, reason, filename, lineno, col):
    """Before a write into `written`: `container`, which the mutation pass refreshes after
    the write as a list (tuple, dict) whose slots hold `holders`, is, if an array (its kind
    was not known), one of `holders` or apart from `written`; if a list, tuple or dict, each
    of its slots that shares memory with `written` is one of `holders` (a view that a call
    put there, unseen by the pass, would not be refreshed); else the located refusal `reason`."""
    if not shares_views(written):
        return
    if holds_values(container):         # a partial, a closure: only its own slots refreshed
        for part in function_leaves(container):
            if not any(part is h for h in holders) and \
                    any(overlap(a, written) for a in memory_parts(part, True)):
                raise UnsupportedError(reason, filename, lineno, col)
        return
    if isinstance(container, dict):
        parts = container.values()
    else:
        parts = container if isinstance(container, (list, tuple)) else (container,)
    for part in parts:
        if any(part is h for h in holders):
            continue
        if shares_views(part) and overlap(part, written) or _holds_unseen(part, written):
            raise UnsupportedError(reason, filename, lineno, col)


def _holds_unseen(part, written) -> bool:
    """Whether `part` is a function (a partial, a closure, a bound method) that holds
    memory of `written`: the refresh of the container holding it does not reach there."""
    return (holds_values(part) or isinstance(part, types.MethodType)) and \
        any(overlap(a, written) for a in memory_parts(part, True))


def memory_parts(value, deep) -> list:
    """The arrays and lists, tuples and dicts `value` is, and with `deep` holds at any depth."""
    out, stack, seen = [], [value], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray) or is_foreign_array(v):
            out.append(v)
        elif isinstance(v, (list, tuple, dict)):
            out.append(v)
            if deep or v is value:
                stack.extend(v.values() if isinstance(v, dict) else v)
        elif (deep or v is value) and holds_values(v):
            stack.extend(function_leaves(v))    # a partial's arguments, a closure's values
        elif (deep or v is value) and isinstance(v, types.MethodType):
            stack.append(v.__self__)            # a bound method's object
        elif (deep or v is value) and isinstance(getattr(v, '__dict__', None), dict) \
                and not isinstance(v, (type, types.ModuleType, types.FunctionType,
                                       types.MethodType)):
            stack.extend(vars(v).values())      # an object's fields (a dataclass, `self`)
    return out


def overlap(a, b) -> bool:
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        if a is b:
            return True
        if not (is_foreign_array(a) and is_foreign_array(b)) or is_lazy(a) or is_lazy(b) \
                or not same_library(a, b):
            return False        # Dask arrays share no memory: a view is a new graph
        if is_api_only(a):
            return True         # cannot tell: as if shared (a refusal)
        try:                    # CuPy: its own may_share_memory, through NumPy's dispatch
            return bool(np.may_share_memory(a, b))
        except Exception:       # noqa: BLE001 -- cannot tell: as if shared (a refusal)
            return True
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10 ** 6))
    except np.exceptions.TooHardError:
        return True


def overlap_value(y, value):
    """A copy of `value` where it may share memory with the array `y` it is written into,
    else None (what `check_overlap` compares the write with)."""
    if isinstance(value, np.ndarray) and isinstance(y, np.ndarray):
        return value.copy() if np.may_share_memory(y, value) else None
    if shares_views(value) and shares_views(y) and same_library(y, value) \
            and np.may_share_memory(y, value):
        return value.copy()
    return None


def check_overlap(y, index, expected, reason, filename, lineno, col):
    """After `y[index] = value` with `expected` from `overlap_value`: the located refusal
    `reason` unless what landed is `value`'s old value (NumPy copies element by element,
    and an element written before it is read changes what is read)."""
    if expected is None:
        return
    landed = y[index]
    if not np.array_equal(landed, np.broadcast_to(expected, np.shape(landed)), equal_nan=True):
        raise UnsupportedError(reason, filename, lineno, col)


def like_layout(value, like):
    """`value`, what `like <op>= v` wrote, as a new array: in `like`'s dtype and memory
    layout (a Fortran-ordered `like` keeps its order, so a later `reshape` copies where
    the write in place would have made it copy)."""
    if value.__class__ is np.ndarray and like.__class__ is np.ndarray:
        if value.dtype == like.dtype and value.strides == like.strides:
            return value
    elif not (is_foreign_array(value) and shares_views(like) and same_library(value, like)) \
            or (value.dtype == like.dtype and value.strides == like.strides):
        return value        # (Dask's views are copies: its layout never makes one)
    out = np.empty_like(like)   # (CuPy's too: its arithmetic writes C order where NumPy keeps F)
    np.copyto(out, value, casting='same_kind')
    return out


def _like_layout_vjp(g, ans, value, like):
    return g


def _like_layout_jvp(t, ans, value, like):
    return t


defvjp(like_layout, _like_layout_vjp)
defjvp(like_layout, _like_layout_jvp)
static(like_layout, 1)


def cycled(values, shape):
    """`np.resize(values, shape)`: `values` flat, repeated or cut to fill `shape` (how
    np.put, np.place and np.putmask read their values), in the library of `values`."""
    if values.__class__ in (list, tuple):           # `[np.sum(z)]`: the library's numbers
        like = next((v for v in values if is_foreign_array(v)), None)
        if like is not None:
            values = np.concatenate([np.reshape(to_library(v, like), (-1,)) for v in values])
    if not is_foreign_array(values):
        return np.resize(values, shape)
    flat = np.ravel(values)
    size = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    if flat.shape[0] != size:
        flat = np.concatenate([flat] * -(-size // flat.shape[0]))[:size] if size else flat[:0]
    return np.reshape(flat, shape) if isinstance(shape, tuple) else flat


def_gather(cycled, forms='any shape')
static(cycled, 1)

# `to_library(value, like)` moves a value into the library of the array it is written
# into (the lowerings of np.put, np.place, np.putmask, np.copyto, .fill): the same
# numbers, so its derivative is the identity, the cotangent back in the value's library
# and the tangent in the array's (a float: the symbolic zero, or a number both take).
defvjp(to_library, lambda g, ans, value, like: g if g.__class__ is float else to_library(g, value))
defjvp(to_library, lambda t, ans, value, like: t if t.__class__ is float else to_library(t, like))
static(to_library, 1)

nondifferentiable(put_index, diagonal_index, is_array, check_memory, is_list, shares, index_size, as_mask,
                  insert_index, overlap_value, check_overlap, check_apart, check_refresh)
