"""User functions called from compiled code: what they write, and variants that return it.

A call `h(a)` of a user function that writes into its argument (`v *= 2`,
`v[0] = s`, `v.append(s)`, or a call that does) changes the caller's `a`.
The caller's mutation pass (`transforms.mutation`) needs to know that
(`summarize`) and calls instead `variant(h, (0,))`: `h` returning
`(result, a)`, the argument's final value, which it rebinds. The variant is
`h`'s own source with `_entry_v = v` first and every `return r` as
`return (r, _entry_v)`; it runs in `h`'s globals and closure, and errors
point at `h`'s lines.

Summaries come from the aliasing analysis of the callee (run on its ANF, its
own calls summarized in turn); recursion is solved by iterating to a fixpoint.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import weakref

import gast
import numpy as np

from tapeflow.syntax.naming import identifier as _id
from tapeflow.analysis import aliasing as al
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.errors import TapeflowError
from tapeflow.syntax.naming import Namer


class Summaries:
    """`Summaries()(fn, kinds)`: the `aliasing.Summary` of a call of `fn` with arguments of `kinds`.

    One per compilation; a function met again while being summarized
    (recursion) gets the current guess, and the guesses are refined until
    they no longer change. A summary is kept once it no longer rests on a
    guess of a function still being summarized: the function that started a
    recursion is kept when its guesses settle, and so is everything it
    calls outside the recursion. Kept summaries outlive the compilation:
    tapeflow's own functions' (the rules' helpers, called everywhere) for
    good, every other function's while its code and what its names denote
    are unchanged, and so are those of the summaries it read (`_Kept`):
    generated code differentiated again meets the same callees in every
    compilation.
    """

    def __init__(self, front=None):
        self.done = {}
        self.guesses = {}              # (fn, kinds) being summarized -> the current guess
        self.read = set()              # keys whose guesses were read since the set was cleared
        self.front = front             # fn -> (its ANF FunctionDef, its resolved Bindings)
        self.used = []                 # per summary being computed: the keys it read

    def __call__(self, fn, kinds):
        key = (fn, tuple(kinds))
        if self.used:
            self.used[-1].add(key)
        if key in self.done:
            return self.done[key]
        final = _OWN_SUMMARIES.get(key)
        if final is not None:
            return final
        kept = _kept(key)
        if kept is not None:
            self.done[key] = kept.summary
            return kept.summary
        if key in self.guesses:        # recursion: the guess so far
            self.read.add(key)
            return self.guesses[key]
        outer, self.read = self.read, set()
        self.guesses[key] = summary = al.Summary()
        self.used.append(set())
        bindings = None
        try:
            for _ in range(8):
                summary, bindings = self.compute(fn, key[1])
                if summary == self.guesses[key]:
                    break
                self.guesses[key] = summary
                self.read.discard(key)
        finally:
            del self.guesses[key]
            used = self.used.pop()
        self.read.discard(key)
        if not self.read:              # rests on no guess of a caller still open
            self.done[key] = summary
            if _is_own(fn):
                _OWN_SUMMARIES[key] = summary
            elif bindings is not None:
                _keep_summary(key, bindings, summary, used - {key})
        self.read |= outer
        return summary

    def compute(self, fn, kinds):
        """(the summary, the bindings it rests on: None where `fn` cannot be read)."""
        try:
            node, bindings = self.front(fn)
        except (TapeflowError, SyntaxError, OSError, TypeError):
            return al.Summary(), None   # not compilable: called as plain Python
        params = [a.id for a in node.args.args]
        param_kinds = {p: k for p, k in zip(params, kinds) if k is not None}
        facts = al.Aliasing(node, param_kinds, self)
        written, outer = set(), False
        for stmt in nodes.statements(node.body):
            state = facts.before.get(id(stmt))
            if state is not None:
                for name in written_names(stmt, state, self):
                    written |= al.overlapping(state, state.pts.get(name, frozenset()))
                outer = outer or _calls_writing_outer(stmt, state, self)
        writes = frozenset(i for i, p in enumerate(params)
                           if written & {(al.PARAM, p), (al.PARAM_ITEMS, p)})
        outer = outer or any(o[0] == al.OUTER for o in written)
        return dataclasses.replace(_result(node, facts, params, writes), outer=outer), bindings


@dataclasses.dataclass
class _Kept:
    """A summary kept across compilations, and what it rests on."""
    code: types.CodeType
    bindings: object            # syntax.resolve.Bindings: what the function's names denoted
    summary: al.Summary
    used: frozenset             # the (fn, kinds) whose summaries it read


_KEPT = weakref.WeakKeyDictionary()     # fn -> {kinds: _Kept}
_KEPT_MOST = 4096       # functions: an entry holds what its function's names denote (the
                        # function itself, if it recurses), so it may keep it alive: bounded


def _keep_summary(key, bindings, summary, used):
    fn, kinds = key
    if len(_KEPT) >= _KEPT_MOST:
        _KEPT.clear()
    try:
        _KEPT.setdefault(fn, {})[kinds] = _Kept(fn.__code__, bindings, summary, frozenset(used))
    except TypeError:                   # not weakly referable: not kept
        pass


def _kept(key, seen=None):
    """The kept summary of `key` if it still holds: the same code, every name denoting
    the same object, and the same of every summary it read (recursion: assumed)."""
    fn, kinds = key
    entry = _KEPT.get(fn, {}).get(kinds) if isinstance(fn, types.FunctionType) else None
    if entry is None or entry.code is not fn.__code__ or not entry.bindings.still_valid(fn):
        return None
    seen = set() if seen is None else seen
    seen.add(key)
    for dep in entry.used:
        if dep not in seen and dep not in _OWN_SUMMARIES and _kept(dep, seen) is None:
            return None
    return entry


_OWN_SUMMARIES: dict = {}       # (tapeflow's own function, kinds) -> its final summary


def _is_own(fn) -> bool:
    """A function of tapeflow's own modules: its source and globals never change."""
    return (getattr(fn, '__module__', None) or '').startswith('tapeflow.')


def _calls_writing_outer(stmt, state, summary) -> bool:
    """A call in `stmt` of a user function that writes into globals or closure values."""
    from tapeflow.transforms.operations import user_function
    call = stmt.value if isinstance(stmt, (gast.Assign, gast.Expr)) else None
    fn = user_function(call) if isinstance(call, gast.Call) else None
    if fn is None:
        return False
    kinds = tuple(state.kinds.get(a.id) if isinstance(a, gast.Name) else None for a in call.args)
    return summary(fn, kinds).outer


def written_names(stmt, state, summary) -> list:
    """The local names whose memory `stmt` writes into."""
    if isinstance(stmt, gast.Assign):
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            return [target.value.id]
        if isinstance(target, gast.Name) and getanno(stmt, Key.IN_PLACE) \
                and al.may_be_mutable(state.kinds.get(target.id)):
            return [target.id]
        call = stmt.value
    elif isinstance(stmt, gast.Expr):
        call = stmt.value
    else:
        return []
    if not isinstance(call, gast.Call):
        return []
    return [w.id for _, w, _ in al.writes_of_call(call, state, summary)
            if isinstance(w, gast.Name) and w.id in state.kinds]


def _result(node, facts, params, writes):
    ret = node.body[-1] if node.body and isinstance(node.body[-1], gast.Return) else None
    if ret is None or ret.value is None or id(ret) not in facts.before:
        return al.Summary(writes, frozenset(), None, al.SCALAR)
    state = facts.before[id(ret)]
    value = ret.value
    atoms = value.elts if isinstance(value, gast.Tuple) else [value]
    reached = frozenset().union(*(al.reach(state, a.id) for a in atoms
                                  if isinstance(a, gast.Name))) if atoms else frozenset()
    reached = al.overlapping(state, reached)          # a view of a parameter is one of its
    result = frozenset(i for i, p in enumerate(params)
                       if reached & {(al.PARAM, p), (al.PARAM_ITEMS, p)})
    kind = None
    if isinstance(value, gast.Name):
        kind = state.kinds.get(value.id)
    elif isinstance(value, gast.Tuple):
        kind = al.TUPLE
    elif isinstance(value, gast.Constant):
        kind = al.kind_of_value(value.value)
    same = None
    if isinstance(value, gast.Name):
        rebound = _rebound(node, facts)
        for i, p in enumerate(params):
            if p not in rebound and _identical(state, value.id, p):
                same = i
    return al.Summary(writes, result, same, kind)


def _rebound(node, facts) -> set:
    """Names assigned a new object somewhere in `node` (`v *= c` of an array or list
    writes into it, and keeps it)."""
    out = set()
    for stmt in nodes.statements(node.body):
        if isinstance(stmt, gast.Assign) and getanno(stmt, Key.IN_PLACE) is True \
                and id(stmt) in facts.before:
            name = stmt.targets[0].id
            kind = facts.before[id(stmt)].kinds.get(name)
            if kind == al.ARRAY or (kind == al.LIST and isinstance(stmt.value.op, gast.Add)):
                continue
        out |= nodes.store_names([stmt]) if not isinstance(stmt, (gast.If, gast.For, gast.While)) \
            else _own_stores(stmt)
    return out


def _own_stores(stmt) -> set:
    """The names a compound statement's own header binds (a for loop's target)."""
    return nodes.store_names([gast.Assign(targets=[stmt.target], value=None)]) \
        if isinstance(stmt, gast.For) else set()


def _identical(state, a, b) -> bool:
    """`a` and `b` are the same object, by a chain of `x = y` equations."""
    if a == b:
        return True
    seen, stack = {a}, [a]
    while stack:
        n = stack.pop()
        for e in state.eqs:
            if e.op == 'ident' and n in (e.derived, e.source):
                other = e.source if n == e.derived else e.derived
                if other == b:
                    return True
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
    return False


# ---------------------------------------------------------------- variants

_VARIANTS = weakref.WeakKeyDictionary()      # fn -> {positions: variant}
_KEEP = object()


def variant(fn, positions, parse, derived=()):
    """`fn` returning `(its result, *its arguments at positions)` as they are when it returns.

    `parse(fn)`: its `syntax.parse.Source`. `derived`: ((j, i, steps), ...), parameters
    the caller passes views of others (`transforms.propagation.derivations`): the variant
    starts by deriving parameter j from parameter i through `steps`.
    """
    table = _VARIANTS.setdefault(fn, {})
    key = (positions, derived)
    if key in table:
        return table[key]
    source = parse(fn)
    node = source.node
    params = [a.id for a in node.args.args]
    namer = Namer.for_function(node)
    prologue = []
    for j, i, steps in derived:
        current = params[i]
        for step in steps:
            name = namer.new('_view')
            prologue.append(nodes.assign(name, nodes.substitute(
                nodes.parse_expression(step), {'__source__': current})))
            current = name
        prologue.append(nodes.assign(params[j], current))
    entries = [namer.new(f'_entry_{params[i]}') for i in positions]
    prologue += [nodes.assign(e, params[i]) for e, i in zip(entries, positions)]
    nodes.located(prologue, node)
    node.body = prologue + _with_entries(node.body, entries)
    if not (node.body and isinstance(node.body[-1], gast.Return)):
        node.body.append(nodes.located(
            nodes.return_(nodes.tuple_(nodes.const(None), *entries)), node.body[-1]))
    node.name = f'{_id(fn)}_inplace'
    made = _function(fn, node)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    made.__tapeflow_variant_of__ = (fn, positions)
    table[key] = made
    return made


def _with_entries(stmts, entries):
    """Every `return r` of the function itself (not of nested defs) returns the entries too."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, gast.Return):
            value = stmt.value if stmt.value is not None else nodes.const(None)
            new = nodes.return_(nodes.tuple_(value, *entries))
            out.append(nodes.copy_location(new, stmt))
            continue
        if not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, _with_entries(inner, entries))
        out.append(stmt)
    return out


_ARITY_VARIANTS = weakref.WeakKeyDictionary()     # fn -> {number of star arguments: variant}


def arity_variant(fn, count, parse):
    """`fn(a, *rest)` called with `count` values in `rest`, as a function of named
    parameters: `def fn(a, rest_0, rest_1): rest = (rest_0, rest_1); ...`, where
    `g(*rest)` and `g(*rest[1:])` pass those names one by one. A function whose
    star parameter is rebound, or that takes `**kwargs` or keyword-only parameters,
    is returned as it is (the fence refuses its signature with its location)."""
    table = _ARITY_VARIANTS.setdefault(fn, {})
    made = _kept_variant(table, count, fn)
    if made is not None:
        return made
    source = parse(fn)
    node = source.node
    star = node.args.vararg
    if star is None or node.args.kwarg is not None or node.args.kwonlyargs or any(
            isinstance(n, gast.Name) and n.id == star.id and not isinstance(n.ctx, gast.Load)
            for n in gast.walk(node) if n is not star):
        return fn
    namer = Namer.for_function(node)
    names = [namer.new(f'{star.id}_{k}') for k in range(count)]
    _ExpandStar(star.id, names).visit(node)
    for name in names:
        param = nodes.name(name)
        param.ctx = gast.Param()
        node.args.args.append(param)
    node.args.vararg = None
    if count:                  # every named parameter is passed: their defaults never apply
        node.args.defaults = []
    pack = nodes.located(nodes.assign(star.id, nodes.tuple_(*map(nodes.name, names))), node)
    node.body = [pack] + node.body
    node.name = f'{_id(fn)}_{count}'
    made = _function(fn, node, defaults=None if count else fn.__defaults__)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    _keep(table, count, made, fn)
    return made


class _ExpandStar(gast.NodeTransformer):
    """`*rest` and `*rest[i:j:k]` (numbers written out) in calls and displays: the names
    `rest` holds, one by one."""

    def __init__(self, star, names):
        self.star, self.names = star, names

    def _items(self, node):
        if not isinstance(node, gast.Starred):
            return None
        value = node.value
        if isinstance(value, gast.Name) and value.id == self.star:
            return list(self.names)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
                and value.value.id == self.star and isinstance(value.slice, gast.Slice):
            bounds = [value.slice.lower, value.slice.upper, value.slice.step]
            if all(b is None or (isinstance(b, gast.Constant) and isinstance(b.value, int))
                   for b in bounds):
                picked = slice(*(None if b is None else b.value for b in bounds))
                return self.names[picked]
        return None

    def _expand(self, elts):
        out = []
        for elt in elts:
            items = self._items(elt)
            out += [elt] if items is None else \
                [nodes.copy_location(nodes.name(n), elt) for n in items]
        return out

    def visit_Call(self, node):
        self.generic_visit(node)
        node.args = self._expand(node.args)
        return node

    def visit_Tuple(self, node):
        self.generic_visit(node)
        node.elts = self._expand(node.elts)
        return node

    visit_List = visit_Tuple

    def visit_FunctionDef(self, node):
        params = {a.id for a in node.args.args}
        if self.star in params:          # a nested def's own parameter of that name
            return node
        self.generic_visit(node)
        return node


_BOUND_VARIANTS = weakref.WeakKeyDictionary()     # fn -> {((position, function), ...): variant}
_FUNCTION_TYPES = frozenset({types.FunctionType, types.BuiltinFunctionType, np.ufunc,
                             type(np.sum), functools.partial})


def is_function(value) -> bool:
    """Whether `value` is a function (a def, a lambda, a NumPy or builtin function, a
    partial) that compiled code may take as a constant when it is passed as an argument."""
    return value.__class__ in _FUNCTION_TYPES


def bound_variant(fn, bound, parse):
    """`fn` with the functions `bound` ({position: function}) passed for its parameters
    read as constants: `def loss(x, act)` called with `act=np.tanh` becomes a function
    whose `act` is a closure cell holding np.tanh (its calls resolved and differentiated
    while compiling), the parameter kept, unread, so that arguments keep their places.
    A function that assigns such a parameter, or never reads it, is returned as it is."""
    key = tuple(sorted(bound.items(), key=lambda item: item[0]))
    table = _BOUND_VARIANTS.setdefault(fn, {})
    try:
        made = _kept_variant(table, key, fn)
    except TypeError:                  # an unhashable callable: not specialised
        return fn
    if made is not None:
        return made
    source = parse(fn)
    node = source.node
    params = node.args.args
    names = {params[i].id for i in bound if i < len(params)}
    body = [n for n in gast.walk(node) if isinstance(n, gast.Name) and n.id in names
            and all(n is not p for p in params)]
    if len(names) != len(bound) or not body or \
            any(not isinstance(n.ctx, gast.Load) for n in body):
        return fn                    # not read (generated code's unread parameter), or rebound
    namer = Namer.for_function(node)
    cells = {}
    for i, value in bound.items():
        cells[params[i].id] = value
        params[i].id = namer.new(f'_{params[i].id}_unread')
    made = _function(fn, node, cells=cells)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    _keep(table, key, made, fn)
    return made


_VARIANTS_KEPT = 64     # variants of one function kept (a new lambda passed each call makes one)


def _keep(table, key, made, fn):
    if len(table) >= _VARIANTS_KEPT:
        table.pop(next(iter(table)))
    table[key] = (fn.__code__, fn.__defaults__, made)


def _kept_variant(table, key, fn):
    """The variant kept for `key`, if `fn`'s code and defaults are still those it was
    made from."""
    kept = table.get(key)
    if kept is None or kept[0] is not fn.__code__ or kept[1] is not fn.__defaults__:
        return None
    return kept[2]


def _function(fn, node, defaults=_KEEP, cells=None):
    """A function object for `node`, in `fn`'s globals and closure cells (and `fn`'s
    defaults, unless others are given), and new cells holding the values `cells`."""
    from tapeflow.syntax.unparse import unparse
    free = fn.__code__.co_freevars + tuple(cells or ())
    inner = unparse(node)
    if free:
        body = ''.join('    ' + line + '\n' for line in inner.splitlines())
        text = f'def __tapeflow_cells({", ".join(free)}):\n{body}    return {node.name}\n'
    else:
        text = inner
    code = compile(text, f'<tapeflow {node.name}>', 'exec')
    if free:
        outer = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        code = next(c for c in outer.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == node.name)
        held = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        held.update({name: types.CellType(value) for name, value in (cells or {}).items()})
        closure = tuple(held[n] for n in code.co_freevars)
    else:
        code = next(c for c in code.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == node.name)
        closure = None
    made = types.FunctionType(code, fn.__globals__, node.name,
                              fn.__defaults__ if defaults is _KEEP else defaults, closure)
    made.__kwdefaults__ = fn.__kwdefaults__
    return made
