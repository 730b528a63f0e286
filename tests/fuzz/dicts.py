"""Dicts holding values that carry derivatives, built, written, aliased and iterated.

Dicts hold floats or arrays of one shape (`Dict.element`); the keys known on every
path are tracked (`Dict.keys`: ints and strings, written with `repr`), so a read or a
`pop` of a known key runs. They are built the ways code builds them (literals, a loop
writing computed keys, a memo written once per key, comprehensions, `dict(zip(...))`,
`{**d, k: v}`, a comprehension over another's items, copies and aliases), then written
(`d[k] = v` with new keys, `d[k] op= v`, `update` with a dict or keywords,
`setdefault`, `pop`, `get`, `del`) and iterated (`for k in d`, `.items()`,
`.values()`, `.keys()`) with statements of the grammar in the loop, which do not see
the dicts: a dict may not change size while it is iterated. A key removed from one
dict is removed from every dict in scope (any may be an alias).
"""
from __future__ import annotations

import dataclasses

from .arrays import in_place
from .containers import INDENT, accumulate, accumulator, element_type, loop_scope, value_of
from .expressions import float_expr, wrap
from .scope import Array, Dict, Float

LITERAL_KEYS = ('a', 'b', 'w', 'k0', 'k1', 0, 1, 2)
WORD_KEYS = ('a', 'b', 'w', 'k0', 'k1')         # keys `update(name=...)` can write
MODULE_KEYS = ('w', 'b', 'c', 'd')
# computed keys of a loop over `i`: (text, the key for i)
KEY_FORMS = (
    ('{i}', lambda i: i),
    ("'k' + str({i})", lambda i: f'k{i}'),
    ("f'k{{{i}}}'", lambda i: f'k{i}'),
    ('{i} * 2', lambda i: 2 * i),
    ('KEYS[{i}]', lambda i: MODULE_KEYS[i]),
)


def dicts_like(scope, element):
    return [n for n in scope.of_type(Dict) if scope.vars[n].element == element]


def computed_key(g, trips):
    """(key text over the loop index `{i}`, the keys it writes over `trips` passes)."""
    usable = [(text, key) for text, key in KEY_FORMS if text != 'KEYS[{i}]' or trips <= len(MODULE_KEYS)]
    text, key = g.c.pick(usable)
    if text.startswith('KEYS'):
        g.define('KEYS', [f'KEYS = {MODULE_KEYS!r}'])
    return text, frozenset(key(i) for i in range(trips))


def dict_build(g, scope):
    """A new dict: a literal, a loop writing computed keys, a comprehension, dict(zip),
    a merge `{**d, k: v}`, a comprehension over another's items, a copy or an alias."""
    c = g.c
    element = element_type(c, scope)
    others = dicts_like(scope, element)
    forms = [(literal_dict, 3), (loop_dict, 4), (comprehension_dict, 2), (zipped_dict, 2)]
    if others:
        forms += [(merged_dict, 2), (mapped_dict, 2), (copied_dict, 1), (aliased_dict, 1)]
    name = g.fresh(Dict(element, frozenset()))
    lines, keys = c.weighted(forms)(g, scope, name, element, others)
    scope.bind(name, Dict(element, frozenset(keys)))
    if keys and c.chance(0.3):        # then read over at once, as code does
        iterated = dict_iteration(g, scope, name)
        if iterated:
            g.used['dict_iteration'] += 1
            lines += iterated
    return lines


def literal_dict(g, scope, name, element, others):
    c = g.c
    keys = c.sample(LITERAL_KEYS, c.integer(0, 3))
    items = ', '.join(f'{key!r}: {value_of(c, scope, element)}' for key in keys)
    return [f'{name} = {{{items}}}'], keys


def loop_dict(g, scope, name, element, others):
    c = g.c
    trips = c.integer(1, 3)
    loop, index = loop_scope(g, scope, trips)
    text, keys = computed_key(g, trips)
    value = value_of(c, loop, element)
    if isinstance(element, Float) and c.chance(0.4):
        value = f'{wrap(value)} * ({index} + 1.0)'
    lines = [f'{name} = {{}}', f'for {index} in range({trips}):']
    if c.chance(0.3):                 # a memo: written once per key
        lines += [f'{INDENT}if {text.format(i=index)} not in {name}:',
                  f'{INDENT * 2}{name}[{text.format(i=index)}] = {value}']
    else:
        lines.append(f'{INDENT}{name}[{text.format(i=index)}] = {value}')
    return lines, keys


def comprehension_dict(g, scope, name, element, others):
    c = g.c
    trips = c.integer(1, 3)
    loop, index = loop_scope(g, scope, trips)
    text, keys = computed_key(g, trips)
    value = value_of(c, loop, element)
    if isinstance(element, Float) and c.chance(0.5):
        value = f'{wrap(value)} * {index}'
    return [f'{name} = {{{text.format(i=index)}: {value} for {index} in range({trips})}}'], keys


def zipped_dict(g, scope, name, element, others):
    c = g.c
    keys = c.sample(WORD_KEYS, c.integer(1, 3))
    values = ', '.join(value_of(c, scope, element) for _ in keys)
    return [f'{name} = dict(zip({tuple(keys)!r}, [{values}]))'], keys


def merged_dict(g, scope, name, element, others):
    c = g.c
    other = c.pick(others)
    key = c.pick(LITERAL_KEYS)
    return [f'{name} = {{**{other}, {key!r}: {value_of(c, scope, element)}}}'], \
        scope.vars[other].keys | {key}


def mapped_dict(g, scope, name, element, others):
    c = g.c
    other = c.pick(others)
    factor = wrap(float_expr(c, scope, 1))
    value = c.pick((f'value * {factor}', f'np.tanh(value) + {factor}', 'value * value'))
    k, v = g.fresh_function('key'), g.fresh_function('value')
    return [f'{name} = {{{k}: {value.replace("value", v)} for {k}, {v} in {other}.items()}}'], \
        scope.vars[other].keys


def copied_dict(g, scope, name, element, others):
    other = g.c.pick(others)
    return [f'{name} = {g.c.pick(("dict({})", "{}.copy()")).format(other)}'], scope.vars[other].keys


def aliased_dict(g, scope, name, element, others):
    other = g.c.pick(others)
    return [f'{name} = {other}'], scope.vars[other].keys


def dict_mutation(g, scope, name):
    """`d[k] = v` (a new key or not), `d[k] op= v`, update, setdefault, pop, get, del."""
    c = g.c
    t = scope.vars[name]
    known = sorted(t.keys, key=repr)
    forms = [(set_key, 4), (update_literal, 2), (update_keywords, 1), (setdefault, 2), (get, 2),
             (pop_default, 1)]
    if known:
        forms.append((augment_key, 3))
        if not scope.growth_only:     # a loop body runs again: a key it removes is gone
            forms += [(pop_known, 2), (delete_key, 2)]
    if [n for n in dicts_like(scope, t.element) if n != name]:
        forms.append((update_dict, 1))
    lines = c.weighted(forms)(g, scope, name, t, known)
    scope.touch(name)
    return lines


def with_keys(scope, name, t, keys):
    scope.vars[name] = dataclasses.replace(t, keys=t.keys | frozenset(keys))


def set_key(g, scope, name, t, known):
    key = g.c.pick(LITERAL_KEYS)
    value = value_of(g.c, scope, t.element)
    with_keys(scope, name, t, [key])
    return [f'{name}[{key!r}] = {value}']


def augment_key(g, scope, name, t, known):
    shape = t.element.shape if isinstance(t.element, Array) else ()
    return [in_place(g.c, scope, f'{name}[{g.c.pick(known)!r}]', shape)]


def update_literal(g, scope, name, t, known):
    c = g.c
    keys = c.sample(LITERAL_KEYS, c.integer(1, 2))
    items = ', '.join(f'{key!r}: {value_of(c, scope, t.element)}' for key in keys)
    with_keys(scope, name, t, keys)
    return [f'{name}.update({{{items}}})']


def update_keywords(g, scope, name, t, known):
    c = g.c
    keys = c.sample(WORD_KEYS, c.integer(1, 2))
    items = ', '.join(f'{key}={value_of(c, scope, t.element)}' for key in keys)
    with_keys(scope, name, t, keys)
    return [f'{name}.update({items})']


def update_dict(g, scope, name, t, known):
    other = g.c.pick([n for n in dicts_like(scope, t.element) if n != name])
    with_keys(scope, name, t, scope.vars[other].keys)
    return [f'{name}.update({other})']


def kept(g, scope, t, text):
    """`target = text`, the target a fresh name of the dict's element type."""
    target = g.fresh(t.element)
    scope.bind(target, t.element)
    return [f'{target} = {text}']


def setdefault(g, scope, name, t, known):
    key = g.c.pick(LITERAL_KEYS)
    text = f'{name}.setdefault({key!r}, {value_of(g.c, scope, t.element)})'
    with_keys(scope, name, t, [key])
    return kept(g, scope, scope.vars[name], text)


def get(g, scope, name, t, known):
    key = g.c.pick(known + ['zz']) if known else 'zz'
    return kept(g, scope, t, f'{name}.get({key!r}, {value_of(g.c, scope, t.element)})')


def pop_default(g, scope, name, t, known):
    """`d.pop('zz', v)`: a key no dict has, or had (only the default comes back)."""
    return kept(g, scope, t, f'{name}.pop(\'zz\', {value_of(g.c, scope, t.element)})')


def pop_known(g, scope, name, t, known):
    key = g.c.pick(known)
    scope.drop_key(key)
    if g.c.chance(0.3):
        return [f'{name}.pop({key!r})']
    return kept(g, scope, t, f'{name}.pop({key!r})')


def delete_key(g, scope, name, t, known):
    key = g.c.pick(known)
    scope.drop_key(key)
    return [f'del {name}[{key!r}]']


def dict_iteration(g, scope, name):
    """`for k in d`, `for k, v in d.items()`, `for v in d.values()`: an accumulator and
    statements of the grammar (which do not see the dicts: a dict may not change size
    while it is iterated)."""
    c = g.c
    t = scope.vars[name]
    if scope.depth >= 2 or not t.keys:
        return None
    element = t.element
    acc, first = accumulator(g, scope, element)
    body = scope.without(lambda u: isinstance(u, Dict), growth_only=True)
    v = g.fresh(element)
    k = g.fresh_function('key')
    header, reads = c.pick((
        (f'for {k} in {name}:', [f'{INDENT}{v} = {name}[{k}]']),
        (f'for {k}, {v} in {name}.items():', []),
        (f'for {v} in {name}.values():', []),
        (f'for {k} in list({name}.keys()):', [f'{INDENT}{v} = {name}[{k}]']),
    ))
    body.bind(v, element)
    lines = first + [header] + reads + g.indent(g.block(body, 0, 2, 0.4))
    lines.append(f'{INDENT}{accumulate(c, body, acc, v, element)}')
    scope.adopt_loop(body, len(t.keys))
    scope.touch(acc)
    return lines
