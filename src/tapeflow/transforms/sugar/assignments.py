"""Desugar, assignments: no augmented or annotated assignment is left.

`AugAssign(namer).visit_body(body)`: `x += y` is `x = x + y` (marked
`Key.IN_PLACE`), `y[i] += v` is `t = y[i]; t = t + v; y[i] = t`; `x: T = v` is
`x = v`. `BlockRewriter` is the base of the rewriters whose visit of one
statement gives a list of them.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno


class BlockRewriter(nodes.Transformer):
    """Rewrites statements: expressions, which hold none, are not visited."""

    def visit_body(self, body):
        out = []
        for stmt in body:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def generic_visit(self, node):
        return node if isinstance(node, ast.expr) else super().generic_visit(node)


class AugAssign(BlockRewriter):
    """`y += v` is `y = y + v`, marked `Key.IN_PLACE`: the mutation pass decides whether
    the write reaches memory other names see. `y[i] += v` is NumPy's (and Python's)
    `t = y[i]; t += v; y[i] = t`: `t` may be a view, or an element another name holds."""

    def __init__(self, namer):
        self.namer = namer

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Subscript):
            item = self.namer.new('_item')
            value = nodes.binop(item, node.op, node.value)
            update = nodes.assign(item, value)
            setanno(update, Key.IN_PLACE, node.target.value.id)     # the base it is written back to
            out = [nodes.assign(item, nodes.load(node.target)), update,
                   nodes.assign(node.target, item)]
            return [nodes.copy_location(s, node) for s in out]
        value = nodes.binop(nodes.load(node.target), node.op, node.value)
        nodes.copy_location(value, node)
        stmt = nodes.copy_location(nodes.assign(node.target, value), node)
        setanno(stmt, Key.IN_PLACE, True)
        return stmt

    def visit_AnnAssign(self, node):
        if node.value is None:
            return []
        return nodes.copy_location(nodes.assign(node.target, node.value), node)
