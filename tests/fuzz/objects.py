"""Writes through attributes and through the `operator` module (issue 29).

Attribute writes: an object the function makes (`types.SimpleNamespace()`, an instance
of a module class with no methods), its attributes set where it is made, then written
(`st.v = ...`, `st.v += ...`, an array attribute in place: the object holds the array)
and read anywhere an expression reads a value (`expressions.array_terms`,
`container_reads`) and by the return. The object is never passed on, returned or
stored: tapeflow refuses those, located, by design.

`operator.setitem(a, k, v)`, `operator.iadd(a, v)`, `operator.imul`, `operator.isub`
as statements: the writes they stand for, into arrays, lists and dicts (and
`operator.iadd(s, v)` on a float, which leaves it as it was).
"""
from __future__ import annotations

import dataclasses

from .arrays import in_place
from .containers import value_of
from .expressions import array_expr, float_expr, index_for, value_for, wrap
from .scope import Array, ArrayList, Dict, Float, FloatList, Namespace

ATTRIBUTES = ('v', 'w', 'total', 'scale')
DEFINITIONS = {'State': ['class State:', '    pass']}


def attribute_state(g, scope):
    """`st = types.SimpleNamespace()` (or `State()`), two or three attributes set, one
    maybe written again at once."""
    c = g.c
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)})
    attrs = []
    for attr in c.sample(ATTRIBUTES, c.integer(1, 3)):
        attrs.append((attr, Array(c.pick(shapes)) if shapes and c.chance(0.5) else Float()))
    name = g.fresh(Namespace(()))
    if c.chance(0.6):
        g.imports.add('types')
        made = 'types.SimpleNamespace()'
    else:
        g.define('State', DEFINITIONS['State'])
        made = 'State()'
    lines = [f'{name} = {made}']
    for attr, t in attrs:
        if isinstance(t, Array) and c.chance(0.25):      # the object holds a name's array
            same = [n for n in scope.of_type(Array) if scope.vars[n].shape == t.shape]
            lines.append(f'{name}.{attr} = {c.pick(same)}')
        else:
            lines.append(f'{name}.{attr} = {value_of(c, scope, t)}')
    scope.bind(name, Namespace(tuple(attrs)))
    if c.chance(0.5):
        g.used['attribute_write'] += 1
        lines += attribute_write(g, scope, name)
    return lines


def attribute_write(g, scope, name):
    """`st.v = <expr reading st.v>`, `st.v op= ...`, `st.v[k] = ...` of an array attribute."""
    c = g.c
    attr, t = c.pick(scope.vars[name].attrs)
    target = f'{name}.{attr}'
    shape = t.shape if isinstance(t, Array) else ()
    # (st.v[k] = ...: refused by design, 'assign to a name first': drawn rarely)
    form = c.weighted([('rebind', 6), ('augmented', 6), ('element', bool(shape))])
    scope.touch(name)
    if form == 'augmented':
        return [in_place(c, scope, target, shape)]
    if form == 'element':
        index = index_for(c, scope, shape[0])
        return [f'{target}[{index}] = {value_for(c, scope, shape[1:] or None)}']
    value = array_expr(c, scope, shape, 1) if shape else float_expr(c, scope, 1)
    return [f'{target} = {c.pick(("{} * 0.5 + {}", "np.tanh({}) * {}", "{}")).format(target, wrap(value))}'
            if c.chance(0.6) else f'{target} = {value}']


def operator_write(g, scope, name):
    """`operator.setitem`/`iadd`/`imul`/`isub` as statements, into `name` (an array, a list,
    a dict; a float: `operator.iadd(s, v)` leaves it as it was, rarely drawn), and inside
    an expression (`y = y * 0.5 + operator.iadd(y, v) * 0.5`: evaluation order)."""
    c = g.c
    t = scope.vars[name]
    if isinstance(t, Float):        # a new float, thrown away: `name` is as it was
        if not c.chance(0.2):
            return None
        g.imports.add('operator')
        if c.chance(0.5):       # its value read inside an expression
            return [f'{name} = operator.iadd({name}, {float_expr(c, scope, 1)}) * 0.5 + {name}']
        return [f'operator.iadd({name}, {float_expr(c, scope, 1)})']
    g.imports.add('operator')
    scope.touch(name)
    if isinstance(t, Array):
        if c.chance(0.5):
            index, shape = element_index(c, scope, t.shape)
            return [f'operator.setitem({name}, {index}, {value_for(c, scope, shape or None)})']
        op = c.pick(('iadd', 'imul', 'isub'))
        value = value_for(c, scope, t.shape)
        if op == 'imul':
            value = f'np.tanh({value})'
        if c.chance(0.3):       # inside an expression: `name * 0.5` read before the write
            return [f'{name} = {name} * 0.5 + operator.{op}({name}, {value}) * 0.5']
        return [f'operator.{op}({name}, {value})']
    if isinstance(t, Dict):
        key = c.pick(('a', 'b', 'w', 0, 1))
        scope.vars[name] = dataclasses.replace(t, keys=t.keys | {key})
        return [f'operator.setitem({name}, {key!r}, {value_of(c, scope, t.element)})']
    element = Float() if isinstance(t, FloatList) else Array(t.shape)
    if t.length > 0 and c.chance(0.5):
        return [f'operator.setitem({name}, {c.integer(0, t.length - 1)}, {value_of(c, scope, element)})']
    scope.vars[name] = dataclasses.replace(t, length=t.length + 1)
    return [f'operator.iadd({name}, [{value_of(c, scope, element)}])']


def element_index(c, scope, shape):
    """(index text, shape selected) for operator.setitem: an int, a pair, a slice object."""
    forms = [(lambda: (index_for(c, scope, shape[0]), shape[1:]), 3),
             (lambda: (f'slice(1, None)', (shape[0] - 1,) + shape[1:]), 1 * (shape[0] > 1))]
    if len(shape) == 2:
        forms.append((lambda: (f'({index_for(c, scope, shape[0])}, {index_for(c, scope, shape[1])})', ()), 2))
    return c.weighted(forms)()
