"""Control flow: `if` on a data-independent or a data-dependent condition, `for` over range.

A branch's body and a loop's body are generated in a child scope; afterwards
the scope keeps what holds on every path (`Scope.adopt`, `Scope.adopt_loop`).
A loop body is generated once and runs `trips` times, so it may not shrink a
list (`growth_only`) and rebinds names only to values of the same kind.
"""
from __future__ import annotations

from .expressions import float_expr
from .scope import Array, FloatList, Index

MAX_DEPTH = 2
THRESHOLDS = ('1.0', '0.8', '1.2', '2.0')


def static_condition(c, scope):
    """A condition fixed by the program's structure (shapes, lengths, loop counters)."""
    forms = []
    loops = scope.of_type(Index)
    if loops:
        i = c.pick(loops)
        forms += [f'{i} % 2 == 0', f'{i} > 0', f'{i} == {scope.vars[i].bound - 1}']
    arrays = scope.of_type(Array)
    if arrays:
        a = c.pick(arrays)
        forms.append(f'{a}.shape[0] == {scope.vars[a].shape[0] + c.integer(-1, 0)}')
    lists = scope.of_type(FloatList)
    if lists:
        forms.append(f'len({c.pick(lists)}) > {c.integer(1, 3)}')
    forms += ['FLAG_ON', 'not FLAG_OFF', 'FLAG_OFF']      # globals, read when the code runs
    return c.pick(forms)


def data_condition(c, scope):
    """A condition on the values (away from its threshold almost surely)."""
    return f'{float_expr(c, scope, 1)} {c.pick((">", "<"))} {c.pick(THRESHOLDS)}'


def if_block(g, scope):
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    test = c.pick((static_condition, data_condition))(c, scope)
    then = scope.child()
    lines = [f'if {test}:'] + g.indent(g.body(then, 3, 0.4))
    other = scope.child()
    if c.chance(0.5):
        lines += ['else:'] + g.indent(g.body(other, 2, 0.3))
    scope.adopt([then, other])
    return lines


def for_block(g, scope):
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    trips = c.integer(1, 3)
    body = scope.child(growth_only=True)
    index = g.fresh(Index(trips))
    body.bind(index, Index(trips))
    lines = [f'for {index} in range({trips}):'] + g.indent(g.body(body))
    scope.adopt_loop(body, trips)
    return lines
