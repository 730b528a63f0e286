"""Statements on Python lists: building them, mutating them, writing into their elements.

A list of arrays holds references: `rows = [a, a]` has one array twice, and
`rows[0] *= 2.0` or `row = rows[0]; row[1] = s` writes into `a`. Lengths are
tracked as lower bounds (`Scope.shrink_lists` assumes a pop may hit any alias).
"""
from __future__ import annotations

import dataclasses

from .arrays import aug_subscript, in_place, setitem
from .expressions import array_expr, float_expr, wrap
from .scope import Array, ArrayList, Float, FloatList, Index

INDENT = '    '


def filled_by_loop(g, scope, name, element):
    """`name = []` and a `for` loop appending `element(loop scope)` each pass."""
    trips = g.c.integer(1, 3)
    loop = scope.child(growth_only=True)
    index = g.fresh(Index(trips))
    loop.bind(index, Index(trips))
    appended = element(loop)
    return [f'{name} = []', f'for {index} in range({trips}):', f'{INDENT}{name}.append({appended})'], trips


def float_list(g, scope):
    """A list of floats: a literal, or appended in a loop."""
    c = g.c
    name = g.fresh(FloatList(0))
    if c.chance(0.6):
        lines, length = filled_by_loop(g, scope, name, lambda s: float_expr(c, s, 1))
    else:
        length = c.integer(2, 4)
        lines = [f'{name} = [' + ', '.join(float_expr(c, scope, 1) for _ in range(length)) + ']']
    scope.bind(name, FloatList(length))
    return lines


def array_list(g, scope):
    """A list of arrays, holding the arrays themselves (names) or fresh results."""
    c = g.c
    arrays = scope.of_type(Array)
    if not arrays:
        return None
    shape = scope.vars[c.pick(arrays)].shape
    same = [n for n in arrays if scope.vars[n].shape == shape]
    element = lambda s: c.pick(same) if c.chance(0.5) else array_expr(c, s, shape, 1)
    name = g.fresh(ArrayList(shape, 0))
    if c.chance(0.5):
        lines, length = filled_by_loop(g, scope, name, element)
    else:
        length = c.integer(1, 3)
        lines = [f'{name} = [' + ', '.join(element(scope) for _ in range(length)) + ']']
    scope.bind(name, ArrayList(shape, length))
    return lines


def element_of(c, scope, t) -> str:
    if not isinstance(t, ArrayList):
        return float_expr(c, scope, 1)
    same = [n for n in scope.of_type(Array) if scope.vars[n].shape == t.shape]
    return c.pick(same) if same and c.chance(0.4) else array_expr(c, scope, t.shape, 1)


def list_mutation(g, scope, name):
    """append / extend / insert / element assignment / element `op=` / pop."""
    c = g.c
    t = scope.vars[name]
    forms = [(append, 4), (extend, 1), (insert, 1)]
    if t.length > 0:
        forms += [(assign_element, 3), (update_element, 2)]
        if not scope.growth_only:
            forms.append((pop, 2))
    lines = c.weighted(forms)(g, scope, name, t)
    scope.touch(name)
    return lines


def grown(scope, name, t, by):
    scope.vars[name] = dataclasses.replace(t, length=t.length + by)


def append(g, scope, name, t):
    value = element_of(g.c, scope, t)
    grown(scope, name, t, 1)
    return [f'{name}.append({value})']


def extend(g, scope, name, t):
    values = [element_of(g.c, scope, t) for _ in range(2)]
    grown(scope, name, t, 2)
    return [f'{name}.extend([{", ".join(values)}])']


def insert(g, scope, name, t):
    where = g.c.integer(0, t.length)
    value = element_of(g.c, scope, t)
    grown(scope, name, t, 1)
    return [f'{name}.insert({where}, {value})']


def assign_element(g, scope, name, t):
    return [f'{name}[{list_index(g.c, t)}] = {element_of(g.c, scope, t)}']


def update_element(g, scope, name, t):
    """`ys[k] op= v`: rebinds a float element; writes an array element in place."""
    shape = t.shape if isinstance(t, ArrayList) else ()
    return [in_place(g.c, scope, f'{name}[{list_index(g.c, t)}]', shape)]


def pop(g, scope, name, t):
    c = g.c
    scope.shrink_lists(t)
    if c.chance(0.5):
        return [f'{name}.pop()']
    kept = Array(t.shape) if isinstance(t, ArrayList) else Float()
    target = g.fresh(kept)
    scope.bind(target, kept)
    return [f'{target} = {name}.pop()']


def list_index(c, t) -> str:
    return c.pick((str(c.integer(0, t.length - 1)), '-1'))


def element_write(g, scope, name):
    """`row = rows[k]` then a write through `row`: it reaches every alias of the element."""
    c = g.c
    t = scope.vars[name]
    if t.length == 0:
        return None
    row = g.fresh(Array(t.shape))
    lines = [f'{row} = {name}[{list_index(c, t)}]']
    scope.bind(row, Array(t.shape))
    write = c.weighted([('whole', 2), ('setitem', 2), ('aug', 1)])
    if write == 'whole':
        lines.append(f'{row} *= {wrap(float_expr(c, scope, 1))}')
    else:
        lines += (setitem if write == 'setitem' else aug_subscript)(g, scope, row)
    scope.touch(name)
    return lines


def list_reads(g, scope, name):
    """A float from a list of floats: `sum`, `max`, an element."""
    c = g.c
    t = scope.vars[name]
    if t.length == 0:
        return None
    target = g.fresh(Float())
    value = c.pick((f'sum({name})', f'max({name})', f'{name}[-1]', f'{name}[{t.length - 1}] * {name}[0]'))
    scope.bind(target, Float())
    return [f'{target} = {value}']

