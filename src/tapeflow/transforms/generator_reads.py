"""Generator reads: a loop over a generator's items, refused where its body could see, or
change, what the generator reads between two items.

`transforms.sugar.generators` compiles a generator function as the list of what it yields,
made where it is called; Python makes each item when the loop asks for it, after the body
ran on the one before. The two give the same numbers where the body writes into nothing
the generator reads (its arguments and what they hold, globals and closure values) and the
generator writes into nothing (its arguments, globals): else the loop is refused, located.
(Where the list is read at once -- `sum`, `list` -- nothing runs between the items; where
it may be read otherwise, `generators.check_reads` refused it already.)

Runs at the start of `transforms.mutation`, on ANF (a loop over a generator's items is
`_seq = gen(...)` then `for _i in range(len(_seq)): v = _seq[_i]` marked `Key.ITERATED`),
with the facts of `analysis.aliasing` and the summaries of user functions.
"""
from __future__ import annotations

from tapeflow.analysis import aliasing as al
from tapeflow.rules import mutation as table
from tapeflow.rules import registry
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.callees import written_names
from tapeflow.transforms.operations import user_function
from tapeflow.transforms.sugar.generators import is_generator
from tapeflow.transforms.variants import shown_name


def refuse_interleaved(fdef, facts, summary, source):
    made = {}           # name -> (statement, call, function) of `name = gen(...)`
    for stmt in nodes.statements(fdef.body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call):
            fn = user_function(stmt.value)
            if fn is not None and is_generator(fn):
                made[stmt.targets[0].id] = (stmt, stmt.value, fn)
    if not made:
        return
    for loop in nodes.statements(fdef.body):
        if isinstance(loop, ast.For):
            for seq in getanno(loop, Key.ITERATED) or ():
                if seq in made and id(made[seq][0]) in facts.before:
                    _check(loop, *made[seq], facts, summary, source)


def _check(loop, stmt, call, fn, facts, summary, source):
    name = shown_name(fn)
    why = f'tapeflow makes all the items of {name}() (a generator) when the loop starts, ' \
          f'Python one at a time, after the body ran on the one before'
    instead = f'loop over list({name}(...)) to make them all first'
    state = facts.before[id(stmt)]
    kinds = tuple(state.kinds.get(a.id) if isinstance(a, ast.Name) else None for a in call.args)
    effects = summary(fn, kinds) if summary is not None else al.OPAQUE_SUMMARY
    if effects.writes or effects.outer:
        what = 'a global or closure value' if effects.outer else 'its arguments'
        raise source.error(loop, f'{name}() writes into {what} as it makes its items, which this '
                                 f'loop may read: {why}; {instead}')
    atoms = list(call.args) + [k.value for k in call.keywords]
    read = _plain(al.overlapping(state, al.everything_of(state, atoms) | frozenset().union(
        *(al.reach(state, a.id) for a in atoms if isinstance(a, ast.Name)))))
    for inner in nodes.statements(loop.body):
        here = facts.before.get(id(inner))
        if here is None:
            continue
        for written, outer in _writes(inner, here, summary):
            objects = _plain(al.overlapping(here, here.pts.get(written, frozenset())))
            outer = outer or written not in here.kinds      # a global, a closure value
            if outer or objects & read or any(o[0] == al.OUTER for o in objects if o):
                raise source.error(inner, f'this writes into {written or "a global or closure value"}, which '
                                          f'{name}() may read when it makes its next item: '
                                          f'{why}; write into a copy, or {instead}')


def _writes(stmt, state, summary):
    """(name, False) for each local whose memory `stmt` may write into; ('', True) where it
    may write into a global or closure value (a user function's summary says so)."""
    out = [(w, False) for w in written_names(stmt, state, summary)]
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        out.append((target.value.id, False))
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    if not isinstance(call, ast.Call):
        return out
    fn = user_function(call)
    if fn is not None:
        kinds = tuple(state.kinds.get(a.id) if isinstance(a, ast.Name) else None for a in call.args)
        if summary is not None and summary(fn, kinds).outer:
            out.append(('', True))
    elif getanno(call.func, Key.RESOLVED) is None and isinstance(call.func, ast.Attribute) \
            and isinstance(call.func.value, ast.Name):
        method = call.func.attr
        if method not in registry.METHODS and method not in table.VIEW_METHODS \
                and method not in table.READING_METHODS:
            out.append((call.func.value.id, False))     # a method tapeflow does not know
    return out


def _plain(objects) -> frozenset:
    """Objects without their age (a site's newest and older objects are one here)."""
    return frozenset(o[:-1] if isinstance(o, tuple) and o and o[-1] in ('new', 'old') else o
                     for o in objects)
