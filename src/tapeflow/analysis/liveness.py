"""Liveness of variables over structured Python code (no goto, loops may break).

`Liveness(body, live_out).live_after[id(stmt)]` is the set of names that may be
read after `stmt` runs. Loops are solved to a fixpoint; a `break` makes the
code after the loop reachable from inside it, which the loop's fixpoint
already covers (the loop's live-out flows into every point of its body).
"""
from __future__ import annotations

import gast

from tapeflow.syntax import nodes


def reads(node) -> set:
    """Names a simple statement or expression reads (not entering nested defs)."""
    out = nodes.load_names(node)
    if isinstance(node, gast.Assign):
        for target in node.targets:
            if isinstance(target, gast.Subscript):      # y[i] = v mutates y: reads it
                out |= {n.id for n in gast.walk(target) if isinstance(n, gast.Name)}
    return out


def writes(stmt) -> set:
    """Names a simple statement rebinds (a subscript assignment rebinds nothing)."""
    if isinstance(stmt, gast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, gast.Name)}
    if isinstance(stmt, gast.FunctionDef):
        return {stmt.name}
    return set()


class Liveness:
    def __init__(self, body, live_out=()):
        self.live_after = {}
        self.live_in = self.block(body, set(live_out))

    def block(self, stmts, live):
        for stmt in reversed(stmts):
            live = self.statement(stmt, live)
        return live

    def statement(self, stmt, live):
        self.live_after[id(stmt)] = set(live)
        if isinstance(stmt, gast.If):
            body = self.block(stmt.body, live)
            orelse = self.block(stmt.orelse, live)
            return body | orelse | reads(stmt.test)
        if isinstance(stmt, (gast.For, gast.While)):
            head = reads(stmt.iter) if isinstance(stmt, gast.For) else reads(stmt.test)
            target = writes_target(stmt) if isinstance(stmt, gast.For) else set()
            loop_live = set(live) | head
            while True:
                body_in = self.block(stmt.body, loop_live)
                new = set(live) | head | (body_in - target)
                if new <= loop_live:
                    break
                loop_live |= new
            return loop_live
        if isinstance(stmt, gast.FunctionDef):
            free = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
            return (live - {stmt.name}) | free
        if isinstance(stmt, gast.Return):
            return reads(stmt)
        return (live - writes(stmt)) | reads(stmt)


def writes_target(loop) -> set:
    return {n.id for n in gast.walk(loop.target) if isinstance(n, gast.Name)}
