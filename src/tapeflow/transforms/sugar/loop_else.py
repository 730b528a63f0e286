"""Desugar, `for ... else` and `while ... else`: the `else` block runs when the loop ends
without `break`, so a flag says whether a `break` of this loop ran:

    for t in it:                      _broke = False
        ... break ...                 for t in it:
    else:                                 ... _broke = True; break ...
        E                             if not _broke:
                                          E

A loop without a `break` of its own runs its `else` block after it, always. The breaks
of a loop are those of its body outside nested loops and defs, and those of the `else`
blocks of loops nested in it (an `else` block belongs to the enclosing loop): nested
loops are lowered first, so their `else` blocks already stand in the body. A `return`
inside the loop leaves the function, and the jumps pass guards the `else` with it.
Runs first in desugar, before jumps are lowered (after `syntax.fence`).
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes

_BLOCKS = ('body', 'orelse', 'finalbody')


def lower_loop_else(node, namer):
    """`node` (a function) with every loop's `else` block written after the loop."""
    if not any(isinstance(n, (ast.For, ast.While)) and n.orelse for n in nodes.walk(node)):
        return
    node.body = _block(node.body, namer)


def _block(stmts, namer):
    out = []
    for stmt in stmts:
        _inner_blocks(stmt, namer)
        if isinstance(stmt, (ast.For, ast.While)) and stmt.orelse:
            out.extend(_lowered(stmt, namer))
        else:
            out.append(stmt)
    return out


def _inner_blocks(stmt, namer):
    for field in _BLOCKS:
        inner = getattr(stmt, field, None)
        if isinstance(inner, list) and inner:
            setattr(stmt, field, _block(inner, namer))
    for handler in getattr(stmt, 'handlers', None) or ():
        handler.body = _block(handler.body, namer)
    for case in getattr(stmt, 'cases', None) or ():
        case.body = _block(case.body, namer)


def _lowered(loop, namer):
    orelse, loop.orelse = loop.orelse, []
    breaks = list(_own_breaks(loop.body))
    if not breaks:
        return [loop] + orelse
    flag = namer.new('_broke')
    for block, at in reversed(breaks):
        block.insert(at, nodes.located(nodes.assign(flag, True), block[at]))
    start = nodes.located(nodes.assign(flag, False), loop)
    after = nodes.located(nodes.if_(nodes.not_(nodes.name(flag)), orelse), orelse[0])
    return [start, loop, after]


def _own_breaks(stmts):
    """(block, index) of each `break` of the loop whose body is `stmts`, last ones of a
    block last (so that inserting before them, from the end, keeps the indices)."""
    for at, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Break):
            yield stmts, at
        if isinstance(stmt, (ast.For, ast.While, ast.FunctionDef)):
            continue
        for field in _BLOCKS:
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _own_breaks(inner)
        for handler in getattr(stmt, 'handlers', None) or ():
            yield from _own_breaks(handler.body)
        for case in getattr(stmt, 'cases', None) or ():
            yield from _own_breaks(case.body)
