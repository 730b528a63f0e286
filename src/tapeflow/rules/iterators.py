"""Python's iterator builtins where their result is read at once: `zip` and `sorted`.

`zipped(*seqs)` is `list(zip(*seqs))`: what `zip(*pairs)` gives where the compiler sees
it consumed at once (unpacked, iterated, passed to `list`, `dict`...:
`transforms.sugar.iterators`). Its cotangent is a list of tuples; each sequence's is
its column, zeros where `zip` stopped first. `sorted(xs, key=f, reverse=r)` permutes its
items: the cotangent goes back through the same permutation, found again from the keys
(Python's sort is stable, so the order of equal keys is the one it chose).
"""
from __future__ import annotations

import builtins

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import defjvp, defvjp, linear_pair
from tapeflow.rules.shapes import zeros_like_value

__all__ = ['zipped', 'iterated']


def _is_zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def _like(seq, items):
    """`items` in the structure of the sequence `seq` (a list, a tuple, an array's rows)."""
    if isinstance(seq, np.ndarray):
        out = np.zeros(seq.shape, np.result_type(seq, float))
        for k, item in enumerate(items):
            out[k] = item
        return out
    return list(items) if isinstance(seq, list) else tuple(items)


def zipped(*seqs):
    """`list(zip(*seqs))`: zip read at once."""
    return list(zip(*seqs))


def _zipped_vjp(i):
    def vjp(g, ans, *seqs):
        if _is_zero(g):
            return 0.0
        seq = seqs[i]
        column = [0.0] * len(seq)
        for k, part in enumerate(g):
            if not _is_zero(part):
                column[k] = part[i]
        return _like(seq, column)
    return vjp


def _zipped_jvp(i):
    def jvp(t, ans, *seqs):
        if _is_zero(t):
            return 0.0
        return [tuple(t[k] if j == i else zeros_like_value(row[j]) for j in range(len(row)))
                for k, row in enumerate(ans)]
    return jvp


for _i in range(32):
    _vjp, _jvp = _zipped_vjp(_i), _zipped_jvp(_i)
    defvjp(zipped, _vjp, argnums=[_i])
    defjvp(zipped, _jvp, argnums=[_i])
    linear_pair(_vjp, _jvp)


# ---------------------------------------------------------------- sorted

def _order(xs, key, reverse):
    items = list(xs)
    if key is None:
        return sorted(range(len(items)), key=items.__getitem__, reverse=reverse)
    return sorted(range(len(items)), key=lambda k: key(items[k]), reverse=reverse)


def _sorted_vjp(g, ans, xs, key=None, reverse=False):
    if _is_zero(g):
        return 0.0
    order = _order(xs, key, reverse)
    out = [0.0] * len(order)
    for k, part in zip(order, g):
        out[k] = part
    return _like(xs, out)


def _sorted_jvp(t, ans, xs, key=None, reverse=False):
    if _is_zero(t):
        return 0.0
    items = list(t)
    return [items[k] for k in _order(xs, key, reverse)]


entry(builtins.sorted, _sorted_vjp, _sorted_jvp,
      forms='a list, tuple or array (its rows) sorted, with key= and reverse= known there')
linear_pair(_sorted_vjp, _sorted_jvp)       # (the order is the keys': it carries none)


# ---------------------------------------------------------------- what a for loop iterates

_UNORDERED = (dict, set, frozenset)


def _is_sequence(xs) -> bool:
    """Read item by item in place: anything of a length that is indexed (a list, a tuple,
    an array's rows, a sparse list cotangent), not a dict or a set."""
    return not isinstance(xs, _UNORDERED) and hasattr(xs, '__len__') and \
        hasattr(xs, '__getitem__')


def iterated(xs):
    """What `for v in xs` reads item by item: `xs` itself where it is a sequence (a list, a
    tuple, an array's rows), else the list of what iterating it gives (a dict's keys, a
    set's items in its order, what a generator yields), read once, when the loop starts."""
    return xs if _is_sequence(xs) else list(xs)


def _iterated_vjp(g, ans, xs):
    if _is_zero(g) or _is_sequence(xs):
        return g
    if isinstance(xs, dict) or all(_is_zero(part) for part in g):
        return 0.0              # a dict's keys: no derivative
    from tapeflow.errors import UnsupportedError
    raise UnsupportedError(f'the items of a {type(xs).__name__} iterated here carry derivatives, '
                           f'which tapeflow follows through lists, tuples, arrays and dicts; '
                           f'make it a list first')


def _iterated_jvp(t, ans, xs):
    if _is_zero(t) or _is_sequence(xs):
        return t
    if isinstance(xs, dict):
        return 0.0
    return list(t)


entry(iterated, _iterated_vjp, _iterated_jvp,
      forms='a sequence (itself), a dict (its keys), a set or a generator (read into a list)')
linear_pair(_iterated_vjp, _iterated_jvp)
