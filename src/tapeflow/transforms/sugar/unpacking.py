"""Desugar, assignment targets as Python stores into them, so that later passes meet only
names, tuples of names and `name[index]`:

    a, *b, c = v          _items = star_items(v, 2); a = _items[0]
                          b = list(_items[1:len(_items) - 1]); c = _items[-1]
    for a, *b in rows:    for _row in rows: a, *b = _row; ...
    x[i][j] = v           _value = v; _target = x[i]; _target[j] = _value
    o.w[j] += v           _target = o.w; _target[j] += v

Python evaluates an assignment's value first, then the target's primary (`x[i]`), then its
index, and stores into the object the primary gave (a view of `x` for a basic index, a
copy for an advanced one: a write into that copy is lost, as Python loses it): the
names bound here keep that order and that object. `star_items` (`rules.sequence_ops`)
raises Python's ValueError where there are too few values; the starred name is a new
list, as Python's.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno
from tapeflow.transforms.sugar.assignments import BlockRewriter


def lower_targets(node, namer, bindings):
    """`node`'s starred and nested targets in the forms above (its nested defs' too)."""
    if not any(_starred(t) or _nested(t) for n in nodes.walk_terms(node)
               for t in _targets_of(n)):
        return
    node.body = _Targets(namer, bindings).visit_body(node.body)


def _targets_of(n):
    if isinstance(n, ast.Assign) and len(n.targets) == 1:
        return n.targets
    if isinstance(n, (ast.AugAssign, ast.For)):
        return [n.target]
    return []


def _starred(target) -> bool:
    return isinstance(target, (ast.Tuple, ast.List)) and any(
        isinstance(e, ast.Starred) or _starred(e) for e in target.elts)


def _nested(target) -> bool:
    return isinstance(target, ast.Subscript) and not isinstance(target.value, ast.Name)


class _Targets(BlockRewriter):
    def __init__(self, namer, bindings):
        self.namer, self.bindings = namer, bindings

    def _ref(self, value, name):
        ref = nodes.name(self.namer.new(name))
        self.bindings.computed[ref.id] = value
        setanno(ref, Key.RESOLVED, value)
        return ref

    def visit_FunctionDef(self, node):
        node.body = self.visit_body(node.body)
        return node

    def visit_For(self, node):
        node.body = self.visit_body(node.body)
        node.orelse = self.visit_body(node.orelse)
        if not _starred(node.target):
            return node
        item = self.namer.new('_row')
        unpack = nodes.copy_location(ast.Assign(targets=[node.target], value=nodes.name(item),
                                                type_comment=None), node)
        node.target = nodes.name(item, store=True)
        node.body = self.visit_body([unpack]) + node.body
        return node

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            return node
        target = node.targets[0]
        if _starred(target):
            return self._unpacked(node, target)
        if _nested(target):
            out = []
            value = node.value
            if not isinstance(value, (ast.Name, ast.Constant)):
                name = self.namer.new('_value')
                out.append(nodes.assign(name, value))
                value = nodes.name(name)
            out += self._primary(target)
            out.append(ast.Assign(targets=[target], value=value, type_comment=None))
            return nodes.located(out, node)
        return node

    def visit_AugAssign(self, node):
        if not _nested(node.target):
            return node
        return nodes.located(self._primary(node.target) + [node], node)

    def _primary(self, target):
        """`_target = x[i]` for the target `x[i][j]`, which becomes `_target[j]`."""
        name = self.namer.new('_target')
        bind = nodes.assign(name, target.value)
        target.value = nodes.name(name)
        return [bind]

    def _unpacked(self, node, target):
        at = next((k for k, e in enumerate(target.elts) if isinstance(e, ast.Starred)), None)
        if at is None:                      # a starred target nested in this one
            parts = self.namer.new('_parts')
            out = [nodes.assign(parts, node.value)]
            for k, e in enumerate(target.elts):
                out += self.visit_body([nodes.copy_location(ast.Assign(
                    targets=[e], value=nodes.subscript(parts, nodes.const(k)), type_comment=None), node)]) \
                    if _starred(e) else [nodes.assign(e, nodes.subscript(parts, nodes.const(k)))]
            return nodes.located(out, node)
        from tapeflow.rules.sequence_ops import star_items
        items = self.namer.new('_items')
        after = len(target.elts) - at - 1
        out = [nodes.assign(items, nodes.call(self._ref(star_items, '_star_items'), node.value,
                                              nodes.const(len(target.elts) - 1)))]
        size = nodes.call(self._ref(len, '_len'), nodes.name(items))
        stop = nodes.binop(size, ast.Sub(), nodes.const(after)) if after else None
        rest = []
        for k, e in enumerate(target.elts):
            if k < at:
                value = nodes.subscript(items, nodes.const(k))
            elif k == at:
                part = ast.Subscript(value=nodes.name(items), ctx=ast.Load(),
                                     slice=ast.Slice(lower=nodes.const(at), upper=stop, step=None))
                value = nodes.call(self._ref(list, '_list'), part)
                e = e.value
            else:
                value = nodes.subscript(items, nodes.const(k - len(target.elts)))
            rest.append(nodes.copy_location(ast.Assign(targets=[e], value=value,
                                                       type_comment=None), node))
        return nodes.located(out, node) + self.visit_body(rest)
