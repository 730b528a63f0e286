"""Dicts as values: their views read at once, `dict(...)`, and the pairs `update` writes.

A dict's cotangent (and tangent) is a dict of its values' by key, absent keys zero (the
form `getitem_adjoint`, `setitem_value_adjoint` and `add_adjoint` read). `transforms.mutation`
lowers a dict's methods to what these give and to writes `d[k] = v`:

    d.keys() / d.values() / d.items()    dict_keys(d) / dict_values(d) / dict_items(d): lists
    d.copy(), dict(d), dict(pairs)       dict_copy(d), builtins.dict
    d.update(m)                          a loop of d[k] = v over dict_pairs(m)

A view is a list read when it is made: `transforms.mutation` refuses one read after its
dict changes (Python's view would show the change).
"""
from __future__ import annotations

import builtins

from tapeflow.errors import UnsupportedError
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import defjvp, defvjp, linear_pair, nondifferentiable

__all__ = ['dict_keys', 'dict_values', 'dict_items', 'dict_copy', 'dict_pairs', 'delete_item',
           'without_key', 'spread_keywords']


def _is_zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def _mapping(d):
    if not isinstance(d, dict):
        raise UnsupportedError(f'.keys(), .values() and .items() of a {type(d).__name__} are '
                               f'read here as a dict\'s: tapeflow differentiates them on dicts')
    return d


def dict_keys(d):
    """`list(d.keys())`: no derivative (keys are constants)."""
    return list(_mapping(d))


def dict_values(d):
    """`list(d.values())`, in the dict's order."""
    return list(_mapping(d).values())


def dict_items(d):
    """`list(d.items())`: (key, value) pairs in the dict's order."""
    return list(_mapping(d).items())


def dict_copy(d):
    """`d.copy()` or `dict(d)`: a new dict of the same values."""
    return dict(_mapping(d))


def dict_pairs(m):
    """What `d.update(m)` writes, as (key, value) pairs: a dict's items, or the pairs given."""
    if isinstance(m, dict):
        return list(m.items())
    return [tuple(pair) for pair in m]


# the reading methods of a dict, as the functions above (a dict's views read at once)
READS = {'keys': dict_keys, 'values': dict_values, 'items': dict_items, 'copy': dict_copy}


def dict_get(d, key, default=None):
    """`d.get(key, default)` as Python the compiler differentiates: `d.get` of a value
    known to be a dict only as it runs (one a try body gave back), through the dispatcher."""
    if key in d:
        return d[key]
    return default


# every method of a dict the dispatcher reads as Python of its own
METHODS = {**READS, 'get': dict_get}


def delete_item(container, key):
    """`del container[key]` (`desugar`): what the reverse sweep undoes (`transforms.mutation`
    makes a list's a `pop`)."""
    del container[key]


def without_key(tangent, key):
    """A dict's tangent after `del d[key]`."""
    if not isinstance(tangent, dict):
        return tangent
    return {k: v for k, v in tangent.items() if k != key}


def _values_vjp(g, ans, d):
    if _is_zero(g):
        return 0.0
    return {k: part for k, part in zip(d, g) if not _is_zero(part)}


def _values_jvp(t, ans, d):
    if _is_zero(t):
        return 0.0
    return [t.get(k, 0.0) for k in d]


def _items_vjp(g, ans, d):
    if _is_zero(g):
        return 0.0
    return {k: part[1] for k, part in zip(d, g) if not _is_zero(part)}


def _items_jvp(t, ans, d):
    if _is_zero(t):
        return 0.0
    return [(0.0, t.get(k, 0.0)) for k in d]


def _copy_vjp(g, ans, d):
    return g


def _copy_jvp(t, ans, d):
    return t


def _pairs_vjp(g, ans, m):
    if _is_zero(g):
        return 0.0
    if isinstance(m, dict):
        return {k: part[1] for k, part in zip(m, g) if not _is_zero(part)}
    out = [part if not _is_zero(part) else 0.0 for part in g]
    return out if isinstance(m, list) else tuple(out)


def _pairs_jvp(t, ans, m):
    if _is_zero(t):
        return 0.0
    if isinstance(m, dict):
        return [(0.0, t.get(k, 0.0)) for k in m]
    return [tuple(part) if not _is_zero(part) else 0.0 for part in t]


def _dict_vjp(g, ans, *args, **kwargs):
    """`dict(mapping)` or `dict(pairs)` (positional argument 0): the last pair of a key
    written wins, the earlier ones get no cotangent."""
    if _is_zero(g) or not args:
        return 0.0
    source = args[0]
    if isinstance(source, dict):
        return dict(g)
    pairs = list(source)
    last = {pair[0]: k for k, pair in enumerate(pairs)}
    out = [(0.0, g.get(pair[0], 0.0)) if last[pair[0]] == k else 0.0
           for k, pair in enumerate(pairs)]
    return out if isinstance(source, list) else tuple(out)


def _dict_jvp(t, ans, *args, **kwargs):
    if _is_zero(t) or not args:
        return 0.0
    if isinstance(args[0], dict):
        return dict(t)
    out = {}
    for pair, part in zip(args[0], t):
        out[pair[0]] = 0.0 if _is_zero(part) else part[1]
    return out


def spread_keywords(*dicts):
    """`f(**a, **b)`'s keywords as one dict: Python's TypeError where a key is in two."""
    out = {}
    for d in dicts:
        for key in d:
            if key in out:
                raise TypeError(f'got multiple values for keyword argument {key!r}')
            out[key] = d[key]
    return out


def _spread_vjp(i):
    def vjp(g, ans, *dicts):
        if _is_zero(g):
            return 0.0
        return {k: g[k] for k in dicts[i] if k in g}
    return vjp


def _spread_jvp(i):
    def jvp(t, ans, *dicts):
        return 0.0 if _is_zero(t) else {k: t.get(k, 0.0) for k in dicts[i]}
    return jvp


def _register_spread():
    for i in range(8):
        vjp, jvp = _spread_vjp(i), _spread_jvp(i)
        defvjp(spread_keywords, vjp, argnums=[i])
        defjvp(spread_keywords, jvp, argnums=[i])
        linear_pair(vjp, jvp)


_register_spread()
entry(dict_values, _values_vjp, _values_jvp, forms='a dict')
entry(dict_items, _items_vjp, _items_jvp, forms='a dict')
entry(dict_copy, _copy_vjp, _copy_jvp, forms='a dict')
entry(dict_pairs, _pairs_vjp, _pairs_jvp, forms='a dict, or a list or tuple of (key, value) pairs')
entry(builtins.dict, _dict_vjp, _dict_jvp,
      forms='a dict, or a list or tuple of (key, value) pairs (zip(keys, values))')
nondifferentiable(dict_keys, delete_item)
for _vjp, _jvp in ((_values_vjp, _values_jvp), (_items_vjp, _items_jvp), (_copy_vjp, _copy_jvp),
                   (_pairs_vjp, _pairs_jvp), (_dict_vjp, _dict_jvp)):
    linear_pair(_vjp, _jvp)
