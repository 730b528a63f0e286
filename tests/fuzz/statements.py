"""Python's statements of issue 29: try/except/else/finally, with, :=, for/while ... else, match.

Each body is a block of the grammar in a child scope, and afterwards the scope keeps
what holds on every path that can run (`Scope.adopt`): a guarded body that may raise
has two paths, the body run to its end (then `else`) and the handler; a suppressing
`with`, the body or nothing; a loop that may `break` or `continue` before its block,
the block or nothing. A body raises at its first statement (`guard(v, c)`, a helper
that raises when `np.mean(v) > c`, or `if <data> > c: raise ValueError`), before it
changed anything, or after a statement of the grammar (`EARLY`): tapeflow differentiates
what ran before the raise by running it again, stopped there (`guarded_prefix`). A
handler computes the value the body would have (`r = checked(v, c)` in the body, `r =
<another expression>` in the handler), so code after the try reads it on both paths.
"""
from __future__ import annotations

from .containers import accumulator
from .expressions import expr_of, float_expr, wrap
from .flow import THRESHOLDS, data_condition, static_condition
from .scope import Array, Float, FloatList, Index, Tuple

INDENT = '    '
MAX_DEPTH = 2
EARLY = 0.3           # a statement of the grammar before the raise
DEFINITIONS = {
    'guard': ['def guard(v, c):', '    if np.mean(v) > c:', "        raise ValueError('over the limit')"],
    'checked': ['def checked(v, c):', '    if np.mean(v) > c:',
                "        raise ValueError('over the limit')", '    return v * 1.5'],
    'fallback': ['def fallback(v, c):', '    try:', '        return checked(v, c) * 2.0',
                 '    except ValueError:', '        return np.tanh(v) + c'],
    'clipped': ['def clipped(v, c):', '    try:', '        out = checked(v, c)',
                '    except ValueError as error:', '        out = v * (len(str(error)) / 10.0)',
                '    finally:', '        c = c + 1.0', '    return out * c'],
    'Scaled': ['class Scaled:', '    def __init__(self, k):', '        self.k = k', '',
               '    def __enter__(self):', '        return self.k', '',
               '    def __exit__(self, kind, error, tb):', '        return False'],
    'Quiet': ['class Quiet:', '    def __enter__(self):', '        return self', '',
              '    def __exit__(self, kind, error, tb):', '        return kind is ValueError'],
    'MODE': ["MODE = 'tanh'"],
}
NEEDS = {'fallback': ('checked',), 'clipped': ('checked',)}
ERRSTATES = ("divide='ignore'", "over='ignore', invalid='ignore'", "all='ignore'",
             "divide='ignore', invalid='ignore'")
HANDLED = ('ValueError', '(ValueError, KeyError)', 'Exception', 'ValueError as error')


def define(g, name):
    for needed in NEEDS.get(name, ()):
        define(g, needed)
    g.define(name, DEFINITIONS[name])
    return name


def value_type(c, scope):
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)})
    return Array(c.pick(shapes)) if shapes and c.chance(0.5) else Float()


def threshold(c):
    return c.pick(THRESHOLDS)


def raise_point(g, scope, error='ValueError'):
    """A statement that raises `error` on some inputs, before it changed anything."""
    c = g.c
    t = value_type(c, scope)
    if error == 'ValueError' and c.chance(0.5):
        return [f'{define(g, "guard")}({expr_of(c, scope, t, 1)}, {threshold(c)})']
    return [f'if {data_condition(c, scope)}:', f"{INDENT}raise {error}('{error.lower()}')"]


def kept_value(g, scope, body, handler):
    """`r = checked(v, c)` in the body (it may raise), `r = <other>` in the handler: (body
    line, handler line), `r` bound in both scopes."""
    c = g.c
    t = value_type(c, scope)
    same = [n for n in scope.names(lambda u: u == t) if scope.rebindable(n)]
    r = c.pick(same) if same and c.chance(0.3) else g.fresh(t)
    first = f'{r} = {define(g, "checked")}({expr_of(c, scope, t, 1)}, {threshold(c)})'
    other = expr_of(c, handler, t, 1)
    body.bind(r, t)
    handler.bind(r, t)
    return first, f'{r} = {other}'


def handler_header(c, handled='ValueError'):
    if handled != 'ValueError':
        return f'except {handled}:'
    return f'except {c.pick(HANDLED)}:'


def try_except(g, scope):
    """try: <raise point or not> <block> except: <another value> [else:] [finally:]."""
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    before = scope.child()          # what ran before the raise (rarely anything)
    lines = ['try:']
    if c.chance(EARLY):
        lines += g.indent(g.block(before, 1, 1, 0.0))
    body, handler = before.child(), before.child()
    raises = c.chance(0.8)
    if raises and c.chance(0.5):
        first, other = kept_value(g, before, body, handler)
        lines.append(INDENT + first)
        handled = [other]
    else:
        if raises:
            lines += g.indent(raise_point(g, before))
        handled = []
    lines += g.indent(g.block(body, 0, 2, 0.4) if len(lines) > 1 else g.body(body, 2, 0.4))
    header = handler_header(c)
    handled += g.block(handler, 0, 1, 0.3)
    if 'as error' in header and c.chance(0.5):
        u = g.fresh(Float())
        handled.append(f'{u} = {wrap(float_expr(c, handler, 1))} * len(str(error))')
        handler.bind(u, Float())
    lines += [header] + g.indent(handled or ['pass'])
    if c.chance(0.4):
        lines += ['else:'] + g.indent(g.body(body, 2, 0.3))
    scope.adopt([body, handler] if raises else [body])
    scope.freeze(body.frozen | handler.frozen)
    if c.chance(0.35):
        after = scope.child()
        lines += ['finally:'] + g.indent(g.body(after, 2, 0.3))
        scope.adopt([after])
        scope.freeze(after.frozen)
    return lines


def try_reraise(g, scope):
    """A nested try whose handler computes a value and raises again (bare `raise`, or
    another error `from` the first), caught by the outer one; or a helper that catches."""
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    if c.chance(0.3):            # the try inside a helper
        t = value_type(c, scope)
        line = f'{define(g, c.pick(("fallback", "clipped")))}({expr_of(c, scope, t, 1)}, {threshold(c)})'
        r = g.fresh(t)
        scope.bind(r, t)
        return [f'{r} = {line}']
    body, inner = scope.child(), scope.child()
    first, other = kept_value(g, scope, body, inner)
    outer = inner.child()
    again, caught = c.pick((('raise', 'ValueError'), ("raise KeyError('again') from error", 'KeyError'),
                            ("raise KeyError('again')", '(KeyError, ValueError)')))
    inner_header = 'except ValueError as error:' if 'error' in again else 'except ValueError:'
    lines = ['try:', f'{INDENT}try:', f'{INDENT * 2}{first}']
    lines += g.indent(g.indent(g.block(body, 0, 2, 0.3)))
    lines += [f'{INDENT}{inner_header}', f'{INDENT * 2}{other}', f'{INDENT * 2}{again}']
    t = inner.vars[first.split(' = ')[0]]
    r = first.split(' = ')[0]
    lines += [f'except {caught}:', f'{INDENT}{r} = {r} * {wrap(float_expr(c, outer, 1))}']
    outer.bind(r, t)
    lines += g.indent(g.block(outer, 0, 1, 0.3))
    scope.adopt([body, outer])
    scope.freeze(body.frozen | outer.frozen)
    return lines


def try_in_loop(g, scope):
    """A try in a loop body: `continue`/`break` before it or in its handler, a `finally`
    that counts; or `while True: try: if n >= k: break ... finally: n += 1`."""
    c = g.c
    if scope.depth >= 1:
        return None
    trips = c.integer(1, 3)
    if c.chance(0.3):
        n = g.fresh(Index(trips))
        loop = scope.child(growth_only=True)
        loop.bind(n, Index(trips))
        lines = [f'{n} = 0', 'while True:', f'{INDENT}try:', f'{INDENT * 2}if {n} >= {trips}:',
                 f'{INDENT * 3}break']
        lines += g.indent(g.indent(g.body(loop, 2, 0.4)))
        lines += [f'{INDENT}finally:', f'{INDENT * 2}{n} += 1']
        scope.adopt_loop(loop, trips)
        return lines
    acc, first = accumulator(g, scope, Float())
    loop = scope.child(growth_only=True)
    index = g.fresh(Index(trips))
    loop.bind(index, Index(trips))
    lines = first + [f'for {index} in range({trips}):', f'{INDENT}try:']
    skips = c.chance(0.4)
    if skips:
        lines += [f'{INDENT * 2}if {static_condition(c, loop)}:',
                  f'{INDENT * 3}{c.pick(("continue", "break"))}']
    lines += g.indent(g.indent(raise_point(g, loop)))
    body, handler = loop.child(), loop.child()
    lines += g.indent(g.indent(g.block(body, 0, 2, 0.4))) or []
    # a jump out of a handler of a try with finally is refused by design: drawn without one
    counted = c.chance(0.6)
    jump = 'pass' if counted else c.pick(('continue', 'break', 'pass'))
    handled = g.block(handler, 0, 1, 0.3) + [jump]
    lines += [INDENT + handler_header(c)] + g.indent(g.indent(handled))
    loop.adopt([body, handler] + ([loop.child()] if skips else []))
    if counted:
        lines += [f'{INDENT}finally:', f'{INDENT * 2}{acc} = {acc} + {wrap(float_expr(c, loop, 1))}']
    else:
        lines += [f'{INDENT}{acc} = {acc} + {wrap(float_expr(c, loop, 1))}']
    scope.adopt_loop(loop, trips)
    scope.freeze(loop.frozen | body.frozen | handler.frozen)
    scope.touch(acc)
    return lines


def with_block(g, scope):
    """with np.errstate(...), with a module class `Scaled(k) as k`, both, or a suppressing
    manager (`contextlib.suppress(ValueError)`, `Quiet()`) around a body that may raise."""
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    form = c.weighted([('errstate', 3), ('scaled', 2), ('both', 1), ('suppress', 3)])
    body = scope.child()
    if form == 'suppress':
        if c.chance(0.5):
            g.imports.add('contextlib')
            manager = 'contextlib.suppress(ValueError)'
        else:
            manager = f'{define(g, "Quiet")}()'
        lines = [f'with {manager}:']
        if c.chance(EARLY):
            lines += g.indent(g.block(body, 1, 1, 0.0))
        after_raise = body.child()
        lines += g.indent(raise_point(g, body)) + g.indent(g.block(after_raise, 0, 2, 0.4))
        scope.adopt([after_raise, body])
        scope.freeze(after_raise.frozen)
        return lines
    managers = []
    if form in ('errstate', 'both'):
        managers.append(f'np.errstate({c.pick(ERRSTATES)})')
    if form in ('scaled', 'both'):
        k = g.fresh(Float())
        managers.append(f'{define(g, "Scaled")}({c.pick(("1.5", "0.5", "2.0"))}) as {k}')
        body.bind(k, Float())
    lines = [f'with {", ".join(managers)}:'] + g.indent(g.body(body, 3, 0.4))
    scope.adopt([body])
    scope.freeze(body.frozen)
    return lines


def walrus(g, scope):
    """`:=` in an if test, a while test, a comprehension."""
    c = g.c
    form = c.weighted([('if', 3), ('comprehension', 3), ('while', 2), ('halving', 1)])
    lists = scope.of_type(FloatList, lambda t: t.length > 0)
    if form == 'comprehension' and lists:
        name = c.pick(lists)
        u, q = g.fresh(Float()), g.fresh(Float())
        inner = scope.child()
        inner.bind(q, Float())
        factor = wrap(float_expr(c, scope, 1))
        floats = [n for n in scope.of_type(Float) if scope.rebindable(n)]
        target = g.fresh(FloatList(0))
        if floats and c.chance(0.4):          # a running total bound in the function
            s = c.pick(floats)
            text = f'{target} = [({s} := {s} + {q} * {factor}) for {q} in {name}]'
            scope.bind(s, Float())
            scope.bind(target, FloatList(scope.vars[name].length))
            return [text]
        if c.chance(0.5):
            text = f'{target} = [{u} for {q} in {name} if ({u} := np.tanh({q}) * {factor}) > {threshold(c)}]'
            scope.bind(target, FloatList(0))
        else:
            text = f'{target} = [({u} := {q} * {factor}) + {u} * {u} for {q} in {name}]'
            scope.bind(target, FloatList(scope.vars[name].length))
        scope.bind(u, Float())
        return [text]
    if form in ('while', 'halving') and scope.depth < MAX_DEPTH:
        loop = scope.child(growth_only=True)
        if form == 'while':
            trips = c.integer(1, 3)
            k = g.fresh(Index(trips + 1))
            loop.bind(k, Index(trips + 1))
            lines = [f'{k} = 0', f'while ({k} := {k} + 1) <= {trips}:'] + g.indent(g.body(loop, 2, 0.4))
            scope.adopt_loop(loop, trips)
            return lines
        u = g.fresh(Float())
        acc, first = accumulator(g, scope, Float())
        lines = first + [f'{u} = {float_expr(c, scope, 1)}',
                         f'while ({u} := {u} * 0.5) > {c.pick(("0.1", "0.3", "0.6"))}:',
                         f'{INDENT}{acc} = {acc} + np.sin({u}) * {wrap(float_expr(c, scope, 0))}']
        scope.bind(u, Float())
        scope.touch(acc)
        return lines
    if scope.depth >= MAX_DEPTH:
        return None
    t = value_type(c, scope)
    u = g.fresh(t)
    value = expr_of(c, scope, t, 1)
    test = f'({u} := {value}) > {threshold(c)}' if isinstance(t, Float) else \
        f'np.mean({u} := {value}) > {threshold(c)}'
    scope.bind(u, t)
    then, other = scope.child(), scope.child()
    lines = [f'if {test}:'] + g.indent(g.body(then, 2, 0.4))
    if c.chance(0.5):
        lines += ['else:'] + g.indent(g.body(other, 2, 0.3))
    scope.adopt([then, other])
    scope.freeze(then.frozen | other.frozen)
    return lines


def loop_else(g, scope):
    """for ... else, while ... else: a search that breaks (`else`: nothing found), a loop
    that may break on the data, a counted while."""
    c = g.c
    if scope.depth >= 1:
        return None
    lists = scope.of_type(FloatList, lambda t: t.length > 0)
    form = c.weighted([('search', 3 if lists else 0), ('range', 3), ('while', 2)])
    if form == 'search':
        name = c.pick(lists)
        v, u = g.fresh(Float()), g.fresh(Float())
        loop = scope.without(lambda t: isinstance(t, FloatList), growth_only=True)
        loop.bind(v, Float())
        header = c.pick((f'for {v} in {name}:', f'for {g.fresh(Index(1))}, {v} in enumerate({name}):'))
        lines = [header] + g.indent(g.block(loop, 0, 1, 0.3))
        lines += [f'{INDENT}if {v} > {threshold(c)}:', f'{INDENT * 2}{u} = {v} * {wrap(float_expr(c, loop, 1))}',
                  f'{INDENT * 2}break']
        scope.adopt_loop(loop, 1)
        found, missing = scope.child(), scope.child()
        found.bind(u, Float())
        lines += ['else:', f'{INDENT}{u} = {float_expr(c, missing, 1)}']
        missing.bind(u, Float())
        lines += g.indent(g.block(missing, 0, 1, 0.3))
        scope.adopt([found, missing])
        return lines
    trips = c.integer(1, 3)
    loop = scope.child(growth_only=True)
    if form == 'range':
        index = g.fresh(Index(trips))
        loop.bind(index, Index(trips))
        lines = [f'for {index} in range({trips}):'] + g.indent(g.body(loop, 2, 0.4))
        lines += [f'{INDENT}if {data_condition(c, loop)}:', f'{INDENT * 2}break']
        scope.adopt_loop(loop, 1)
    else:
        n = g.fresh(Index(trips + 1))
        loop.bind(n, Index(trips + 1))
        lines = [f'{n} = 0', f'while {n} < {trips}:', f'{INDENT}{n} += 1'] + g.indent(g.body(loop, 2, 0.4))
        if c.chance(0.5):
            lines += [f'{INDENT}if {data_condition(c, loop)}:', f'{INDENT * 2}break']
            trips = 1
        scope.adopt_loop(loop, trips)
    broke, other = scope.child(), scope.child()
    lines += ['else:'] + g.indent(g.body(other, 2, 0.3))
    scope.adopt([broke, other])
    return lines


def match(g, scope):
    """match on an int (a loop index, a length, an int of the data), a module str, a tuple
    (sequence patterns capturing items); values, `|`, guards, captures, `case _`."""
    c = g.c
    if scope.depth >= MAX_DEPTH:
        return None
    subjects = ['data', 'mode']
    loops = scope.of_type(Index)
    lists = scope.of_type(FloatList)
    tuples = scope.of_type(Tuple, lambda t: t.length > 0)
    subjects += ['index'] * bool(loops) + ['length'] * bool(lists) + ['tuple'] * bool(tuples) * 2
    subject = c.pick(subjects)
    branches, lines = [], []

    def case(pattern, binds=()):
        branch = scope.child()
        for name, t in binds:
            branch.bind(name, t)
        branches.append(branch)
        lines.extend([f'{INDENT}case {pattern}:'] + g.indent(g.indent(g.body(branch, 2, 0.3))))

    if subject == 'tuple':
        name = c.pick(tuples)
        t = scope.vars[name]
        head, rest = g.fresh(t.element), g.fresh(Tuple(t.element, 0))
        lines.append(f'match {name}:')
        if t.length >= 2 and c.chance(0.5):
            second = g.fresh(t.element)
            case(f'({head}, {second}, *{rest})', [(head, t.element), (second, t.element)])
        guard = ''
        if isinstance(t.element, Float) and c.chance(0.4):
            guard = f' if {head} > {threshold(c)}'
        case(f'({head}, *{rest}){guard}', [(head, t.element)])
    elif subject == 'mode':
        lines.append(f'match {define(g, "MODE")}:')
        case(c.pick(("'sin'", "'tanh' | 'soft'", "'tanh'")))
        if c.chance(0.5):
            case("'sq' | 'sin'")
    else:
        if subject == 'index':
            text = c.pick(loops)
        elif subject == 'length':
            text = f'len({c.pick(lists)})'
        else:
            text = f'int({wrap(float_expr(c, scope, 1))} * 2.0)'
        n = g.fresh_function('n')
        lines.append(f'match {text}:')
        case(str(c.integer(0, 2)))
        if c.chance(0.6):
            case(c.pick(('1 | 2', '3 | 4 | 5', '0 | 3')))
        if c.chance(0.5):
            case(f'{n} if {n} > {c.integer(1, 3)}')
    if c.chance(0.85):
        case('_')
    else:
        branches.append(scope.child())     # nothing matched
    scope.adopt(branches)
    for branch in branches:
        scope.freeze(branch.frozen)
    return lines
