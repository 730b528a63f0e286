"""Desugar, assignments: no augmented or annotated assignment is left.

`AugAssign(namer).visit_body(body)`: `x += y` is `x = x + y` (marked
`Key.IN_PLACE`), `y[i] += v` is `t = y[i]; t = t + v; y[i] = t`; `x: T = v` is
`x = v`; `del d[k]` is `delete_item(d, k)` and `del x` goes. `BlockRewriter` is the base of the rewriters whose visit of one
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

    def __init__(self, namer, source=None):
        self.namer = namer
        self.source = source

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

    def visit_Delete(self, node):
        """`del x` unbinds a name: no value changes (its later reads would fail in Python
        too), so it goes. `del d[k]` removes an item (`rules.dicts.delete_item`, which the
        mutation pass makes a list's pop); `del obj.name` is refused."""
        from tapeflow.rules.dicts import delete_item
        out = []
        for target in node.targets:
            if isinstance(target, ast.Name):
                continue
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                    not isinstance(target.slice, (ast.Slice, ast.Tuple)):
                func = nodes.name('delete_item')
                setanno(func, Key.RESOLVED, delete_item)
                out.append(nodes.copy_location(nodes.expr_stmt(nodes.call(
                    func, nodes.load(target.value), nodes.load(target.slice))), node))
                continue
            reason = ('del of an attribute or a slice is not supported in differentiated '
                      'code; make a new object, or remove items one by one')
            if self.source is None:
                raise TypeError(reason)
            raise self.source.error(target, reason)
        return out or [nodes.copy_location(nodes.pass_(), node)]
