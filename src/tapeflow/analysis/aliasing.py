"""Aliasing: which names may share memory, and what is known exactly about how.

Runs on ANF (`transforms.anf`), before activity; models the program as it is
written (Python's reference semantics: names share lists and arrays, slices
and reshapes are views, calls write into their arguments). For every
statement, `Aliasing.before[id(stmt)]` holds a `State` with three kinds of
facts, each true whenever that statement runs: `kinds` (what a name holds),
points-to *may* facts (`pts`, `contents`: the abstract objects a name, and
an object's elements, may reference) and equations, *must* facts (`Eq`).
What they mean, and the operations on them, are in `analysis.memory`; what
each call writes is in `analysis.call_writes`. This module re-exports both;
the facts of a call's result are in `analysis.call_facts` (a mixin of `Aliasing`).

`reach(state, name)` is every object a name can reach; two names may share
memory when their reaches meet. The mutation pass (`transforms.mutation`)
reads these facts at each write: who else sees the memory written, and how to
bring each of them up to date.

Callees: `summaries(fn, kinds)` says which parameters a user function may
write into and which its result may reference; the analysis uses it at
calls (see `transforms.callees.Summaries`).
"""
from __future__ import annotations

import builtins
import dataclasses

from tapeflow.syntax import ast
import numpy as np

from tapeflow.analysis.call_facts import CallFacts
from tapeflow.analysis.call_writes import (  # noqa: F401  (re-exported)
    everything_of, out_arguments, writes_of_call)
from tapeflow.analysis.memory import (  # noqa: F401  (re-exported)
    ARRAY, DICT, LIST, MUTABLE, NUMERIC, OPAQUE_SUMMARY, OUTER, PARAM, PARAM_ITEMS, SCALAR,
    TUPLE, NUMBERS, Eq, State, Summary, age, element_eq, elements, fixes, holders, join_kinds,
    renamed_eq, kill, kill_items, kind_of_value, may_be_mutable, names_of, nodes_name, overlapping, reach,
    reach_objects, text)
from tapeflow.rules import mutation as table
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno


class Aliasing(CallFacts):
    """The facts before every statement of an ANF function body.

    `param_kinds`: name -> kind of the parameters, where known. `summary(fn,
    kinds)`: the `Summary` of a call of the user function `fn` with arguments
    of those kinds (None: unknown, the call may do anything to its arguments'
    elements but writes nothing).
    """

    def __init__(self, node: ast.FunctionDef, param_kinds: dict, summary=None):
        self.summary = summary or (lambda fn, kinds: OPAQUE_SUMMARY)
        self.before = {}              # id(stmt) -> State
        self.after = {}               # id(stmt) -> State (simple statements)
        # (id(stmt), 'body' | 'orelse' | 'before') -> `memory.fixes` of the path that ends
        # there (a branch, a loop's body) or enters the statement (a loop, from before)
        self.fixes = {}
        state = State()
        for arg in node.args.args:
            p = arg.id
            obj, items = (PARAM, p), (PARAM_ITEMS, p)
            state.kinds[p] = param_kinds.get(p)
            if may_be_mutable(state.kinds[p]) or state.kinds[p] == TUPLE:
                state.pts[p] = frozenset({obj})
                state.contents[obj] = frozenset({items})
                state.contents[items] = frozenset({items})
        self.entry = state
        self.exit = self.block(node.body, state)

    def states(self) -> list:
        """The distinct states recorded (a statement that changes nothing shares its state)."""
        if getattr(self, '_states', None) is None:
            unique = {}
            for state in list(self.before.values()) + list(self.after.values()):
                unique.setdefault(id(state), state)
            self._states = list(unique.values())
        return self._states

    # ---------------------------------------------------------------- control flow

    def block(self, stmts, state):
        for stmt in stmts:
            state = self.statement(stmt, state)
        return state

    def statement(self, stmt, state):
        self.before[id(stmt)] = state
        if isinstance(stmt, ast.If):
            body, orelse = self.block(stmt.body, state), self.block(stmt.orelse, state)
            joined = body.join(orelse)
            self.fix(stmt, 'body', joined, body)
            self.fix(stmt, 'orelse', joined, orelse)
            return joined
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, state)
        new = state.copy()
        self.simple(stmt, new)
        self.after[id(stmt)] = new
        return new

    def loop(self, stmt, state):
        # Every trip records the facts of the body; the last one's stand: it started from
        # the fixpoint's head (a trip that ends where it began is not followed by another).
        head = state
        for _ in range(50):
            entry = self.loop_head(stmt, head)
            end = self.block(stmt.body, entry)
            new = head.join(end)
            if new.same(head):
                break
            head = new
        else:                              # pragma: no cover - the lattice is finite
            raise RuntimeError('aliasing: loop fixpoint did not converge')
        self.before[id(stmt)] = head
        self.fix(stmt, 'before', head, state)
        self.fix(stmt, 'body', head, end)
        # The loop may run no trip, or leave after any (a break), unless it surely runs
        # all of a range of constant, non-zero length: then it ends after a whole trip.
        return end if _runs_whole_trips(stmt) else head

    def fix(self, stmt, where, joined, path):
        """Record what the path ending at `where` of `stmt` must set before the join."""
        found = fixes(joined, path)
        if found:
            self.fixes[(id(stmt), where)] = found
        else:
            self.fixes.pop((id(stmt), where), None)

    def loop_head(self, stmt, state):
        if isinstance(stmt, ast.For):
            state = state.copy()
            for n in nodes.walk_terms(stmt.target):
                if isinstance(n, ast.Name):
                    self.bind(state, n.id, SCALAR, frozenset())
        return state

    # ---------------------------------------------------------------- simple statements

    def simple(self, stmt, state):
        if isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and getanno(stmt, Key.IN_PLACE) \
                    and may_be_mutable(state.kinds.get(target.id)) and target.id in state.kinds:
                self.in_place(target.id, stmt.value, state, stmt)
            elif isinstance(target, ast.Name):
                self.assign(stmt, target.id, stmt.value, state)
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                self.store_item(target.value.id, target.slice, stmt.value, state)
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.call_effects(stmt.value, state, stmt)
        elif isinstance(stmt, ast.FunctionDef):
            self.bind(state, stmt.name, None, frozenset())

    def bind(self, state, name, kind, objects, eqs=()):
        """`name` now holds a new value: equations on its old one are gone."""
        kill(state, name)
        state.kinds[name] = kind
        if objects:
            state.pts[name] = frozenset(objects)
        else:
            state.pts.pop(name, None)
        if eqs:
            state.eqs = state.eqs | frozenset(eqs)

    def assign(self, stmt, target, value, state):
        if isinstance(value, ast.Name) and value.id == target and target in state.kinds:
            return                            # `p = p`: the same object, every fact still holds
        if self.written_back(value, target, state):
            return                            # `y = written_value(_run, k, y)`: y, written
        site = ('site', id(stmt))
        if isinstance(value, ast.Call):
            self.call_effects(value, state, stmt)
        kind, objects, eqs = self.value(value, target, site, state)
        eqs = [dataclasses.replace(e, origin=id(stmt), made=(e.derived, e.source)) if e.maybe else e
               for e in eqs]
        twin = _same_slot(state, eqs, target)
        if twin is not None:              # `e = xs[0]` where `a = xs[0]` still holds: e is a
            kind, objects = state.kinds.get(twin), state.pts.get(twin, frozenset())
            eqs.append(Eq(target, twin, 'ident', twin, nodes_name(twin), frozenset({twin})))
        self.bind(state, target, kind, objects, eqs)

    def atom(self, node, state):
        """(kind, objects) of an ANF atom."""
        if isinstance(node, ast.Constant):
            return kind_of_value(node.value), frozenset()
        if isinstance(node, ast.Tuple):                 # a tuple of constants
            return TUPLE, frozenset()
        resolved = getanno(node, Key.RESOLVED, _MISSING)
        if isinstance(node, ast.Name) and resolved is _MISSING:
            return state.kinds.get(node.id), state.pts.get(node.id, frozenset())
        if resolved is _MISSING:
            return None, frozenset()
        kind = kind_of_value(resolved)
        if kind in MUTABLE or kind == TUPLE and not _constant_tuple(resolved):
            return kind, frozenset({(OUTER, text(node))})
        return kind, frozenset()

    def fresh(self, state, site, kind, inside=frozenset()):
        """A new object made at `site` (its elements: `inside`); older objects of the site are merged."""
        if kind in (SCALAR, TUPLE) and not inside:
            return frozenset()
        new, old = site + ('new',), site + ('old',)
        if new in state.contents or _held(new, state.pts):
            age(state, new, old)
        state.contents[new] = frozenset(inside)
        return frozenset({new})

    def view(self, state, site, objects):
        """A new object made at `site` that may share the memory of `objects` (a view)."""
        made = self.fresh(state, site, ARRAY)
        if objects:
            state.views[next(iter(made))] = frozenset(objects)
        return made

    def value(self, v, target, site, state):
        """(kind, objects, equations) of the value of an ANF assignment to `target`."""
        if isinstance(v, (ast.Name, ast.Constant)) or (
                isinstance(v, ast.Attribute) and getanno(v, Key.RESOLVED, _MISSING) is not _MISSING):
            kind, objects = self.atom(v, state)
            eqs = [Eq(target, v.id, 'ident', v.id, v, frozenset({v.id}))] \
                if isinstance(v, ast.Name) and v.id in state.kinds and v.id != target else []
            return kind, objects, eqs
        if isinstance(v, ast.BinOp):
            (ka, oa), (kb, ob) = self.atom(v.left, state), self.atom(v.right, state)
            if ka in NUMBERS and kb in NUMBERS:
                kind = SCALAR if ka == kb == SCALAR else (ARRAY if ARRAY in (ka, kb) else NUMERIC)
                return kind, self.fresh(state, site, kind), []
            if _arithmetic(v, ka, kb):
                return NUMERIC, self.fresh(state, site, NUMERIC), []
            kind = ka if ka == kb and ka in (LIST, TUPLE) else (
                ka if ka in (LIST, TUPLE) and kb == SCALAR else (
                    kb if kb in (LIST, TUPLE) and ka == SCALAR else None))   # (n * ys)
            inside = elements(state, oa | ob)
            return kind, self.fresh(state, site, kind or LIST, inside), []
        if isinstance(v, ast.UnaryOp):
            kind, _ = self.atom(v.operand, state)
            kind = SCALAR if isinstance(v.op, ast.Not) or kind == SCALAR else (
                kind if kind in NUMBERS else NUMERIC)
            return kind, self.fresh(state, site, kind), []
        if isinstance(v, (ast.Compare, ast.BoolOp)):
            kinds = [self.atom(a, state)[0] for a in nodes.walk_terms(v) if isinstance(a, ast.Name)]
            kind = SCALAR if all(k == SCALAR for k in kinds) else NUMERIC
            return kind, self.fresh(state, site, kind), []
        if isinstance(v, ast.Subscript):
            return self.subscript(v, target, site, state)
        if isinstance(v, ast.Attribute):
            return self.attribute(v, target, site, state)
        if isinstance(v, (ast.Tuple, ast.List)):
            kind = TUPLE if isinstance(v, ast.Tuple) else LIST
            objects = frozenset().union(*(self.atom(e, state)[1] for e in v.elts)) if v.elts else frozenset()
            made = self.fresh(state, site, LIST, objects)      # tuples of arrays hold references too
            eqs = [element_eq(e.id, target, k, kind, len(v.elts)) for k, e in enumerate(v.elts)
                   if isinstance(e, ast.Name) and e.id in state.kinds and e.id != target]
            return kind, made, eqs
        if isinstance(v, ast.Dict):
            objects = frozenset().union(*(self.atom(e, state)[1] for e in v.values)) if v.values else frozenset()
            eqs = [element_eq(e.id, target, k.value, DICT, None) for k, e in zip(v.keys, v.values)
                   if isinstance(e, ast.Name) and isinstance(k, ast.Constant)
                   and e.id in state.kinds and e.id != target]
            return DICT, self.fresh(state, site, DICT, objects), eqs
        if isinstance(v, ast.Call):
            return self.call(v, target, site, state)
        return None, self.fresh(state, site, None, _everything(state, v)), []

    def subscript(self, v, target, site, state):
        base = v.value
        kind, objects = self.atom(base, state)
        index = v.slice
        if not isinstance(base, ast.Name) or base.id not in state.kinds:
            return None, self.fresh(state, site, None, reach_objects(state, objects)), []
        name = base.id
        eq = lambda container, maybe: Eq(target, name, 'index', text(v), v, names_of(v),
                                          container, None, maybe)
        if kind == ARRAY or kind == NUMERIC:
            basic = _basic_index(index, state)
            if basic is False:
                return ARRAY, self.fresh(state, site, ARRAY), []
            # a slice (or None, ...) in a basic index makes a view; integers alone may
            # pick one number, a copy
            sliced = basic is True and any(
                isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value in
                                             (None, Ellipsis))
                for p in (index.elts if isinstance(index, ast.Tuple) else [index]))
            return (ARRAY if sliced else NUMERIC), self.view(state, site, objects), \
                [eq(ARRAY, not sliced)]
        if kind in (LIST, TUPLE, DICT):
            items = elements(state, objects)
            if isinstance(index, ast.Slice):
                return kind, self.fresh(state, site, kind, items), []
            if kind != DICT and _index_kind(index, state) != SCALAR:
                return None, items | self.fresh(state, site, None, items), []
            return None, items, [eq(kind, False)]
        everything = reach_objects(state, objects)
        return None, everything | self.view(state, site, objects), [eq(None, True)]

    def attribute(self, v, target, site, state):
        kind, objects = self.atom(v.value, state)
        if v.attr in ('shape', 'ndim', 'size', 'dtype', 'itemsize', 'nbytes', 'strides'):
            return (TUPLE if v.attr in ('shape', 'strides') else SCALAR), frozenset(), []
        view = table.VIEW_ATTRIBUTES.get(v.attr)
        if view is not None and isinstance(v.value, ast.Name) and v.value.id in state.kinds:
            return NUMERIC if v.attr in ('real', 'imag') else ARRAY, self.view(state, site, objects), [
                Eq(target, v.value.id, 'view', text(v), v, names_of(v), kind, view,
                   not (view.always and kind == ARRAY))]
        everything = reach_objects(state, objects)
        return None, everything | self.fresh(state, site, None, everything), []

    # ---------------------------------------------------------------- writes

    def in_place(self, name, binop, state, stmt):
        """`name <op>= value` on what may be an array or a list: written, not rebound.
        What may be a number (NUMERIC, unknown) may be rebound as well: the equations
        relating it hold after `stmt` only if it is still the object it was (decided at
        run time, right after it: `maybe`); those it is only read in are forgotten."""
        kind = state.kinds.get(name)
        if kind in (NUMERIC, None):
            kept = set()
            for e in state.eqs:
                if not e.mentions(name) and e.source != name:
                    kept.add(e)
                elif name in (e.derived, e.source) and not e.maybe:
                    kept.add(dataclasses.replace(e, maybe=True, origin=id(stmt),
                                                 made=(name, None)))   # holds if still it
            state.eqs = frozenset(kept)
        if kind in NUMBERS:
            return
        _, objects = self.atom(binop.right, state)
        added = reach_objects(state, objects)
        for obj in state.pts.get(name, frozenset()):
            state.contents[obj] = state.contents.get(obj, frozenset()) | added
        kill_items(state, name, keep_appended=True)

    def store_item(self, name, index, value, state):
        """`name[index] = value`."""
        if name not in state.kinds:
            return
        kind = state.kinds.get(name)
        if kind in NUMBERS:
            return
        _, objects = self.atom(value, state)
        for obj in state.pts.get(name, frozenset()):
            state.contents[obj] = state.contents.get(obj, frozenset()) | objects
        kill_items(state, name, keep_appended=False, stored=index)
        if isinstance(value, ast.Name) and value.id in state.kinds and value.id != name \
                and kind in (LIST, DICT) and isinstance(index, (ast.Constant, ast.Name)):
            read = nodes.subscript(name, nodes.clone(index))
            state.eqs = state.eqs | {Eq(value.id, name, 'index', text(read), read,
                                        names_of(read), kind)}


_MISSING = object()


def _held(obj, pts) -> bool:
    """Whether a name may hold `obj` (a loop: the check runs for every allocation)."""
    for objects in pts.values():
        if obj in objects:
            return True
    return False


def _same_slot(state, eqs, target):
    """A name the equations say already is the element `target` is read from, or None."""
    for e in eqs:
        if e.op == 'index' and e.container in (LIST, TUPLE, DICT) and e.derived == target:
            for other in state.eqs:
                if other.op == 'index' and other.source == e.source and other.key == e.key \
                        and other.derived != target:
                    return other.derived
    return None


def _everything(state, node) -> frozenset:
    objects = frozenset().union(*(state.pts.get(n.id, frozenset()) for n in nodes.walk_terms(node)
                                  if isinstance(n, ast.Name)))
    return reach_objects(state, objects)


def _runs_whole_trips(loop) -> bool:
    """`for ... in range(<constants>)` of at least one trip, with no way out of a trip."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) \
            or getanno(loop.iter.func, Key.RESOLVED) is not builtins.range:
        return False
    if not all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in loop.iter.args):
        return False
    exits = any(getanno(s, Key.LOOP_EXIT) for s in loop.body)
    return not exits and len(range(*(a.value for a in loop.iter.args))) > 0


def _arithmetic(binop, ka, kb) -> bool:
    """Whether `a <op> b` is arithmetic (a number or a new array), whatever the unknown operand:
    only `+` of two sequences and `*` of a sequence by an int make sequences."""
    if isinstance(binop.op, ast.Add):
        return ka in NUMBERS or kb in NUMBERS
    if isinstance(binop.op, ast.Mult):
        for side, kind in ((binop.left, ka), (binop.right, kb)):
            if kind in (ARRAY, NUMERIC) or isinstance(side, ast.Constant) \
                    and isinstance(side.value, float):
                return True
        return False
    return not isinstance(binop.op, ast.Mod)          # `%` formats strings


def _constant_tuple(value) -> bool:
    return all(kind_of_value(v) == SCALAR or isinstance(v, tuple) and _constant_tuple(v)
               for v in value)


def _index_kind(index, state):
    if isinstance(index, ast.Constant):
        return SCALAR if isinstance(index.value, int) and not isinstance(index.value, bool) else None
    if isinstance(index, ast.Name):
        return state.kinds.get(index.id) if getanno(index, Key.RESOLVED, _MISSING) is _MISSING \
            else kind_of_value(getanno(index, Key.RESOLVED))
    return None


def _basic_index(index, state):
    """True: `x[index]` is basic indexing (a view); False: advanced (a copy); None: unknown."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    verdict = True
    for part in parts:
        if isinstance(part, ast.Slice):
            continue
        if isinstance(part, ast.Constant):
            if part.value is None or part.value is Ellipsis or (
                    isinstance(part.value, int) and not isinstance(part.value, bool)):
                continue
            return False                 # a tuple/bool constant: advanced
        if isinstance(part, (ast.List, ast.Tuple)):
            return False
        kind = _index_kind(part, state)
        if kind in (ARRAY, LIST):
            return False
        if kind != SCALAR:
            verdict = None
    return verdict
