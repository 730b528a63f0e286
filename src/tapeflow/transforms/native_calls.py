"""compile='numba': calls of the user's own functions put in line, so that Numba compiles
one function (the native path compiles no function pairs: `transforms.native`).

After `anf` every call is a statement of its own, `_h = helper(a, k=b)`. The helper's
own ANF (the front passes, `ctx.front`) goes in its place: its parameters bound to the
arguments (`x_1 = a`: Python's own binding, so a write into `x_1` is a write into `a`,
which the mutation pass after this one sees as such), its names renamed apart from the
caller's, and its one `return` (desugar leaves one, at the end) bound to `_h`.
Helpers called by a helper are put in line too.

Only what is surely the same code is put in line; any other call stays, and the native
pass refuses it at its line, as before:
- a plain function (no closure, no `*args`, `**kwargs` or keyword-only parameters, not
  a generator) with no derivative rule of its own;
- defined in the caller's file, reading the caller's globals (its lines locate errors
  in that file; its names mean what the caller's mean);
- defaults that are numbers, strings, booleans or None;
- not recursive (a call met again while being put in line stays).
"""
from __future__ import annotations

import inspect
import types

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.walkers import statements, store_names, walk
from tapeflow.transforms.operations import user_function

__all__ = ['run']

_CONSTANTS = (int, float, bool, str, type(None))
_DEPTH = 8


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`), for `ctx.target` other than 'python'."""
    tree.body = _inline_block(tree.body, ctx, (ctx.fn,))
    return tree


def _inline_block(body, ctx, stack):
    out = []
    for stmt in body:
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block:
                setattr(stmt, field, _inline_block(block, ctx, stack))
        inlined = _inlined(stmt, ctx, stack)
        out.extend([stmt] if inlined is None else inlined)
    return out


def _call_of(stmt):
    """(target name or None, call) of `_h = f(...)` or `f(...)`; else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return None, stmt.value
    return None


def _inlined(stmt, ctx, stack):
    """The statements that replace `stmt`, a call of a helper put in line; else None."""
    found = _call_of(stmt)
    if found is None:
        return None
    target, call = found
    fn = user_function(call)
    if fn is None or fn in stack or len(stack) > _DEPTH or not _same_code(fn, ctx.fn):
        return None
    bound = _bind(fn, call)
    if bound is None:
        return None
    tree, bindings = ctx.front(fn)
    body = list(tree.body)
    if not body or not isinstance(body[-1], ast.Return) or \
            any(isinstance(s, ast.Return) for s in statements(body[:-1])) or \
            bindings.closure or bindings.renamed or not _merge(bindings.values, ctx.bindings.values):
        return None
    params = [a.id for a in tree.args.args]
    stored = store_names(body) | {n.id for s in body for n in walk(s)
                                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    # a parameter the helper never binds again is the argument itself (a name or a
    # constant, after `anf`): no copy, which Numba would type anew
    subs = {p: value for p, value in zip(params, bound)
            if p not in stored and isinstance(value, (ast.Name, ast.Constant))}
    subs.update((n, ctx.namer.new(f'{n}_{fn.__name__}')) for n in (set(params) | stored) - set(subs))
    new = nodes.located([nodes.assign(nodes.name(subs[p], store=True), value)
                         for p, value in zip(params, bound) if isinstance(subs[p], str)], stmt)
    body = [nodes.substitute(s, subs) for s in body]
    returned = body.pop().value
    new += _inline_block(body, ctx, stack + (fn,))
    if target is not None:
        new.append(nodes.located(nodes.assign(nodes.name(target, store=True),
                                              returned or nodes.const(None)), stmt))
    return new


def _same_code(fn, caller) -> bool:
    code = fn.__code__
    return isinstance(fn, types.FunctionType) and fn.__closure__ is None and \
        fn.__globals__ is getattr(caller, '__globals__', None) and \
        code.co_filename == caller.__code__.co_filename and code.co_kwonlyargcount == 0 and \
        not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR)


def _bind(fn, call):
    """The argument expression for each parameter of `fn` in `call`, or None."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    given = dict(zip(params, call.args))
    for k in call.keywords:
        if k.arg not in params or k.arg in given:
            return None
        given[k.arg] = k.value
    if len(call.args) > len(params):
        return None
    out = []
    for i, p in enumerate(params):
        if p in given:
            out.append(given[p])
            continue
        d = i - (len(params) - len(defaults))
        if d < 0 or not isinstance(defaults[d], _CONSTANTS):
            return None
        out.append(nodes.const(defaults[d]))
    return out


def _merge(values, into) -> bool:
    """The helper's resolved names into the caller's, where none means another object."""
    if any(n in into and into[n] is not v for n, v in values.items()):
        return False
    into.update(values)
    return True
