"""The helpers generated code calls: cotangents and tangents of containers, writes and
their undoing. NumPy only, no gast, no compiler.

The symbolic zero of an adjoint is the float `0.0`: `bx = 0.0` means "no
contribution yet", and these helpers accept it wherever a cotangent is
expected. Their own derivatives (generated code differentiated again) are
registered by `runtime.support`, which hands them to generated code.
"""
from __future__ import annotations

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules.array_ops import written
from tapeflow.rules.arrays import copy_of, is_foreign_array
from tapeflow.rules.batching import is_batched, set_rows_at
from tapeflow.rules.sequences import Items
from tapeflow.rules.shapes import carries_float, unbroadcast, zeros_like_value


def is_zero(adjoint) -> bool:
    return adjoint.__class__ is float and adjoint == 0.0


def static_argument(value, message):
    """Generated code differentiated again checks, before a call, that an argument the
    callee has no derivative in (an axis, a width, popped off the tape and so counted
    as moving) carries no float: integers, shapes and strings have none. A float is
    refused with `message` (see `transforms.operations.rules_for`)."""
    if carries_float(value):
        raise NotImplementedError(message)


def keyword_argument(value, message):
    """A user's keyword argument that the analysis counts as moving (an axis that shares a
    tuple with an array) is checked when the code runs: a float there is the located
    refusal `message`, as the compiler would have said (`transforms.operations.rules_for`)."""
    if carries_float(value):
        raise UnsupportedError(message)


def add_adjoint(a, b):
    """a + b for cotangents of any structure; the float 0.0 is a symbolic zero."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    if a.__class__ is Items or b.__class__ is Items:
        return a + b
    if isinstance(a, dict):
        out = {k: add_adjoint(a.get(k, 0.0), b.get(k, 0.0)) for k in {**a, **b}}
        kind = b.__class__ if a.__class__ is dict else a.__class__     # (an object's `Fields`)
        return out if kind is dict else kind(out)
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
    if isinstance(adjoint, dict):
        return adjoint.get(index, 0.0)
    return unbroadcast(adjoint[index], value)


def setitem_clear_adjoint(adjoint, index):
    """The cotangent of `y` before `y[index] = v`: the overwritten part gets none."""
    if is_zero(adjoint):
        return adjoint
    if adjoint.__class__ is Items and isinstance(index, (int, np.integer)):
        return adjoint.cleared(index)
    if isinstance(adjoint, dict):
        return {k: v for k, v in adjoint.items() if k != index}
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
    if isinstance(container, dict):
        new = dict(tangent) if isinstance(tangent, dict) else {}
        new[index] = value_tangent
        return new
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
    """`setitem_tangent` for batches of tangents (`tapeflow.rules.batching`): `y[index] = v`
    (a list's or dict's slot holds its batch as it is)."""
    if isinstance(container, (list, dict)) or not (is_batched(tangent, container)
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
    if isinstance(container, dict) and index not in container:
        raise UnsupportedError(f'a new key, {index!r}, written into a dict tapeflow did not know '
                               f'was one here: make the dict where the function can see it '
                               f'({{}}, dict(...)), or pass it as a dict argument')
    value = container[index]
    if isinstance(container, (list, dict)):
        return value
    # (a copy of a Dask array is a new object: `z[...]` may be `z`, whose graph the write replaces)
    if isinstance(value, np.ndarray):
        return value.copy()
    if not is_foreign_array(value):
        return value
    if any(n != n for n in value.shape):    # NaN: Dask's, after a mask; it could not be written back
        raise UnsupportedError('a write through a boolean mask into a Dask array: how many '
                               'elements it overwrites is not known until Dask computes, so '
                               'tapeflow cannot keep them -- write x = np.where(mask, value, x) '
                               'instead')
    return copy_of(value)


class _Absent:
    """What a dict's missing key held before `d[k] = v` added it (`old_item`)."""
    __slots__ = ()

    def __repr__(self):
        return '<absent>'


ABSENT = _Absent()


def old_item(container, key):
    """What `d[key] = v` overwrites in a dict: the value, or `ABSENT` for a new key."""
    return container.get(key, ABSENT)


def restore_item(container, key, old):
    """Undo `d[key] = v`: the old value back, or the key removed where it was new."""
    if old is ABSENT:
        del container[key]
    else:
        container[key] = old


def old_entry(container, key):
    """What `del d[key]` removes: (its value, its place in the dict's order)."""
    return container[key], list(container).index(key)


def restore_entry(container, key, entry):
    """Undo `del d[key]`: the value back in its place, so the dict's order (what its views
    and iteration read) is what it was."""
    value, place = entry
    items = list(container.items())
    items.insert(place, (key, value))
    container.clear()
    container.update(items)


# ---------------------------------------------------------------- writes to shared memory
# The mutation pass (transforms/mutation.py) lowers writes into forms the
# sweeps differentiate; these helpers are what those forms call.

def pop_index(container, index=-1) -> int:
    """The position `container.pop(index)` removes, counted from the start (a list's:
    the compiler took `container` for one)."""
    if not isinstance(container, list):
        raise UnsupportedError(f'.pop() of a {type(container).__name__} tapeflow did not know '
                               f'was one here (a value a try or with body, or a call, gave '
                               f'back): make it where the function can see it, or pop it '
                               f'inside that body')
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


def snapshot(value):
    """A copy of arrays (in containers too) that the reverse sweep will restore in place."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if is_foreign_array(value):
        return copy_of(value)
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value)
    if value.__class__ is dict:
        return {k: snapshot(v) for k, v in value.items()}
    return value


def write_back(args, positions, finals, before):
    """The caller's arguments at `positions` left as the plain call leaves them: each
    brought to `finals`' state (what a function's variant gives back for them,
    `transforms.variants`), an array written into in place, a list's or dict's items
    replaced. `before`: shallow copies of those lists and dicts taken before the call:
    an array there the function did not change stays the caller's own object."""
    for i, final, old in zip(positions, finals, before):
        _written_into(args[i], final, old, i)


def _written_into(arg, final, old, i):
    """`arg` brought to `final`'s state (`write_back`); a tuple's items each in turn."""
    if final is arg:
        return
    if isinstance(arg, np.ndarray) or is_foreign_array(arg):
        arg[...] = final
    elif isinstance(arg, list) and isinstance(final, list):
        arg[:] = [_kept(old, k, v) for k, v in enumerate(final)]
    elif isinstance(arg, dict) and isinstance(final, dict):
        items = {k: _kept(old, k, v) for k, v in final.items()}
        arg.clear()
        arg.update(items)
    elif isinstance(arg, tuple) and isinstance(final, tuple) and len(arg) == len(final):
        for item, made in zip(arg, final):          # (a tuple holds what was written into)
            _written_into(item, made, list(item) if isinstance(item, list) else
                          dict(item) if isinstance(item, dict) else None, i)
    elif isinstance(arg, (list, dict, tuple)):
        raise TypeError(f'tapeflow internal error: cannot leave the argument {i} '
                        f'({type(arg).__name__}) as the plain call leaves it')
    # (anything else holds nothing a write changed: numbers, strings, objects given back)


def shallow_copies(args, positions) -> list:
    """For `write_back`: the lists and dicts among `args` at `positions`, copied (their
    items the caller's own), None for the others."""
    return [list(args[i]) if isinstance(args[i], list) else
            dict(args[i]) if isinstance(args[i], dict) else None for i in positions]


def _kept(old, key, value):
    """`old[key]` where it is an array holding `value`'s numbers (unchanged: the caller's
    own object), else `value`."""
    try:
        was = old[key]
    except (KeyError, IndexError, TypeError):
        return value
    if was is value or (isinstance(was, np.ndarray) and isinstance(value, np.ndarray)
                        and was.shape == value.shape and was.dtype == value.dtype
                        and np.array_equal(was, value, equal_nan=True)):
        return was
    return value
