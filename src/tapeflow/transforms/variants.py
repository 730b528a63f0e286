"""Variants of a user function, made from its source for how a call uses it.

- `variant(h, positions)`: `h` returning `(result, *its arguments at positions)`
  as they are when it returns, for a caller whose mutation pass must see what
  `h` wrote into them (`transforms.mutation`). The variant is `h`'s own source
  with `_entry_v = v` first and every `return r` as `return (r, _entry_v)`.
- `arity_variant(h, n)`: `def h(x, *rest)` made for n values in `rest`, a
  function of named parameters (`g(*rest)` inside passes them one by one).
- `keyword_variant(h, n)`: `def h(x, *rest, k=1, **kw)` as a function of named
  parameters only, `k` and `kw` last (`arguments.binder` passes them so);
- `bound_variant(h, {i: fn})`: `h` reading its parameter i as the function `fn`
  it was passed (a closure cell), so that its calls are resolved while compiling.

Each runs in `h`'s globals and closure cells, and its errors point at `h`'s lines.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import types
import weakref

from tapeflow.syntax import ast
import numpy as np

from tapeflow.syntax import nodes
from tapeflow.syntax.naming import Namer
from tapeflow.syntax.naming import identifier as _id
from tapeflow.transforms.sugar.written import replace_returns

_VARIANTS = weakref.WeakKeyDictionary()      # fn -> {positions: variant}
_KEEP = object()


def variant(fn, positions, parse, derived=()):
    """`fn` returning `(its result, *its arguments at positions)` as they are when it returns.

    `parse(fn)`: its `syntax.parse.Source`. `derived`: ((j, i, steps), ...), parameters
    the caller passes views of others (`transforms.propagation.derivations`): the variant
    starts by deriving parameter j from parameter i through `steps`.
    """
    table = _VARIANTS.setdefault(fn, {})
    key = (positions, derived, fn.__code__)        # (its code replaced: a new variant)
    if key in table:
        return table[key]
    source = parse(fn)
    node = source.node
    params = [a.id for a in node.args.args]
    if fn.__code__.co_flags & inspect.CO_GENERATOR:
        raise source.error(node, f'{fn.__name__}() is a generator that writes into its '
                                 f'argument{"s" if len(positions) > 1 else ""} '
                                 f'{", ".join(params[i] for i in positions)}: tapeflow does not '
                                 f'follow writes out of a generator; write into a copy, or '
                                 f'yield the new value')
    namer = Namer.for_function(node)
    prologue = []
    for j, i, steps in derived:
        current = params[i]
        for step in steps:
            name = namer.new('_view')
            prologue.append(nodes.assign(name, nodes.substitute(
                nodes.parse_expression(step), {'__source__': current})))
            current = name
        prologue.append(nodes.assign(params[j], current))
    entries = [namer.new(f'_entry_{params[i]}') for i in positions]
    prologue += [nodes.assign(e, params[i]) for e, i in zip(entries, positions)]
    nodes.located(prologue, node)
    node.body = prologue + replace_returns(
        node.body, lambda value: nodes.return_(nodes.tuple_(value, *entries)))
    if not (node.body and isinstance(node.body[-1], ast.Return)):
        node.body.append(nodes.located(
            nodes.return_(nodes.tuple_(nodes.const(None), *entries)), node.body[-1]))
    node.name = f'{_id(fn)}_inplace'
    made = _function(fn, node)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    made.__tapeflow_variant_of__ = (fn, positions)
    made.__tapeflow_shown_as__ = {e: params[i] for e, i in zip(entries, positions)}
    table[key] = made
    return made


_ARITY_VARIANTS = weakref.WeakKeyDictionary()     # fn -> {number of star arguments: variant}


def arity_variant(fn, count, parse):
    """`fn(a, *rest)` called with `count` values in `rest`, as a function of named
    parameters: `def fn(a, rest_0, rest_1): rest = (rest_0, rest_1); ...`, where
    `g(*rest)` and `g(*rest[1:])` pass those names one by one (where `rest` is not bound
    again). A function that takes `**kwargs` or keyword-only parameters is returned as it
    is (`keyword_variant` makes those)."""
    table = _ARITY_VARIANTS.setdefault(fn, {})
    made = _kept_variant(table, count, fn)
    if made is not None:
        return made
    source = parse(fn)
    node = source.node
    _positional_only(node)
    star = node.args.vararg
    if star is None or node.args.kwarg is not None or node.args.kwonlyargs:
        return fn
    _expand_star(node, count)
    if count:                  # every named parameter is passed: their defaults never apply
        node.args.defaults = []
    node.name = f'{_id(fn)}_{count}'
    made = _function(fn, node, defaults=None if count else fn.__defaults__)
    made.__tapeflow_star_of__ = (fn, count)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    _keep(table, count, made, fn)
    return made


def shown_name(fn) -> str:
    """The name a message gives `fn`: its user's (a variant's original's; a stand-in's
    library function, `itertools.accumulate`)."""
    for _ in range(8):
        made = getattr(fn, '__tapeflow_star_of__', None) or \
            getattr(fn, '__tapeflow_variant_of__', None)
        if made is None:
            break
        fn = made[0]
    return getattr(fn, '__tapeflow_shown__', None) or fn.__name__


def _positional_only(node):
    """`def f(a, /, b)` as `def f(a, b)`: a variant is called by position."""
    node.args.args[:0], node.args.posonlyargs = node.args.posonlyargs, []


def _rebound(node, star) -> bool:
    return any(isinstance(n, ast.Name) and n.id == star.id and not isinstance(n.ctx, ast.Load)
               for n in nodes.walk(node) if n is not star)


def _expand_star(node, count):
    """`def fn(a, *rest)` as `def fn(a, rest_0, ..., rest_{count-1})`, `rest` packed first."""
    star = node.args.vararg
    namer = Namer.for_function(node)
    names = [namer.new(f'{star.id}_{k}') for k in range(count)]
    if not _rebound(node, star):    # `g(*rest)` as `g(rest_0, rest_1)` while `rest` is the tuple
        _ExpandStar(star.id, names).visit(node)
    for name in names:
        param = nodes.name(name)
        param.ctx = ast.Param()
        node.args.args.append(param)
    node.args.vararg = None
    pack = nodes.located(nodes.assign(star.id, nodes.tuple_(*map(nodes.name, names))), node)
    node.body = [pack] + node.body


_KEYWORD_VARIANTS = weakref.WeakKeyDictionary()   # fn -> {number of star arguments: variant}


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # tapeflow's own files


def keyword_parameters(fn) -> bool:
    """Whether `fn`, a user's function, has keyword-only parameters or a `**` parameter
    (tapeflow's own wrappers, `grad(f)`'s `def differentiated(*args, **kwargs)`, are read
    as what they stand for)."""
    code = getattr(fn, '__code__', None)
    if getattr(fn, '__tapeflow_defaults_named__', None) is not None:
        return True             # a nested def with star parameters (`sugar.nested_defs`)
    return code is not None and bool(code.co_kwonlyargcount or
                                     code.co_flags & inspect.CO_VARKEYWORDS) \
        and (not code.co_filename.startswith((_OWN, '<tapeflow')) or
             hasattr(fn, '__tapeflow_class_made__') or       # (`syntax.classes`: the user's)
             getattr(fn, '__tapeflow_standin__', False))     # (`rules.standins`: Python's)


def keyword_variant(fn, count, parse):
    """`def fn(a, *rest, k=1, **kw)` called with `count` values in `rest`, as a function
    of named parameters: `def fn(a, rest_0, k=1, kw=None)`. Its keyword-only parameters
    and its `**` dict come last, in that order (`arguments.binder` passes them so), each
    with a default (its own, or None where it has none: a call that leaves a required one
    out is refused where it is compiled, and one to a `**` parameter always passes the
    dict)."""
    table = _KEYWORD_VARIANTS.setdefault(fn, {})
    kept = table.get(count)
    if kept is not None and kept[0] is fn.__code__ and kept[1] is fn.__defaults__ \
            and kept[2] is fn.__kwdefaults__:
        return kept[3]
    source = parse(fn)
    node = source.node
    _positional_only(node)
    args = node.args
    if args.vararg is not None:
        _expand_star(node, count)
    head = () if count else tuple(fn.__defaults__ or ())
    given = fn.__kwdefaults__ or {}
    tail = [given.get(a.id) for a in args.kwonlyargs] + ([None] if args.kwarg else [])
    for param in args.kwonlyargs + ([args.kwarg] if args.kwarg else []):
        param.ctx = ast.Param()
        args.args.append(param)
    args.kwonlyargs, args.kw_defaults, args.kwarg = [], [], None
    args.defaults = [nodes.const(None)] * (len(head) + len(tail))   # (the values: `made`'s)
    node.name = f'{_id(fn)}_kw{count}'
    made = _function(fn, node, defaults=head + tuple(tail))
    made.__tapeflow_star_of__ = (fn, count)
    made.__kwdefaults__ = None
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    if len(table) >= _VARIANTS_KEPT:
        table.pop(next(iter(table)))
    table[count] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__, made)
    return made


class _ExpandStar(nodes.Transformer):
    """`*rest` and `*rest[i:j:k]` (numbers written out) in calls and displays: the names
    `rest` holds, one by one."""

    def __init__(self, star, names):
        self.star, self.names = star, names

    def _items(self, node):
        if not isinstance(node, ast.Starred):
            return None
        value = node.value
        if isinstance(value, ast.Name) and value.id == self.star:
            return list(self.names)
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                and value.value.id == self.star and isinstance(value.slice, ast.Slice):
            bounds = [value.slice.lower, value.slice.upper, value.slice.step]
            if all(b is None or (isinstance(b, ast.Constant) and isinstance(b.value, int))
                   for b in bounds):
                picked = slice(*(None if b is None else b.value for b in bounds))
                return self.names[picked]
        return None

    def _expand(self, elts):
        out = []
        for elt in elts:
            items = self._items(elt)
            out += [elt] if items is None else \
                [nodes.copy_location(nodes.name(n), elt) for n in items]
        return out

    def visit_Call(self, node):
        self.generic_visit(node)
        node.args = self._expand(node.args)
        return node

    def visit_Tuple(self, node):
        self.generic_visit(node)
        node.elts = self._expand(node.elts)
        return node

    visit_List = visit_Tuple

    def visit_FunctionDef(self, node):
        params = {a.id for a in node.args.args}
        if self.star in params:          # a nested def's own parameter of that name
            return node
        self.generic_visit(node)
        return node


_BOUND_VARIANTS = weakref.WeakKeyDictionary()     # fn -> {((position, function), ...): variant}
_FUNCTION_TYPES = frozenset({types.FunctionType, types.BuiltinFunctionType, np.ufunc,
                             type(np.sum), functools.partial})


def is_function(value) -> bool:
    """Whether `value` is a function (a def, a lambda, a NumPy or builtin function, a
    partial) that compiled code may take as a constant when it is passed as an argument."""
    return value.__class__ in _FUNCTION_TYPES


def bound_variant(fn, bound, parse):
    """`fn` with the functions `bound` ({position: function}) passed for its parameters
    read as constants: `def loss(x, act)` called with `act=np.tanh` becomes a function
    whose `act` is a closure cell holding np.tanh (its calls resolved and differentiated
    while compiling), the parameter kept, unread, so that arguments keep their places.
    A function that assigns such a parameter, or never reads it, is returned as it is."""
    key = tuple(sorted(bound.items(), key=lambda item: item[0]))
    table = _BOUND_VARIANTS.setdefault(fn, {})
    try:
        made = _kept_variant(table, key, fn)
    except TypeError:                  # an unhashable callable: not specialised
        return fn
    if made is not None:
        return made
    source = parse(fn)
    node = source.node
    params = node.args.args
    names = {params[i].id for i in bound if i < len(params)}
    body = [n for n in nodes.walk(node) if isinstance(n, ast.Name) and n.id in names
            and all(n is not p for p in params)]
    if len(names) != len(bound) or not body or \
            any(not isinstance(n.ctx, ast.Load) for n in body):
        return fn                    # not read (generated code's unread parameter), or rebound
    namer = Namer.for_function(node)
    cells = {}
    for i, value in bound.items():
        cells[params[i].id] = value
        params[i].id = namer.new(f'_{params[i].id}_unread')
    made = _function(fn, node, cells=cells)
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    _keep(table, key, made, fn)
    return made


_VARIANTS_KEPT = 64     # variants of one function kept (a new lambda passed each call makes one)


def _keep(table, key, made, fn):
    if len(table) >= _VARIANTS_KEPT:
        table.pop(next(iter(table)))
    table[key] = (fn.__code__, fn.__defaults__, made)


def _kept_variant(table, key, fn):
    """The variant kept for `key`, if `fn`'s code and defaults are still those it was
    made from."""
    kept = table.get(key)
    if kept is None or kept[0] is not fn.__code__ or kept[1] is not fn.__defaults__:
        return None
    return kept[2]


def function_from(fn, node, cells=None):
    """A function object for `node` in `fn`'s globals, closure cells and defaults, and new
    cells holding the values `cells` (a variant made outside this module)."""
    return _function(fn, node, cells=cells)


def _function(fn, node, defaults=_KEEP, cells=None):
    """A function object for `node`, in `fn`'s globals and closure cells (and `fn`'s
    defaults, unless others are given), and new cells holding the values `cells`."""
    from tapeflow.syntax.unparse import unparse
    free = fn.__code__.co_freevars + tuple(cells or ())
    inner = unparse(node)
    if free:
        body = ''.join('    ' + line + '\n' for line in inner.splitlines())
        text = f'def __tapeflow_cells({", ".join(free)}):\n{body}    return {node.name}\n'
    else:
        text = inner
    code = compile(text, f'<tapeflow {node.name}>', 'exec')
    if free:
        outer = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        code = next(c for c in outer.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == node.name)
        held = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        held.update({name: types.CellType(value) for name, value in (cells or {}).items()})
        closure = tuple(held[n] for n in code.co_freevars)
    else:
        code = next(c for c in code.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == node.name)
        closure = None
    made = types.FunctionType(code, fn.__globals__, node.name,
                              fn.__defaults__ if defaults is _KEEP else defaults, closure)
    made.__kwdefaults__ = fn.__kwdefaults__
    for mode in ('__tapeflow_order__', '__tapeflow_tapes__'):    # a variant of generated code
        if hasattr(fn, mode):                                     # is generated code too
            setattr(made, mode, getattr(fn, mode))
    return made
