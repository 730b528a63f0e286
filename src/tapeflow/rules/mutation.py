"""What writes memory and what shares it: the table the compiler's alias analysis reads.

Data, not code: which NumPy functions and methods write into an argument,
which return views of an argument (or the argument itself), and which list
and dict methods change their object. `tapeflow.analysis.aliasing` and the
mutation pass (`tapeflow.transforms.mutation`) read these tables; each
`Mutator.form` names the exact rewrite the pass applies (`docs/python-subset.md`
lists them), `'opaque'` marks a write that is run as written, undone in the
reverse sweep, and refused where a derivative would have to flow through it.

`View.inverse` says how a write through the view reaches its base: `'index'`
(`base[idx] = view`), `'reshape'` (`base[...] = np.reshape(view, base.shape)`),
`'transpose'`, `'swapaxes'`, `'moveaxis'`, `'flip'` (the same axes again),
`'matrix_transpose'`, or None: read-only views and views with no exact inverse,
which are re-derived when their base changes but may not be written.
`View.always`: always a view of an ndarray operand (NumPy guarantees it);
otherwise whether the result shares memory is decided at run time.

The helpers at the end compute positions and decide, at run time, what the
rewrites could not decide while compiling (`shares`: is this reshape a view?);
they carry no derivative. Generated code calls them (`runtime.support`).
"""
from __future__ import annotations

import dataclasses
import math
import operator

import types

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules.arrays import (is_api_only, is_foreign_array, is_lazy, library_of,
                                   numpy_dtype, same_library, shares_views, to_library)
from tapeflow.rules.indexing import def_gather, untake
from tapeflow.rules.sequences import Items
from tapeflow.rules.shapes import zeros_like_value
from tapeflow.rules.registry import (RULES_OF_RULES, defjvp, defvjp, linear_pair,
                                     nondifferentiable, static)

__all__ = ['Mutator', 'View', 'FUNCTIONS', 'ARRAY_METHODS', 'LIST_METHODS', 'DICT_METHODS',
           'UFUNC_METHODS', 'VIEW_FUNCTIONS', 'VIEW_METHODS', 'VIEW_ATTRIBUTES',
           'put_index', 'diagonal_index', 'mutator_of_function', 'is_array',
           'is_list', 'shares', 'inplace_op', 'index_size', 'as_mask', 'refresh_items']


@dataclasses.dataclass(frozen=True)
class Mutator:
    """A call that writes into one of its arguments."""
    writes: object            # position of the written argument, or 'receiver'
    form: str                 # the pass's rewrite ('copyto', 'put', ..., 'opaque')
    params: tuple = ()        # parameter names, in order, for keyword arguments


@dataclasses.dataclass(frozen=True)
class View:
    """A call or attribute whose result may share memory with its first operand."""
    inverse: object           # how a write through it reaches the base (see above)
    always: bool = False      # a view of any ndarray operand, not decided at run time


def _existing(module, names):
    return [getattr(module, n) for n in names if n in dir(module)]


# ---------------------------------------------------------------- writes

FUNCTIONS = {
    np.copyto: Mutator(0, 'copyto', ('dst', 'src', 'casting', 'where')),
    np.put: Mutator(0, 'put', ('a', 'ind', 'v', 'mode')),
    np.place: Mutator(0, 'place', ('arr', 'mask', 'vals')),
    np.putmask: Mutator(0, 'putmask', ('a', 'mask', 'values')),
    np.fill_diagonal: Mutator(0, 'fill_diagonal', ('a', 'val', 'wrap')),
    np.random.shuffle: Mutator(0, 'opaque', ('x',)),
}

# Methods of ufuncs (`np.add.at(a, idx, b)`): the first argument is written.
UFUNC_METHODS = {'at': Mutator(0, 'at', ('a', 'indices', 'b'))}

# ndarray methods that write into the array they are called on.
ARRAY_METHODS = {
    'fill': Mutator('receiver', 'fill', ('value',)),
    'sort': Mutator('receiver', 'sort', ('axis', 'kind', 'order')),
    'put': Mutator('receiver', 'put', ('ind', 'v', 'mode')),
    'partition': Mutator('receiver', 'partition', ('kth', 'axis', 'kind', 'order')),
    'resize': Mutator('receiver', 'opaque'),
    'itemset': Mutator('receiver', 'opaque'),
    'setfield': Mutator('receiver', 'opaque'),
    'byteswap': Mutator('receiver', 'opaque'),
    'shuffle': Mutator(0, 'opaque', ('x',)),          # numpy.random.Generator.shuffle(x)
}

# List methods that change the list. `append`, `extend`, `pop` and `insert` are
# differentiated; the others are run as written where no derivative is involved.
LIST_METHODS = {
    'append': Mutator('receiver', 'append', ('object',)),
    'extend': Mutator('receiver', 'extend', ('iterable',)),
    'pop': Mutator('receiver', 'pop', ('index',)),
    'insert': Mutator('receiver', 'insert', ('index', 'object')),
    'remove': Mutator('receiver', 'opaque', ('value',)),
    'sort': Mutator('receiver', 'opaque', ('key', 'reverse')),
    'reverse': Mutator('receiver', 'opaque'),
    'clear': Mutator('receiver', 'opaque'),
}

DICT_METHODS = {
    'update': Mutator('receiver', 'opaque'),
    'pop': Mutator('receiver', 'opaque'),
    'popitem': Mutator('receiver', 'opaque'),
    'setdefault': Mutator('receiver', 'opaque'),
    'clear': Mutator('receiver', 'opaque'),
}


def mutator_of_function(fn):
    """The `Mutator` of a resolved callable, or None (unhashable callables too)."""
    try:
        return FUNCTIONS.get(fn)
    except TypeError:
        return None


# ---------------------------------------------------------------- views

_RESHAPE, _NONE = View('reshape'), View(None)

VIEW_FUNCTIONS = {
    np.reshape: _RESHAPE, np.ravel: _RESHAPE,
    np.squeeze: View('reshape', always=True), np.expand_dims: View('reshape', always=True),
    np.asarray: _RESHAPE, np.asanyarray: _RESHAPE, np.ascontiguousarray: _RESHAPE,
    np.asfortranarray: _RESHAPE, np.atleast_1d: _RESHAPE, np.atleast_2d: _RESHAPE,
    np.atleast_3d: _RESHAPE,
    np.transpose: View('transpose', always=True), np.swapaxes: View('swapaxes', always=True),
    np.moveaxis: View('moveaxis', always=True),
    np.flip: View('flip', always=True), np.fliplr: View('flip', always=True),
    np.flipud: View('flip', always=True), np.rot90: View(None, always=True),
    np.diagonal: View(None, always=True), np.broadcast_to: View(None, always=True),
    np.real: _NONE, np.imag: _NONE,
}
for _fn in _existing(np, ('matrix_transpose', 'permute_dims')):
    VIEW_FUNCTIONS[_fn] = View('transpose' if _fn.__name__ == 'permute_dims'
                               else 'matrix_transpose', always=True)

VIEW_METHODS = {
    'reshape': _RESHAPE, 'ravel': _RESHAPE, 'view': _NONE,
    'squeeze': View('reshape', always=True), 'transpose': View('transpose', always=True),
    'swapaxes': View('swapaxes', always=True), 'diagonal': View(None, always=True),
}

VIEW_ATTRIBUTES = {
    'T': View('transpose', always=True), 'mT': View('matrix_transpose', always=True),
    'real': _NONE, 'imag': _NONE, 'flat': _NONE,
}


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
    mine = _parts(value, deep)
    if mine and any(_overlap(a, b) for a in mine for b in _parts(other, True)):
        raise UnsupportedError(reason, filename, lineno, col)


def check_refresh(container, written, holders, reason, filename, lineno, col):
    """Before a write into `written`: `container`, whose kind the mutation pass did not
    know and refreshes as a list holding `holders` after the write, is, if an array, one
    of `holders` (the refresh makes it the written object) or apart from `written`;
    else the located refusal `reason`."""
    if shares_views(container) and shares_views(written) \
            and not any(container is h for h in holders) and _overlap(container, written):
        raise UnsupportedError(reason, filename, lineno, col)


def _parts(value, deep) -> list:
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
        elif (deep or v is value) and isinstance(getattr(v, '__dict__', None), dict) \
                and not isinstance(v, (type, types.ModuleType, types.FunctionType,
                                       types.MethodType)):
            stack.extend(vars(v).values())      # an object's fields (a dataclass, `self`)
    return out


def _overlap(a, b) -> bool:
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
    if value.__class__ is not np.ndarray or like.__class__ is not np.ndarray \
            or (value.dtype == like.dtype and value.strides == like.strides):
        return value
    out = np.empty_like(like)
    np.copyto(out, value, casting='same_kind')
    return out


def _like_layout_vjp(g, ans, value, like):
    return g


def _like_layout_jvp(t, ans, value, like):
    return t


defvjp(like_layout, _like_layout_vjp)
defjvp(like_layout, _like_layout_jvp)
static(like_layout, 1)


def holds(container, item) -> bool:
    """Whether `item` shares memory with anything `container` holds, at any depth."""
    mine = _parts(item, False)
    return any(_overlap(a, b) for a in mine for b in _parts(container, True) if b is not container)


def reread_item(container, item, inside, reason, filename, lineno, col):
    """`item` after a write into what `container` holds (a callee may have moved its
    slots): where `item` was inside it before (`inside`, from `holds`), read back from the
    slot holding that very object (as a value, `container[k]`), else `item` itself. An
    array inside that no slot holds any more: what it became is not known, the located
    refusal `reason`."""
    if inside and _slot_of(container, item) is None and is_mutable(item):
        raise UnsupportedError(reason, filename, lineno, col)
    return item


def _slot_of(container, item):
    """The first key of `container` whose slot holds the very object `item`, or None."""
    found = _slots(container, item)
    return found[0] if found else None


def reread_slot(container, key, old):
    """`container[key]` read again after a write into what it holds (`a = ys[-1]` made
    `a` before the write): `old` itself where a slot of the list or dict still holds
    that very object (a name binds an object, not a slot: `ys.append(v)` since moved
    what `ys[-1]` reads); the slot's object made anew otherwise."""
    if isinstance(container, (list, dict)) and _slot_of(container, old) is not None:
        return old
    return container[key]


def _slot_for(container, key, old):
    """The slot `reread_slot` reads as a value: the one holding `old`, else `key`."""
    k = _slot_of(container, old) if isinstance(container, (list, dict)) else None
    return key if k is None else k


def _reread_slot_vjp(g, ans, container, key, old):
    return untake(g, container, _slot_for(container, key, old))


def _reread_slot_jvp(t, ans, container, key, old):
    return t if t.__class__ is float and t == 0.0 else t[_slot_for(container, key, old)]


def _reread_slot_vjp_old(g, ans, container, key, old):
    return zeros_like_value(old)


def _reread_slot_jvp_old(t, ans, container, key, old):
    return zeros_like_value(old)


defvjp(reread_slot, _reread_slot_vjp, None, _reread_slot_vjp_old)
defjvp(reread_slot, _reread_slot_jvp, None, _reread_slot_jvp_old)
static(reread_slot, 1)


def _reread_slot(container, item, inside):
    return _slot_of(container, item) if inside else None


def is_mutable(value) -> bool:
    """Whether `value <op>= v` writes into `value` (an array, list or dict) rather than
    making a new object (a number)."""
    return isinstance(value, (np.ndarray, list, dict)) or is_array(value)


def _reread_vjp_container(g, ans, container, item, inside, reason, filename, lineno, col):
    k = _reread_slot(container, item, inside)
    return zeros_like_value(container) if k is None else untake(g, container, k)


def _reread_vjp_item(g, ans, container, item, inside, reason, filename, lineno, col):
    return g if _reread_slot(container, item, inside) is None else 0.0


def _reread_jvp_container(t, ans, container, item, inside, reason, filename, lineno, col):
    k = _reread_slot(container, item, inside)
    if k is None:
        return zeros_like_value(item)
    return t if t.__class__ is float and t == 0.0 else t[k]


def _reread_jvp_item(t, ans, container, item, inside, reason, filename, lineno, col):
    return t if _reread_slot(container, item, inside) is None else zeros_like_value(item)


defvjp(reread_item, _reread_vjp_container, _reread_vjp_item)
defjvp(reread_item, _reread_jvp_container, _reread_jvp_item)
static(reread_item, 2, 3, 4, 5, 6)


def refresh_items(container, item, held=None):
    """`container` (a list, tuple or dict) after a write into memory some of its slots hold.

    The slots holding `held` (by default `item`) now hold `item`: the written
    object (`held is item`: the same container comes back, nothing moves), or
    a view of it made anew (a new container whose slots hold it). As a value,
    those slots' cotangents are `item`'s, the others the old container's. The
    mutation pass assigns `ys = refresh_items(ys, x)` after a write into `x`
    for every name `ys` that may hold `x`, in any slots; where `ys` turns out to
    be `x` itself (its kind was not known), it is `item`, and takes all of it.
    """
    held = item if held is None else held
    if container is held:
        return item
    if held is item or not _is_container(container):
        return container
    slots = _slots(container, held)
    if isinstance(container, dict):
        return {k: (item if k in slots else v) for k, v in container.items()}
    out = [item if k in slots else v for k, v in enumerate(container)]
    return tuple(out) if isinstance(container, tuple) else out


def _is_container(value) -> bool:
    return isinstance(value, (list, tuple, dict))


def _slots(container, item):
    """The keys of `container`'s slots that hold `item` (none unless a list, tuple or dict)."""
    if not _is_container(container):
        return []
    keys = container.keys() if isinstance(container, dict) else range(len(container))
    return [k for k in keys if container[k] is item]


def _refresh_vjp_container(g, ans, container, item, held=None):
    held = item if held is None else held
    if container is held:
        return 0.0                                # the container was the item itself
    slots = _slots(container, held)
    if not slots or (g.__class__ is float and g == 0.0):
        return g
    if isinstance(g, Items):
        for k in slots:
            g = g.cleared(k)
        return g
    out = dict(g) if isinstance(g, dict) else list(g)
    for k in slots:
        out[k] = 0.0
    return out if not isinstance(container, tuple) else tuple(out)


def _refresh_vjp_item(g, ans, container, item, held=None):
    if container is (item if held is None else held):
        return g                                  # the container was the item itself
    total = zeros_like_value(item)
    if g.__class__ is float and g == 0.0:
        return total
    for k in _slots(container, item if held is None else held):
        total = total + g[k]
    return total


def _refresh_jvp_container(t, ans, container, item, held=None):
    return _refresh_vjp_container(t, ans, container, item, held)


def _keys_of(container) -> list:
    """A dict's keys, a list's or tuple's positions (they carry no derivative)."""
    return list(container) if isinstance(container, dict) else list(range(len(container)))


def _refresh_jvp_item(t, ans, container, item, held=None):
    if container is (item if held is None else held):
        return t
    if not _is_container(container):
        return zeros_like_value(container)
    slots = set(_slots(container, item if held is None else held))
    keys = _keys_of(container)
    # (no dict comprehension: the compiler reads this rule at third order)
    out = [t if k in slots else zeros_like_value(container[k]) for k in keys]
    if isinstance(container, dict):
        return _dict_of(keys, out)
    return tuple(out) if isinstance(container, tuple) else out


def _dict_of(keys, values):
    """dict(zip(keys, values)), a primitive (linear in `values`)."""
    return dict(zip(keys, values))


def _dict_of_vjp(g, ans, keys, values):
    if g.__class__ is float and g == 0.0:
        return 0.0
    return [g.get(k, 0.0) for k in keys]


def _dict_of_jvp(t, ans, keys, values):
    if t.__class__ is float and t == 0.0:
        return 0.0
    return dict(zip(keys, t))


# The rules of refresh_items and reread_item are linear in their cotangent (tangent),
# each pair the transpose of the other: primitives whose rules are each other, so the
# reverse sweep differentiates again in both modes.
linear_pair(_refresh_vjp_container, _refresh_jvp_container)
linear_pair(_refresh_vjp_item, _refresh_jvp_item)
linear_pair(_reread_vjp_container, _reread_jvp_container)
linear_pair(_reread_vjp_item, _reread_jvp_item)
linear_pair(_reread_slot_vjp, _reread_slot_jvp)
linear_pair(_reread_slot_vjp_old, _reread_slot_jvp_old)

defvjp(_dict_of, None, _dict_of_vjp)
defjvp(_dict_of, None, _dict_of_jvp)
static(_dict_of, 0)
linear_pair(_dict_of_vjp, _dict_of_jvp)
RULES_OF_RULES.add(_dict_of)            # a helper of refresh_items's forward rule
defvjp(refresh_items, _refresh_vjp_container, _refresh_vjp_item)
defjvp(refresh_items, _refresh_jvp_container, _refresh_jvp_item)
static(refresh_items, 2)

def cycled(values, shape):
    """`np.resize(values, shape)`: `values` flat, repeated or cut to fill `shape` (how
    np.put, np.place and np.putmask read their values), in the library of `values`."""
    if not is_foreign_array(values):
        return np.resize(values, shape)
    flat = np.ravel(values)
    size = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    if flat.shape[0] != size:
        flat = np.concatenate([flat] * -(-size // flat.shape[0]))[:size]
    return np.reshape(flat, shape) if isinstance(shape, tuple) else flat


def_gather(cycled, forms='any shape')
static(cycled, 1)

# `to_library(value, like)` moves a NumPy value into the library of the array it is
# written into (the lowerings of np.put, np.place, np.putmask, np.copyto): the same
# numbers, so its derivative is the identity.
defvjp(to_library, lambda g, ans, value, like: g)
defjvp(to_library, lambda t, ans, value, like: t)
static(to_library, 1)

nondifferentiable(put_index, diagonal_index, is_array, check_memory, is_list, shares, index_size, as_mask,
                  insert_index, holds, is_mutable, overlap_value, check_overlap, check_apart,
                  check_refresh, _slots, _slot_of, _reread_slot, _is_container, _keys_of)
