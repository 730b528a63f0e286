"""Resolve every free name of a function to the object it denotes.

After `resolve`, each Name in load context that is not a local of the function
carries `Key.RESOLVED` (the object it names, looked up in the closure cells,
then the globals, then the builtins), and so does each dotted chain over a
module or class (`np.linalg.norm`). `Bindings` records what was resolved: the
cache keys generated code on the identities of these objects.
"""
from __future__ import annotations

import builtins
import dataclasses
import types

import gast

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, hasanno, setanno

_MISSING = MISSING = object()       # what `Bindings.lookup` gives for an unbound name


@dataclasses.dataclass
class Bindings:
    """The free names of a function and the objects they denoted when compiled."""
    globals: dict
    closure: dict
    values: dict = dataclasses.field(default_factory=dict)   # name -> object
    # names the compiler introduced for values it computed while compiling
    computed: dict = dataclasses.field(default_factory=dict)  # name -> object
    # the function's defaults (generated code holds their values: `lambda x, k=k`)
    defaults: tuple = ()
    # free names that would shadow a name of the generated module (`range`, `np`, a
    # helper): the user's references renamed (`range_`), bound to the user's object
    renamed: dict = dataclasses.field(default_factory=dict)
    # methods of resolved objects (`norm.logpdf` of a global `norm`): (object, name, function)
    methods: list = dataclasses.field(default_factory=list)
    # names bound by an import inside the function (`syntax.imports`): name -> object
    imported: dict = dataclasses.field(default_factory=dict)

    def lookup(self, name: str):
        if name in self.imported:
            return self.imported[name]
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def key(self) -> tuple:
        """Identities of everything resolved, for the cache."""
        return tuple(sorted((n, id(v)) for n, v in self.values.items()))

    def still_valid(self, fn=None) -> bool:
        """Every resolved name still denotes the same object (in `fn`'s scope if given)."""
        current = self if fn is None else bindings_of(fn)
        return all(current.lookup(n) is v for n, v in self.values.items()) and \
            len(current.defaults) == len(self.defaults) and \
            all(map(_same_value, current.defaults, self.defaults)) and \
            all(bound_method(obj, name) is func for obj, name, func in self.methods)


_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _same_value(a, b) -> bool:
    """The same object, or equal plain values (a def made again in a loop)."""
    return a is b or (type(a) is type(b) and type(a) in _PLAIN and a == b)


def bindings_of(fn) -> Bindings:
    code = fn.__code__
    cells = fn.__closure__ or ()
    closure = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            closure[name] = cell.cell_contents
        except ValueError:          # an empty cell: defined later in the outer scope
            pass
    defaults = tuple(fn.__defaults__ or ()) + tuple(
        part for item in sorted((fn.__kwdefaults__ or {}).items()) for part in item)
    return Bindings(fn.__globals__, closure, defaults=defaults)


_CAPTURES = frozenset({'MatchAs', 'MatchStar', 'MatchMapping'})


def local_names(node: gast.FunctionDef) -> set:
    """Parameters and every name the function body binds (not nested bodies)."""
    names = {a.id for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
    for extra in (node.args.vararg, node.args.kwarg):
        if extra is not None:
            names.add(extra.id)

    stack = list(node.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(n.name)
            continue                    # its body is its own scope
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            names.add(n.id)
        capture = getattr(n, 'rest' if type(n).__name__ == 'MatchMapping' else 'name', None) \
            if type(n).__name__ in _CAPTURES else None
        if isinstance(capture, str):            # a match statement's capture pattern
            names.add(capture)
        stack.extend(nodes.children(n))
    return names


def _resolvable_parent(obj) -> bool:
    return isinstance(obj, (types.ModuleType, type))


def bound_method(obj, name):
    """The function `obj.name` applies when it is a method of `obj`'s class that the
    instance does not shadow (`norm.logpdf` of `scipy.stats.norm`), else None."""
    if isinstance(obj, (types.ModuleType, type)) or name in getattr(obj, '__dict__', ()):
        return None
    func = getattr(type(obj), name, None)
    return func if isinstance(func, types.FunctionType) else None


class _Resolver(nodes.Visitor):
    def __init__(self, local, bindings):
        self.local = local
        self.bindings = bindings

    def visit_FunctionDef(self, node):
        # A nested def: its own locals shadow; the enclosing function's do too.
        inner = _Resolver(self.local | local_names(node), self.bindings)
        for stmt in node.body:
            inner.visit(stmt)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id not in self.local:
            value = self.bindings.lookup(node.id)
            if value is not _MISSING:
                setanno(node, Key.RESOLVED, value)
                if node.id not in self.bindings.imported:   # (the function's own text)
                    self.bindings.values[node.id] = value
                renamed = self.bindings.renamed.get(node.id)
                if renamed is not None:
                    node.id = renamed

    def visit_Attribute(self, node):
        self.generic_visit(node)
        from tapeflow.syntax.anno import getanno, hasanno
        if hasanno(node.value, Key.RESOLVED):
            parent = getanno(node.value, Key.RESOLVED)
            if _resolvable_parent(parent):
                value = getattr(parent, node.attr, _MISSING)
                if value is not _MISSING:
                    setanno(node, Key.RESOLVED, value)
            else:
                func = bound_method(parent, node.attr)
                if func is not None:        # a method of an object: bound to it, as read
                    setanno(node, Key.RESOLVED, getattr(parent, node.attr))
                    self.bindings.methods.append((parent, node.attr, func))


def resolve(node: gast.FunctionDef, fn=None, bindings: Bindings | None = None,
            imported=None) -> Bindings:
    """Annotate `node`'s free names (and those `imported` binds); return what they resolved
    to."""
    if bindings is None:
        bindings = bindings_of(fn)
    bindings.imported.update(imported or {})
    resolver = _Resolver(local_names(node), bindings)
    for default in node.args.defaults:
        resolver.visit(default)
    for stmt in node.body:
        resolver.visit(stmt)
    return bindings


def resolve_expression(expr, local: set, bindings: Bindings) -> None:
    """Annotate the free names of `expr`, written where the names in `local` are locals
    (a default of a nested def, moved to where the def stands)."""
    _Resolver(set(local), bindings).visit(expr)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): `ctx.bindings`, what the free names denote.

    A free name that the generated module binds to something else (a global `range` of the
    user's, `np` bound to another module, a function named like a helper) is renamed in the
    user's code (`range_`): the generated code's own `range` stays the builtin."""
    from tapeflow.syntax.classes import lower_classes
    from tapeflow.syntax.imports import lower_imports
    imported = lower_imports(tree, ctx.fn, ctx.source)
    imported.update(lower_classes(tree, ctx.fn, ctx.source, imported))
    ctx.bindings = bindings = resolve(tree, ctx.fn, imported=imported)
    bindings.computed.update(imported)          # (the generated module binds them)
    reserved = ctx.runtime_names
    shadowing = sorted(n for n, v in {**bindings.values, **imported}.items()
                       if n in reserved and reserved[n] is not v)
    if shadowing:
        bindings.renamed = {n: ctx.namer.new(n + '_') for n in shadowing}
        stack = list(tree.body) + list(tree.args.defaults)
        while stack:                # (a nested def is compiled on its own: it renames its own)
            node = stack.pop()
            if isinstance(node, gast.Name) and node.id in bindings.renamed \
                    and isinstance(node.ctx, gast.Load) and hasanno(node, Key.RESOLVED):
                node.id = bindings.renamed[node.id]
            elif not isinstance(node, gast.FunctionDef):
                stack.extend(nodes.children(node))
        bindings.computed.update((new, bindings.lookup(n)) for n, new in bindings.renamed.items())
    return tree
