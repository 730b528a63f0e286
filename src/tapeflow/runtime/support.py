"""What generated code is given besides the user's globals (`generated_namespace`), and the
derivatives of its helpers (`runtime.helpers`), for generated code differentiated again.

A gradient module dumped to disk needs this package's runtime (or a copy of it) and
NumPy, nothing else. No gast, no compiler.
"""
from __future__ import annotations

import numpy as np

from tapeflow.rules import registry
from tapeflow.rules.batching import (defjvp_batched, is_batched, jvp_over_batch, lift_tangent,
                                     rows_at, set_rows_at)
from tapeflow.rules.array_ops import add_at, is_basic_index, stayed
from tapeflow.rules.indexing import untake
from tapeflow.runtime.checkpoint import checkpoints
from tapeflow.runtime.randomness import (capture_random, random_sources, replay_random,
                                         restore_random)
from tapeflow.runtime.helpers import (ABSENT, add_adjoint, append_tangent, densify, drop_last_adjoint,
                                      getitem_adjoint, insert_adjoint, insert_tangent, is_zero,
                                      last_adjoint, old_item, old_value, pop_index, remove_tangent,
                                      restore_item, old_entry, restore_entry,
                                      restore_contents, saved_contents, setitem_batched,
                                      setitem_clear_adjoint, setitem_tangent, setitem_value_adjoint,
                                      snapshot, static_argument, zero_tangent,
                                      keyword_argument)
from tapeflow.rules.reduced_cotangents import kept_mean, kept_sum, uniform_mean, uniform_sum
from tapeflow.rules.mutation import (as_mask, diagonal_index, index_size, inplace_op, is_array,
                                     is_list, put_index, refresh_items, shares, reread_item, reread_slot,
                                     overlap_value, check_overlap, insert_index, check_apart, check_memory, to_library, cycled,
                                     holds, like_layout, check_refresh, is_mutable)
from tapeflow.rules.dicts import delete_item, without_key
from tapeflow.rules.iterators import zipped
from tapeflow.rules.shapes import broadcast_tangent, dense, shape_witness, unbroadcast, unbroadcast_batch

__all__ = ['adjoint_stack', 'add_adjoint', 'static_argument', 'keyword_argument', 'getitem_adjoint', 'setitem_tangent', 'setitem_batched', 'append_tangent', 'zero_tangent', 'is_zero', 'setitem_value_adjoint', 'setitem_clear_adjoint',
           'last_adjoint', 'drop_last_adjoint', 'snapshot', 'old_value', 'old_item', 'restore_item',
           'old_entry', 'restore_entry', 'densify',
           'unbroadcast', 'Tape', 'new_tape', 'is_array', 'is_list', 'shares', 'inplace_op', 'pop_index',
           'insert_adjoint', 'remove_tangent', 'insert_tangent', 'index_size', 'as_mask', 'saved_contents',
           'restore_contents', 'add_at', 'put_index', 'diagonal_index', 'refresh_items',
           'reread_item', 'reread_slot', 'overlap_value', 'check_overlap', 'insert_index',
           'check_apart', 'check_memory', 'to_library', 'cycled', 'holds', 'like_layout', 'check_refresh',
           'is_mutable']


class Tape(list):
    """A tape that generated code differentiated again reads: it carries the stacks of
    cotangents kept beside it, one per order of differentiation (`adjoint_stack`)."""
    __slots__ = ('stacks',)

    def adjoint_stack(self, order) -> 'Tape':
        try:
            stacks = self.stacks
        except AttributeError:
            stacks = self.stacks = {}
        stack = stacks.get(order)
        if stack is None:
            stack = stacks[order] = Tape()
        return stack


def new_tape() -> Tape:
    """The tape of generated code that is itself being differentiated (`_tape = new_tape()`
    where the code read said `_tape = []`): its adjoint stacks travel with it."""
    return Tape()


def adjoint_stack(tape, order=1) -> Tape:
    """The stack of cotangents kept beside `tape` when generated code is differentiated again.

    The tape carries it: the forward and backward functions that share a tape share its
    adjoint stack, and the third derivative's stack for a tape is not the second's
    (`order`). The tape may itself be an adjoint stack: third order keeps cotangents of
    second-order cotangents."""
    if tape.__class__ is not Tape:
        raise TypeError('generated code differentiated again reads a tape made by code '
                        f'the compiler rewrote (runtime.support.Tape), not a {type(tape).__name__}')
    return tape.adjoint_stack(order)


def generated_namespace() -> dict:
    """What generated code may refer to besides the user's own globals."""
    import math
    names = {name: globals()[name] for name in __all__}
    names.update(lift_tangent=lift_tangent, jvp_over_batch=jvp_over_batch, dense=dense)
    names.update(np=np, math=math, range=range, slice=slice, len=len, tuple=tuple, zipped=zipped,
                 without_key=without_key, delete_item=delete_item,
                 checkpoints=checkpoints, random_sources=random_sources,
                 capture_random=capture_random, replay_random=replay_random,
                 restore_random=restore_random,
                 uniform_sum=uniform_sum, uniform_mean=uniform_mean, kept_sum=kept_sum,
                 kept_mean=kept_mean, shape_witness=shape_witness)
    return names


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


def _add_adjoint_jvp_batched_a(t, ans, a, b):
    return lift_tangent(t, a, ans)


def _add_adjoint_jvp_batched_b(t, ans, a, b):
    return lift_tangent(t, b, ans)          # (b's tangent, in b's shape: a number's, say)


def _getitem_adjoint_jvp_batched(t, ans, adjoint, k):
    return _part(t, k) if t.__class__ is np.ndarray else getitem_adjoint(t, k)


def _setitem_value_adjoint_jvp_batched(t, ans, adjoint, index, value):
    if isinstance(t, dict):             # (no entry: a slot cleared since, or never written)
        return t.get(index, 0.0)
    part = _part(t, index)
    if t.__class__ is np.ndarray and not is_basic_index(index):   # a repeated index: the
        # last write of it stayed (as `written` reads it unbatched)
        part = np.where(stayed(np.shape(adjoint), index, np.shape(part)[1:]), part, 0.0)
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


def _old_item_vjp(g, ans, container, key):
    return 0.0 if is_zero(g) or ans is ABSENT else {key: g}


def _old_item_jvp(t, ans, container, key):
    return 0.0 if is_zero(t) or ans is ABSENT else t.get(key, 0.0) if isinstance(t, dict) else 0.0


registry.defvjp(old_item, _old_item_vjp)
registry.defjvp(old_item, _old_item_jvp)
registry.static(old_item, 1)


def _old_entry_vjp(g, ans, container, key):
    g = g[0] if isinstance(g, (tuple, list)) else g
    return 0.0 if is_zero(g) else {key: g}


def _old_entry_jvp(t, ans, container, key):
    return (t.get(key, 0.0) if isinstance(t, dict) else 0.0), 0.0


registry.defvjp(old_entry, _old_entry_vjp)
registry.defjvp(old_entry, _old_entry_jvp)
registry.static(old_entry, 1)


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
defjvp_batched(add_adjoint, _add_adjoint_jvp_batched_a, _add_adjoint_jvp_batched_b)
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

registry.nondifferentiable(zero_tangent, is_zero, adjoint_stack, new_tape, slice, pop_index,
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
