"""`class` statements inside the function: each made once, while compiling, and its
methods read from the text they stand in.

A class whose body holds only its methods, a docstring and constant attributes, and that
reads nothing of the function around it, is the same class every time the function
runs, but for its identity: `lower_classes` makes it while compiling (in the module's
namespace), puts a `pass` where the statement stood, and gives the name and the class,
which `resolve` resolves as it resolves globals; its methods carry their own text
(`__tapeflow_source__`), located in the user's file, and are differentiated as a module
class's are. What would differ from Python is refused, located: a class reading the
function's locals, holding a mutable or computed class attribute (each call would make
its own), or bound otherwise too.
"""
from __future__ import annotations

import copy
import dataclasses

import gast

from tapeflow.syntax import nodes
from tapeflow.syntax.imports import statement_blocks
from tapeflow.syntax.resolve import local_names
from tapeflow.syntax.unparse import load_module, unparse


def lower_classes(node: gast.FunctionDef, fn, source, known) -> dict:
    """{name: class} for the class statements of `node`'s own body, each replaced by
    `pass`; `known`: the names the function's imports bind (its class bodies may read
    them)."""
    found = {}
    blocks = list(statement_blocks(node))
    made_here = {s.name for block in blocks for s in block if isinstance(s, gast.ClassDef)}
    for block in blocks:
        for k, stmt in enumerate(block):
            if not isinstance(stmt, gast.ClassDef):
                continue
            _check(stmt, node, source, local_names(node) - made_here)
            found[stmt.name] = _made(stmt, fn, source, {**known, **found})
            block[k] = nodes.located(gast.Pass(), stmt)
    return found


_CONSTANT_TYPES = (int, float, complex, str, bytes, bool, type(None))


def _check(stmt, node, source, outer):
    others = [n for n in nodes.walk_terms(node) if n is not stmt and (
        isinstance(n, gast.Name) and n.id == stmt.name and not isinstance(n.ctx, gast.Load) or
        isinstance(n, (gast.ClassDef, gast.FunctionDef)) and n.name == stmt.name)]
    if others:
        raise source.error(others[0], f'{stmt.name} names a class made in this function and '
                                      f'is bound here too: tapeflow makes the class once, '
                                      f'while compiling; use another name')
    for item in stmt.body:
        if isinstance(item, gast.FunctionDef) or isinstance(item, gast.Pass) or \
                isinstance(item, gast.Expr) and isinstance(item.value, gast.Constant):
            continue
        value = getattr(item, 'value', None)
        if isinstance(item, (gast.Assign, gast.AnnAssign)) and _constant(value):
            continue
        raise source.error(item, f'the class {stmt.name}, made in this function, holds a class '
                                 f'attribute that is not a constant: Python makes it anew each '
                                 f'call, tapeflow once; define the class at module level')
    for read in _reads(stmt, set()):
        if read.id in outer:
            raise source.error(read, f'the class {stmt.name}, made in this function, reads '
                                     f'{read.id}, a local of the function: tapeflow makes the '
                                     f'class once, while compiling; pass {read.id} to it '
                                     f'(an __init__ parameter)')


def _constant(value) -> bool:
    if value is None:
        return True
    if isinstance(value, gast.Constant):
        return isinstance(value.value, _CONSTANT_TYPES)
    if isinstance(value, gast.Tuple):
        return all(_constant(v) for v in value.elts)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        return _constant(value.operand)
    return False


def _reads(node, bound):
    """The Name loads under `node` not bound by a def inside it (its parameters, its
    assignments)."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, gast.FunctionDef):
            inner = bound | local_names(child)
            for part in child.args.defaults + [d for d in child.args.kw_defaults if d]:
                yield from _reads(part, bound)
            for part in child.decorator_list:
                yield from _reads(part, bound)
            for stmt in child.body:
                yield from _reads(stmt, inner)
            continue
        if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load) and \
                child.id not in bound:
            yield child
        yield from _reads(child, bound)


def _made(stmt, fn, source, known):
    """The class `stmt` makes, in `fn`'s module, its methods given their text."""
    namespace = dict(getattr(fn, '__globals__', {}))
    namespace.update(known)
    try:
        load_module(unparse(stmt), namespace, stmt.name)
    except Exception as error:          # noqa: BLE001 (the user's decorators, the class body)
        raise source.error(stmt, f'the class {stmt.name} could not be made while compiling '
                                 f'({type(error).__name__}: {error}); define it at module '
                                 f'level') from None
    made = namespace[stmt.name]
    for item in stmt.body:
        if isinstance(item, gast.FunctionDef):
            method = made.__dict__.get(item.name)
            method = getattr(method, '__func__', getattr(method, 'fget', method))
            if hasattr(method, '__code__'):
                method.__tapeflow_source__ = dataclasses.replace(
                    source, node=_undecorated(copy.deepcopy(item)))
                method.__tapeflow_class_made__ = made     # (the user's: `callees` reads it so)
    return made


def _undecorated(node):
    node.decorator_list = []
    return node
