"""Aliasing at calls: what a call's result may reference, and what it writes.

`CallFacts` is a mixin of `analysis.aliasing.Aliasing` (which gives it `atom`,
`fresh`, `view` and `summary`): `call(v, target, site, state)` gives the kind,
objects and equations of a call's result (a view of its first argument, a new
container of its arguments' elements, a fresh number, a user function's
summary); `call_effects` adds to the state what the call writes into its
arguments (`analysis.call_writes`).
"""
from __future__ import annotations

import builtins
import functools
import math
import types

import numpy as np

from tapeflow.analysis.call_writes import out_arguments, writes_of_call
from tapeflow.analysis.memory import (ARRAY, DICT, LIST, NUMBERS, NUMERIC, SCALAR, TUPLE, Eq,
                                      elements, kill_items, names_of, reach_objects, text)
from tapeflow.rules import mutation as table
from tapeflow.rules import guards, iterators, objects, registry, sequence_ops
from tapeflow.rules.math_rules import repeated
from tapeflow.syntax import ast
from tapeflow.syntax.anno import Key, getanno

# Builtins whose result is a fresh immutable value (or a fresh number).
_FRESH_BUILTINS = frozenset({builtins.len, builtins.int, builtins.float, builtins.bool,
                             builtins.range, builtins.isinstance, builtins.complex,
                             builtins.print, builtins.str, builtins.repr, builtins.hash,
                             builtins.id})
# Builtins whose result is a new number, or a new array of arrays (`abs(a)`, `sum(xs)`:
# `0 + xs[0] + ...`): a callee may write into it.
_NEW_NUMERIC_BUILTINS = frozenset({builtins.abs, builtins.round, builtins.pow})
# Builtins that make a new container of the elements of their arguments.
_CONTAINER_BUILTINS = {builtins.list: LIST, builtins.tuple: TUPLE, builtins.sorted: LIST,
                       builtins.dict: DICT}
# NumPy functions returning a list of views of their first argument.
_LIST_OF_VIEWS = frozenset(f for f in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit,
                                       np.broadcast_arrays, np.meshgrid,
                                       getattr(np, 'unstack', None)) if f is not None)


class CallFacts:
    """The facts of calls (a mixin of `Aliasing`)."""

    @staticmethod
    def written_back(v, target, state) -> bool:
        """`target = written_value(_run, k, target)` after a try/with body that wrote into
        the array, list or dict `target` in place: the same object (the dispatcher gives
        it back, `guarded_calls`), so every fact of it still holds."""
        return isinstance(v, ast.Call) and getanno(v.func, Key.RESOLVED) is guards.written_value \
            and len(v.args) == 3 and isinstance(v.args[2], ast.Name) and \
            v.args[2].id == target and target in state.kinds

    def call(self, v, target, site, state):
        fn = getanno(v.func, Key.RESOLVED)
        args = v.args
        arg_facts = [self.atom(a, state) for a in args]
        kw_objects = frozenset().union(*(self.atom(k.value, state)[1] for k in v.keywords)) \
            if v.keywords else frozenset()
        everything = reach_objects(state, frozenset().union(*(o for _, o in arg_facts)) | kw_objects) \
            if arg_facts or kw_objects else frozenset()
        if fn is None and isinstance(v.func, ast.Attribute):
            return self.method(v, target, site, state, everything)
        if fn is None:
            return None, self.fresh(state, site, None, everything) | everything, []
        if fn is guards.written_value and len(args) == 3 and isinstance(args[2], ast.Name) \
                and args[2].id in state.kinds:      # a try/with body wrote into it: itself
            given = args[2].id
            return state.kinds.get(given), state.pts.get(given, frozenset()), [
                Eq(target, given, 'ident', given, args[2], frozenset({given}))]
        outs = out_arguments(v)
        if len(outs) == 1 and isinstance(outs[0], ast.Name) and outs[0].id in state.kinds:
            written = outs[0].id                     # `r = np.f(..., out=y)` is `y`
            return ARRAY, state.pts.get(written, frozenset()), [
                Eq(target, written, 'ident', written, outs[0], frozenset({written}))]
        view = _lookup(table.VIEW_FUNCTIONS, fn)
        if view is not None and args and isinstance(args[0], ast.Name) and args[0].id in state.kinds:
            kind, objects = arg_facts[0]
            maybe = not (view.always and kind == ARRAY)
            return ARRAY, self.view(state, site, objects), [Eq(target, args[0].id, 'view', text(v), v, names_of(v),
                                              kind, view, maybe)]
        if _lookup(_LIST_OF_VIEWS, fn) is not None:          # a list of views of the arguments
            pieces = self.view(state, site + ('pieces',), everything)
            return LIST, self.fresh(state, site, LIST, pieces), []
        if getattr(fn, '__tapeflow_closure__', False):     # a closure holds its values
            return None, self.fresh(state, site, LIST, everything), []
        if isinstance(fn, types.FunctionType) and registry.lookup(fn) is None:
            return self.user_call(fn, v, target, site, state, arg_facts)
        if _lookup(_CONTAINER_BUILTINS, fn) is not None:
            kind = _CONTAINER_BUILTINS[fn]
            return kind, self.fresh(state, site, LIST if kind == TUPLE else kind, everything), []
        if _lookup(_FRESH_BUILTINS, fn) is not None or fn in (math.fsum,):
            return SCALAR, frozenset(), []
        if _lookup(_NEW_NUMERIC_BUILTINS, fn) is not None or fn is builtins.sum and len(args) == 1 \
                and not v.keywords:
            return NUMERIC, self.fresh(state, site, NUMERIC), []
        if fn is builtins.sum:              # `start` itself where the items are none
            start = args[1] if len(args) > 1 else v.keywords[0].value
            return None, self.fresh(state, site, LIST, everything) | self.atom(start, state)[1], []
        if fn is builtins.divmod:
            pair = self.fresh(state, site + ('items',), NUMERIC)
            return TUPLE, self.fresh(state, site, LIST, pair), []
        if fn is builtins.max or fn is builtins.min:       # one of the items, or arguments
            if len(arg_facts) != 1 or arg_facts[0][0] not in (LIST, TUPLE, DICT):
                return None, everything, []          # of an array, maybe a view of a row
            return None, reach_objects(state, elements(state, arg_facts[0][1]) | kw_objects), []
        if fn is iterators.iterated and arg_facts and arg_facts[0][0] in (LIST, TUPLE):
            mine = arg_facts[0][1]              # itself, or a list of what it yields
            return LIST, self.fresh(state, site, LIST, elements(state, mine)) | mine, []
        if fn is iterators.iterated and arg_facts:
            # an array: itself (a write into it changes what the loop reads next; WRONG
            # before, seed 5111 index 1051, where it was taken for a new value); of a kind
            # not known: itself, or a list of what it yields
            kind, mine = arg_facts[0]
            if kind == ARRAY and isinstance(args[0], ast.Name) and args[0].id in state.kinds:
                return ARRAY, mine, [Eq(target, args[0].id, 'ident', args[0].id, args[0],
                                        frozenset({args[0].id}))]
            return None, self.fresh(state, site, LIST, elements(state, mine)) | mine, []
        if fn is guards.attempt or fn is guards.attempt_within:
            # (code, the body's values as a tuple): what it gives back is a tuple of them
            kept = self.fresh(state, site + ('kept',), LIST, everything)
            return TUPLE, self.fresh(state, site, LIST, kept | everything), []
        structured = _structured_kind(fn)
        if structured is not False:          # a rule's result that holds its arguments
            return structured, self.fresh(state, site, structured or LIST, everything) | everything, []
        if registry.lookup(fn) is not None or _is_numpy(fn):
            kind = SCALAR if getattr(fn, '__module__', None) == 'math' else NUMERIC
            return kind, self.fresh(state, site, kind), []
        return None, self.fresh(state, site, None, everything) | everything, []

    def user_call(self, fn, v, target, site, state, arg_facts):
        summary = self.summary(fn, tuple(k for k, _ in arg_facts))
        positions = range(len(arg_facts)) if summary.result is None else summary.result
        refs = frozenset().union(*(reach_objects(state, arg_facts[i][1])
                                   for i in positions if i < len(arg_facts))) \
            if arg_facts else frozenset()
        if summary.result_is is not None and summary.result_is < len(v.args):
            arg = v.args[summary.result_is]
            if isinstance(arg, ast.Name) and arg.id in state.kinds:
                kind, objects = arg_facts[summary.result_is]
                return kind, objects, [Eq(target, arg.id, 'ident', arg.id, arg, frozenset({arg.id}))]
        kind = summary.result_kind
        views = self.view(state, site + ('view',), refs) if refs else frozenset()
        inside = refs if kind in NUMBERS else refs | self.made_items(state, site, refs)
        return kind, self.fresh(state, site, kind or LIST, inside) | refs | views, []

    def made_items(self, state, site, refs):
        """What a container a callee returns may hold besides its arguments' objects: what
        the callee made (`return [v * 2.0]`, a generator's items), at any depth."""
        made = self.fresh(state, site + ('items',), None, refs)
        for obj in made:
            state.contents[obj] = state.contents[obj] | made
        return made

    def method(self, v, target, site, state, everything):
        receiver = v.func.value
        kind, objects = self.atom(receiver, state)
        name = v.func.attr
        if not isinstance(receiver, ast.Name) or receiver.id not in state.kinds:
            return None, self.fresh(state, site, None, everything | reach_objects(state, objects)) \
                | everything | reach_objects(state, objects), []
        view = table.VIEW_METHODS.get(name)
        if view is not None and kind in (ARRAY, NUMERIC, None):
            return ARRAY, self.view(state, site, objects), [Eq(target, receiver.id, 'view', text(v), v, names_of(v),
                                              kind, view, not (view.always and kind == ARRAY))]
        if kind in (LIST, DICT) and name in ('pop', 'get', 'setdefault', 'popitem'):
            # a dict's get, pop and setdefault return their default where the key is absent
            given = v.args[1:] if kind == DICT else []
            defaults = frozenset().union(*(state.pts.get(a.id, frozenset()) for a in given
                                           if isinstance(a, ast.Name)))
            return None, elements(state, objects) | defaults, []
        if kind in (LIST, DICT) and name == 'copy':
            return kind, self.fresh(state, site, kind, elements(state, objects)), []
        if kind in (LIST, TUPLE) and name in ('index', 'count'):
            return SCALAR, frozenset(), []
        if name == 'copy' and kind not in NUMBERS:          # a list's copy shares its items
            return kind, self.fresh(state, site, kind or LIST, elements(state, objects)), []
        if kind in (ARRAY, NUMERIC, None) and (name in registry.METHODS or name in table.ARRAY_METHODS):
            return NUMERIC, self.fresh(state, site, NUMERIC), []
        if kind == DICT and name in ('keys', 'values', 'items'):    # read at once: a list
            inside = elements(state, objects)
            if name == 'items':                                     # of (key, value) pairs
                inside = self.fresh(state, site + ('pairs',), LIST, inside)
            return LIST, self.fresh(state, site, LIST, inside), []
        refs = everything | reach_objects(state, objects)
        return None, self.fresh(state, site, None, refs) | refs, []

    def call_effects(self, call, state, stmt):
        """What a call does to the memory of its arguments (before its result is bound)."""
        for position, written, elements in writes_of_call(call, state, self.summary):
            if not isinstance(written, ast.Name) or written.id not in state.kinds:
                continue
            name = written.id
            objects = state.pts.get(name, frozenset())
            if elements and state.kinds.get(name) not in NUMBERS:    # an array holds numbers
                added = reach_objects(state, elements)
                for obj in objects:
                    state.contents[obj] = state.contents.get(obj, frozenset()) | added
            if state.kinds.get(name) != ARRAY:
                kill_items(state, name, keep_appended=position == 'append')


_STRUCTURED = {functools.partial: None, iterators.zipped: LIST, sequence_ops.concatenated: None,
               sequence_ops.add_any: None, sequence_ops.mul_any: None, repeated: None,
               sequence_ops.star_items: None,
               guards.attempt: TUPLE, guards.attempt_within: TUPLE, guards.kept_value: None,
               guards.kept_dict: DICT, guards.kept_list: LIST,
               objects.attributes_of: DICT}


def _structured_kind(fn):
    """The kind of what a function with rules makes that holds its arguments (a partial,
    a list of tuples, `a + b` of sequences, or that the compiler cannot tell); False for
    any other function."""
    try:
        return _STRUCTURED.get(fn, False)
    except TypeError:
        return False


def _lookup(table_, fn):
    try:
        return table_.get(fn) if isinstance(table_, dict) else (fn if fn in table_ else None)
    except TypeError:
        return None


def _is_numpy(fn) -> bool:
    module = getattr(fn, '__module__', None) or ''
    return isinstance(fn, np.ufunc) or module == 'numpy' or module.startswith('numpy.')
