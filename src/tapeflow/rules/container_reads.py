"""A container read again after a write, at run time: whether it still holds the
object a name was read from (`holds`, `reread_item`, `reread_slot`), and the
refresh of the items a write may have reached (`refresh_items`), with their
derivative rules: the derivative flows to the slot the value is read from.

`rules.mutation` re-exports every name (the rewrites find helpers there).
"""
from __future__ import annotations

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules.indexing import untake
from tapeflow.rules.entries import entry
from tapeflow.rules.holders import (cleared, function_slots, holds_values, placed,
                                    slot_cotangent, with_slots)
from tapeflow.rules.registry import RULES_OF_RULES, linear_pair, nondifferentiable
from tapeflow.rules.sequences import Items, add_cotangents
from tapeflow.rules.shapes import zeros_like_value
from tapeflow.rules.write_checks import is_array, memory_parts, overlap


def holds(container, item) -> bool:
    """Whether `item` shares memory with anything `container` holds, at any depth."""
    mine = memory_parts(item, False)
    return any(overlap(a, b) for a in mine for b in memory_parts(container, True) if b is not container)


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


entry(reread_slot, (_reread_slot_vjp, None, _reread_slot_vjp_old),
      (_reread_slot_jvp, None, _reread_slot_jvp_old), static=(1,), forms=None)


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


entry(reread_item, (_reread_vjp_container, _reread_vjp_item),
      (_reread_jvp_container, _reread_jvp_item), static=(2, 3, 4, 5, 6), forms=None)


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
    if held is not item and holds_values(container):    # a partial, a closure
        return with_slots(container, function_slots(container, held), item)
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
    if holds_values(container):
        paths = function_slots(container, held)
        return cleared(g, paths) if paths else g
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
    if holds_values(container):
        for path in function_slots(container, item if held is None else held):
            total = add_cotangents(total, slot_cotangent(g, path))
        return total
    for k in _slots(container, item if held is None else held):
        # a dict's cotangent has no entry where a later write cleared the slot: zero
        # (an item that is a list or dict itself: its cotangent is one, slot by slot)
        total = add_cotangents(total, g.get(k, 0.0) if isinstance(g, dict) else g[k])
    return total


def _refresh_jvp_container(t, ans, container, item, held=None):
    return _refresh_vjp_container(t, ans, container, item, held)


def _keys_of(container) -> list:
    """A dict's keys, a list's or tuple's positions (they carry no derivative)."""
    return list(container) if isinstance(container, dict) else list(range(len(container)))


def _refresh_jvp_item(t, ans, container, item, held=None):
    if container is (item if held is None else held):
        return t
    if holds_values(container):
        paths = function_slots(container, item if held is None else held)
        return placed(container, paths, t) if paths and not (t.__class__ is float and t == 0.0) \
            else 0.0
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

entry(_dict_of, (None, _dict_of_vjp), (None, _dict_of_jvp), static=(0,), forms=None)
linear_pair(_dict_of_vjp, _dict_of_jvp)
RULES_OF_RULES.add(_dict_of)            # a helper of refresh_items's forward rule
entry(refresh_items, (_refresh_vjp_container, _refresh_vjp_item),
      (_refresh_jvp_container, _refresh_jvp_item), static=(2,), forms=None)

nondifferentiable(holds, is_mutable, _slots, _slot_of, _reread_slot, _is_container, _keys_of)
