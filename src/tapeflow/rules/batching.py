"""Tangents with a leading batch axis: many directions in one forward sweep.

`jacfwd` (and `hessian`, forward over reverse) runs the forward-mode code once
with a *batch* of tangents instead of once per input direction. In that code a
tangent `t` of a value `x` is either

- *batched*: an array of shape `(B,) + shape(x)`, row `k` the tangent along
  direction `k`; or
- *unbatched*: in `x`'s shape, the same along every direction (a zero, in
  practice: the symbolic `0.0` or `zero_tangent`'s zeros).

So `is_batched(t, x)` is a rank comparison, and lists and tuples are batched
leaf by leaf. A rule meets a batch in one of three ways:

- an *elementwise* primitive (a ufunc, an arithmetic operator, a `math`
  function) runs its ordinary JVP on the batch once the tangent is *lifted*:
  given as many axes as the output, so that broadcasting lines the batch axis
  up with nothing but itself (`lift_tangent(t, x, ans)`);
- a primitive with a *batched* JVP (`defjvp_batched`: sums, matmul,
  indexing...) runs that;
- any other runs its JVP once per direction and stacks the rows
  (`jvp_over_batch`): correct for every rule, vectorised only over the primal.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from tapeflow.rules import registry
from tapeflow.rules.closures import Closure
from tapeflow.rules.sequences import Items

__all__ = ['is_batched', 'lift_tangent', 'jvp_over_batch', 'batch_rows',
           'batch_kind', 'defjvp_batched', 'unbatched_as_batch', 'batch_last', 'rows_at',
           'set_rows_at']

_CONTAINERS = (list, tuple)


def _parts(x):
    """What a tangent of `x` is structured as: of a partial, (its function, arguments,
    keywords) (`tapeflow.call_plans`); of a closure, its values; of a list's cotangent
    (`Items`, second order), its slots as a list; else `x` itself."""
    if isinstance(x, functools.partial):
        return (x.func, x.args, x.keywords)
    if x.__class__ is Items:
        return list(x)
    return x.values if isinstance(x, Closure) else x


def _items(t):
    """A list cotangent's slots as a list (the tangent of an `Items`); else `t`."""
    return list(t) if t.__class__ is Items else t


def is_batched(t, x) -> bool:
    """Whether `t`, a tangent of `x`, carries a batch axis (anywhere in its structure)."""
    x, t = _parts(x), _items(t)
    if isinstance(x, _CONTAINERS) and isinstance(t, _CONTAINERS):
        return any(is_batched(u, v) for u, v in zip(t, x))
    if isinstance(x, dict) and isinstance(t, dict):
        return any(is_batched(t[k], x[k]) for k in t if k in x)
    return t.__class__ is np.ndarray and t.ndim == np.ndim(x) + 1


def batch_size(t, x) -> int:
    x, t = _parts(x), _items(t)
    if isinstance(x, _CONTAINERS) and isinstance(t, _CONTAINERS):
        return next(batch_size(u, v) for u, v in zip(t, x) if is_batched(u, v))
    if isinstance(x, dict) and isinstance(t, dict):
        return next(batch_size(t[k], x[k]) for k in t if k in x and is_batched(t[k], x[k]))
    return t.shape[0]


def row(t, x, k):
    """The tangent along direction `k` out of the batch `t` of tangents of `x`."""
    x, like, t = _parts(x), t, _items(t)
    if isinstance(x, _CONTAINERS) and isinstance(t, _CONTAINERS):
        return _rebuild(like, [row(u, v, k) for u, v in zip(t, x)])
    if isinstance(x, dict) and isinstance(t, dict):
        return {key: row(u, x.get(key), k) if key in x else u for key, u in t.items()}
    if is_batched(t, x):
        return t[k]
    if t.__class__ is np.ndarray and t.ndim > np.ndim(x) + 1:
        # (a tangent of more axes than a batch of `x`'s: a slot's symbolic zero whose
        #  tangent is not, read out of place; never guessed at)
        raise AssertionError(f'tapeflow internal error: a batch of tangents of shape '
                             f'{t.shape} for a value of shape {np.shape(x)}')
    return t


def lift_tangent(t, x, ans):
    """The batched tangent `t` of an operand `x`, ready to broadcast against `ans`.

    `(B,) + shape(x)` becomes `(B, 1, ..., 1) + shape(x)` with as many axes as
    `(B,) + shape(ans)`; an unbatched tangent is returned as it is.
    """
    if t.__class__ is not np.ndarray:
        return t
    missing = np.ndim(ans) + 1 - t.ndim
    if missing <= 0 or t.ndim != np.ndim(x) + 1:
        return t
    return t.reshape(t.shape[:1] + (1,) * missing + t.shape[1:])


def batch_rows(rows, ans):
    """Stack per-direction tangents of `ans` into one batch (structure by structure). Where
    `ans` is a symbolic zero (a cotangent that carried nothing) and a row is structured (a
    structured rule's rows, second order), the row gives the structure."""
    if ans.__class__ is float and ans == 0.0:
        ans = next((r for r in rows if isinstance(r, (*_CONTAINERS, Items, dict))), ans)
    like = ans if ans.__class__ is Items else _parts(ans)
    ans = _parts(ans)
    if isinstance(ans, dict) and any(isinstance(r, dict) for r in rows):
        return {key: batch_rows([r.get(key, 0.0) if isinstance(r, dict) else r for r in rows], a)
                for key, a in ans.items()}
    if isinstance(ans, _CONTAINERS):
        return _rebuild(like, [batch_rows([r[i] if isinstance(r, (*_CONTAINERS, Items)) else r
                                          for r in rows], a) for i, a in enumerate(ans)])
    if all(r.__class__ is float and r == 0.0 for r in rows):
        return 0.0
    shape = np.shape(ans)
    return np.stack([np.broadcast_to(r, shape) for r in rows])


def _rebuild(like, items):
    """A list or tuple of the type of `like` (namedtuples too, a list's cotangent `Items`)
    holding `items`."""
    if like.__class__ is Items:
        return Items(len(items), {i: v for i, v in enumerate(items)
                                  if not (v.__class__ is float and v == 0.0)})
    return type(like)._make(items) if hasattr(like, '_fields') else type(like)(items)


def jvp_over_batch(rule, batched_rule, t, x, ans, /, *args, **kwargs):
    """`rule(t, ans, *args, **kwargs)` for a batch `t` of tangents of the operand `x`.

    Unbatched: the rule once. Batched: `batched_rule` when the primitive has
    one, else the rule once per direction, the rows stacked.
    """
    if not is_batched(t, x):
        return rule(t, ans, *args, **kwargs)
    if batched_rule is not None:
        return batched_rule(t, ans, *args, **kwargs)
    return batch_rows([rule(row(t, x, k), ans, *args, **kwargs)
                       for k in range(batch_size(t, x))], ans)


def unbatched_as_batch(t, x, size):
    """`t` as a batch of `size` tangents of `x` (a read-only broadcast view when unbatched)."""
    if is_batched(t, x):
        return t
    shape = np.shape(x)
    return np.broadcast_to(t, (size,) + shape)


def batch_last(index):
    """`index` for an array with one more axis, last, that it leaves whole.

    With the batch axis moved last, `t_last[batch_last(index)]` indexes every
    row alike whatever `index` holds; in front (`t[:, ...]`) it would not when
    advanced indices stand apart (NumPy then puts their axes first).
    """
    if index is Ellipsis:
        return Ellipsis, slice(None)
    if isinstance(index, tuple) and any(i is Ellipsis for i in index):
        return index + (slice(None),)
    return index


def rows_at(t, index):
    """`row[index]` of every row of the array batch `t`, as a batch."""
    return np.moveaxis(np.moveaxis(t, 0, -1)[batch_last(index)], -1, 0)


def set_rows_at(t, index, value):
    """`row[index] = value` in every row of the array batch `t`, in place; `value` is
    a batch (its rows go to the rows of `t`) or anything that broadcasts."""
    value = np.moveaxis(value, 0, -1) if np.ndim(value) else value
    np.moveaxis(t, 0, -1)[batch_last(index)] = value


# ---------------------------------------------------------------- which rules batch how

_ELEMENTWISE_OPERATORS = frozenset([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
    operator.pos, operator.abs, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ipow, abs])


def batch_kind(entry, argnum) -> str:
    """'elementwise', 'batched' or 'per-direction': how the JVP of `entry` meets a batch."""
    if argnum in entry.batched_jvps:
        return 'batched'
    fn = entry.fn
    # (a generalized ufunc, np.vecdot or np.matvec, has core dimensions: not elementwise)
    if isinstance(fn, np.ufunc) and fn.signature is None or fn in _ELEMENTWISE_OPERATORS or \
            getattr(fn, '__module__', None) == 'math' or _is_math(fn):
        return 'elementwise'
    return 'per-direction'


def _is_math(fn) -> bool:
    try:
        return getattr(math, getattr(fn, '__name__', ''), None) is fn
    except TypeError:
        return False


def defjvp_batched(fn, *rules, argnums=None):
    """Register JVP rules that take a batch `(B,) + shape(x)` of tangents, one per argument."""
    entry = registry.primitive(fn)
    for argnum, rule in zip(argnums or range(len(rules)), rules):
        if rule is not None:
            entry.batched_jvps[argnum] = rule
    return entry
