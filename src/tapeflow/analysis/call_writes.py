"""What a call writes: which atoms' memory a call changes, and what they may hold after.

`writes_of_call(call, state, summary)` lists the writes of the calls known
to write: into `out=` arrays (and a ufunc's extra positional arguments,
`out_arguments`), through the mutators of `rules.mutation` (NumPy functions,
array, list and dict methods, `ufunc.at`), and into the arguments a user
function's `Summary` says it writes. A write into a list or dict whose form
is not known exactly is listed as 'opaque'. `analysis.aliasing` applies
these writes to its facts; `transforms.mutation` rewrites them.
"""
from __future__ import annotations

import types

from tapeflow.syntax import ast
import numpy as np

from tapeflow.analysis.memory import ARRAY, DICT, LIST, NUMERIC, elements, reach_objects
from tapeflow.rules import mutation as table
from tapeflow.rules import registry
from tapeflow.syntax.anno import Key, getanno


def writes_of_call(call, state, summary):
    """[(how, the written atom, the objects now also held in it)] for a call that writes.

    `how`: 'append' for writes that only add slots at the end of a list, the
    mutator's form otherwise. An `out=` keyword writes its array.
    """
    out = [('out', value, frozenset()) for value in out_arguments(call)]
    fn = getanno(call.func, Key.RESOLVED)
    mutator = table.mutator_of_function(fn) if fn is not None else None
    if mutator is not None and call.args:
        return out + [(mutator.form, call.args[0], frozenset())]
    if fn is None and isinstance(call.func, ast.Attribute):
        receiver = call.func.value
        name = call.func.attr
        kind = state.kinds.get(receiver.id) if isinstance(receiver, ast.Name) else None
        owner = getanno(receiver, Key.RESOLVED, None)
        if name == 'at' and isinstance(owner, np.ufunc) and call.args:
            return out + [('at', call.args[0], frozenset())]
        if kind in (LIST, None) and name in table.LIST_METHODS:
            form = table.LIST_METHODS[name].form
            if form in ('pop', 'insert') and kind != LIST:
                form = 'opaque'
            added = frozenset().union(*(state.pts.get(a.id, frozenset()) for a in call.args
                                        if isinstance(a, ast.Name)))
            if name == 'extend':
                added = elements(state, added) | added
            return out + [('append' if name in ('append', 'extend') else form, receiver, added)]
        if kind in (DICT, None) and name in table.DICT_METHODS:
            form = table.DICT_METHODS[name].form if kind == DICT else 'opaque'
            stored = list(call.args) + [k.value for k in call.keywords]    # update(k=v)
            return out + [(form, receiver, everything_of(state, stored))]
        if kind in (ARRAY, NUMERIC, None) and name in table.ARRAY_METHODS:
            mutator = table.ARRAY_METHODS[name]
            if mutator.writes == 'receiver':
                return out + [(mutator.form, receiver, frozenset())]
            if call.args:
                return out + [(mutator.form, call.args[mutator.writes], frozenset())]
    if _is_attempt(fn):
        return out + guarded_writes(call, fn, state)
    if isinstance(fn, types.FunctionType) and registry.lookup(fn) is None:
        kinds = tuple(state.kinds.get(a.id) if isinstance(a, ast.Name) else None for a in call.args)
        written = summary(fn, kinds).writes
        everything = everything_of(state, call.args)
        out += [('call', call.args[i], everything) for i in sorted(written) if i < len(call.args)]
    return out


def _is_attempt(fn) -> bool:
    from tapeflow.rules import guards
    return fn is guards.attempt or fn is guards.attempt_within


def guarded_writes(call, fn, state) -> list:
    """The writes of `attempt(types, kept, body, *values)` (a `try`/`with` body,
    `transforms.sugar.exceptions`): into the values its `kept` marks written, each as a
    'guarded' write (the body, compiled on its own, gives back their memory)."""
    from tapeflow.rules import guards
    at = 2 if fn is guards.attempt_within else 1
    kept = call.args[at] if len(call.args) > at else None
    if not isinstance(kept, ast.Tuple):
        return []
    marked = tuple(getattr(k, 'value', '') for k in kept.elts)
    everything = everything_of(state, call.args[at + 2:])
    return [('guarded', call.args[at + 2 + k], everything)
            for k in sorted(guards.written_positions(marked)) if at + 2 + k < len(call.args)]


def writes_given_values(call) -> bool:
    """Whether `call` runs a try/with body that writes into what it is given (its reverse
    sweep gives that memory back in place)."""
    from tapeflow.rules import guards
    fn = getanno(call.func, Key.RESOLVED) if isinstance(call, ast.Call) else None
    if not _is_attempt(fn):
        return False
    at = 2 if fn is guards.attempt_within else 1
    kept = call.args[at] if len(call.args) > at else None
    return isinstance(kept, ast.Tuple) and bool(guards.written_positions(
        [getattr(k, 'value', '') for k in kept.elts]))


def out_arguments(call) -> list:
    """The arrays a call writes its result into: `out=` (or a ufunc's extra positional arguments)."""
    out = []
    for k in call.keywords:
        if k.arg == 'out':
            out += k.value.elts if isinstance(k.value, ast.Tuple) else [k.value]
    fn = getanno(call.func, Key.RESOLVED)
    if isinstance(fn, np.ufunc) and len(call.args) > fn.nin:
        out += call.args[fn.nin:]
    return out


def everything_of(state, atoms):
    objects = frozenset().union(*(state.pts.get(a.id, frozenset()) for a in atoms
                                  if isinstance(a, ast.Name))) if atoms else frozenset()
    return reach_objects(state, objects)
