"""The caller's arguments after a transform: left exactly as the plain call `f(*args)`
leaves them (the contract every transform keeps; docs/python-subset.md).

A function that writes into its arguments runs as its variant handing back their final
states (`compilation.entry`, `runtime.helpers.write_back`). Where the variant cannot be
compiled, or refuses when it runs (what an argument became cannot be followed to the end,
though the function's own code needs it no further), the function's own code runs, and
then the plain call on a copy of the arguments taken before, drawing the same random
numbers; each of the caller's objects is brought to its copy's final state in place
(`left_as_plain`). `contract_call` is that protocol, for every transform.
"""
from __future__ import annotations

import numpy as np

from tapeflow.arguments import call_flat
from tapeflow.errors import UnsupportedError
from tapeflow.rules.arrays import is_foreign_array
from tapeflow.runtime.helpers import shallow_copies, write_back
from tapeflow.runtime.randomness import function_sources, replay_random, replaying

__all__ = ['owned', 'contract_call', 'left_as_plain', 'bring_back', 'plain_point']


def contract_call(f, args, written, variant, own, second=None):
    """(value, the second result, the arguments' structure as given, whether the variant
    ran) of one transform's call of `f` at `args`, `args` left as the plain call leaves
    them. `written` (`compilation.entry`): () when `f` writes into none, None when its
    variant was refused; `variant()` and `own()` run the variant's and the function's own
    compiled code, each returning (value, second); `second(s)`: the variant's second
    result as the function's (its tangent: the first item)."""
    if written is not None and not written:
        value, other = own()
        return value, other, args, False
    given = owned(tuple(args), arrays=False)       # (the structure, before the call)
    taken = plain_point(f, args)
    if written is not None:
        before = shallow_copies(args, written)
        try:
            value, other = variant()
        except UnsupportedError:        # (when it ran: `f`'s own code, from the point)
            bring_back(taken[0], taken[1])
            replay_random(taken[2])
        else:
            write_back(args, written, value[1:], before)
            return value[0], other if second is None else second(other), given, True
    value, other = own()
    left_as_plain(f, args, *taken)
    return value, other, given, False


def plain_point(f, args):
    """A copy of `args` (`owned`, its pairs in the memo) and the random states now: what
    `left_as_plain` runs the plain call on, later."""
    memo = {}
    return owned(tuple(args), memo), memo, function_sources(f, args)


def owned(value, memo=None, arrays=True):
    """`value` with its arrays copied, and the lists, tuples and dicts holding them: what
    the caller holds no more. Two references to one array stay two references to one copy.
    `arrays=False`: the containers alone."""
    memo = {} if memo is None else memo
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    cls = value.__class__
    if cls is np.ndarray:
        if not arrays:
            return value
        made = value.copy()
    elif cls in (list, tuple, dict) or (isinstance(value, tuple) and hasattr(value, '_fields')):
        if cls is dict:
            made = {k: owned(v, memo, arrays) for k, v in value.items()}
        else:
            items = [owned(v, memo, arrays) for v in value]
            made = items if cls is list else tuple(items) if cls is tuple else cls(*items)
    elif arrays and is_foreign_array(value) and hasattr(value, 'copy'):
        made = value.copy()
    else:
        return value
    memo[id(value)] = (value, made)         # (the original kept alive: ids stay unique)
    return made


def left_as_plain(f, args, point, memo, drawn):
    """The caller's `args` left as the plain call leaves them, where the function's
    variant did not run (`contract_call`): the plain call runs on `point`,
    their copy taken before the transform ran (`owned`, its pairs in `memo`), drawing what
    the transform drew (`drawn`), and each of the caller's objects is brought to its
    copy's final state in place: an array written into, a list's or dict's items (the
    caller's own objects where the call kept them). Arrays of the arguments that share
    memory (a view and its base) would be copied apart: refused, located."""
    originals = [o for o, _ in memo.values() if isinstance(o, np.ndarray)]
    for k, a in enumerate(originals):
        for b in originals[k + 1:]:
            if np.may_share_memory(a, b) and np.shares_memory(a, b):    # (bounds first)
                code = getattr(f, '__code__', None)
                raise UnsupportedError(
                    f'{getattr(f, "__name__", "f")}() writes into its arguments, two of which '
                    f'share memory (a view and its base): tapeflow cannot leave them as the '
                    f'plain call does; pass copies', getattr(code, 'co_filename', '<unknown>'),
                    getattr(code, 'co_firstlineno', 0))
    with replaying(drawn):
        call_flat(f, point)
    bring_back(point, memo)


def bring_back(point, memo):
    """Each of the caller's objects `memo` pairs with a copy in `point`, brought to its
    copy's state."""
    inverse = {id(made): original for original, made in memo.values()}
    seen = {}
    for made in point:
        _brought_back(made, inverse, seen)


def _brought_back(final, inverse, seen):
    """The caller's object `final` (a copy's final state) stands for, brought to it."""
    if id(final) in seen:
        return seen[id(final)]
    original = inverse.get(id(final))
    cls = final.__class__
    out = final
    if isinstance(final, np.ndarray) or is_foreign_array(final):
        if original is not None and original.shape == final.shape:
            original[...] = final
            out = original
    elif cls is list or cls is dict:
        out = original if original is not None else final
        seen[id(final)] = out
        if cls is list:
            out[:] = [_brought_back(v, inverse, seen) for v in final]
        else:
            items = {k: _brought_back(v, inverse, seen) for k, v in final.items()}
            out.clear()
            out.update(items)
    elif isinstance(final, tuple):
        items = [_brought_back(v, inverse, seen) for v in final]
        same = original is not None and len(original) == len(items) and \
            all(a is b for a, b in zip(original, items))
        out = original if same else tuple(items) if cls is tuple else cls(*items)
    seen[id(final)] = out
    return out
