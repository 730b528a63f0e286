"""Rules for joining and splitting: concatenate, stack, hstack/vstack/dstack,
column_stack, append; split, array_split, hsplit/vsplit/dsplit, unstack.

A joining function's first argument is a sequence of arrays; its cotangent
is a sequence of the same type and length (a list for a list), one
cotangent per array, in that array's shape and dtype. A splitting function's
output is a list; its cotangent is a list whose unused entries may be None.
"""
import numpy as np

from tapeflow.rules.batching import batch_size, unbatched_as_batch
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import alias, linear_pair, version_dependent
from tapeflow.rules.shapes import fill_zeros, fit, rebuild


def _dummy(shape):
    return np.broadcast_to(np.zeros((), dtype=bool), shape)


def _prepared_shapes(arrays, join):
    """The shape each array has inside `join` (after its atleast_*d step)."""
    return [np.shape(join([_dummy(np.shape(a))])) for a in arrays]


def _unjoin(g, arrays, shapes, axis):
    """Cut `g` into one cotangent per array, along `axis` (None: flattened)."""
    if axis is None:
        g = np.ravel(g)
        sizes = [int(np.prod(shape)) for shape in shapes]
        axis = 0
    else:
        sizes = [shape[axis] for shape in shapes]
    pieces = np.split(g, np.cumsum(sizes)[:-1].tolist(), axis=axis)
    return rebuild(arrays, [fit(np.reshape(piece, np.shape(a)), a)
                            for piece, a in zip(pieces, arrays)])


def _hstack_axis(shapes):
    return 0 if shapes and len(shapes[0]) == 1 else 1


def concatenate_vjp(g, ans, arrays, axis=0, out=None, dtype=None, casting='same_kind'):
    return _unjoin(g, arrays, [np.shape(a) for a in arrays], axis)

def concatenate_jvp(t, ans, arrays, axis=0, out=None, dtype=None, casting='same_kind'):
    return np.concatenate(t, axis=axis)

def stack_vjp(g, ans, arrays, axis=0, out=None, dtype=None, casting='same_kind'):
    return rebuild(arrays, [fit(piece, a) for piece, a in zip(np.unstack(g, axis=axis), arrays)])

def stack_jvp(t, ans, arrays, axis=0, out=None, dtype=None, casting='same_kind'):
    return np.stack(t, axis=axis)

def hstack_vjp(g, ans, tup, dtype=None, casting='same_kind'):
    return _unjoin(g, tup, _prepared_shapes(tup, np.hstack),
                   _hstack_axis(_prepared_shapes(tup, np.hstack)))

def hstack_jvp(t, ans, tup, dtype=None, casting='same_kind'): return np.hstack(t)
def vstack_vjp(g, ans, tup, dtype=None, casting='same_kind'):
    return _unjoin(g, tup, _prepared_shapes(tup, np.vstack), 0)

def vstack_jvp(t, ans, tup, dtype=None, casting='same_kind'): return np.vstack(t)
def dstack_vjp(g, ans, tup): return _unjoin(g, tup, _prepared_shapes(tup, np.dstack), 2)
def dstack_jvp(t, ans, tup): return np.dstack(t)
def column_stack_vjp(g, ans, tup): return _unjoin(g, tup, _prepared_shapes(tup, np.column_stack), 1)
def column_stack_jvp(t, ans, tup): return np.column_stack(t)


def _append_part(g, arr, values, axis, first):
    if axis is None:
        g = np.ravel(g)
        axis = 0
        cut = int(np.size(arr))
    else:
        cut = np.shape(arr)[axis]
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(None, cut) if first else slice(cut, None)
    target = arr if first else values
    return fit(np.reshape(g[tuple(index)], np.shape(target)), target)


def append_vjp_arr(g, ans, arr, values, axis=None): return _append_part(g, arr, values, axis, True)
def append_vjp_values(g, ans, arr, values, axis=None):
    return _append_part(g, arr, values, axis, False)

def append_jvp_arr(t, ans, arr, values, axis=None): return np.append(t, np.zeros_like(values), axis)
def append_jvp_values(t, ans, arr, values, axis=None): return np.append(np.zeros_like(arr), t, axis)


# ---------------------------------------------------------------- splitting

def _split_axis(fn, ary, axis):
    if fn is np.hsplit:
        return 0 if np.ndim(ary) == 1 else 1
    return {np.vsplit: 0, np.dsplit: 2}.get(fn, axis)


def _pieces(g, ans):
    """The cotangent of each piece in the piece's shape: a piece the code did not use has
    None or the symbolic zero 0.0 (`a, b = np.split(x, 2)` with `b` unused)."""
    return [piece if np.shape(piece) == np.shape(out) else np.zeros_like(out) + piece
            for piece, out in zip(fill_zeros(g, ans), ans)]


def _split_rules(fn):
    def vjp(g, ans, ary, indices_or_sections, axis=0):
        joined = np.concatenate(_pieces(g, ans), axis=_split_axis(fn, ary, axis))
        return fit(joined, ary)

    def jvp(t, ans, ary, indices_or_sections, *args, **kwargs):
        return fn(t, indices_or_sections, *args, **kwargs)

    def jvp_batched(t, ans, ary, indices_or_sections, axis=0):
        split = np.array_split if fn is np.array_split else np.split
        return split(t, indices_or_sections, axis=_split_axis(fn, ary, axis) % np.ndim(ary) + 1)
    return vjp, jvp, jvp_batched


# ---------------------------------------------------------------- batches of tangents
# `t` holds one tangent per array (rules/batching.py), some of them batches
# `(B,) + shape`: all become batches, and the join is along the axis past the batch axis.

def _batches(t, arrays, shapes):
    """The tangents `t` of `arrays` as batches, each reshaped to `(B,) + shape`."""
    if not isinstance(arrays, (list, tuple)):       # an array: the sequence of its rows
        t, arrays = list(np.moveaxis(t, 1, 0)), list(arrays)
    size = batch_size(t, arrays)
    return [np.reshape(unbatched_as_batch(u, a, size), (size,) + tuple(shape))
            for u, a, shape in zip(t, arrays, shapes)]


def _join_batched(t, arrays, join, axis):
    shapes = _prepared_shapes(arrays, join)
    return np.concatenate(_batches(t, arrays, shapes), axis=axis % len(shapes[0]) + 1)


def concatenate_jvp_batched(t, ans, arrays, axis=0, out=None, dtype=None,
                            casting='same_kind'):
    if axis is None:
        return np.concatenate(_batches(t, arrays, [(np.size(a),) for a in arrays]), axis=1)
    return np.concatenate(_batches(t, arrays, [np.shape(a) for a in arrays]),
                          axis=axis % np.ndim(arrays[0]) + 1)

def stack_jvp_batched(t, ans, arrays, axis=0, out=None, dtype=None, casting='same_kind'):
    return np.stack(_batches(t, arrays, [np.shape(a) for a in arrays]),
                    axis=axis % np.ndim(ans) + 1)

def hstack_jvp_batched(t, ans, tup, dtype=None, casting='same_kind'):
    return _join_batched(t, tup, np.hstack, _hstack_axis(_prepared_shapes(tup, np.hstack)))

def vstack_jvp_batched(t, ans, tup, dtype=None, casting='same_kind'):
    return _join_batched(t, tup, np.vstack, 0)

def dstack_jvp_batched(t, ans, tup): return _join_batched(t, tup, np.dstack, 2)
def column_stack_jvp_batched(t, ans, tup): return _join_batched(t, tup, np.column_stack, 1)


def unstack_vjp(g, ans, x, axis=0): return fit(np.stack(fill_zeros(g, ans), axis=axis), x)
def unstack_jvp(t, ans, x, axis=0): return np.unstack(t, axis=axis)
def unstack_jvp_batched(t, ans, x, axis=0): return np.unstack(t, axis=axis % np.ndim(x) + 1)


LISTS = 'a list or tuple of arrays'
entry(np.concatenate, concatenate_vjp, concatenate_jvp, batched=concatenate_jvp_batched,
      forms=f'{LISTS} (cotangent: the same type); axis int or None')
entry(np.stack, stack_vjp, stack_jvp, batched=stack_jvp_batched,
      forms=f'{LISTS} (cotangent: the same type); axis')
for _fn, _vjp, _jvp, _batched in [
        (np.hstack, hstack_vjp, hstack_jvp, hstack_jvp_batched),
        (np.vstack, vstack_vjp, vstack_jvp, vstack_jvp_batched),
        (np.dstack, dstack_vjp, dstack_jvp, dstack_jvp_batched),
        (np.column_stack, column_stack_vjp, column_stack_jvp, column_stack_jvp_batched)]:
    entry(_fn, _vjp, _jvp, batched=_batched, forms=f'{LISTS} of any rank (0-d too)')
entry(np.unstack, unstack_vjp, unstack_jvp, batched=unstack_jvp_batched, forms='axis')

# vstack under its old name: deprecated in NumPy 2.0, removed in 2.5.
for _fn in version_dependent(np, 'row_stack', 'NumPy < 2.5 (np.vstack under its old name)'):
    alias(_fn, np.vstack)

entry(np.append, (append_vjp_arr, append_vjp_values), (append_jvp_arr, append_jvp_values),
      forms='axis None or int; derivative in arr and values')

for _fn in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
    _vjp, _jvp, _batched = _split_rules(_fn)
    entry(_fn, _vjp, _jvp, batched=_batched, static=(1, 2),
          forms='sections int or index list; axis (cotangent: a list, None for unused parts)')
    linear_pair(_vjp, _jvp)         # a split only places numbers: its rules are linear
