"""ANF's comprehensions and displays that become statements (a mixin of `anf._ANF`, which
gives it `atom`, `block` and the namer): a list comprehension (and a generator expression)
is a list appended to by loops, a dict comprehension and a dict display with `**` a dict
written item by item, a set comprehension the set of such a list. Each statement made
carries the user location of the expression.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes


class Comprehensions:
    def expr_Dict(self, e, pre, target):
        if any(k is None for k in e.keys):          # {**a, k: v}: a new dict, written in turn
            result = target or self.namer.new('_dict')
            pre.append(nodes.located(nodes.assign(result, nodes.dict_([], [])), e))
            for key, value in zip(e.keys, e.values):
                if key is None:
                    update = nodes.call(nodes.attribute(result, 'update'), self.atom(value, pre, 'val'))
                    pre.append(nodes.located(nodes.expr_stmt(update), e))
                else:
                    index = self.atom(key, pre, 'key')
                    pre.append(nodes.located(nodes.assign(nodes.subscript(result, index, store=True),
                                                          self.atom(value, pre, 'val')), e))
            return nodes.name(result)
        return nodes.dict_([self.atom(k, pre, 'key') for k in e.keys],
                           [self.atom(v, pre, 'val') for v in e.values])

    def expr_DictComp(self, e, pre, target):
        """`{k: v for ...}`: a new dict, each item written by the comprehension's loops."""
        result = target or self.namer.new('_dict')
        pre.append(nodes.located(nodes.assign(result, nodes.dict_([], [])), e))
        renames = {}
        for gen in e.generators:
            for n in nodes.walk(gen.target):
                if isinstance(n, ast.Name):
                    renames[n.id] = self.namer.new(n.id)
        e = _renamed(e, renames)
        inner = [nodes.assign(nodes.subscript(result, e.key, store=True), e.value)]
        for gen in reversed(e.generators):
            for cond in reversed(gen.ifs):
                inner = [nodes.if_(cond, inner)]
            inner = [nodes.for_(gen.target, gen.iter, inner)]
        loop = nodes.located(inner[0], e)
        from tapeflow.transforms import desugar
        pre.extend(self.block(desugar.lower_loops(self.namer, [loop])))
        return nodes.name(result)

    def expr_SetComp(self, e, pre, target):
        """`{x for ...}`: the set of the list the comprehension makes."""
        items = self.expr_ListComp(nodes.list_comp(e.elt, e.generators), pre, None)
        return nodes.copy_location(nodes.call(nodes.builtin('set'), items), e)

    def expr_ListComp(self, e, pre, target):
        result = target or self.namer.new('_list')
        pre.append(nodes.located(nodes.assign(result, nodes.list_()), e))
        renames = {}
        for gen in e.generators:
            for n in nodes.walk(gen.target):
                if isinstance(n, ast.Name):
                    renames[n.id] = self.namer.new(n.id)
        e = _renamed(e, renames)
        append = nodes.expr_stmt(nodes.call(nodes.attribute(result, 'append'), e.elt))
        inner = [append]
        for gen in reversed(e.generators):
            for cond in reversed(gen.ifs):
                inner = [nodes.if_(cond, inner)]
            inner = [nodes.for_(gen.target, gen.iter, inner)]
        loop = nodes.located(inner[0], e)
        # The comprehension's loops go through desugar's normal form again.
        from tapeflow.transforms import desugar
        lowered = desugar.lower_loops(self.namer, [loop])
        pre.extend(self.block(lowered))
        return nodes.name(result)

    expr_GeneratorExp = expr_ListComp


def _renamed(e, renames):
    """The comprehension `e` with its own variables renamed: but for its first iterable,
    which Python evaluates in the enclosing scope (`[q * 0.5 for q in q]` reads the
    function's q there)."""
    first = e.generators[0].iter
    e = nodes.substitute(e, renames)
    e.generators[0].iter = first
    return e
