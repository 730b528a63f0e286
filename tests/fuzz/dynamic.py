"""Calls whose function is known only when the code runs, star-calls and generators.

Every function value here is elementwise (`scope.Fn`): a float to a float, an array
to an array of its shape, so any of them applies to any value. They come from:

- module tables: a list and a dict of helpers (`ACTS[k](a)`, `TABLE['sq'](s)`), with
  NumPy functions among them;
- module classes: `Layer` (`__call__` calls `self.affine`, `twice` calls `self`
  twice, `score` calls both), a dataclass `Gain`, a `Chain` holding a list of
  callables; instances in a module list (`for layer in LAYERS: a = layer(a)`), and
  instances made in the function;
- values made in the function: nested defs and lambdas capturing its locals (the
  names they read are frozen: a closure reads a local as it is when it runs, and one
  bound again after it is made is refused by design), lambdas binding a value as a
  default, `functools.partial` of a helper with a float or an array, bound methods,
  lists of all of these (`FnList`), appended to in loops.

They are called directly, by index, in loops over lists of them, through helpers
taking a function (`apply_fn(fn, v)`, `compose(fns, v)`) and through `map`.
Star-calls spread lists and tuples into helpers taking `*args`; generator helpers
(`yield`, `yield from`) are consumed by `for`, `sum` and `list`.
"""
from __future__ import annotations

import re

from .expressions import array_expr, expr_of, float_expr, wrap
from .scope import Array, ArrayList, Float, FloatList, Fn, FnList, Index, Tuple

INDENT = '    '
ACTIVATIONS = {
    'act_tanh': ['def act_tanh(v):', '    return np.tanh(v) * v'],
    'act_sq': ['def act_sq(v):', '    return v * v + 0.5'],
    'act_soft': ['def act_soft(v):', '    return np.log(1.0 + np.exp(v))'],
}
MODULE_VALUES = {
    'ACTS': ['ACTS = [act_tanh, np.sin, act_sq]'],
    'TABLE': ["TABLE = {'tanh': act_tanh, 'sin': np.sin, 'sq': act_sq, 'soft': act_soft}"],
    'LAYERS': ['LAYERS = [Layer(0.5, 0.1), Gain(1.5), Layer(1.2, -0.3)]'],
    'MODEL': ['MODEL = Layer(0.8, 0.2)'],
    'CHAIN': ['CHAIN = Chain([act_tanh, Gain(0.7), np.sin])'],
    'OPTS': ['OPTS = Opts(0.7)'],
}
NEEDS = {'ACTS': ('act_tanh', 'act_sq'), 'TABLE': ('act_tanh', 'act_sq', 'act_soft'),
         'LAYERS': ('Layer', 'Gain'), 'MODEL': ('Layer',), 'CHAIN': ('act_tanh', 'Gain', 'Chain'),
         'OPTS': ('Opts',)}
CLASSES = {
    'Layer': ['class Layer:', '    def __init__(self, w, b):', '        self.w = w', '        self.b = b',
              '', '    def affine(self, v):', '        return v * self.w + self.b', '',
              '    def __call__(self, v):', '        return np.tanh(self.affine(v)) * v', '',
              '    def twice(self, v):', '        return self(self(v))', '',
              '    def score(self, v, s):', '        return self(v) * s + self.affine(s)'],
    'Gain': ['@dataclasses.dataclass', 'class Gain:', '    k: float', '',
             '    def scale(self, v):', '        return v * self.k', '',
             '    def __call__(self, v):', '        return np.sin(self.scale(v)) + self.scale(v) * 0.5'],
    'Opts': ['class Opts:', '    def __init__(self, w):', '        self.w = w', '',
             '    def apply(self, v, *rest, scale=1.0, **kw):', '        out = v * self.w * scale',
             '        for r in rest:', '            out = out + r * np.sin(v)',
             '        for k in kw:', '            out = out + kw[k] * v', '        return out', '',
             '    def __call__(self, v, **kw):', '        return self.apply(v, 0.5, scale=2.0, **kw)'],
    'Chain': ['class Chain:', '    def __init__(self, fns):', '        self.fns = fns', '',
              '    def __call__(self, v):', '        for fn in self.fns:', '            v = fn(v)',
              '        return v'],
}
HELPERS = {
    'apply_fn': ['def apply_fn(fn, v):', '    return fn(v) * 2.0'],
    'compose': ['def compose(fns, v):', '    for fn in fns:', '        v = fn(v)', '    return v'],
    'weighted': ['def weighted(w, v):', '    return w * np.sin(v) + v'],
    'scaled_by_sum': ['def scaled_by_sum(w, v):', '    return v * np.sum(w * w)'],
    'total': ['def total(*vs):', '    out = 0.0', '    for v in vs:', '        out = out + v * v',
              '    return out'],
    'first_plus': ['def first_plus(a, *rest):', '    for r in rest:', '        a = a + r * 0.5',
                   '    return a'],
    'with_options': ['def with_options(v, *, scale=1.5, **opts):', '    out = v * scale',
                     '    for k in opts:', '        out = out + opts[k] * v', '    return out'],
    'shifted': ['def shifted(v, *, by):', '    return v + by * np.sin(v)'],
    'pieces': ['def pieces(v, n):', '    for k in range(n):', '        yield v * (k + 1.0)'],
    'each': ['def each(vs):', '    yield from vs'],
    'running': ['def running(vs):', '    acc = 0.0', '    for v in vs:', '        acc = acc + v',
                '        yield acc'],
    'neighbours': ['def neighbours(vs, c):', '    for k in range(len(vs) - 1):',
                   '        yield vs[k] * c, vs[k + 1]'],
}


DEFINITIONS = {**ACTIVATIONS, **MODULE_VALUES, **CLASSES, **HELPERS}


def define(g, name):
    """A module-level definition, after those it uses."""
    for needed in NEEDS.get(name, ()):
        define(g, needed)
    if name in CLASSES:
        g.imports.add('dataclasses')
    g.define(name, DEFINITIONS[name])
    return name


def value_type(c, scope):
    """A Float or an Array of a shape in scope: what a call is applied to."""
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)})
    return Array(c.pick(shapes)) if shapes and c.chance(0.6) else Float()


def target_for(g, scope, t):
    """A name to bind a call's result to: the argument's name bound again, or a fresh one."""
    same = [n for n in scope.names(lambda u: u == t or (isinstance(u, Array) and isinstance(t, Array)
                                                        and u.shape == t.shape))
            if scope.rebindable(n)]
    target = g.c.pick(same) if same and g.c.chance(0.4) else g.fresh(t)
    return target


def bound_call(g, scope, callee, t, argument=None):
    """`target = callee(argument)`."""
    argument = argument or expr_of(g.c, scope, t, 1)
    target = target_for(g, scope, t)
    scope.bind(target, Array(t.shape) if isinstance(t, Array) else t)
    return [f'{target} = {callee}({argument})']


def loop_over(g, scope, callables, count, t):
    """`for fn in <callables>: a = fn(a)` and maybe a statement of the grammar."""
    names = [n for n in scope.names(lambda u: u == t or (isinstance(u, Array) and isinstance(t, Array)
                                                         and u.shape == t.shape))
             if scope.rebindable(n)]
    if not names or scope.depth >= 2:
        return None
    name = g.c.pick(names)
    body = scope.child(growth_only=True)
    fn = g.fresh_function(g.c.pick(('layer', 'fn', 'step')))
    lines = [f'for {fn} in {callables}:', f'{INDENT}{name} = {fn}({name})']
    lines += g.indent(g.block(body, 0, 1, 0.3))
    scope.adopt_loop(body, count)
    scope.touch(name)
    return lines


def function_table(g, scope):
    """Helpers from a module-level list or dict, called by index, in a loop, through a helper."""
    c = g.c
    t = value_type(c, scope)
    loops = scope.of_type(Index)
    form = c.weighted([('index', 4), ('dict', 3), ('loop', 2), ('apply', 1), ('map', 1)])
    if form == 'index':
        index = f'{c.pick(loops)} % 3' if loops and c.chance(0.5) else str(c.integer(-3, 2))
        return bound_call(g, scope, f'{define(g, "ACTS")}[{index}]', t)
    if form == 'dict':
        return bound_call(g, scope, f"{define(g, 'TABLE')}[{c.pick(('tanh', 'sin', 'sq', 'soft'))!r}]", t)
    if form == 'loop':
        return loop_over(g, scope, c.pick((lambda: define(g, 'ACTS'),
                                           lambda: f'{define(g, "TABLE")}.values()'))(), 3, t)
    if form == 'apply':
        return bound_call(g, scope, define(g, 'apply_fn'), t,
                          f'{define(g, "ACTS")}[{c.integer(0, 2)}], {expr_of(c, scope, t, 1)}')
    return mapped(g, scope, f'{define(g, "TABLE")}[{c.pick(("tanh", "sq"))!r}]')


def mapped(g, scope, callee):
    """`zs = list(map(fn, ys))` or `u = sum(map(fn, ys))` over a list in scope."""
    lists = scope.names(lambda u: isinstance(u, (FloatList, ArrayList)))
    if not lists:
        return None
    name = g.c.pick(lists)
    t = scope.vars[name]
    if isinstance(t, FloatList) and g.c.chance(0.4):
        u = g.fresh(Float())
        scope.bind(u, Float())
        return [f'{u} = sum(map({callee}, {name}))']
    target = g.fresh(t)
    scope.bind(target, t)
    return [f'{target} = list(map({callee}, {name}))']


def method_call(g, scope):
    """Objects: module instances called in a loop and by index, methods calling methods of
    `self`, instances made in the function (from constants, or from its values)."""
    c = g.c
    t = value_type(c, scope)
    form = c.weighted([('loop', 4), ('index', 2), ('method', 3), ('chain', 1), ('local', 2),
                       ('from_values', 1)])
    if form == 'loop':
        return loop_over(g, scope, define(g, 'LAYERS'), 3, t)
    if form == 'index':
        return bound_call(g, scope, f'{define(g, "LAYERS")}[{c.integer(0, 2)}]', t)
    if form == 'chain':
        return bound_call(g, scope, define(g, 'CHAIN'), t)
    if form == 'method':
        model = define(g, 'MODEL')
        if c.chance(0.5):
            return bound_call(g, scope, f'{model}.{c.pick(("twice", "affine"))}', t)
        argument = f'{expr_of(c, scope, t, 1)}, {float_expr(c, scope, 1)}'
        return bound_call(g, scope, f'{model}.score', t, argument)
    define(g, 'Layer')
    define(g, 'Gain')
    made = ['Layer(0.5, 0.25)', 'Gain(2.0)', 'Layer(1.5, -0.5)']
    if form == 'from_values':         # an object holding a value that carries a derivative
        made = [f'Gain({float_expr(c, scope, 1)})', f'Layer({float_expr(c, scope, 1)}, 0.1)']
    if c.chance(0.5):
        name = g.fresh_function('layer')
        scope.bind(name, Fn())
        return [f'{name} = {c.pick(made)}']
    name = g.fresh(FnList(0))
    items = c.sample(made, c.integer(1, len(made)))
    scope.bind(name, FnList(len(items)))
    return [f'{name} = [{", ".join(items)}]']


def captured(scope, text):
    """The names of `scope` that `text` reads."""
    return [n for n in scope.vars if re.search(rf'(?<![\w.]){re.escape(n)}\b', text)]


def function_value(g, scope):
    """A function made as a value: a nested def or a lambda capturing locals, a lambda
    binding a default, a partial, a bound method, a list of them (appended in a loop)."""
    c = g.c
    if scope.kind != 'f':
        return None
    forms = [('def', 3), ('lambda', 3), ('partial', 3), ('method', 1), ('list', 3), ('appended', 2),
             ('star_def', 2), ('star_lambda', 1)]
    form = c.weighted(forms)
    if form in ('def', 'lambda', 'star_def', 'star_lambda') and scope.growth_only:
        form = 'partial'           # a loop body would bind the names it reads again
    v = 'v'
    factor = float_expr(c, scope, 1)
    body = c.pick((f'{v} * {wrap(factor)}', f'np.tanh({v}) * {wrap(factor)} + {v}',
                   f'np.sin({v} * {wrap(factor)})'))
    fns = scope.of_type(Fn)
    if fns and c.chance(0.3):        # a closure calling another function value
        body = f'{c.pick(fns)}({body})'
    if form == 'list':
        items = [c.pick(fns) if fns and c.chance(0.5) else
                 c.pick((lambda: 'np.tanh', lambda: define(g, 'act_sq'),
                         lambda: f'{define(g, "LAYERS")}[1]'))()
                 for _ in range(c.integer(1, 3))]
        if not scope.growth_only and c.chance(0.5):
            items.append(f'lambda {v}: {body}')
            scope.freeze(captured(scope, body))
        name = g.fresh(FnList(0))
        scope.bind(name, FnList(len(items)))
        return [f'{name} = [{", ".join(items)}]']
    if form == 'appended':
        trips = c.integer(1, 3)
        index = g.fresh(Index(trips))
        inner = scope.child(growth_only=True)
        inner.bind(index, Index(trips))
        default = f'{wrap(float_expr(c, inner, 1))} * ({index} + 1.0)'
        name = g.fresh(FnList(0))
        scope.bind(name, FnList(trips))
        made = c.pick((f'{v} * c', f'np.tanh({v}) + c'))
        return [f'{name} = []', f'for {index} in range({trips}):',
                f'{INDENT}{name}.append(lambda {v}, c={default}: {made})']
    name = g.fresh_function(c.pick(('g', 'act', 'op')))
    extra = ''                      # what a call at once passes beyond the value
    if form == 'def':
        scope.freeze(captured(scope, body))
        lines = [f'def {name}({v}):', f'{INDENT}return {body}']
    elif form == 'star_def':       # star, keyword-only and `**` parameters
        scope.freeze(captured(scope, body))
        rest, scale, kw = c.pick(((True, True, True), (True, False, False), (False, True, False),
                                  (False, False, True)))
        signature = v + (', *rest' if rest else ', *' if scale else '') + \
            (f', scale={wrap(factor)}' if scale else '') + (', **kw' if kw else '')
        lines = [f'def {name}({signature}):', f'{INDENT}out = {body}' + (' * scale' if scale else '')]
        if rest:
            lines += [f'{INDENT}for r in rest:', f'{INDENT * 2}out = out + r * {v}']
            extra += ''.join(f', {float_expr(c, scope, 1)}' for _ in range(c.integer(0, 2)))
        if scale and c.chance(0.5):
            extra += f', scale={float_expr(c, scope, 1)}'
        if kw:
            lines += [f'{INDENT}for k in kw:', f'{INDENT * 2}out = out + kw[k] * np.cos({v})']
            extra += ''.join(f', {k}={float_expr(c, scope, 1)}' for k in 'ab'[:c.integer(0, 2)])
        lines.append(f'{INDENT}return out')
    elif form == 'star_lambda':
        scope.freeze(captured(scope, body))
        lines = [f'{name} = lambda {v}, *rest, k=1.5: {body} * k + sum(rest)']
        extra = c.pick(('', f', {float_expr(c, scope, 1)}', f', k={float_expr(c, scope, 1)}'))
    elif form == 'lambda':
        scope.freeze(captured(scope, body))
        lines = [f'{name} = lambda {v}: {body}']
    elif form == 'partial':
        g.imports.add('functools')
        arrays = scope.of_type(Array)
        if arrays and c.chance(0.3):   # holds the array itself: later writes reach it
            lines = [f'{name} = functools.partial({define(g, "scaled_by_sum")}, {c.pick(arrays)})']
        else:
            lines = [f'{name} = functools.partial({define(g, "weighted")}, {factor})']
    else:
        method = c.pick((lambda: define(g, 'MODEL') + '.affine', lambda: define(g, 'LAYERS') + '[0].twice'))
        lines = [f'{name} = {method()}']
    scope.bind(name, Fn())
    if c.chance(0.5):                # used at once: called, or passed to a helper
        t = value_type(c, scope)
        used = c.pick((name, 'apply_fn'))
        if used == 'apply_fn':
            define(g, used)
        argument = expr_of(c, scope, t, 1)
        lines += bound_call(g, scope, used, t, argument + extra if used == name else
                            f'{name}, {argument}')
        g.used['call_value'] += 1
    return lines


def call_value(g, scope):
    """A call of a function value in scope: directly, by index, in a loop over a list of
    them, passed to a helper, through map."""
    c = g.c
    fns, lists = scope.of_type(Fn), scope.of_type(FnList, lambda u: u.length > 0)
    callees = [(name, 1) for name in fns] + [(f'{name}[{c.pick(("0", "-1"))}]', 1) for name in lists]
    if not callees:
        return None
    callee = c.weighted(callees)
    t = value_type(c, scope)
    forms = [('direct', 4), ('apply', 2), ('map', 1)]
    if lists:
        forms += [('loop', 3), ('compose', 1)]
    form = c.weighted(forms)
    if form == 'direct':
        return bound_call(g, scope, callee, t)
    if form == 'apply':
        return bound_call(g, scope, define(g, 'apply_fn'), t, f'{callee}, {expr_of(c, scope, t, 1)}')
    if form == 'map':
        return mapped(g, scope, callee)
    name = c.pick(lists)
    if form == 'compose':
        return bound_call(g, scope, define(g, 'compose'), t, f'{name}, {expr_of(c, scope, t, 1)}')
    return loop_over(g, scope, name, scope.vars[name].length, t)


def star_call(g, scope):
    """`total(*ys)`, `first_plus(a, *rows)`, a helper called with a tuple spread, `max(*ys)`."""
    c = g.c
    floats = scope.names(lambda t: isinstance(t, FloatList) or (isinstance(t, Tuple)
                                                                 and isinstance(t.element, Float)))
    arrays = scope.names(lambda t: isinstance(t, ArrayList) or (isinstance(t, Tuple)
                                                                 and isinstance(t.element, Array)))
    forms = [('pair', 2)]
    if floats:
        forms += [('total', 3), ('max', 1)]
    if arrays:
        forms.append(('first_plus', 3))
    form = c.weighted(forms)
    if form == 'total':
        name = c.pick(floats)
        leading = f'{float_expr(c, scope, 1)}, ' if c.chance(0.3) else ''
        return bound_call(g, scope, define(g, 'total'), Float(), f'{leading}*{name}')
    if form == 'max':
        name = c.pick(floats)
        if scope.vars[name].length < 2:
            return None
        return bound_call(g, scope, 'max', Float(), f'*{name}')
    if form == 'first_plus':
        name = c.pick(arrays)
        t = scope.vars[name]
        shape = t.shape if isinstance(t, ArrayList) else t.element.shape
        return bound_call(g, scope, define(g, 'first_plus'), Array(shape),
                          f'{array_expr(c, scope, shape, 1)}, *{name}')
    t = value_type(c, scope)
    pair = g.fresh(Tuple(Float(), 0))      # mixed types: not kept as a Tuple of one type
    callee = c.pick((lambda: define(g, 'weighted'), lambda: f'{define(g, "MODEL")}.score'))()
    if callee.endswith('score'):
        line = f'{pair} = ({expr_of(c, scope, t, 1)}, {float_expr(c, scope, 1)})'
    else:
        line = f'{pair} = ({float_expr(c, scope, 1)}, {expr_of(c, scope, t, 1)})'
    return [line] + bound_call(g, scope, callee, t, f'*{pair}')


def keyword_call(g, scope):
    """Helpers with keyword-only and `**` parameters: `with_options(v, scale=s, a=u)`,
    `with_options(v)`, `shifted(v, by=s)`."""
    c = g.c
    t = value_type(c, scope)
    v = expr_of(c, scope, t, 1)
    form = c.pick(('scale', 'opts', 'none', 'by', 'method', 'method_value'))
    if form in ('method', 'method_value'):     # a method with star parameters, called by
        callee = f'{define(g, "OPTS")}' + c.pick(('.apply', ''))    # name or as a value
        extra = ''.join(f', {k}={float_expr(c, scope, 1)}' for k in 'ab'[:c.integer(0, 2)])
        if callee.endswith('apply'):
            extra = ''.join(f', {float_expr(c, scope, 1)}' for _ in range(c.integer(0, 2))) + \
                c.pick(('', f', scale={float_expr(c, scope, 1)}')) + extra
        if form == 'method':
            return bound_call(g, scope, callee, t, f'{v}{extra}')
        fn = g.fresh_function('bound')
        return [f'{fn} = [{callee}][0]'] + bound_call(g, scope, fn, t, f'{v}{extra}')
    if form == 'by':
        return bound_call(g, scope, define(g, 'shifted'), t, f'{v}, by={float_expr(c, scope, 1)}')
    keywords = {'scale': f', scale={float_expr(c, scope, 1)}',
                'opts': f', a={float_expr(c, scope, 1)}, b={float_expr(c, scope, 1)}',
                'none': ''}[form]
    return bound_call(g, scope, define(g, 'with_options'), t, f'{v}{keywords}')


def local_import(g, scope):
    """`import numpy as m`, `from numpy import tanh as th`, `import math` inside the
    function, the name it binds called at once."""
    c = g.c
    t = value_type(c, scope)
    form = c.pick(('from', 'module', 'math'))
    if form == 'math' and isinstance(t, Float):
        return ['import math'] + bound_call(g, scope, 'math.tanh', t)
    name = g.fresh_function('th' if form == 'from' else 'npm')
    line = f'from numpy import tanh as {name}' if form == 'from' else f'import numpy as {name}'
    return [line] + bound_call(g, scope, name if form == 'from' else f'{name}.tanh', t)


def nonlocal_def(g, scope):
    """A nested def binding a name of the function (`nonlocal`), called as a statement or
    as an assignment's value, once or twice."""
    c = g.c
    names = [n for n in scope.names(lambda t: isinstance(t, (Float, Array))) if scope.rebindable(n)]
    if scope.kind != 'f' or scope.depth > 0 or not names:
        return None
    target = c.pick(names)
    t = scope.vars[target]
    name = g.fresh_function('bump')
    update = c.pick((f'{target} = {target} + v * {wrap(float_expr(c, scope, 1))}',
                     f'{target} = np.tanh({target}) * v', f'{target} += v * v'))
    lines = [f'def {name}(v):', f'{INDENT}nonlocal {target}', f'{INDENT}{update}']
    returns = c.chance(0.5)
    if returns:
        lines.append(f'{INDENT}return {target} * 0.5')
    for _ in range(c.integer(1, 2)):
        argument = array_expr(c, scope, t.shape, 1) if isinstance(t, Array) else float_expr(c, scope, 1)
        if returns and c.chance(0.6):
            u = g.fresh(t)
            lines.append(f'{u} = {name}({argument})')
            scope.bind(u, t)
        else:
            lines.append(f'{name}({argument})')
    scope.touch(target)
    return lines


def local_class(g, scope):
    """A class made inside the function (its methods calling each other), used at once."""
    c = g.c
    if scope.kind != 'f':
        return None
    t = value_type(c, scope)
    name = g.fresh_function('Scaled')
    body = c.pick(('np.tanh(v) * self.w + v', 'self.inner(v) * self.w', 'v * v * self.w'))
    lines = [f'class {name}:', f'{INDENT}def __init__(self, w):', f'{INDENT * 2}self.w = w', '',
             f'{INDENT}def inner(self, v):', f'{INDENT * 2}return np.sin(v) + v', '',
             f'{INDENT}def __call__(self, v):', f'{INDENT * 2}return {body}']
    return lines + bound_call(g, scope, f'{name}({float_expr(c, scope, 1)})', t)


def standin_call(g, scope):
    """`functools.reduce` and `itertools` over a list of floats: `reduce(operator.mul, ys,
    1.0)`, `sum(itertools.accumulate(ys))`, products, pairs and slices of it."""
    c = g.c
    lists = scope.of_type(FloatList, lambda t: t.length > 0)
    if not lists:
        return None
    name = c.pick(lists)
    g.imports.update(('functools', 'itertools', 'operator'))
    value = c.pick((f'functools.reduce(operator.mul, {name}, 1.0)',
                    f'functools.reduce(lambda p, q: p * 0.5 + q, {name})',
                    f'sum(itertools.accumulate({name}))',
                    f'sum(p * q for p, q in itertools.product({name}, {name}[:2]))',
                    f'sum(p * q for p, q in itertools.combinations({name}, 2))',
                    f'sum(itertools.islice({name}, 1, None, 2))',
                    f'sum(itertools.chain({name}, [{float_expr(c, scope, 1)}]))',
                    f'next(iter({name})) * next(iter([]), {float_expr(c, scope, 1)})',
                    f"dict(p={name}[0], q={float_expr(c, scope, 1)})['q']"))
    target = g.fresh(Float())
    scope.bind(target, Float())
    return [f'{target} = {value}']


def generator_call(g, scope):
    """Generator helpers consumed by `for`, `sum` and `list`, read partly by `next` and
    `zip` (they end quietly); a nested generator def; a generator expression."""
    c = g.c
    t = value_type(c, scope)
    lists = scope.of_type(FloatList, lambda u: u.length > 0)
    forms = [('for', 4), ('sum', 3), ('nested', 1), ('next', 2)]
    if lists:
        forms += [('each', 2), ('running', 2), ('neighbours', 1), ('zip', 2)]
    form = c.weighted(forms)
    if form == 'next':          # read partly: its first item (pieces() ends quietly)
        trips = c.integer(0, 3)
        default = f', {expr_of(c, scope, t, 1)}' if trips == 0 or c.chance(0.3) else ''
        return bound_call(g, scope, 'next', t, f'{define(g, "pieces")}({expr_of(c, scope, t, 1)}, '
                                               f'{trips}){default}')
    if form == 'for':
        if scope.depth >= 2:
            return None
        trips = c.integer(1, 3)
        names = [n for n in scope.names(lambda u: u == t or (isinstance(u, Array) and isinstance(t, Array)
                                                             and u.shape == t.shape))
                 if scope.rebindable(n)]
        if not names:
            return None
        name = c.pick(names)
        body = scope.child(growth_only=True)
        p = g.fresh(t)
        body.bind(p, t)
        update = c.pick((f'{name} = {name} + {p}', f'{name} += {p}', f'{name} = {name} * np.tanh({p})'))
        lines = [f'for {p} in {define(g, "pieces")}({expr_of(c, scope, t, 1)}, {trips}):', INDENT + update]
        lines += g.indent(g.block(body, 0, 1, 0.3))
        if c.chance(0.3):       # left early: pieces() ends quietly, its later items unread
            lines += [f'{INDENT}if np.sum({name}) > {c.pick(("0.5", "2.0"))}:', f'{INDENT * 2}break']
        scope.adopt_loop(body, trips)
        scope.touch(name)
        return lines
    if form == 'sum':
        return bound_call(g, scope, 'sum', t, f'{define(g, "pieces")}({expr_of(c, scope, t, 1)}, '
                                              f'{c.integer(1, 3)})')
    if form == 'nested':
        if scope.kind != 'f':
            return None
        name = g.fresh_function('gen')
        yields = [f'{INDENT}yield {float_expr(c, scope, 1)}' for _ in range(c.integer(1, 2))]
        if lists:
            yields.append(f'{INDENT}yield from {c.pick(lists)}')
        u = g.fresh(Float())
        lines = [f'def {name}():'] + yields + [f'{u} = sum({name}())']
        scope.bind(u, Float())
        return lines
    name = c.pick(lists)
    length = scope.vars[name].length
    if form == 'zip':           # zip() stops at the shorter: pieces() read partly, or whole
        u, p, q = g.fresh(Float()), g.fresh(t), g.fresh(Float())
        made = f'{define(g, "pieces")}({expr_of(c, scope, t, 1)}, {c.integer(1, length + 1)})'
        pair = (made, name) if c.chance(0.5) else (name, made)
        first, second = (p, q) if pair[0] is made else (q, p)
        lines = [f'{u} = 0.0', f'for {first}, {second} in zip({pair[0]}, {pair[1]}):',
                 f'{INDENT}{u} = {u} + np.sum({p}) * {q}']
        scope.bind(u, Float())
        return lines
    if form == 'neighbours':
        if length < 2:
            return None
        u, p, q = g.fresh(Float()), g.fresh(Float()), g.fresh(Float())
        lines = [f'{u} = 0.0', f'for {p}, {q} in {define(g, "neighbours")}({name}, '
                               f'{wrap(float_expr(c, scope, 1))}):', f'{INDENT}{u} = {u} + {p} * {q}']
        scope.bind(u, Float())
        return lines
    target = g.fresh(FloatList(0))
    scope.bind(target, FloatList(length))
    return [f'{target} = list({define(g, form)}({name}))']
