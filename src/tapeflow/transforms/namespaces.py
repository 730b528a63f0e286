"""Code written against the array API: `xp = array_namespace(x)`, then `xp.exp(z)`.

`xp` is known only when the code runs, so its functions cannot be resolved while
compiling. This step (the first of desugar) rewrites each call `xp.NAME(args)`
into `NAME(xp, args)` with the function of that name in `rules/array_api.py`,
which calls `xp.NAME(args)` and whose rules are written with the same functions:
the primal and its derivative both compute in the namespace the code runs in.

A name is a namespace when it is assigned once in the function, from
`array_api_compat`'s `array_namespace(...)` / `get_namespace(...)` or from
`x.__array_namespace__()` (rewritten to `rules.array_api.namespace_of(x)`). A
function of it that `rules/array_api.py` does not know is a located error.
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.rules import registry
from tapeflow.rules.array_api import FUNCTIONS, namespace_of
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, hasanno, setanno

__all__ = ['rewrite']

_GETTERS = ('array_namespace', 'get_namespace')


def rewrite(node: ast.FunctionDef, namer, source, bindings) -> None:
    names = _namespace_names(node, namer, bindings)
    if names:
        _Calls(names, namer, source, bindings).visit(node)


def _is_getter(call, names=()) -> bool:
    """`array_namespace(...)` of array_api_compat, or `x.__array_namespace__()`."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == '__array_namespace__' and not call.args:
        return True
    fn = getanno(func, Key.RESOLVED) if hasanno(func, Key.RESOLVED) else None
    return getattr(fn, '__name__', None) in _GETTERS and \
        (getattr(fn, '__module__', None) or '').startswith('array_api_compat')


def _namespace_names(node, namer, bindings) -> set:
    """Names assigned exactly once, from a namespace getter (the getter made a
    non-differentiable call of `namespace_of`)."""
    getters = [n for n in nodes.walk_terms(node) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and _is_getter(n.value)]
    if not getters:                 # most functions: no need to count the stores
        return set()
    stores = {}
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    names = set()
    for n in getters:
        if stores.get(n.targets[0].id) == 1:
            names.add(n.targets[0].id)
            n.value = _namespace_call(n.value, namer, bindings)
    return names


def _bound(value, stem, namer, bindings, like):
    name = next((k for k, v in bindings.computed.items() if v is value), None)
    if name is None:
        name = namer.new(stem)
        bindings.computed[name] = value
    func = nodes.copy_location(nodes.name(name), like)
    setanno(func, Key.RESOLVED, value)
    return func


def _namespace_call(call, namer, bindings):
    """The getter as `namespace_of(arrays...)`: one non-differentiable call."""
    args = [call.func.value] if isinstance(call.func, ast.Attribute) else list(call.args)
    if not isinstance(call.func, ast.Attribute):
        registry.nondifferentiable(getanno(call.func, Key.RESOLVED))
        return call
    func = _bound(namespace_of, '_namespace_of', namer, bindings, call)
    return nodes.copy_location(nodes.call(func, *args), call)


class _Calls(nodes.Transformer):
    def __init__(self, names, namer, source, bindings):
        self.names, self.namer, self.source, self.bindings = names, namer, source, bindings

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in self.names):
            return node
        fn = FUNCTIONS.get(func.attr)
        if fn is None:
            raise self.source.error(node, f'{func.value.id}.{func.attr}: tapeflow has no rule for '
                                          f'the array API function {func.attr!r} -- write it with '
                                          f'the functions of docs/scaling-out.md (Array API)')
        xp = nodes.copy_location(nodes.name(func.value.id), func.value)
        call = nodes.call(_bound(fn, f'_xp_{func.attr}', self.namer, self.bindings, func),
                          xp, *node.args, keywords=list(node.keywords))
        return nodes.copy_location(call, node)
