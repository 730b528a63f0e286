"""Helpers that generated code calls. NumPy only, no gast, no compiler.

A gradient module dumped to disk needs this module (or a copy of it) and
NumPy, nothing else. The symbolic zero of an adjoint is the float `0.0`:
`bx = 0.0` means "no contribution yet", and these helpers accept it wherever a
cotangent is expected.
"""
from __future__ import annotations

import sys

import numpy as np

from tapeflow.rules import registry
from tapeflow.rules.arrays import copy_of, is_foreign_array
from tapeflow.rules.batching import (defjvp_batched, is_batched, jvp_over_batch, lift_tangent,
                                     rows_at, set_rows_at)
from tapeflow.rules.array_ops import add_at, written
from tapeflow.rules.indexing import untake
from tapeflow.rules.sequences import Items
from tapeflow.runtime.checkpoint import checkpoints
from tapeflow.rules.numpy_reductions import uniform_mean, uniform_sum
from tapeflow.rules.mutation import (as_mask, diagonal_index, index_size, inplace_op, is_array,
                                     is_list, put_index, refresh_items, shares, reread_item, reread_slot,
                                     overlap_value, check_overlap, insert_index, check_apart, check_memory, to_library, cycled,
                                     holds, like_layout, check_refresh, is_mutable)
from tapeflow.rules.shapes import (broadcast_tangent, carries_float, dense, shape_witness, unbroadcast,
                                   unbroadcast_batch, zeros_like_value)

__all__ = ['adjoint_stack', 'add_adjoint', 'static_argument', 'getitem_adjoint', 'setitem_tangent', 'setitem_batched', 'append_tangent', 'zero_tangent', 'is_zero', 'setitem_value_adjoint', 'setitem_clear_adjoint',
           'last_adjoint', 'drop_last_adjoint', 'snapshot', 'old_value', 'densify',
           'unbroadcast', 'Tape', 'is_array', 'is_list', 'shares', 'inplace_op', 'pop_index',
           'insert_adjoint', 'remove_tangent', 'insert_tangent', 'index_size', 'as_mask', 'saved_contents',
           'restore_contents', 'add_at', 'put_index', 'diagonal_index', 'refresh_items',
           'reread_item', 'reread_slot', 'overlap_value', 'check_overlap', 'insert_index',
           'check_apart', 'check_memory', 'to_library', 'cycled', 'holds', 'like_layout', 'check_refresh',
           'is_mutable']


class Tape(list):
    """The stack of a forward sweep: `push` in the forward, `pop` in the reverse."""
    __slots__ = ()
    push = list.append


_ADJOINT_STACKS: dict = {}     # (id(tape), order) -> (tape, its stack of cotangents)


def adjoint_stack(tape, order=1) -> list:
    """The stack of cotangents kept beside `tape` when generated code is differentiated again.

    Keyed on the tape's identity and the order of the differentiation: the
    forward and backward functions that share a tape share its adjoint stack,
    and the third derivative's stack for a tape is not the second's. (The
    tape may itself be an adjoint stack: third order keeps cotangents of
    second-order cotangents.) The table holds the tape, so its identity
    cannot pass to another object while the entry lives; an entry is dropped
    once its stack is empty and nothing but the table holds its tape.
    """
    key = (id(tape), order)
    entry = _ADJOINT_STACKS.get(key)
    if entry is None:
        if len(_ADJOINT_STACKS) > 64:
            _drop_finished_stacks()
        entry = _ADJOINT_STACKS[key] = (tape, [])
    return entry[1]


def _drop_finished_stacks():
    for key, (tape, stack) in list(_ADJOINT_STACKS.items()):
        # references to `tape`: the entry, this loop's variable, getrefcount's argument
        if not stack and sys.getrefcount(tape) <= 3:
            del _ADJOINT_STACKS[key]
        del tape, stack


def is_zero(adjoint) -> bool:
    return adjoint.__class__ is float and adjoint == 0.0


def static_argument(value, message):
    """Generated code differentiated again checks, before a call, that an argument the
    callee has no derivative in (an axis, a width, popped off the tape and so counted
    as moving) carries no float: integers, shapes and strings have none. A float is
    refused with `message` (see `transforms.operations.rules_for`)."""
    if carries_float(value):
        raise NotImplementedError(message)


def add_adjoint(a, b):
    """a + b for cotangents of any structure; the float 0.0 is a symbolic zero."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    if a.__class__ is Items or b.__class__ is Items:
        return a + b
    if isinstance(a, dict):
        return {k: add_adjoint(a.get(k, 0.0), b.get(k, 0.0)) for k in {**a, **b}}
    if isinstance(a, (list, tuple)):
        parts = [add_adjoint(x, y) for x, y in zip(a, b)]
        return type(a)._make(parts) if hasattr(type(a), '_make') else type(a)(parts)
    return a + b


_NUMBERS = (float, complex, int)


def _number_for_all(adjoint, index) -> bool:
    """A number as the cotangent of an array written whole (`...`, `()`: all of a 0-d
    array, a CuPy `x[i]`)."""
    return (adjoint.__class__ in _NUMBERS or isinstance(adjoint, np.generic)) and \
        (index is Ellipsis or index.__class__ is tuple and not index)


def getitem_adjoint(adjoint, k):
    """The cotangent of element `k` of a tuple, list or dict, given the container's."""
    if is_zero(adjoint):
        return 0.0
    if isinstance(adjoint, dict):
        return adjoint.get(k, 0.0)
    return adjoint[k]


def densify(adjoint, value):
    """A symbolic zero made concrete in the shape of `value` (for rules that need one)."""
    if not is_zero(adjoint) or not (isinstance(value, np.ndarray) or is_foreign_array(value)):
        return adjoint
    return zeros_like_value(value)


def setitem_value_adjoint(adjoint, index, value):
    """Cotangent of `v` in `y[index] = v`, given the cotangent of `y`.

    Where a repeated index wrote twice, the last write is the one that stayed
    (NumPy), so only it gets the cotangent.
    """
    if is_zero(adjoint):
        return 0.0
    if adjoint.__class__ is np.ndarray or is_foreign_array(adjoint):
        return unbroadcast(written(adjoint, adjoint.shape, index), value)
    if _number_for_all(adjoint, index):
        return unbroadcast(adjoint, value)      # of a 0-d array (a CuPy x[i]): all of it
    return unbroadcast(adjoint[index], value)


def setitem_clear_adjoint(adjoint, index):
    """The cotangent of `y` before `y[index] = v`: the overwritten part gets none."""
    if is_zero(adjoint):
        return adjoint
    if adjoint.__class__ is Items and isinstance(index, (int, np.integer)):
        return adjoint.cleared(index)
    if isinstance(adjoint, (list, Items)):
        cleared = list(adjoint)
        cleared[index] = 0.0
        return cleared
    if _number_for_all(adjoint, index):
        return 0.0                              # of a 0-d array: all of it overwritten
    cleared = copy_of(adjoint) if is_foreign_array(adjoint) else np.array(adjoint, copy=True)
    cleared[index] = 0
    return cleared


def last_adjoint(adjoint):
    """Cotangent of `v` in `ys.append(v)`."""
    if is_zero(adjoint) or not adjoint:
        return 0.0
    return adjoint[-1]


def drop_last_adjoint(adjoint):
    """The cotangent of `ys` before `ys.append(v)`."""
    if is_zero(adjoint):
        return adjoint
    if adjoint.__class__ is Items:
        return adjoint.without_last()
    return adjoint[:-1]


def zero_tangent(value):
    """The tangent of a value that does not depend on the inputs: 0.0, or zeros of its shape."""
    if value.__class__ is float or value.__class__ is int or value.__class__ is bool or value is None:
        return 0.0
    return zeros_like_value(value)


def setitem_tangent(tangent, index, value_tangent, container):
    """The tangent of `y` after `y[index] = v`, without touching a shared tangent."""
    if isinstance(container, list):
        new = list(tangent) if not is_zero(tangent) else [0.0] * len(container)
        new[index] = value_tangent
        return new
    if is_zero(tangent):
        if is_zero(value_tangent):
            return tangent
        new = np.zeros(np.shape(container), np.result_type(container, float))
    else:
        new = np.array(tangent, copy=True)
    new[index] = value_tangent
    return new


def setitem_batched(tangent, index, value_tangent, value, container):
    """`setitem_tangent` for batches of tangents (`tapeflow.rules.batching`): `y[index] = v`."""
    if isinstance(container, list) or not (is_batched(tangent, container)
                                            or is_batched(value_tangent, value)):
        return setitem_tangent(tangent, index, value_tangent, container)
    batched_y = is_batched(tangent, container)
    batched_v = is_batched(value_tangent, value)
    size = tangent.shape[0] if batched_y else value_tangent.shape[0]
    dtype = np.result_type(container, float, *([tangent] if batched_y else []),
                           *([value_tangent] if batched_v else []))
    new = np.empty((size,) + np.shape(container), dtype)
    new[...] = tangent
    set_rows_at(new, index, value_tangent if batched_v else np.asarray(value_tangent)[None])
    return new


def append_tangent(tangent, value_tangent, container):
    """The tangent of `ys` after `ys.append(v)` (`container` is `ys` after it)."""
    if is_zero(tangent):
        if is_zero(value_tangent):
            return tangent
        return [0.0] * (len(container) - 1) + [value_tangent]
    return list(tangent) + [value_tangent]


def old_value(container, index):
    """What `container[index] = v` overwrites: an array's elements, copied so the write cannot
    change them; a list's or dict's slot, the object it held (the write changes the slot)."""
    value = container[index]
    if isinstance(container, (list, dict)):
        return value
    # (a copy of a Dask array is a new object: `z[...]` may be `z`, whose graph the write replaces)
    if isinstance(value, np.ndarray):
        return value.copy()
    return copy_of(value) if is_foreign_array(value) else value


# ---------------------------------------------------------------- writes to shared memory
# The mutation pass (transforms/mutation.py) lowers writes into forms the
# sweeps differentiate; these helpers are what those forms call.

def pop_index(container, index=-1) -> int:
    """The position `container.pop(index)` removes, counted from the start."""
    size = len(container)
    if not -size <= index < size:
        raise IndexError('pop index out of range')
    return index % size


def insert_adjoint(adjoint, index):
    """The cotangent of a list before `pop(index)` removed an element nothing read after."""
    if is_zero(adjoint):
        return adjoint
    if adjoint.__class__ is Items:
        return adjoint.inserted(index)
    out = list(adjoint)
    out.insert(index, 0.0)
    return out


def remove_tangent(tangent, index):
    """The tangent of a list after `pop(index)`."""
    if is_zero(tangent):
        return tangent
    out = list(tangent)
    del out[index]
    return out


def insert_tangent(tangent, index, value_tangent, container):
    """The tangent of `ys` after `ys.insert(index, v)` (`container` is `ys` after it)."""
    if is_zero(tangent) and is_zero(value_tangent):
        return tangent
    out = list(tangent) if not is_zero(tangent) else [0.0] * (len(container) - 1)
    out.insert(index, value_tangent)
    return out


def saved_contents(value):
    """What `restore_contents` needs to undo any write into `value`."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if is_foreign_array(value):
        return copy_of(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return None


def restore_contents(value, saved):
    """Put back, in place, what `saved_contents(value)` saved."""
    if isinstance(value, np.ndarray):
        if value.shape != saved.shape:
            value.resize(saved.shape, refcheck=False)
        value[...] = saved
    elif is_foreign_array(value):
        value[...] = saved
    elif isinstance(value, list):
        value[:] = saved
    elif isinstance(value, dict):
        value.clear()
        value.update(saved)
    return value


def generated_namespace() -> dict:
    """What generated code may refer to besides the user's own globals."""
    import math
    names = {name: globals()[name] for name in __all__}
    names.update(lift_tangent=lift_tangent, jvp_over_batch=jvp_over_batch, dense=dense)
    names.update(np=np, math=math, range=range, slice=slice, len=len, checkpoints=checkpoints,
                 uniform_sum=uniform_sum, uniform_mean=uniform_mean, shape_witness=shape_witness)
    return names


def snapshot(value):
    """A copy of arrays (in containers too) that the reverse sweep will restore in place."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if is_foreign_array(value):
        return copy_of(value)
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value)
    return value


# ---------------------------------------------------------------- rules of these helpers
# Differentiating generated code (higher order) meets these helpers; each is
# linear in its cotangent argument, so each JVP is the helper applied to the
# tangent. `zero_tangent` carries no derivative.

def _getitem_adjoint_jvp(t, ans, adjoint, k):
    return getitem_adjoint(t, k)


def _setitem_value_adjoint_jvp(t, ans, adjoint, index, value):
    return setitem_value_adjoint(t, index, value)


def _setitem_clear_adjoint_jvp(t, ans, adjoint, index):
    return setitem_clear_adjoint(t, index)


def _last_adjoint_jvp(t, ans, adjoint):
    return last_adjoint(t)


def _drop_last_adjoint_jvp(t, ans, adjoint):
    return drop_last_adjoint(t)


def _snapshot_jvp(t, ans, value):
    return snapshot(t)


for _helper, _jvp in ((getitem_adjoint, _getitem_adjoint_jvp),
                      (setitem_value_adjoint, _setitem_value_adjoint_jvp),
                      (setitem_clear_adjoint, _setitem_clear_adjoint_jvp),
                      (last_adjoint, _last_adjoint_jvp), (drop_last_adjoint, _drop_last_adjoint_jvp),
                      (snapshot, _snapshot_jvp)):
    registry.defjvp(_helper, _jvp)
    registry.static(_helper, 1, 2)


def _add_adjoint_jvp(t, ans, a, b):
    return t


registry.defjvp(add_adjoint, _add_adjoint_jvp, _add_adjoint_jvp)


# Batched JVPs (rules/batching.py): a list, tuple or dict of tangents is read
# as it stands; an array batch `(B,) + shape` is indexed past its batch axis.

def _part(t, index):
    """`t[index]` of each row of an array batch `t`, or of a container of tangents."""
    return rows_at(t, index) if t.__class__ is np.ndarray else t[index]


def _add_adjoint_jvp_batched(t, ans, a, b):
    return lift_tangent(t, a, ans)


def _getitem_adjoint_jvp_batched(t, ans, adjoint, k):
    return _part(t, k) if t.__class__ is np.ndarray else getitem_adjoint(t, k)


def _setitem_value_adjoint_jvp_batched(t, ans, adjoint, index, value):
    part = _part(t, index)
    return unbroadcast_batch(part, ans) if is_batched(part, adjoint[index]) \
        else unbroadcast(part, value)


def _setitem_clear_adjoint_jvp_batched(t, ans, adjoint, index):
    if t.__class__ is not np.ndarray:
        return setitem_clear_adjoint(t, index)
    cleared = np.array(t, copy=True)
    set_rows_at(cleared, index, 0)
    return cleared


def _old_value_jvp_batched(t, ans, container, index):
    return old_value(t, index) if t.__class__ is not np.ndarray else _part(t, index).copy()


def _last_adjoint_jvp_batched(t, ans, adjoint):
    return last_adjoint(t)                  # of a list of tangents


def _drop_last_adjoint_jvp_batched(t, ans, adjoint):
    return drop_last_adjoint(t)


def _snapshot_jvp_batched(t, ans, value):
    return snapshot(t)


# Their reverse rules (the transposes), for reverse over reverse.

def _getitem_adjoint_vjp(g, ans, adjoint, k):
    return 0.0 if is_zero(adjoint) else untake(g, adjoint, k)


def _last_adjoint_vjp(g, ans, adjoint):
    return 0.0 if is_zero(adjoint) or not adjoint else untake(g, adjoint, len(adjoint) - 1)


def _drop_last_adjoint_vjp(g, ans, adjoint):
    if is_zero(adjoint):
        return 0.0
    return (list(g) if not is_zero(g) else [0.0] * (len(adjoint) - 1)) + [0.0]


def _setitem_value_adjoint_vjp(g, ans, adjoint, index, value):
    if is_zero(adjoint):
        return 0.0
    return untake(broadcast_tangent(g, adjoint[index]), adjoint, index)


def _old_value_vjp(g, ans, container, index):
    return untake(g, container, index)


def _add_adjoint_vjp(g, ans, a, b):
    return g


registry.defvjp(add_adjoint, _add_adjoint_vjp, _add_adjoint_vjp)
registry.defvjp(getitem_adjoint, _getitem_adjoint_vjp)
registry.defvjp(last_adjoint, _last_adjoint_vjp)
registry.defvjp(drop_last_adjoint, _drop_last_adjoint_vjp)
registry.defvjp(setitem_value_adjoint, _setitem_value_adjoint_vjp)
def _setitem_clear_adjoint_vjp(g, ans, adjoint, index):
    return setitem_clear_adjoint(g, index)


registry.defvjp(setitem_clear_adjoint, _setitem_clear_adjoint_vjp)
def _snapshot_vjp(g, ans, value):
    return g


registry.defvjp(snapshot, _snapshot_vjp)
registry.defvjp(old_value, _old_value_vjp)


def _old_value_jvp(t, ans, container, index):
    return 0.0 if is_zero(t) else old_value(t, index)


registry.defjvp(old_value, _old_value_jvp)
registry.static(old_value, 1)


# The helpers of forward mode's own code, for derivatives of it: each is
# linear in the tangents it is given (the container only lends its shape).

def _setitem_tangent_jvp_y(t, ans, tangent, index, value_tangent, container):
    return setitem_tangent(t, index, 0.0, container)


def _setitem_tangent_jvp_v(t, ans, tangent, index, value_tangent, container):
    return setitem_tangent(0.0, index, t, container)


def _setitem_tangent_vjp_y(g, ans, tangent, index, value_tangent, container):
    return setitem_clear_adjoint(g, index)


def _setitem_tangent_vjp_v(g, ans, tangent, index, value_tangent, container):
    return setitem_value_adjoint(g, index, container[index] if is_zero(value_tangent)
                                 else value_tangent)


def _append_tangent_jvp_ys(t, ans, tangent, value_tangent, container):
    return append_tangent(t, 0.0, container)


def _append_tangent_jvp_v(t, ans, tangent, value_tangent, container):
    return append_tangent(0.0, t, container)


def _append_tangent_vjp_ys(g, ans, tangent, value_tangent, container):
    return drop_last_adjoint(g)


def _append_tangent_vjp_v(g, ans, tangent, value_tangent, container):
    return last_adjoint(g)


registry.defjvp(setitem_tangent, _setitem_tangent_jvp_y, None, _setitem_tangent_jvp_v)
registry.defvjp(setitem_tangent, _setitem_tangent_vjp_y, None, _setitem_tangent_vjp_v)
registry.static(setitem_tangent, 1, 3)
registry.defjvp(append_tangent, _append_tangent_jvp_ys, _append_tangent_jvp_v)
registry.defvjp(append_tangent, _append_tangent_vjp_ys, _append_tangent_vjp_v)
registry.static(append_tangent, 2)
defjvp_batched(add_adjoint, _add_adjoint_jvp_batched, _add_adjoint_jvp_batched)
for _helper, _batched in ((getitem_adjoint, _getitem_adjoint_jvp_batched),
                          (setitem_value_adjoint, _setitem_value_adjoint_jvp_batched),
                          (setitem_clear_adjoint, _setitem_clear_adjoint_jvp_batched),
                          (last_adjoint, _last_adjoint_jvp_batched),
                          (drop_last_adjoint, _drop_last_adjoint_jvp_batched),
                          (snapshot, _snapshot_jvp_batched), (old_value, _old_value_jvp_batched)):
    defjvp_batched(_helper, _batched)


# The transposes above that are more than one expression are called by name
# from second-order code; third order differentiates them in turn. Each is
# linear in its first argument.

def _drop_last_adjoint_vjp_vjp(h, ans, g, ans_, adjoint):
    return 0.0 if is_zero(h) or is_zero(g) else drop_last_adjoint(h)


def _setitem_value_adjoint_vjp_vjp(h, ans, g, ans_, adjoint, index, value):
    return 0.0 if is_zero(h) else setitem_value_adjoint(h, index, value)


def _drop_last_adjoint_vjp_jvp(t, ans, g, ans_, adjoint):
    return _drop_last_adjoint_vjp(t, ans_, adjoint)


def _setitem_value_adjoint_vjp_jvp(t, ans, g, ans_, adjoint, index, value):
    return _setitem_value_adjoint_vjp(t, ans_, adjoint, index, value)


for _transpose, _rule, _jvp in (
        (_drop_last_adjoint_vjp, _drop_last_adjoint_vjp_vjp, _drop_last_adjoint_vjp_jvp),
        (_setitem_value_adjoint_vjp, _setitem_value_adjoint_vjp_vjp,
         _setitem_value_adjoint_vjp_jvp)):
    registry.defvjp(_transpose, _rule)
    registry.defjvp(_transpose, _jvp)
    registry.static(_transpose, *range(1, 5))

registry.nondifferentiable(zero_tangent, is_zero, adjoint_stack, slice, pop_index,
                           saved_contents, restore_contents)


def _insert_adjoint_jvp(t, ans, adjoint, index):
    return insert_adjoint(t, index)


def _insert_adjoint_vjp(g, ans, adjoint, index):
    return 0.0 if is_zero(adjoint) else remove_tangent(g, index)


def _remove_tangent_jvp(t, ans, tangent, index):
    return remove_tangent(t, index)


def _remove_tangent_vjp(g, ans, tangent, index):
    return 0.0 if is_zero(tangent) else insert_adjoint(g, index)


def _insert_tangent_jvp_ys(t, ans, tangent, index, value_tangent, container):
    return insert_tangent(t, index, 0.0, container)


def _insert_tangent_jvp_v(t, ans, tangent, index, value_tangent, container):
    return insert_tangent(0.0, index, t, container)


def _insert_tangent_vjp_ys(g, ans, tangent, index, value_tangent, container):
    return 0.0 if is_zero(g) else remove_tangent(g, index)


def _insert_tangent_vjp_v(g, ans, tangent, index, value_tangent, container):
    return getitem_adjoint(g, index)


registry.defjvp(insert_tangent, _insert_tangent_jvp_ys, None, _insert_tangent_jvp_v)
registry.defvjp(insert_tangent, _insert_tangent_vjp_ys, None, _insert_tangent_vjp_v)
registry.static(insert_tangent, 1, 3)
registry.defjvp(insert_adjoint, _insert_adjoint_jvp)
registry.defvjp(insert_adjoint, _insert_adjoint_vjp)
registry.defjvp(remove_tangent, _remove_tangent_jvp)
registry.defvjp(remove_tangent, _remove_tangent_vjp)
registry.static(insert_adjoint, 1)
registry.static(remove_tangent, 1)
defjvp_batched(insert_adjoint, _insert_adjoint_jvp)
defjvp_batched(remove_tangent, _remove_tangent_jvp)
