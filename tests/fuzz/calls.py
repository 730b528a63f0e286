"""Calls of user functions that write into their arguments, and closures that write
into the enclosing function's arrays and lists.

Template helpers are fixed, readable module-level functions (`scale`,
`fill_first`, `push`, ...). Generated helpers get a body from the grammar,
run against parameters typed like the arguments of their one call (the same
array may be passed twice). Closures are nested defs in `f` whose body writes
into enclosing names, called right after their definition.
"""
from __future__ import annotations

import dataclasses

from .expressions import array_expr, constant, float_expr, subscript
from .scope import Array, ArrayList, Float, FloatList, Index, Scope


@dataclasses.dataclass(frozen=True)
class Helper:
    name: str
    params: tuple       # 'array' (a name, written), 'same' (an array of the first's shape),
                        # 'float' (any float), 'float_list' (a name, appended to)
    body: tuple
    returns: str = ''   # '', 'float', 'array' (fresh, first parameter's shape), 'alias' (the first)
    grows: int = 0      # elements appended to the list parameter


TEMPLATES = (
    Helper('scale', ('array', 'float'), ('v *= c',)),
    Helper('fill_first', ('array', 'float'), ('v[0] = s',)),
    Helper('add_into', ('array', 'same'), ('dst += src',)),
    Helper('push', ('float_list', 'float'), ('ys.append(v)',), grows=1),
    Helper('scaled', ('array', 'float'), ('v *= c', 'return v'), 'alias'),
    Helper('smooth', ('array',), ('return np.tanh(v) * v',), 'array'),
    Helper('last_to_first', ('array',), ('v[0] = v[-1]', 'return np.sum(v)'), 'float'),
    # a star parameter (made for each number of values), a function passed as an
    # argument or left to its default, repetition ([v] * 2)
    Helper('scale_by_all', ('array', 'float'), ('for c in cs:', '    v *= c')),
    Helper('scale_by_all', ('array', 'float', 'float'), ('for c in cs:', '    v *= c')),
    Helper('activated', ('array', 'function'), ('return fn(v) * v',), 'array'),
    Helper('activated_default', ('array',), ('return act(v) + v',), 'array'),
    Helper('repeated_sum', ('array', 'float'), ('return v[0] * sum([s] * 2) + sum((s, 1.0) * 2)',),
           'float'),
)
SIGNATURES = {'scale': 'v, c', 'fill_first': 'v, s', 'add_into': 'dst, src', 'push': 'ys, v',
              'scaled': 'v, c', 'smooth': 'v', 'last_to_first': 'v', 'scale_by_all': 'v, *cs',
              'activated': 'v, fn', 'activated_default': 'v, act=np.tanh', 'repeated_sum': 'v, s'}
FUNCTIONS = ('np.tanh', 'np.sin', 'np.cos')
INDENT = '    '


def define_template(g, helper):
    g.define(helper.name, [f'def {helper.name}({SIGNATURES[helper.name]}):']
             + [INDENT + line for line in helper.body])


def arguments_for(g, scope, helper):
    """Argument texts for `helper`'s parameters, or None if the scope has nothing to pass."""
    c = g.c
    arrays, lists = scope.of_type(Array), scope.of_type(FloatList)
    texts = []
    for kind in helper.params:
        if kind == 'array' and arrays:
            texts.append(c.pick(arrays))
        elif kind == 'float_list' and lists:
            texts.append(c.pick(lists))
        elif kind == 'float':
            texts.append(float_expr(c, scope, 1))
        elif kind == 'function':
            texts.append(c.pick(FUNCTIONS))
        elif kind == 'same':
            shape = scope.vars[texts[0]].shape
            texts.append(texts[0] if c.chance(0.2) else array_expr(c, scope, shape, 1))
        else:
            return None
    return texts


def helper_call(g, scope):
    """A call of a template helper: as a statement, or keeping what it returns."""
    c = g.c
    helper = c.pick(TEMPLATES)
    texts = arguments_for(g, scope, helper)
    if texts is None:
        return None
    define_template(g, helper)
    call = f'{helper.name}({", ".join(texts)})'
    first = texts[0]
    if helper.grows:
        t = scope.vars[first]
        scope.vars[first] = dataclasses.replace(t, length=t.length + helper.grows)
    scope.touch(first)
    if not helper.returns or c.chance(0.15):
        return [call]
    kept = {'float': Float(), 'array': Array(scope.vars[first].shape),
            'alias': scope.vars[first]}[helper.returns]
    target = g.fresh(kept)
    scope.bind(target, kept)
    return [f'{target} = {call}']


def generated_helper(g, scope):
    """`def helperN(p, q): <generated body>` and one call, passing names of the caller's
    arrays and lists (sometimes one twice) and maybe a float."""
    c = g.c
    names = scope.names(lambda t: isinstance(t, (Array, FloatList, ArrayList)))
    if scope.kind != 'f' or not names:
        return None
    passed = [c.pick(names) for _ in range(c.integer(1, 2))]
    params = {param: scope.vars[name] for param, name in zip('pq', passed)}
    if c.chance(0.4):
        params['r'] = Float()
        passed.append(float_expr(c, scope, 1))
    body_scope = Scope(params.items(), kind='helper', growth_only=True)
    body = g.body(body_scope)
    returned = helper_return(g, body_scope, list(params))
    name = g.fresh_function('helper')
    g.define(name, [f'def {name}({", ".join(params)}):'] + g.indent(body)
             + ([f'{INDENT}return {returned[0]}'] if returned else []))
    for param, argument in zip(params, passed):
        grow_like(scope, argument, params[param], body_scope.vars.get(param))
    call = f'{name}({", ".join(passed)})'
    if not returned:
        return [call]
    target = g.fresh(returned[1])
    scope.bind(target, returned[1])
    return [f'{target} = {call}']


def helper_return(g, body_scope, params):
    """(text, type) a generated helper returns, or None: a float, a parameter, a new array."""
    c = g.c
    kind = c.weighted([('none', 3), ('float', 3), ('param', 1), ('array', 1)])
    arrays = [p for p in params if isinstance(body_scope.vars.get(p), Array)]
    if kind == 'float':
        return float_expr(c, body_scope, 2), Float()
    if kind in ('param', 'array') and arrays:
        param = c.pick(arrays)
        t = body_scope.vars[param]
        if kind == 'param':
            return param, t
        return array_expr(c, body_scope, t.shape, 2), Array(t.shape)
    return None


def grow_like(scope, argument, before, after):
    """A list passed as a parameter is as long as the helper left its parameter."""
    t = scope.vars.get(argument)
    if isinstance(t, (FloatList, ArrayList)) and after is not None and type(after) is type(t):
        scope.vars[argument] = dataclasses.replace(t, length=t.length + max(after.length - before.length, 0))
        scope.touch(argument)


def closure(g, scope):
    """A nested def writing into an enclosing array or list, called once or twice."""
    c = g.c
    targets = scope.names(lambda t: isinstance(t, (Array, FloatList, ArrayList)))
    if scope.kind != 'f' or scope.depth > 0 or not targets:
        return None
    target = c.pick(targets)
    t = scope.vars[target]
    param_type = Array(t.shape) if isinstance(t, ArrayList) else Float()
    enclosing = {n: u for n, u in scope.vars.items() if not isinstance(u, Index)}
    inner = Scope(list(enclosing.items()) + [('p', param_type)], kind='closure',
                  growth_only=True, frozen=enclosing)
    first = enclosing_write(c, inner, target, t)
    body = [first] + g.block(inner, 0, 2, 0.4)
    name = g.fresh_function(c.pick(('record', 'bump', 'put')))
    calls = [f'{name}({argument_of(c, scope, param_type)})' for _ in range(c.integer(1, 2))]
    for other, u in scope.vars.items():
        grown = inner.vars.get(other)
        if isinstance(u, (FloatList, ArrayList)) and type(grown) is type(u):
            growth = max(grown.length - u.length, 0) * len(calls)
            scope.vars[other] = dataclasses.replace(u, length=u.length + growth)
    scope.touch(target)
    return [f'def {name}(p):'] + g.indent(body) + calls


def enclosing_write(c, inner, target, t) -> str:
    """The first statement of a closure: the parameter `p` goes into an enclosing name."""
    if isinstance(t, (FloatList, ArrayList)):
        inner.vars[target] = dataclasses.replace(t, length=t.length + 1)
        return f'{target}.append(p)'
    index, _ = subscript(c, inner, t.shape, repeats=0.2, masks=0.0)
    return f'{target}[{index}] {c.pick(("=", "+=", "*="))} p'


def argument_of(c, scope, t) -> str:
    return array_expr(c, scope, t.shape, 1) if isinstance(t, Array) else float_expr(c, scope, 1)


def rebind_to_constant_call(g, scope):
    """`b = <depends on x>; b = square_plus_one(3.0)`: b no longer depends on x."""
    c = g.c
    g.define('square_plus_one', ['def square_plus_one(c):', f'{INDENT}return c * c + 1.0'])
    floats = [n for n in scope.of_type(Float) if scope.rebindable(n)]
    target = c.pick(floats) if floats and c.chance(0.5) else g.fresh(Float())
    first = float_expr(c, scope, 1)
    scope.bind(target, Float())
    return [f'{target} = {first}', f'{target} = square_plus_one({constant(c)})']
