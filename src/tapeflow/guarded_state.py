"""What a guarded body (`try`, `with`) gives back, checked and made Python's when it has
run (`tapeflow.guarded_calls`): an array it wrote into in place is the array it was given
again (`kept_identity`), and a container it made is refused where the code after it could
not follow a write through what it holds (`check_aliases`). With `refuse_at`, a refusal
located at the try or with.
"""
from __future__ import annotations

import numpy as np

from tapeflow.errors import UnsupportedError
from tapeflow.rules import guards
from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules.closures import Closure


def kept_identity(out, kept, values, body):
    """`out` with each array the body wrote into in place (a name `kept` marks written) the
    array it was given, as in Python: the compiled body gives back a new array of what it
    computed, which is written into the one given (a view's base and other views see it,
    as the alias analysis takes them to). With the arrays so written and copies of what
    they held before, for the reverse sweep to give back to the body's record."""
    written = guards.written_positions(kept)
    if not written or not isinstance(out, tuple) or len(out) < 3:
        return out, ()
    state, before, names = list(out[2]), [], guards.kept_names(kept)
    for k in sorted(written):
        given, now = values[k], state[k] if k < len(state) else None
        if not isinstance(given, np.ndarray) or now is given or not isinstance(now, np.ndarray):
            continue
        if now.shape != given.shape:
            refuse_at(body, f'the guarded body (try, with) wrote into {names[k]} and gave '
                             f'back an array of another shape: bind a new name instead')
        before.append((given, given.copy()))
        given[...] = now
        for j, other in enumerate(state):       # (`a = y` in the body: a is y after it)
            if other is now:
                state[j] = given
            elif isinstance(other, np.ndarray) and np.shares_memory(other, now):
                refuse_at(body, f'{names[j] if j < len(names) else "a value"}, bound inside '
                                 f'a try or with body to a view of {names[k]}, which the body '
                                 f'writes into: tapeflow does not follow writes through it '
                                 f'after the body; make the view after the try or with')
    if not before:
        return out, ()
    return out[:2] + (tuple(state),) + out[3:], tuple(before)


def _arrays_in(v, out, depth=0):
    """The arrays `v` holds in its lists, tuples and dicts at any depth, repeats kept (None
    past a depth no data structure reaches: one that holds itself)."""
    if isinstance(v, np.ndarray):
        out.append(v)
    elif depth > 64:
        out.append(None)
    elif isinstance(v, (list, tuple, dict)):
        for item in v.values() if isinstance(v, dict) else v:
            _arrays_in(item, out, depth + 1)
    return out


def _shared_within(arrays) -> bool:
    """Whether two of `arrays` are one array or share memory (or one could not be read)."""
    if any(a is None for a in arrays):
        return True
    groups = {}
    for a in arrays:
        root = a
        while isinstance(root, np.ndarray) and root.base is not None:
            root = root.base
        groups.setdefault(id(root), []).append(a)
    for group in groups.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if a is b or _overlap(a, b):
                    return True
    return False


def _overlap(a, b) -> bool:
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True


def refuse_at(body, reason):
    """Refuse, located at the try or with whose body `body` is (its lifted def's place)."""
    fn = body.fn if isinstance(body, Closure) else body
    source = getattr(fn, '__tapeflow_source__', None)
    if source is None:
        raise UnsupportedError(reason)
    raise source.error(source.node, reason) from None


def users_name(name):
    """`_attrs_o` (`sugar.attributes`) as the user wrote it: the attributes of o."""
    return f'the object {name[len("_attrs_"):]}' if name.startswith('_attrs_') else name


def check_aliases(out, kept, values, body):
    """Refuse, located at the try/with, a new list, tuple or dict the body gives back that
    holds one array at two places, or two that share memory: the code after the body does
    not know its slots are related, and a write through one would not reach the other.
    (Its slots' relations to what else the body gives back or was given, a name bound to
    one of its arrays, are `kept_value`'s: taken for any of them, related in ways not
    known, so a write through one is refused where it is written.)"""
    if not isinstance(out, tuple) or len(out) < 3:
        return
    held, kept = guards.held_positions(kept), guards.kept_names(kept)
    given = [g for g in tuple(values) + (body.values if isinstance(body, Closure) else ())
             if isinstance(g, np.ndarray)]
    for j, v in enumerate(out[2][:len(kept)]):
        if v is values[j] and j in held and isinstance(v, (list, dict)) and any(
                a is g or np.shares_memory(a, g) for a in _arrays_in(v, []) for g in given):
            refuse_at(body, f'{users_name(kept[j])}, written inside a try or with body, holds '
                             f'an array the body was given, which the code after it writes '
                             f'into: tapeflow does not follow that write into '
                             f'{users_name(kept[j])}; put a copy in it (.copy())')
        if v is values[j] or not isinstance(v, (list, tuple, dict)):   # (given: the caller's)
            continue
        arrays = _arrays_in(v, [])
        if arrays and j in held:
            refuse_at(body, f'{users_name(kept[j])}, bound inside a try or with body, '
                             f'holds arrays the code after it writes into: tapeflow does not '
                             f'follow writes into them after the body; make it before the '
                             f'try or with, or after it')
        if _shared_within(arrays):
            what = users_name(kept[j])
            refuse_at(body, f'{what}, bound inside a try or with body, holds one array at '
                               f'two places (or two views of one): tapeflow does not follow '
                               f'a write through one to the other after the body; make it '
                               f'before the try or with, or after it')


def contents_before(kept, values):
    """What the values `kept` marks written hold before the body runs (None: none)."""
    written = guards.written_positions(kept)
    if not written:
        return None
    return {k: contents(values[k]) for k in written}


def contents(v, depth=0):
    """What `v` holds, to the arrays its lists and dicts hold (their slots by identity);
    an array of another library too (CuPy's, the stand-in's), copied by its own `copy`."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if is_foreign_array(v):
        try:
            return v.copy()
        except Exception:       # noqa: BLE001 (one that cannot be copied: not followed)
            return None
    if depth > 8:
        return None
    if isinstance(v, list):
        return [(item, contents(item, depth + 1)) for item in v]
    if isinstance(v, dict):
        return [((key, item), contents(item, depth + 1)) for key, item in v.items()]
    return None


def unchanged(before, now) -> bool:
    if before is None:
        return True
    if isinstance(before, np.ndarray):
        return isinstance(now, np.ndarray) and before.shape == now.shape and \
            np.array_equal(before, now, equal_nan=before.dtype.kind in 'fc')
    if is_foreign_array(before):
        return now.__class__ is before.__class__ and before.shape == now.shape and \
            _same_elements(before, now)
    items = list(now.items()) if isinstance(now, dict) else now
    if not isinstance(items, list) or len(items) != len(before):
        return False
    for (slot, held), item in zip(before, items):
        if isinstance(now, dict):
            if slot[0] is not item[0] and slot[0] != item[0] or slot[1] is not item[1]:
                return False
            item = item[1]
        elif slot is not item:
            return False
        if not unchanged(held, item):
            return False
    return True


def _same_elements(a, b) -> bool:
    """Two arrays of one library hold the same numbers (NaN where NaN), by its own ops."""
    try:
        return bool(((a == b) | ((a != a) & (b != b))).all())
    except Exception:           # noqa: BLE001 (not comparable so: taken as changed)
        return False
