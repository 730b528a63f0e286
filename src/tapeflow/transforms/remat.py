"""Rematerialisation: a cheap value is computed again in the reverse sweep, not taped.

Runs inside `reverse`, on one block of statements already turned into their
forward and reverse parts (before `optimize`). A statement `y = f(a, ...)`
whose push of the old `y` and pop that restores it (`Key.TAPE_PAIR`) exist
only to give the reverse sweep `y` back loses both; the reverse sweep instead
runs `y = f(a, ...)` again, at the start of the reverse of the last statement
of the block that reads `y`.

Why the value is the same: before the reverse of a statement runs, every
variable it reads holds what it held after that statement in the forward
sweep (the pops put them back; `optimize` keeps every pop whose value is
read, and the recomputation reads `a`). So the recomputation is safe when

- `f` is pure and cheap: `math` functions, arithmetic of scalars known by
  shape (`analysis.shapes`), `xs[i]` of a parameter no statement writes,
  aliases or hands to a call;
- `y` is bound by this statement only, in the whole function, and read only
  by the statements of this block up to its last reader, all of them plain
  assignments of pure values to names (nothing escapes, nothing writes
  memory), none of which binds `a`, ...

Everything else keeps its push and pop.
"""
from __future__ import annotations

import builtins
import math

from tapeflow.syntax import ast
import numpy as np

from tapeflow.rules import registry
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno

# Arithmetic a statement between the recomputed one and its last reader may do.
_PURE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.USub, ast.UAdd)
# Attributes of an array a read of it may take without the array escaping.
_READ_ATTRIBUTES = frozenset({'shape', 'ndim', 'size', 'dtype', 'T'})


class Facts:
    """What the whole function tells about its names (computed once per function)."""

    def __init__(self, node, shapes):
        self.loads, self.stores = nodes.name_counts(node)
        self.shapes = shapes
        self.params = {a.id for a in node.args.args if isinstance(a, ast.Name)}
        self.read_only = _read_only_arrays(node, self.params)
        # variables of `for i in range(...)` bound nowhere else: always ints
        self.counters = {n.target.id for n in nodes.statements(node.body) if isinstance(n, ast.For)
                         and isinstance(n.target, ast.Name) and self.stores.get(n.target.id) == 1
                         and isinstance(n.iter, ast.Call)
                         and getanno(n.iter.func, Key.RESOLVED) is builtins.range}


def _read_only_arrays(node, params) -> set:
    """Parameters only ever indexed or asked their shape: nothing writes their memory,
    nothing else holds it (none where the function calls anything but pure functions)."""
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Call) and not _known(getanno(n.func, Key.RESOLVED)):
            return set()
        if getanno(n, Key.MUTATES) is not None or getanno(n, Key.IN_PLACE) is not None:
            return set()
        if isinstance(n, ast.Assign) and not isinstance(n.targets[0], ast.Name):
            return set()          # a write into memory (desugared: `+=` too): maybe theirs
    parents = {id(child): n for n in nodes.walk_terms(node) for child in ast.iter_child_nodes(n)}
    out = set(params)
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Name) and n.id in out and isinstance(n.ctx, ast.Load):
            parent = parents.get(id(n))
            indexed = isinstance(parent, ast.Subscript) and parent.value is n \
                and isinstance(parent.ctx, ast.Load)
            asked = isinstance(parent, ast.Attribute) and parent.attr in _READ_ATTRIBUTES
            if not (indexed or asked):
                out.discard(n.id)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, (ast.Load, ast.Param)):
            out.discard(n.id)
    return out


def _known(fn) -> bool:
    """A function with a rule, or a pure one: it does not write its arguments (writes by
    the few that do, `transforms.mutation` marks) nor reaches memory by other ways."""
    if fn is None:
        return False
    try:
        return fn in (builtins.range, builtins.len) or _pure_function(fn) \
            or registry.lookup(fn) is not None
    except TypeError:
        return False


def _pure_function(fn) -> bool:
    """`math.sin`, `np.tanh` (a ufunc): the same arguments give the same value, no writes."""
    return isinstance(fn, np.ufunc) or _is_math(fn)


def _atom(node) -> bool:
    return isinstance(node, (ast.Name, ast.Constant))


def _scalar(node, facts) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return isinstance(node, ast.Name) and (facts.shapes.get(node.id) == () or node.id in facts.counters)


def cheap(value, facts) -> bool:
    """A value worth computing again rather than taping (and safe to)."""
    if isinstance(value, ast.Call):
        fn = getanno(value.func, Key.RESOLVED)
        return not value.keywords and all(_atom(a) for a in value.args) and fn is not None \
            and _is_math(fn)
    if isinstance(value, ast.BinOp) and isinstance(value.op, _PURE_OPS) \
            and not isinstance(value.op, ast.MatMult):
        return _scalar(value.left, facts) and _scalar(value.right, facts)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        return _scalar(value.operand, facts)
    if isinstance(value, ast.Compare):        # `i > 1` of numbers: a bool
        return all(_scalar(v, facts) for v in [value.left] + value.comparators)
    if isinstance(value, ast.BoolOp):         # `i > 1 and i < 5`
        return all(_scalar(v, facts) or (isinstance(v, ast.Compare) and cheap(v, facts))
                   for v in value.values)
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
            and isinstance(value.ctx, ast.Load):
        return value.value.id in facts.read_only and _atom(value.slice)
    return False


def _is_math(fn) -> bool:
    try:
        return getattr(math, getattr(fn, '__name__', ''), None) is fn
    except TypeError:
        return False


def _pure(stmt) -> bool:
    """A plain assignment of a pure value to a name: writes no memory, lets nothing escape."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
        return False
    if getanno(stmt, Key.MUTATES) is not None or getanno(stmt, Key.IN_PLACE) is not None:
        return False
    value = stmt.value
    if isinstance(value, ast.BinOp):
        return isinstance(value.op, _PURE_OPS) and _atom(value.left) and _atom(value.right)
    if isinstance(value, ast.UnaryOp):
        return isinstance(value.op, _PURE_OPS) and _atom(value.operand)
    if isinstance(value, ast.Call):
        return not value.keywords and all(_atom(a) for a in value.args) \
            and _pure_function(getanno(value.func, Key.RESOLVED))
    if isinstance(value, ast.Subscript):
        return isinstance(value.value, ast.Name) and _atom(value.slice)
    if isinstance(value, ast.Compare):
        return _pure_compare(value)
    if isinstance(value, ast.BoolOp):
        return all(_atom(v) or _pure_compare(v) for v in value.values)
    return False


def _pure_compare(node) -> bool:
    return isinstance(node, ast.Compare) and _atom(node.left) and all(_atom(c) for c in node.comparators)


def _decided(part, y):
    """For `if y:`, whose reverse `if _pop():` chooses by the decision pushed after it,
    that push, where nothing else in the `if` reads `y`."""
    stmt, fwd, rev = part
    if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id == y):
        return None
    if nodes.name_counts(stmt)[0].get(y, 0) != 1 or len(fwd) != 2 or len(rev) != 1 \
            or not isinstance(rev[0], ast.If) or not isinstance(fwd[1], ast.Expr):
        return None
    pair = getanno(fwd[1], Key.TAPE_PAIR)
    return fwd[1] if pair is not None and getanno(rev[0], Key.TAPE_PAIR) == pair else None


def _taped(fwd, rev, stmt):
    """(push, pop) when `fwd` is exactly the push of the old `y` and `y = value`."""
    if len(fwd) != 2 or fwd[1] is not stmt or not isinstance(fwd[0], ast.Expr):
        return None
    pair = getanno(fwd[0], Key.TAPE_PAIR)
    pops = [s for s in rev if getanno(s, Key.TAPE_PAIR) == pair and isinstance(s, ast.Assign)]
    if pair is None or len(pops) != 1:
        return None
    return fwd[0], pops[0]


def _restore_of(part, names):
    """The pop in `part`'s reverse that puts back the name its statement binds, one of `names`."""
    stmt, _, rev = part
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in names):
        return None
    for s in rev:
        if isinstance(s, ast.Assign) and getanno(s, Key.TAPE_PAIR) is not None \
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id == stmt.targets[0].id:
            return s
    return None


def _readers(parts, i, y, total, counted):
    """The parts after `i` whose statements read `y`, and how many times they read it,
    looked for until the `total` reads of `y` in the function are found (no later part
    reads it then); `counted`: k -> {name: times read} there, filled as asked."""
    readers, reads = [], 0
    for k in range(i + 1, len(parts)):
        if reads == total:
            break
        if k not in counted:
            counted[k] = nodes.name_counts(parts[k][0])[0]
        here = counted[k].get(y, 0)
        if here:
            readers.append(k)
            reads += here
    return readers, reads


def rematerialise(parts, facts):
    """`parts`: [(statement, forward list, reverse list)] of one block, edited in place.

    `y = f(a)` is computed again at the start of the reverse of its last reader, or, where
    that reader binds `a` again (`x = y * x`), right after its reverse pops `a` back."""
    at, inserted = {}, {}        # name computed again -> (part, after a pop); -> how many
    counted = {}                 # k -> {name: times read} in the statement of parts[k]
    for i, (stmt, fwd, rev) in enumerate(parts):
        if not _pure(stmt):
            continue
        y = stmt.targets[0].id
        taped = _taped(fwd, rev, stmt)
        if taped is None or facts.stores.get(y) != 1 or y in facts.params \
                or not cheap(stmt.value, facts):
            continue
        inputs = nodes.load_names(stmt.value)
        total = facts.loads.get(y, 0)
        readers, reads = _readers(parts, i, y, total, counted)
        last = readers[-1] if readers else i
        decision = _decided(parts[last], y) if last > i else None
        between = [parts[k][0] for k in range(i + 1, last + 1)]
        plain = between[:-1] if decision is not None else between
        if y in inputs or reads != total or not all(_pure(s) for s in plain) \
                or any(nodes.store_names([s]) & inputs for s in between[:-1]):
            continue
        anchor = None
        if between and nodes.store_names(between[-1:]) & inputs:
            anchor = _restore_of(parts[last], inputs)
            # (its reverse must read `y` only after it pops: `x = y * x`, not `x = y * 2.0`)
            if anchor is None or any(y in nodes.load_names(s) for s in
                                     parts[last][2][:parts[last][2].index(anchor)]):
                continue
        slot = (last, anchor is not None)
        # an input computed again is so before `y` is: at a later part, or earlier in this one
        if any(z in at and (at[z][0] < last or at[z] == (last, True) and anchor is None)
               for z in inputs):
            continue
        if decision is not None:          # the `if` chooses by `y` computed again, not by a pop
            parts[last][1].remove(decision)
            parts[last][2][0].test = nodes.name(y)
        push, pop = taped
        fwd.remove(push)
        rev.remove(pop)
        again = nodes.located(nodes.assign(y, nodes.clone(stmt.value)), stmt)
        target = parts[last][2]
        start = target.index(anchor) + 1 if anchor is not None else 0
        target.insert(start + inserted.get(slot, 0), again)
        inserted[slot] = inserted.get(slot, 0) + 1
        at[y] = slot
