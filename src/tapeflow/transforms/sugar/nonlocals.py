"""Desugar, `nonlocal`: a nested def that binds names of the function around it.

`def add(v): nonlocal total; total = total + v` is lifted (`sugar.nested_defs`) as a
def that takes `total` as a parameter, as it takes every enclosing name it reads, and
gives it back: each `return e` returns `(e, total)`. Where it is called, the caller
binds the names again, as Python's call did: `add(x)` becomes `_nl = add(x, total);
total = _nl[1]`, and `y = add(x)` binds `y = _nl[0]` after. A call is supported as a
statement, or as the whole value of an assignment or a `return` (the names it binds are
then bound before anything else of the statement reads them, as in Python); elsewhere,
used as a value, or called from another nested def, it is refused, located.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.transforms.sugar.written import blocks, own_statements, replace_returns


def prepare(child, enclosing, source) -> tuple:
    """The names `child` binds by `nonlocal` (sorted), its `nonlocal` statements dropped and
    its returns giving them back; () where it has none."""
    written = set()
    for stmt in own_statements(child.body):
        if isinstance(stmt, ast.Nonlocal):
            missing = [n for n in stmt.names if n not in enclosing]
            if missing:
                raise source.error(stmt, f'nonlocal {missing[0]} names a variable of a function '
                                         f'around the one differentiated: tapeflow follows '
                                         f'writes into the function it compiles only; pass it '
                                         f'in and return it')
            written.update(stmt.names)
    if not written:
        return ()
    written = tuple(sorted(written))
    for block in [child.body] + [b for stmt in own_statements(child.body) for b in blocks(stmt)]:
        block[:] = [nodes.located(ast.Pass(), s) if isinstance(s, ast.Nonlocal) else s
                    for s in block]
    replace_returns(child.body, lambda value: _give_back(value, written))
    child.body.append(nodes.located(_give_back(nodes.const(None), written), child.body[-1]))
    return written


def _give_back(value, written):
    return nodes.return_(nodes.tuple_(value, *map(nodes.name, written)))


def rewrite_calls(node, calls, namer, source):
    """The statements of `node` holding the calls `calls` ({id(call): (def name, the names
    it binds)}) as the calls and the bindings they stand for."""
    _block(node.body, calls, namer, source)


def _block(block, calls, namer, source):
    """`block` rewritten in place (the lists are kept: `nested_defs` holds some)."""
    out = []
    for stmt in block:
        if not isinstance(stmt, ast.FunctionDef):
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    _block(inner, calls, namer, source)
            for handler in getattr(stmt, 'handlers', None) or ():
                _block(handler.body, calls, namer, source)
        out.extend(_statement(stmt, calls, namer, source))
    block[:] = out


def _statement(stmt, calls, namer, source):
    found = [n for n in _expressions(stmt) if id(n) in calls]
    if not found:
        return [stmt]
    call = found[0]
    name, written = calls[id(call)]
    whole = getattr(stmt, 'value', None) is call and isinstance(
        stmt, (ast.Expr, ast.Assign, ast.Return))
    if len(found) > 1 or not whole:
        raise source.error(call, f'{name}() binds {written[0]} of this function (nonlocal): '
                                 f'call it as a statement, or as the whole value of an '
                                 f'assignment or a return (r = {name}(...))')
    result = namer.new(f'_{name}_run')
    out = [nodes.assign(result, call)]
    out += [nodes.assign(w, nodes.subscript(nodes.name(result), nodes.const(k)))
            for k, w in enumerate(written, 1)]
    first = nodes.subscript(nodes.name(result), nodes.const(0))
    if isinstance(stmt, ast.Assign):
        out.append(ast.Assign(targets=stmt.targets, value=first, type_comment=None))
    elif isinstance(stmt, ast.Return):
        out.append(nodes.return_(first))
    return nodes.located(out, stmt)


def _expressions(stmt):
    """The nodes of `stmt`'s own expressions (not its blocks, not nested defs)."""
    for field, value in ast.iter_fields(stmt):
        if field in ('body', 'orelse', 'finalbody', 'handlers'):
            continue
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST):
                yield from nodes.walk_terms(part)


def refuse_as_value(name, written, use, source):
    raise source.error(use, f'{name}() binds {written[0]} of this function (nonlocal) and is '
                            f'used as a value here: tapeflow follows those writes where it is '
                            f'called by name; call it directly, or return the new value')
