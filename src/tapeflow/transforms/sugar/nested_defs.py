"""Desugar, nested defs: a def inside the function becomes a function of its own.

`lift_nested_defs(node, source, fn, namer, bindings)` compiles each nested def
on its own, its free locals passed as extra parameters and its defaults
hoisted to names assigned where the def stands; every call of it passes all
its arguments by position. Runs after `syntax.resolve`.
"""
from __future__ import annotations

import copy
import dataclasses

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno


def lift_nested_defs(node, source, fn, namer=None, bindings=None):
    """A nested def gets the enclosing locals it reads as extra parameters.

    `def inner(v): return v * k` inside `f` (with `k` a local of `f`) becomes
    `def inner(v, k)`, and each call `inner(x)` becomes `inner(x, k)`. Calls
    are then ordinary calls of a user function: `inner` is compiled on its own
    (from this node, located in the user's file).

    Defaults are values the def statement computes where it stands (`def
    inner(v, k=k)` in a loop keeps each trip's `k`): each becomes a name
    assigned just before the def (`_inner_k = k`), and a call that leaves the
    parameter out passes that name. Calls pass every argument by position.
    """
    if not any(isinstance(s, ast.FunctionDef) for s in nodes.statements(node.body)):
        return                      # (most functions; `fence` let no other block hold a def)
    from tapeflow.syntax.resolve import local_names
    outer_locals = None             # the function's locals, read before any def is lifted
    lifted = {}
    for stmt in list(nodes.walk_terms(node)):
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if not isinstance(block, list):
                continue
            for child in list(block):
                if isinstance(child, ast.FunctionDef) and child is not node:
                    if outer_locals is None:
                        outer_locals = local_names(node)
                    hoisted = _hoist_defaults(child, namer, outer_locals, bindings)
                    at = block.index(child)
                    block[at:at] = nodes.located(hoisted, child)
                    lifted[child.name] = _lift(child, source, fn, outer_locals, hoisted)
    if not lifted:
        return
    for call in nodes.walk_terms(node):
        called = ast.called_name(call)
        if called in lifted:
            inner_fn, params, defaults, free = lifted[called]
            call.args = _positional_arguments(call, called, params, defaults, source) + \
                [nodes.name(n) for n in free]
            call.keywords = []
            setanno(call.func, Key.RESOLVED, inner_fn)


def _hoist_defaults(child, namer, outer_locals, bindings):
    """`_inner_p = <default of p>` for each default of `child`, which keeps none."""
    from tapeflow.syntax.resolve import resolve_expression
    defaults = child.args.defaults
    if not defaults:
        return []
    if namer is None:
        raise TypeError('nested defs with defaults need a namer')
    params = child.args.args[len(child.args.args) - len(defaults):]
    hoisted = []
    for param, default in zip(params, defaults):
        if bindings is not None:
            resolve_expression(default, outer_locals, bindings)
        hoisted.append(nodes.assign(namer.new(f'_{child.name}_{param.id}'), default))
    child.args.defaults = []
    return hoisted


def _lift(child, source, fn, outer_locals, hoisted):
    from tapeflow.syntax.resolve import local_names
    from tapeflow.syntax.unparse import load_module, unparse
    params = [a.id for a in child.args.args]
    defaults = {p: h.targets[0].id for p, h in zip(params[len(params) - len(hoisted):], hoisted)}
    inner_locals = local_names(child)
    free = sorted({n.id for n in nodes.walk_terms(child) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Load)} - inner_locals & outer_locals)
    for name in free:
        child.args.args.append(nodes.param(nodes.name(name)))
    namespace = dict(fn.__globals__)
    load_module(unparse(child), namespace, child.name)
    inner_fn = namespace[child.name]
    inner_fn.__tapeflow_source__ = dataclasses.replace(source, node=copy.deepcopy(child))
    return inner_fn, params, defaults, free


def _positional_arguments(call, name, params, defaults, source):
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
