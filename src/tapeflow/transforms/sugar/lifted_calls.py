"""Desugar, nested defs: the arguments of a lifted def's calls (`sugar.nested_defs`).

A nested def's defaults are values its def statement computes where it stands: each
becomes a name assigned there (`hoist_defaults`), which a call that leaves the
parameter out passes. A def of named parameters is called with every argument by
position (`positional_arguments`); one with `*args`, keyword-only parameters or
`**kwargs` keeps its signature and its calls their keywords (`keyword_arguments`),
bound as Python binds them by `sugar.folding`.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes


def hoist_defaults(child, namer, outer_locals, bindings):
    """`_inner_p = <default of p>` for each default of `child` (its keyword-only
    parameters' too), which keeps none; `default_of(assignment)` is p."""
    from tapeflow.syntax.resolve import resolve_expression
    pairs = take_defaults(child)
    if pairs and namer is None:
        raise TypeError('nested defs with defaults need a namer')
    hoisted = []
    for param, value in pairs:
        if bindings is not None:
            resolve_expression(value, outer_locals, bindings)
        hoisted.append(default(namer.new(f'_{child.name}_{param}'), param, value))
    return hoisted


def take_defaults(child) -> list:
    """[(parameter, its default)] of `child`, which keeps none (its positional-only
    parameters made ordinary ones: its calls bind them by position)."""
    args = child.args
    args.args[:0], args.posonlyargs = args.posonlyargs, []
    defaults = args.defaults
    params = args.args[len(args.args) - len(defaults):] if defaults else []
    pairs = [(p.id, d) for p, d in zip(params, defaults)] + \
        [(p.id, d) for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    args.defaults, args.kw_defaults = [], [None] * len(args.kwonlyargs)
    return pairs


def default(name, param, value):
    """`name = value`, the hoisted default of `param`."""
    made = nodes.assign(name, value)
    made.default_of = param
    return made


def default_of(assignment) -> str:
    """The parameter whose hoisted default `assignment` is."""
    return assignment.default_of


def star_parameters(child) -> bool:
    """Whether `child` takes `*args`, keyword-only parameters or `**kwargs`."""
    args = child.args
    return args.vararg is not None or args.kwarg is not None or bool(args.kwonlyargs)


def shaped(inner_fn) -> bool:
    """A lifted def that kept its star parameters (`star_parameters`)."""
    return getattr(inner_fn, '__tapeflow_defaults_named__', None) is not None


def keyword_arguments(call, name, inner_fn, defaults, source):
    """A call of a lifted def with star parameters: its arguments as written, and by
    keyword each hoisted default of a parameter the call leaves out (`sugar.folding`
    binds them as Python does)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        raise source.error(call, f'a call of the nested function {name}() with *args or **kwargs '
                                 'is not supported; pass its arguments one by one')
    code = inner_fn.__code__
    free = code.co_posonlyargcount
    positional = code.co_varnames[free:code.co_argcount][:len(call.args)]
    given = set(positional) | {k.arg for k in call.keywords}
    call.keywords = list(call.keywords) + [nodes.keyword(p, nodes.name(h))
                                           for p, h in defaults.items() if p not in given]


def positional_arguments(call, name, params, defaults, source):
    """The arguments of a call of a lifted def, one per parameter, in order."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        raise source.error(call, f'a call of the nested function {name}() with *args or **kwargs '
                                 'is not supported; pass its arguments one by one')
    if len(call.args) > len(params):
        raise source.error(call, f'{name}() takes {len(params)} arguments, '
                                 f'{len(call.args)} are given')
    given = dict(zip(params, call.args))
    for keyword in call.keywords:
        if keyword.arg not in params or keyword.arg in given:
            raise source.error(call, f'{name}() got an unexpected or repeated keyword '
                                     f'argument {keyword.arg!r}')
        given[keyword.arg] = keyword.value
    missing = [p for p in params if p not in given and p not in defaults]
    if missing:
        raise source.error(call, f'{name}() is missing the argument {missing[0]!r}')
    return [given[p] if p in given else nodes.name(defaults[p]) for p in params]
