"""Desugar, iterators read at once: `map` and `filter` as the comprehensions they are, and
a partial or a closure called where it is made as the call it stands for.

`map(f, xs, ys)` consumed where it is made (the iterable of a loop, unpacked, spread as
`*args`, or given to `list`, `sum`, `sorted`, `dict`, `zip`...) is
`[f(a, b) for a, b in zip(xs, ys)]`, and `filter(f, xs)` is `[x for x in xs if f(x)]`:
the same calls of `f` in the same order, read into a list, which is exact where nothing
else reads the iterator. `f` must be a name, an attribute, a lambda or a partial made
there (evaluated once per item instead of once: those have no effects). Elsewhere they
are left alone: a map object that carries derivatives is then refused when it runs.

`functools.partial(f, a, k=c)(x)` is `f(a, x, k=c)`; `closure(g, n, 0, *v)(x)` (a lambda
called where it stands, `transforms.sugar.nested_defs`) is `g(x, *v)`. Runs after
`FoldTransforms`, before `ZipValues` (which lowers the zips made here).
"""
from __future__ import annotations

import builtins
import functools

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno

CONSUMERS = frozenset({builtins.list, builtins.tuple, builtins.dict, builtins.sorted,
                       builtins.sum, builtins.min, builtins.max, builtins.enumerate,
                       builtins.any, builtins.all, builtins.set, builtins.frozenset,
                       builtins.map, builtins.filter, builtins.zip})


def consumed(node, parent) -> bool:
    """Whether the iterator `node` is read at once, whole, where it stands under `parent`."""
    if isinstance(parent, (ast.For, ast.comprehension)):
        return parent.iter is node
    if isinstance(parent, ast.Starred):
        return True
    if isinstance(parent, ast.Assign):
        return parent.value is node and any(isinstance(t, (ast.Tuple, ast.List))
                                            for t in parent.targets)
    if isinstance(parent, ast.Call) and any(a is node for a in parent.args):
        fn = getanno(parent.func, Key.RESOLVED)
        try:
            return fn in CONSUMERS or getattr(fn, '__module__', '') == 'numpy'
        except TypeError:
            return False
    return False


class IteratorValues:
    def __init__(self, namer):
        self.namer = namer

    def rewrite(self, fdef):
        if not any(isinstance(n, ast.Call) and (self._iterator(n) or self._made_and_called(n))
                   for n in nodes.walk_terms(fdef)):
            return
        self._visit(fdef, None)

    def _visit(self, node, parent):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        value[k] = self._visit(child, node)
            elif isinstance(value, ast.AST):
                setattr(node, field, self._visit(value, node))
        if not isinstance(node, ast.Call):
            return node
        made = self._made_and_called(node)
        if made is not None:
            return made
        kind = self._iterator(node)
        if kind is None or not consumed(node, parent) or node.keywords or \
                any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) < 2:
            return node
        made = self._map(node) if kind == 'map' else self._filter(node)
        if not _simple_function(node.args[0]):
            made = self._once(made, node.args[0])
        return node if made is None else nodes.copy_location(made, node)

    def _once(self, made, fn):
        """`made` (a list comprehension calling `f`, an expression to evaluate once, as
        `map` does: `fns[-1]`, `Gain(2.0)`) reading `f` bound once, before the items:
        `[_mf(a) for _mf in [f] for a in xs]` (`f`, then `xs`, in `map`'s order)."""
        call = made.generators[0].ifs[0] if made.generators[0].ifs else made.elt
        if not isinstance(call, ast.Call) or call.func is not fn:
            return None                 # (a partial made there, folded into its call)
        once = self.namer.new('_mf')
        call.func = nodes.name(once)
        made.generators.insert(0, nodes.comprehension(nodes.name(once, store=True),
                                                      nodes.list_(fn)))
        return made

    @staticmethod
    def _iterator(call):
        fn = getanno(call.func, Key.RESOLVED)
        return 'map' if fn is builtins.map else 'filter' if fn is builtins.filter else None

    def _map(self, call):
        fn, iterables = call.args[0], call.args[1:]
        names = [self.namer.new('_m') for _ in iterables]
        if len(iterables) == 1:
            target, source = nodes.name(names[0], store=True), iterables[0]
        else:
            target = nodes.tuple_(*[nodes.name(n, store=True) for n in names], store=True)
            source = nodes.call(nodes.builtin('zip'), *iterables)
        element = nodes.call(fn, *[nodes.name(n) for n in names])
        element = self._made_and_called(element) or element
        return self._located(nodes.list_comp(element, [nodes.comprehension(target, source)]), call)

    def _filter(self, call):
        fn, iterable = call.args
        name = self.namer.new('_f')
        test = nodes.name(name) if isinstance(fn, ast.Constant) and fn.value is None else \
            nodes.call(fn, nodes.name(name))
        test = self._made_and_called(test) or test
        made = nodes.list_comp(nodes.name(name), [nodes.comprehension(
            nodes.name(name, store=True), iterable, [test])])
        return self._located(made, call)

    @staticmethod
    def _located(made, call):
        for n in nodes.walk_terms(made):
            if getattr(n, 'lineno', None) is None and not isinstance(n, ast.comprehension):
                nodes.copy_location(n, call)
        return made

    @staticmethod
    def _made_and_called(call):
        """`partial(f, a)(x)` -> `f(a, x)`; `closure(g, n, 0, *v)(x)` -> `g(x, *v)`."""
        inner = call.func
        if not isinstance(inner, ast.Call) or any(isinstance(a, ast.Starred)
                                                  for a in inner.args + call.args):
            return None
        fn = getanno(inner.func, Key.RESOLVED)
        if fn is functools.partial and inner.args:
            written = {k.arg for k in call.keywords}
            keywords = [k for k in inner.keywords if k.arg not in written] + list(call.keywords)
            made = nodes.call(inner.args[0], *inner.args[1:], *call.args, keywords=keywords)
            return nodes.copy_location(made, call)
        if getattr(fn, '__tapeflow_closure__', False) and not call.keywords and \
                ast.is_const(inner.args[2], 0) and ast.is_const(inner.args[1], len(call.args)):
            made = nodes.call(inner.args[0], *call.args, *inner.args[3:])
            return nodes.copy_location(made, call)
        return None


def _simple_function(node) -> bool:
    """A function expression that may be evaluated once per item instead of once."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _simple_function(node.value)
    if isinstance(node, ast.Subscript):         # `TABLE['tanh']`: a function the mapped
        return isinstance(node.slice, ast.Constant) and _simple_function(node.value)
        # function could rebind there only by writing a global or closure value (refused)
    if isinstance(node, ast.Call):
        fn = getanno(node.func, Key.RESOLVED)
        return (fn is functools.partial or getattr(fn, '__tapeflow_closure__', False)) and \
            all(_simple_function(a) for a in node.args) and \
            all(_simple_function(k.value) for k in node.keywords)
    return False
