"""Memory: the facts known of what names hold, and the operations that keep them true.

A `State` is what is known at one point of a function (`analysis.aliasing`
computes one before every statement); its three kinds of facts hold
whenever the program is there:

- `kinds`: what a name holds, as far as known (`SCALAR`, `ARRAY`, `LIST`,
  `TUPLE`, `DICT`, `NUMERIC` -- an array or a scalar --, or None: unknown);
- points-to, *may* facts: `pts[name]` is the set of abstract objects the name
  may reference, and `contents[obj]` the objects its elements may reference.
  Objects are allocation sites, split by recency (the site's most recent
  object, and all older ones: a loop that allocates each trip keeps this
  trip's array apart from the last one's), the parameters (and, for each,
  whatever it contains), and the objects of globals and closures (`OUTER`).
  Immutable values (numbers, strings, None) reference nothing;
- equations, *must* facts (`Eq`): `v = y[1:]`, `a = b`, `r = y.reshape(-1)`,
  `e = xs[0]`: the value of one name is that operation applied to another's,
  sharing its memory. An equation holds until a name in it is rebound (or,
  for list elements, the list's slots change).

`reach(state, name)` is every object a name can reach; two names may share
memory when their reaches meet (`overlapping` adds what views them, and what
they view). `State.join` is what holds after either of two paths; `kill` and
`kill_items` drop the equations a rebinding, or a change of a list's slots,
makes false. `Summary` is what a call of a user function does to its
arguments. Nothing here walks a program.
"""
from __future__ import annotations

import dataclasses

from tapeflow.syntax import ast
import numpy as np

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.rules.arrays import is_foreign_array

SCALAR, ARRAY, LIST, TUPLE, DICT, NUMERIC = 'scalar', 'array', 'list', 'tuple', 'dict', 'numeric'
MUTABLE = frozenset({ARRAY, LIST, DICT})
NUMBERS = frozenset({SCALAR, ARRAY, NUMERIC})

OUTER = 'outer'
PARAM, PARAM_ITEMS = 'param', 'param-items'


UNBOUND = 'unbound'       # a guarded body's parameter for a name not bound yet (`rules.guards`)


def kind_of_value(value):
    """The kind of a Python object known while compiling (a constant, a global)."""
    if value.__class__.__name__ == '_Unbound' and value.__class__.__module__ == 'tapeflow.rules.guards':
        return UNBOUND
    if isinstance(value, (bool, int, float, complex, str, bytes, np.generic)) or value is None:
        return SCALAR
    if isinstance(value, np.ndarray) or is_foreign_array(value):
        return ARRAY
    for cls, kind in ((list, LIST), (tuple, TUPLE), (dict, DICT)):
        if isinstance(value, cls):
            return kind
    return None


def join_kinds(a, b):
    if a == b or b == UNBOUND:      # (a name not bound yet takes the kind it is bound to)
        return a
    if a == UNBOUND:
        return b
    if a in NUMBERS and b in NUMBERS:
        return NUMERIC
    return None


def may_be_mutable(kind) -> bool:
    return kind not in (SCALAR, TUPLE)


@dataclasses.dataclass(frozen=True)
class Eq:
    """`derived` is `value` computed from `source` (and the names in `names`), and shares memory with it.

    `op`: 'ident' (`a = b`), 'index' (`v = y[idx]`, `e = xs[k]`) or 'view'
    (`r = y.reshape(-1)`, `t = y.T`: `view` is its `rules.mutation.View`).
    `container`: the kind of `source` (an array's index is a view, a list's an
    element). `maybe`: whether `derived` shares memory with `source` is only
    known at run time (`reshape` copies a non-contiguous array), right after
    the statement `origin` made it.
    """
    derived: str
    source: str
    op: str
    key: str                                   # the value, as text: what makes two equations one
    value: object = dataclasses.field(compare=False, hash=False, default=None)
    names: frozenset = dataclasses.field(compare=False, hash=False, default=frozenset())
    container: object = dataclasses.field(compare=False, hash=False, default=None)
    view: object = dataclasses.field(compare=False, hash=False, default=None)
    maybe: bool = dataclasses.field(compare=False, hash=False, default=False)
    length: object = dataclasses.field(compare=False, hash=False, default=None)  # of a tuple display
    origin: object = dataclasses.field(compare=False, hash=False, default=None)  # id of its statement
    made: object = dataclasses.field(compare=False, hash=False, default=None)    # (derived, source) there

    def mentions(self, name) -> bool:
        return name == self.derived or name in self.names


@dataclasses.dataclass
class State:
    kinds: dict = dataclasses.field(default_factory=dict)
    pts: dict = dataclasses.field(default_factory=dict)
    contents: dict = dataclasses.field(default_factory=dict)
    eqs: frozenset = frozenset()
    views: dict = dataclasses.field(default_factory=dict)   # view object -> objects it may view

    def copy(self) -> 'State':
        return State(dict(self.kinds), dict(self.pts), dict(self.contents), self.eqs,
                     dict(self.views))

    def join(self, other: 'State') -> 'State':
        mine, theirs, kinds = self.kinds, other.kinds, {}
        for n in mine.keys() | theirs.keys():       # (a name of one side: its kind there)
            a, b = mine.get(n, _ABSENT), theirs.get(n, _ABSENT)
            kinds[n] = b if a is _ABSENT else a if b is _ABSENT or a == b else join_kinds(a, b)
        pts = _union_by_key(self.pts, other.pts)
        contents = _union_by_key(self.contents, other.contents)
        views = _union_by_key(self.views, other.views)
        # An equation holds after the join where it held on both paths. (One that held on
        # one path only, its derived name unbound on the other, would be read there too:
        # a write after the join would derive that name, or through it another, from
        # what the path never related to it.)
        return State(kinds, pts, contents, _joined_eqs(self.eqs, other.eqs), views)

    def same(self, other: 'State') -> bool:
        return (self.kinds == other.kinds and self.pts == other.pts
                and self.contents == other.contents and self.eqs == other.eqs
                and self.views == other.views)


_ABSENT = object()


def _union_by_key(a: dict, b: dict) -> dict:
    """{k: a[k] | b[k]} over the keys of either (a missing one: empty), in the order of
    `a.keys() | b.keys()`; a set both share (states copied from one another) is kept."""
    out = {}
    for k in a.keys() | b.keys():
        x, y = a.get(k), b.get(k)
        out[k] = x if x is y or y is None else (y if x is None else x | y)
    return out


def reach(state: State, name: str) -> frozenset:
    """Every object `name` may reference, directly or through the elements it holds."""
    return reach_objects(state, state.pts.get(name, frozenset()))


def overlapping(state: State, objects) -> frozenset:
    """Every object whose memory may overlap that of one of `objects`: views of them, what
    they view, and the other views of that."""
    up = {}

    def roots(obj):         # what `obj` views, at any depth, and itself: two objects share
        found = up.get(obj)  # memory where these meet (a walk, not paths: views form a DAG
        if found is None:    # with many diamonds in long loops)
            found, todo = {obj}, [obj]
            while todo:
                for base in state.views.get(todo.pop(), ()):
                    if base not in found:
                        found.add(base)
                        todo.append(base)
            up[obj] = found
        return found
    if not state.views or not objects:
        return frozenset(objects)
    mine = set().union(*(roots(o) for o in objects))
    candidates = set(state.views).union(*state.views.values()) | set(objects)
    return frozenset(o for o in candidates if roots(o) & mine) | frozenset(objects)


def holders(state: State, objects) -> set:
    """The names that may reach one of `objects` in `state` (through the elements of what
    they hold, at any depth)."""
    holding = [(o, inner) for o, inner in state.contents.items() if inner]   # (most: none)
    reaching, grew = set(objects), True
    while grew:
        grew = False
        for o, inner in holding:
            if o not in reaching and not inner.isdisjoint(reaching):
                reaching.add(o)
                grew = True
    return {n for n, mine in state.pts.items() if not mine.isdisjoint(reaching)}


def reach_objects(state: State, objects) -> frozenset:
    seen, stack = set(objects), list(objects)
    while stack:
        for inner in state.contents.get(stack.pop(), ()):
            if inner not in seen:
                seen.add(inner)
                stack.append(inner)
    return frozenset(seen)


def text(node) -> str:
    from tapeflow.syntax.unparse import unparse
    return unparse(nodes.expr_stmt(node)).strip()


def names_of(node) -> frozenset:
    return frozenset(n.id for n in nodes.walk_terms(node) if isinstance(n, ast.Name)
                     and not getanno(n, Key.RESOLVED))


@dataclasses.dataclass(frozen=True)
class Summary:
    """What a call of a user function does to its arguments."""
    writes: frozenset = frozenset()            # positions of arguments it may write into
    result: object = None                      # positions the result may reference (None: all)
    result_is: object = None                   # position the result is (`return v`), or None
    result_kind: object = None
    outer: bool = False                        # it may write into globals or closure values
    deep: frozenset = frozenset()              # of `writes`, those whose items it may write


OPAQUE_SUMMARY = Summary(frozenset(), None, None, None)


def kill(state: State, name: str):
    """Forget the equations `name` is in, keeping those an identical name can stand in for."""
    for e in state.eqs:             # `any(e.mentions(name) ...)`, without a call per equation
        if name == e.derived or name in e.names:
            break
    else:
        return
    twins = [e.source if e.derived == name else e.derived for e in state.eqs
             if e.op == 'ident' and name in (e.derived, e.source)]
    twin = next((t for t in twins if t != name), None)
    kept = set()
    for e in state.eqs:
        if not e.mentions(name):
            kept.add(e)
        elif twin is not None and e.derived != name and e.op != 'ident' and twin not in e.names:
            kept.add(renamed_eq(e, name, twin))
    state.eqs = frozenset(kept)


def kill_items(state: State, name: str, keep_appended: bool, stored=None):
    """The slots of the list (dict) `name` changed: its element equations are gone.

    After an append, an element read at a constant index >= 0 stays where it was;
    after a store at a constant index (or dict key), the other constant ones do.
    """
    def constant(index):
        return isinstance(index, ast.Constant) and (
            isinstance(index.value, int) and index.value >= 0 or isinstance(index.value, str))

    def survives(e):
        if e.source != name or e.op != 'index' or e.container == ARRAY:
            return True
        index = e.value.slice
        if keep_appended:
            return constant(index) and not isinstance(index.value, str)
        return stored is not None and constant(stored) and constant(index) \
            and stored.value != index.value
    state.eqs = frozenset(e for e in state.eqs if survives(e))


def nodes_name(identifier):
    from tapeflow.syntax import nodes
    return nodes.name(identifier)


def renamed_eq(e: Eq, old: str, new: str) -> Eq:
    from tapeflow.syntax import nodes
    value = nodes.substitute(e.value, {old: new})
    return dataclasses.replace(e, source=new if e.source == old else e.source, key=text(value),
                               value=value, names=(e.names - {old}) | {new})


def element_eq(element, container, key, kind, length):
    from tapeflow.syntax import nodes
    value = nodes.subscript(container, nodes.const(key))
    return Eq(element, container, 'index', text(value), value, frozenset({container}),
              kind, None, False, length)


def age(state, new, old):
    """Merge a site's most recent object into its older ones (the site allocates again)."""
    def rename(objects):
        return (objects - {new}) | {old} if new in objects else objects
    def rename_all(table):          # in place: the state owns its tables (see `copy`)
        for k, o in table.items():
            if new in o:
                table[k] = rename(o)
    rename_all(state.pts)
    merged = state.contents.pop(new, frozenset())
    rename_all(state.contents)
    state.contents[old] = rename(state.contents.get(old, frozenset()) | merged)
    if state.views:
        viewed = state.views.pop(new, None)
        rename_all(state.views)
        if viewed is not None:
            state.views[old] = rename(state.views.get(old, frozenset()) | viewed)


def elements(state, objects) -> frozenset:
    """The objects the slots of `objects` may hold (one level)."""
    return frozenset().union(*(state.contents.get(o, frozenset()) for o in objects)) \
        if objects else frozenset()


def _joined_eqs(mine, theirs) -> frozenset:
    """The equations holding on both paths; one decided at run time on either path
    (`maybe`) is decided at run time after the join, by this side's statement first
    (the paths that decide it otherwise set that statement's flag: `fixes`)."""
    common = mine & theirs
    if not common:
        return common
    maybe = {e: e for e in mine if e.maybe}
    for e in theirs:
        if e.maybe and e not in maybe:
            maybe[e] = e
    return frozenset(maybe.get(e, e) for e in common) if maybe else common


def fixes(joined: 'State', path: 'State') -> list:
    """[(equation, its form on `path`, or None where it holds surely there)] for each
    equation of `joined` (a join `path` flows into) decided at run time by a statement
    (`made`) that `path` does not decide it by: `path` must set that statement's flag
    (to True, or to its own statement's flag) before it reaches the join."""
    decided = [e for e in joined.eqs if e.maybe]
    if not decided:
        return []
    here = {e: e for e in path.eqs}
    out = []
    for e in decided:
        mine = here.get(e)
        if mine is None:
            continue
        if not mine.maybe:
            out.append((e, None))
        elif (mine.origin, mine.made) != (e.origin, e.made):
            out.append((e, mine))
    return out
