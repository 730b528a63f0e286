"""User functions called from compiled code: what they write into their arguments.

A call `h(a)` of a user function that writes into its argument (`v *= 2`,
`v[0] = s`, `v.append(s)`, or a call that does) changes the caller's `a`.
The caller's mutation pass (`transforms.mutation`) needs to know that
(`Summaries`) and calls instead `variants.variant(h, (0,))`: `h` returning
`(result, a)`, the argument's final value, which it rebinds.

Summaries come from the aliasing analysis of the callee (run on its ANF, its
own calls summarized in turn); recursion is solved by iterating to a fixpoint.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
import weakref

from tapeflow.rules import guards
from tapeflow.syntax import ast

from tapeflow.analysis import aliasing as al
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.errors import TapeflowError


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
        if any(hasattr(fn, mark) for mark in _MADE_BY_TAPEFLOW):
            return al.Summary(), None   # compiled through its caller (callables), not read
        try:
            node, bindings = self.front(fn)
        except TapeflowError:
            code = getattr(fn, '__code__', None)
            if getattr(fn, '__tapeflow_source__', None) is not None and code is not None \
                    and code.co_filename.startswith('<tapeflow') \
                    and not hasattr(fn, '__tapeflow_class_made__') and not _is_guarded_body(fn) \
                    and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
                raise       # (a def of the user's function, lifted: what it writes is not
            return self._unread(fn)     # known; its refusal is the function's: seed 5447
        except (SyntaxError, OSError, TypeError):   # index 3311, WRONG, 1 for 0.75)
            return self._unread(fn)
        return self._read(fn, kinds, node, bindings)

    def _unread(self, fn):
        """The summary of a function whose text cannot be compiled, called as plain
        Python: the user's may write into any argument and outside (a caller that follows
        writes then compiles it, and says why not)."""
        code = getattr(fn, '__code__', None)
        from tapeflow.transforms.operations import is_library_code
        if _is_own(fn) or is_library_code(fn) or code is None or code.co_freevars or \
                code.co_name == '<lambda>' or code.co_filename.startswith('<tapeflow') \
                and not hasattr(fn, '__tapeflow_class_made__') or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            return al.Summary(), None   # (star parameters: read for each arity instead;
            #                              closures and lambdas: read where they are made)
        count = code.co_argcount if code is not None else 0
        return al.Summary(writes=frozenset(range(count)), outer=True), None

    def _read(self, fn, kinds, node, bindings):
        params = [a.id for a in node.args.args]
        param_kinds = {p: k for p, k in zip(params, kinds) if k is not None}
        facts = al.Aliasing(node, param_kinds, self)
        written, outer = set(), False
        for stmt in nodes.statements(node.body):
            state = facts.before.get(id(stmt))
            if state is not None:
                for name in written_names(stmt, state, self):
                    written |= al.overlapping(state, state.pts.get(name, frozenset()))
                    outer = outer or name not in state.kinds    # a global's memory
                outer = outer or _calls_writing_outer(stmt, state, self)
        writes = frozenset(i for i, p in enumerate(params)
                           if written & {(al.PARAM, p), (al.PARAM_ITEMS, p)})
        deep = frozenset(i for i, p in enumerate(params) if (al.PARAM_ITEMS, p) in written)
        outer = outer or any(o[0] == al.OUTER for o in written)
        if self._guarded_writes(node, fn):  # a try/with body run by the dispatcher: what it
            writes = frozenset(range(len(params)))      # writes is not seen here
        return dataclasses.replace(_result(node, facts, params, writes), outer=outer,
                                   deep=deep), bindings


    def _guarded_writes(self, node, fn) -> bool:
        """Whether a guarded body (`try`, `with`) of `fn` may write into anything (generated
        code runs its bodies through the dispatcher, which checks them with their values)."""
        if fn.__code__.co_filename.startswith('<tapeflow') and not _is_guarded_body(fn) \
                and not hasattr(fn, '__tapeflow_class_made__'):
            return False        # (a body's own bodies, a with of two managers: read too)
        for n in nodes.walk_terms(node):
            body = getanno(n, Key.RESOLVED) if isinstance(n, ast.Name) else None
            if _is_guarded_body(body) and body is not fn:
                inner = self(body, (None,) * body.__code__.co_argcount)
                seen = guards.written_positions(getattr(body, '__tapeflow_kept__', None) or ())
                if inner.writes - seen or inner.outer:      # (those seen: `guarded_writes`)
                    return True
        return False


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


# A function tapeflow made (`vjp`'s pullback, a `grad`-made function): the compiler reads
# the generated code it stands for, never the function's own source.
_MADE_BY_TAPEFLOW = ('__tapeflow_pullback__', '__tapeflow_transform__', '__tapeflow_opaque__')


def is_guarded_body(value) -> bool:
    """Whether `value` is a try/with body desugar lifted (a function marked so: not any
    object that answers every attribute, as a stand-in module's may)."""
    return isinstance(value, types.FunctionType) and \
        value.__dict__.get('__tapeflow_guarded_body__') is True


_is_guarded_body = is_guarded_body


def _is_own(fn) -> bool:
    """A function of tapeflow's own modules: its source and globals never change."""
    return (getattr(fn, '__module__', None) or '').startswith('tapeflow.')


def _calls_writing_outer(stmt, state, summary) -> bool:
    """A call in `stmt` of a user function that writes into globals or closure values."""
    from tapeflow.transforms.operations import user_function
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    fn = user_function(call) if isinstance(call, ast.Call) else None
    if fn is None:
        return False
    kinds = tuple(state.kinds.get(a.id) if isinstance(a, ast.Name) else None for a in call.args)
    return summary(fn, kinds).outer


def written_names(stmt, state, summary) -> list:
    """The local names whose memory `stmt` writes into."""
    if isinstance(stmt, ast.Assign):
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            return [target.value.id]
        if isinstance(target, ast.Name) and getanno(stmt, Key.IN_PLACE) \
                and al.may_be_mutable(state.kinds.get(target.id)):
            return [target.id]
        call = stmt.value
    elif isinstance(stmt, ast.Expr):
        call = stmt.value
    else:
        return []
    if not isinstance(call, ast.Call):
        return []
    return [w.id for _, w, _ in al.writes_of_call(call, state, summary)
            if isinstance(w, ast.Name) and w.id in state.kinds]


def _result(node, facts, params, writes):
    ret = node.body[-1] if node.body and isinstance(node.body[-1], ast.Return) else None
    if ret is None or ret.value is None or id(ret) not in facts.before:
        return al.Summary(writes, frozenset(), None, al.SCALAR)
    state = facts.before[id(ret)]
    value = ret.value
    atoms = value.elts if isinstance(value, ast.Tuple) else [value]
    reached = frozenset().union(*(al.reach(state, a.id) for a in atoms
                                  if isinstance(a, ast.Name))) if atoms else frozenset()
    reached = al.overlapping(state, reached)          # a view of a parameter is one of its
    result = frozenset(i for i, p in enumerate(params)
                       if reached & {(al.PARAM, p), (al.PARAM_ITEMS, p)})
    kind = None
    if isinstance(value, ast.Name):
        kind = state.kinds.get(value.id)
    elif isinstance(value, ast.Tuple):
        kind = al.TUPLE
    elif isinstance(value, ast.Constant):
        kind = al.kind_of_value(value.value)
    same = None
    if isinstance(value, ast.Name):
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
        if isinstance(stmt, ast.Assign) and getanno(stmt, Key.IN_PLACE) is True \
                and id(stmt) in facts.before:
            name = stmt.targets[0].id
            kind = facts.before[id(stmt)].kinds.get(name)
            if kind == al.ARRAY or (kind == al.LIST and isinstance(stmt.value.op, ast.Add)):
                continue
        out |= nodes.store_names([stmt]) if not isinstance(stmt, (ast.If, ast.For, ast.While)) \
            else _own_stores(stmt)
    return out


def _own_stores(stmt) -> set:
    """The names a compound statement's own header binds (a for loop's target)."""
    return nodes.store_names([nodes.assign(stmt.target, None)]) \
        if isinstance(stmt, ast.For) else set()


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
