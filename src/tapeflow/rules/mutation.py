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

The helpers generated code calls (`runtime.support`), re-exported at the end,
compute positions and decide, at run time, what the rewrites could not decide
while compiling (`shares`: is this reshape a view?): `rules.write_checks`
around a write, `rules.container_reads` when a container is read after one.
"""
from __future__ import annotations

import dataclasses

import numpy as np

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
    'update': Mutator('receiver', 'dict_update', ('other',)),
    'pop': Mutator('receiver', 'dict_pop', ('key', 'default')),
    'popitem': Mutator('receiver', 'opaque'),
    'setdefault': Mutator('receiver', 'dict_setdefault', ('key', 'default')),
    'clear': Mutator('receiver', 'opaque'),
}

# Methods that read their object only, whatever it is (a list's, a dict's, an array's;
# those with derivative rules are pure too).
READING_METHODS = frozenset({'index', 'count', 'get', 'keys', 'values', 'items', 'copy',
                             'tolist', 'item', 'astype'})


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


# The helpers generated code calls around writes (found here by the rewrites).
from tapeflow.rules.write_checks import (  # noqa: E402,F401  (re-exported)
    as_mask, check_apart, check_memory, check_overlap, check_refresh, cycled, diagonal_index,
    index_size, inplace_op, insert_index, is_array, is_list, like_layout, overlap_value,
    put_index, shares, to_library)
from tapeflow.rules.container_reads import (  # noqa: E402,F401  (re-exported)
    holds, is_mutable, refresh_items, reread_item, reread_slot)

from tapeflow.rules.dicts import delete_item  # noqa: E402  (`del x[k]`, desugar's)

FUNCTIONS[delete_item] = Mutator(0, 'delete', ('container', 'key'))
