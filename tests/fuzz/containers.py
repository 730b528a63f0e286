"""Python's sequences as values: tuples, lists repeated, joined, sorted and iterated with
Python's loop semantics, and `del` (dicts: `dicts.py`).

Tuples of state grow with `state = state + (v,)` and `state += (v,)`, are repeated,
made from lists and unpacked with a starred target. Loops over a list or an array
rebind the name they iterate, or lengthen the list they iterate (a worklist): a
loop body that could lengthen the iterated list through an alias does not see the
lists of its kind (`Scope.without`), so every loop ends.
"""
from __future__ import annotations

import dataclasses

from .expressions import array_expr, float_expr, wrap
from .scope import Array, ArrayList, Float, FloatList, FnList, Index, Tuple

INDENT = '    '


def element_type(c, scope):
    """Float values, or arrays of a shape the scope has."""
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)})
    if shapes and c.chance(0.35):
        return Array(c.pick(shapes))
    return Float()


def value_of(c, scope, element) -> str:
    """A value for a container of `element`s: an expression, or an array itself (an alias)."""
    if isinstance(element, Array):
        same = [n for n in scope.of_type(Array) if scope.vars[n].shape == element.shape]
        return c.pick(same) if same and c.chance(0.35) else array_expr(c, scope, element.shape, 1)
    return float_expr(c, scope, 1)


def loop_scope(g, scope, trips):
    loop = scope.child(growth_only=True)
    index = g.fresh(Index(trips))
    loop.bind(index, Index(trips))
    return loop, index


def accumulator(g, scope, element):
    """(name, lines before the loop): a fresh float `acc = 0.0`, or one in scope."""
    floats = [n for n in scope.of_type(Float) if scope.rebindable(n)]
    if floats and g.c.chance(0.3):
        return g.c.pick(floats), []
    acc = g.fresh(Float())
    scope.bind(acc, Float())
    return acc, [f'{acc} = 0.0']


def accumulate(c, scope, acc, v, element) -> str:
    item = f'np.sum({v})' if isinstance(element, Array) else v
    return c.pick((f'{acc} = {acc} + {item}', f'{acc} = {acc} + {item} * {wrap(float_expr(c, scope, 1))}',
                   f'{acc} += {item}'))


# ----------------------------------------------------------------------------- tuples

def tuple_state(g, scope):
    """Tuples of state: grown in a loop (`state = state + (f(state[-1]),)`), `+=`,
    repeated, joined, made from a list, unpacked with a starred target."""
    c = g.c
    tuples = [n for n in scope.of_type(Tuple) if scope.rebindable(n)]
    forms = [(grown_state, 4), (tuple_from_list, 1)]
    if tuples:
        forms += [(extended_state, 3), (repeated_tuple, 2), (unpacked_tuple, 2)]
    return c.weighted(forms)(g, scope, tuples)


def grown_state(g, scope, tuples):
    c = g.c
    element = element_type(c, scope)
    name = g.fresh(Tuple(element, 0))
    first = value_of(c, scope, element)
    trips = c.integer(1, 3)
    loop, index = loop_scope(g, scope, trips)
    loop.bind(name, Tuple(element, 1))
    lines = [f'{name} = ({first},)', f'for {index} in range({trips}):']
    lines += g.indent(g.block(loop, 0, 2, 0.3))
    step = c.pick(('{0}[-1] * {1}', 'np.tanh({0}[-1]) + {1}', '{0}[-1] * {0}[0] * {1}')).format(
        name, wrap(float_expr(c, loop, 1)))
    lines.append(f'{INDENT}{name} = {name} + ({step},)')
    loop.bind(name, Tuple(element, 2))
    scope.adopt_loop(loop, trips)
    scope.bind(name, Tuple(element, 1 + trips))
    return lines


def tuple_from_list(g, scope, tuples):
    lists = [n for n in scope.names(lambda t: isinstance(t, (FloatList, ArrayList)))]
    if not lists:
        return None
    source = g.c.pick(lists)
    t = scope.vars[source]
    element = Float() if isinstance(t, FloatList) else Array(t.shape)
    name = g.fresh(Tuple(element, 0))
    scope.bind(name, Tuple(element, t.length))
    return [f'{name} = tuple({source})']


def extended_state(g, scope, tuples):
    c = g.c
    name = c.pick(tuples)
    t = scope.vars[name]
    values = [value_of(c, scope, t.element) for _ in range(c.integer(1, 2))]
    scope.bind(name, dataclasses.replace(t, length=t.length + len(values)))
    joined = ''.join(f'{v}, ' for v in values).rstrip(' ')
    return [c.pick((f'{name} += ({joined})', f'{name} = {name} + ({joined})'))]


def repeated_tuple(g, scope, tuples):
    c = g.c
    source = c.pick(tuples)
    t = scope.vars[source]
    form = c.pick(('{} * 2', '2 * {}', '{0} + {0}', '{}[::-1] * 2'))
    name = g.fresh(t)
    scope.bind(name, dataclasses.replace(t, length=2 * t.length))
    return [f'{name} = {form.format(source)}']


def unpacked_tuple(g, scope, tuples):
    """`head, *rest = state`: the rest is a list."""
    source = g.c.pick([n for n in tuples if scope.vars[n].length >= 1] or [None])
    if source is None:
        return None
    t = scope.vars[source]
    head = g.fresh(t.element)
    rest_type = (FloatList(t.length - 1) if isinstance(t.element, Float)
                 else ArrayList(t.element.shape, t.length - 1))
    rest = g.fresh(rest_type)
    scope.bind(head, t.element)
    scope.bind(rest, rest_type)
    return [f'{head}, *{rest} = {source}']


# ----------------------------------------------------------------------------- lists

def list_ops(g, scope):
    """Lists repeated and joined (`ys * 2`, `ys + [v]`, `ys *= 2`), comprehensions (also
    over the name they bind), `zip(*...)`, `sorted(key=...)`, `map`, `filter`."""
    c = g.c
    lists = scope.names(lambda t: isinstance(t, (FloatList, ArrayList)))
    if not lists:
        return None
    name = c.pick(lists)
    t = scope.vars[name]
    forms = [(repeated_list, 3), (comprehension, 3), (sorted_list, 2), (mapped_list, 2),
             (starred_target, 2 if t.length >= 2 else 0)]
    if isinstance(t, FloatList):
        forms += [(zipped_star, 2), (filtered_list, 1)]
    return c.weighted(forms)(g, scope, name, t)


def starred_target(g, scope, name, t):
    """`a, *rest = ys`, `*rest, b = ys`, `a, *mid, b = ys`; or a loop over rows with a
    starred target, `for a, *rest in [ys, ys[::-1]]`."""
    c = g.c
    item = item_of(t)
    rest_type = FloatList(t.length - 1) if isinstance(t, FloatList) else ArrayList(t.shape, t.length - 1)
    a, rest = g.fresh(item), g.fresh(rest_type)
    if c.chance(0.3) and scope.depth < 2:
        acc = g.fresh(item)
        lines = [f'{acc} = {name}[0] * 0.0', f'for {a}, *{rest} in [{name}, {name}[::-1]]:',
                 f'    {acc} = {acc} + {a} * {rest}[-1]']
        scope.bind(acc, item)
        return lines
    form = c.pick(('head', 'tail', 'both' if t.length >= 3 else 'head'))
    if form == 'head':
        line = f'{a}, *{rest} = {name}'
    elif form == 'tail':
        line = f'*{rest}, {a} = {name}'
    else:
        rest_type = FloatList(t.length - 2) if isinstance(t, FloatList) else ArrayList(t.shape, t.length - 2)
        rest, b = g.fresh(rest_type), g.fresh(item)
        line = f'{a}, *{rest}, {b} = {name}'
        scope.bind(b, item)
    scope.bind(a, item)
    scope.bind(rest, rest_type)
    return [line]


def list_target(g, scope, name, t):
    """The name a list result goes to: the list's own name (bound again) or a fresh one."""
    if scope.rebindable(name) and g.c.chance(0.3):
        return name
    return g.fresh(t)


def item_of(t):
    return Float() if isinstance(t, FloatList) else Array(t.shape)


def repeated_list(g, scope, name, t):
    c = g.c
    kind = c.weighted([('times', 3), ('plus', 2), ('imul', int(scope.rebindable(name))),
                       ('iadd', int(scope.rebindable(name)))])
    if kind in ('imul', 'iadd'):        # in place: every alias sees it
        grown = t.length if kind == 'imul' else 1
        scope.vars[name] = dataclasses.replace(t, length=t.length + grown)
        scope.touch(name)
        return [f'{name} *= 2' if kind == 'imul' else f'{name} += [{value_of(c, scope, item_of(t))}]']
    target = list_target(g, scope, name, t)
    if kind == 'times':
        text, length = c.pick(('{} * 2', '2 * {}')).format(name), 2 * t.length
    else:
        text, length = f'{name} + [{value_of(c, scope, item_of(t))}]', t.length + 1
    scope.bind(target, dataclasses.replace(t, length=length))
    return [f'{target} = {text}']


def comprehension(g, scope, name, t):
    c = g.c
    element = item_of(t)
    inner = scope.child()
    q = g.fresh(element)
    inner.bind(q, element)
    if isinstance(element, Float):
        value = c.pick((f'{q} * {wrap(float_expr(c, inner, 1))}', f'np.tanh({q}) + {q}',
                        f'{q} * {q}', f'{wrap(float_expr(c, inner, 1))}'))
    else:
        value = c.pick((f'{q} * {wrap(float_expr(c, scope, 1))}', f'np.tanh({q}) + {q}',
                        array_expr(c, inner, element.shape, 1)))
    target = list_target(g, scope, name, t)
    source = c.pick((name, f'{name}[::-1]', f'{name}[1:]' if t.length > 1 else name))
    length = t.length - 1 if source.endswith('[1:]') else t.length
    if c.chance(0.25):                # a generator expression read at once
        u = g.fresh(Float())
        scope.bind(u, Float())
        total = f'np.sum({value})' if isinstance(element, Array) else value
        return [f'{u} = sum({total} for {q} in {source})']
    scope.bind(target, dataclasses.replace(t, length=length))
    return [f'{target} = [{value} for {q} in {source}]']


def sorted_list(g, scope, name, t):
    c = g.c
    if isinstance(t, FloatList):
        key = c.pick(('key=lambda v: -v', 'key=abs', 'key=lambda v: (v - 1.0) ** 2',
                      'key=np.sin, reverse=True', 'reverse=True'))
    else:
        first = 'r[0]' if len(t.shape) == 1 else 'r[0, 0]'     # a number to compare
        key = c.pick((f'key=lambda r: {first}', 'key=lambda r: -np.sum(r)', 'key=np.sum, reverse=True'))
    target = list_target(g, scope, name, t)
    scope.bind(target, t)
    return [f'{target} = sorted({name}, {key})']


def mapped_list(g, scope, name, t):
    c = g.c
    factor = wrap(float_expr(c, scope, 1))
    fn = c.pick((f'lambda v: v * {factor}', 'np.tanh', f'lambda v: np.sin(v) + {factor}'))
    if isinstance(t, FloatList) and c.chance(0.3):
        u = g.fresh(Float())
        scope.bind(u, Float())
        return [f'{u} = sum(map({fn}, {name}))']
    target = list_target(g, scope, name, t)
    scope.bind(target, t)
    return [f'{target} = list(map({fn}, {name}))']


def filtered_list(g, scope, name, t):
    target = list_target(g, scope, name, t)
    scope.bind(target, FloatList(0))
    threshold = g.c.pick(('0.8', '1.0', '1.2'))
    return [f'{target} = list(filter(lambda v: v > {threshold}, {name}))']


def zipped_star(g, scope, name, t):
    """`for u, v in zip(*(ys, zs))`, or the columns of pairs: `firsts, seconds = zip(*pairs)`."""
    c = g.c
    if c.chance(0.5):
        other = c.pick(scope.of_type(FloatList))
        acc, first = accumulator(g, scope, Float())
        u, v = g.fresh(Float()), g.fresh(Float())
        packed = c.pick(('({}, {})', '[{}, {}]')).format(name, other)
        return first + [f'for {u}, {v} in zip(*{packed}):', f'{INDENT}{acc} = {acc} + {u} * {v}']
    count = c.integer(1, 3)
    pairs = ', '.join(f'({float_expr(c, scope, 1)}, {float_expr(c, scope, 1)})' for _ in range(count))
    firsts, seconds = g.fresh(Tuple(Float(), 0)), g.fresh(Tuple(Float(), 0))
    scope.bind(firsts, Tuple(Float(), count))
    scope.bind(seconds, Tuple(Float(), count))
    return [f'{firsts}, {seconds} = zip(*[{pairs}])']


# ----------------------------------------------------------------------------- loops

def worklist(g, scope):
    """A list appended to while it is iterated (Python reads it to its end)."""
    c = g.c
    if scope.depth >= 2:
        return None
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)})
    element = Array(c.pick(shapes)) if shapes and c.chance(0.3) else Float()
    kind = FloatList if isinstance(element, Float) else ArrayList
    queue = g.fresh(FloatList(0) if kind is FloatList else ArrayList(element.shape, 0))
    limit = c.integer(2, 4)
    acc, first = accumulator(g, scope, element)
    body = scope.without(lambda u: isinstance(u, kind), growth_only=True)
    item = g.fresh(element)
    body.bind(item, element)
    lines = first + [f'{queue} = [{value_of(c, scope, element)}]', f'for {item} in {queue}:']
    lines += g.indent(g.block(body, 0, 2, 0.4))
    grow = c.pick((f'{queue}.append({{}})', f'{queue} += [{{}}]', f'{queue}.extend([{{}}])'))
    step = (f'{item} * {wrap(float_expr(c, body, 1))}' if isinstance(element, Float)
            else f'np.tanh({item}) * {wrap(float_expr(c, body, 1))}')
    lines += [f'{INDENT}{accumulate(c, body, acc, item, element)}',
              f'{INDENT}if len({queue}) < {limit}:', f'{INDENT * 2}{grow.format(step)}']
    scope.adopt_loop(body, limit)
    scope.bind(queue, FloatList(limit) if kind is FloatList else ArrayList(element.shape, limit))
    scope.touch(acc)
    return lines


def rebind_iterated(g, scope):
    """`for e in a: a = a * c` / `for v in ys: ys = ys + [v]`: the loop goes on over the
    object it started with."""
    c = g.c
    if scope.depth >= 2:
        return None
    names = [n for n in scope.names(lambda t: isinstance(t, (Array, FloatList)))
             if scope.rebindable(n) and getattr(scope.vars[n], 'length', 1) > 0]
    if not names:
        return None
    name = c.pick(names)
    t = scope.vars[name]
    if isinstance(t, Array):
        element, trips, after = (Float() if t.ndim == 1 else Array(t.shape[1:])), t.shape[0], t
        body = scope.child(growth_only=True)
    else:
        element, trips = Float(), t.length
        body = scope.without(lambda u: isinstance(u, FloatList), growth_only=True)
    acc, first = accumulator(g, scope, element)
    e = g.fresh(element)
    body.bind(e, element)
    lines = first + [f'for {e} in {name}:'] + g.indent(g.block(body, 0, 2, 0.4))
    if isinstance(t, Array):
        lines.append(INDENT + c.pick((f'{name} = {name} * {wrap(float_expr(c, body, 1))}',
                                      f'{name} = np.tanh({name}) + {e}', f'{name} = {name}[::-1] * 0.5')))
        body.bind(name, Array(t.shape))
    else:
        rebind, after = c.pick(((f'{name} = {name} + [{e} * 0.5]', FloatList(t.length + trips)),
                                (f'{name} = [q * 0.5 for q in {name}]', t),
                                (f'{name} = {name}[1:] + [{e}]', t)))
        lines.append(INDENT + rebind)
    lines.append(f'{INDENT}{accumulate(c, body, acc, e, element)}')
    scope.adopt_loop(body, trips)
    scope.vars[name] = after
    scope.touch(name)
    scope.touch(acc)
    return lines


def delete(g, scope):
    """`del name` (not in a loop body: the next pass would read it), `del ys[k]`."""
    c = g.c
    if scope.growth_only:
        return None
    live = scope.names(lambda t: not isinstance(t, Index))
    lists = [n for n in scope.names(lambda t: isinstance(t, (FloatList, ArrayList, FnList)))
             if scope.vars[n].length > 0]
    names = [n for n in live if scope.rebindable(n)]
    forms = []
    if len(live) > 3 and names:
        forms.append(('name', 2))
    if lists:
        forms.append(('item', 2))
    if not forms:
        return None
    if c.weighted(forms) == 'name':
        name = c.pick(names)
        scope.forget(name)
        return [f'del {name}']
    name = c.pick(lists)
    t = scope.vars[name]
    scope.shrink_lists(t)
    return [f'del {name}[{c.pick((str(c.integer(0, t.length - 1)), "-1"))}]']
