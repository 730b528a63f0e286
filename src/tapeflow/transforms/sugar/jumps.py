"""Desugar, jumps: no `continue`, no `break` but the one `if <flags>: break`
that ends a loop body (marked `Key.LOOP_EXIT`), and a single `return`, the
last statement.

`Jumps(namer).lower_function(body)` lowers jumps to flags that guard the
statements they skip. Runs last in desugar (after the loops' rewrite).
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno


def _contains(stmts, types, into_loops=True):
    for stmt in stmts:
        for n in _walk_stmt(stmt, into_loops):
            if isinstance(n, types):
                return True
    return False


def _walk_stmt(stmt, into_loops):
    """Statements under `stmt`, not entering nested defs (nor loops, unless asked)."""
    yield stmt
    if isinstance(stmt, ast.FunctionDef):
        return
    if isinstance(stmt, (ast.For, ast.While)) and not into_loops:
        return
    for field in ('body', 'orelse'):
        for child in getattr(stmt, field, ()) or ():
            yield from _walk_stmt(child, into_loops)


class Jumps:
    """Lower break/continue/return to flags.

    A statement after which a flag may be set is followed by the rest of its
    block under `if not flag:`; a loop whose body may set its break flag (or
    the return flag) ends its body with `if flag: break`.
    """

    def __init__(self, namer):
        self.namer = namer
        self.ret_flag = None
        self.ret_value = None
        self.loops = []         # stack of (break_flag, continue_flag) per loop

    def lower_function(self, body):
        final_return = bool(body) and isinstance(body[-1], ast.Return)
        if not _contains(body[:-1] if final_return else body, ast.Return):
            lowered, _ = self.block(body)         # only loops' jumps
            return lowered
        self.ret_flag = self.namer.new('_returned')
        self.ret_value = self.namer.new('_retval')
        prologue = [nodes.assign(self.ret_flag, False), nodes.assign(self.ret_value, None)]
        for stmt in prologue:
            setanno(stmt, Key.SYNTHETIC, True)
        lowered, _ = self.block(body)
        return prologue + lowered + [nodes.return_(self.ret_value)]

    def block(self, stmts):
        """Lower a block; return it and the set of flags it may leave set."""
        out, raised = [], set()
        for k, stmt in enumerate(stmts):
            new, flags = self.statement(stmt)
            out.extend(new)
            if flags:
                raised |= flags
                rest, rest_flags = self.block(stmts[k + 1:])
                raised |= rest_flags
                if rest:
                    guard = nodes.if_(self._none_of(flags), rest)
                    setanno(guard, Key.SYNTHETIC, True)
                    nodes.located(guard, stmts[k + 1])
                    out.append(guard)
                return out, raised
        return out, raised

    def _none_of(self, flags):
        return nodes.not_(nodes.any_of(sorted(flags)))

    def statement(self, stmt):
        if isinstance(stmt, ast.Return):
            if self.ret_flag is None:
                return [stmt], set()
            new = [nodes.assign(self.ret_value, stmt.value if stmt.value is not None else nodes.const(None)),
                   nodes.assign(self.ret_flag, True)]
            nodes.located(new, stmt)
            return new, {self.ret_flag}
        if isinstance(stmt, ast.Break):
            flag = self.loops[-1][0]
            return [nodes.located(nodes.assign(flag, True), stmt)], {flag}
        if isinstance(stmt, ast.Continue):
            flag = self.loops[-1][1]
            return [nodes.located(nodes.assign(flag, True), stmt)], {flag}
        if isinstance(stmt, ast.If):
            stmt.body, body_flags = self.block(stmt.body)
            stmt.orelse, else_flags = self.block(stmt.orelse)
            if not stmt.body:
                stmt.body = [nodes.pass_()]
            return [stmt], body_flags | else_flags
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt)
        return [stmt], set()

    def loop(self, stmt):
        has_break = _contains(stmt.body, ast.Break, into_loops=False)
        has_continue = _contains(stmt.body, ast.Continue, into_loops=False)
        brk = self.namer.new('_break') if has_break else None
        cont = self.namer.new('_continue') if has_continue else None
        self.loops.append((brk, cont))
        body, flags = self.block(stmt.body)
        self.loops.pop()
        prologue = []
        if brk:
            prologue.append(nodes.assign(brk, False))
        if cont:
            body.insert(0, nodes.assign(cont, False))
        exits = sorted(f for f in flags if f in (brk, self.ret_flag) and f)
        if exits:
            exit_stmt = nodes.if_(nodes.any_of(exits), [nodes.break_()])
            setanno(exit_stmt, Key.LOOP_EXIT, True)
            body.append(exit_stmt)
        for s in prologue + body:
            if getanno(s, Key.ORIGIN) is None:
                nodes.located(s, stmt)
        stmt.body = body
        escaping = {f for f in flags if f == self.ret_flag}
        return prologue + [stmt], escaping
