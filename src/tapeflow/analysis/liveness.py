"""Liveness of variables over structured Python code (no goto, loops may break).

`Liveness(body, live_out).live_after[id(stmt)]` is the set of names that may be
read after `stmt` runs (statements may share one set: read it, never change it).
Loops are solved to a fixpoint; a `break` makes the code after the loop
reachable from inside it, which the loop's fixpoint already covers (the loop's
live-out flows into every point of its body).
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.syntax import nodes


def reads(node) -> set:
    """Names a simple statement or expression reads (not entering nested defs)."""
    out = nodes.load_names(node)
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript):      # y[i] = v mutates y: reads it
                out |= {n.id for n in nodes.walk_terms(target) if isinstance(n, ast.Name)}
    return out


def writes(stmt) -> set:
    """Names a simple statement rebinds (a subscript assignment rebinds nothing)."""
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.FunctionDef):
        return {stmt.name}
    return set()


class Liveness:
    """`effects`: a memo of what statements read and write, which analyses of the same
    statements may share (rounds of `optimize`) -- an entry holds while the statement's
    value, targets and head are the objects they were, so share it only where nothing
    edits those in place. Without it, one analysis still reads each statement once
    (a loop's fixpoint visits its body again)."""

    def __init__(self, body, live_out=(), effects=None):
        self.live_after = {}
        self._effects = {} if effects is None else effects
        self.live_in = self.block(body, set(live_out))

    def block(self, stmts, live):
        for stmt in reversed(stmts):
            live = self.statement(stmt, live)
        return live

    def effects(self, node):
        """(reads, writes) of a simple statement, or of a loop's or branch's head."""
        cls = node.__class__
        if cls is ast.Assign:
            parts = node.value, node.targets
        elif cls is ast.Expr or cls is ast.Return:
            parts = node.value, None
        elif cls is ast.If or cls is ast.While:
            parts = node.test, None
        elif cls is ast.For:
            parts = node.iter, node.target
        elif cls is ast.FunctionDef:
            return {n.id for n in nodes.walk_terms(node) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load)}, {node.name}
        else:
            return reads(node), writes(node)
        known = self._effects.get(id(node))
        if known is not None and known[0] is node and known[1] is parts[0] \
                and known[2] is parts[1]:
            return known[3]
        if cls is ast.For:
            found = reads(node.iter), writes_target(node)
        elif cls is ast.If or cls is ast.While:
            found = reads(node.test), set()
        else:
            found = reads(node), writes(node)
        self._effects[id(node)] = node, parts[0], parts[1], found
        return found

    def statement(self, stmt, live):
        # Not copied: no set handed on below is changed once the fixpoints are done
        # (a loop's grows only while its body is analysed again). Read them only.
        self.live_after[id(stmt)] = live
        if isinstance(stmt, ast.If):
            body = self.block(stmt.body, live)
            orelse = self.block(stmt.orelse, live)
            return body | orelse | self.effects(stmt)[0]
        if isinstance(stmt, (ast.For, ast.While)):
            head, target = self.effects(stmt)
            loop_live = set(live) | head
            while True:
                body_in = self.block(stmt.body, loop_live)
                new = set(live) | head | (body_in - target)
                if new <= loop_live:
                    break
                loop_live |= new
            return loop_live
        if isinstance(stmt, ast.FunctionDef):
            return (live - {stmt.name}) | self.effects(stmt)[0]
        if isinstance(stmt, ast.Return):
            return set(self.effects(stmt)[0])
        read, written = self.effects(stmt)
        if read <= live and (written.isdisjoint(live) or written <= read):
            return live                 # (live - written) | read is live itself
        out = live.copy()               # a copy and two updates: faster than `-` and `|`
        out -= written
        out |= read
        return out


def writes_target(loop) -> set:
    return {n.id for n in nodes.walk_terms(loop.target) if isinstance(n, ast.Name)}
