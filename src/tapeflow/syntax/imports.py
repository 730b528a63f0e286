"""`import` statements inside the function: the modules and names they bind, imported
while compiling.

An import inside a function binds a local name to a module or to a name of one: what
the plain call would bind when the statement runs (importing the module once, as the
first call would). `lower_imports` imports each while compiling, puts a `pass` where the
statement stood, and gives the names and objects, which `resolve` resolves as it
resolves globals. Exact where every import of a name binds the same object and nothing
else binds it; refused, located, otherwise (and `from m import *`).
"""
from __future__ import annotations

import importlib

import gast

from tapeflow.syntax import nodes
from tapeflow.syntax.resolve import local_names


def lower_imports(node: gast.FunctionDef, fn, source) -> dict:
    """{name: object} for the imports of `node`'s own body (a nested def's are its own),
    each import statement replaced by `pass`."""
    found = {}
    package = getattr(fn, '__globals__', {}).get('__package__')
    for block in statement_blocks(node):
        for k, stmt in enumerate(block):
            if not isinstance(stmt, (gast.Import, gast.ImportFrom)):
                continue
            for name, value in _bound(stmt, package, source):
                if name in found and found[name] is not value:
                    raise source.error(stmt, f'{name} is imported twice here, as two different '
                                             f'objects: import each under its own name')
                found[name] = value
            block[k] = nodes.located(gast.Pass(), stmt)
    if found:
        _only_imported(node, found, source)
    return found


def statement_blocks(node):
    """The statement lists of `node`'s body and its compound statements (not nested defs),
    in the order of the text."""
    def inner(block):
        yield block
        for stmt in block:
            if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                continue
            parts = [getattr(stmt, field, None) for field in ('body', 'orelse', 'finalbody')]
            parts[1:1] = [h.body for h in getattr(stmt, 'handlers', None) or ()]
            parts += [case.body for case in getattr(stmt, 'cases', None) or ()]
            for part in parts:
                if isinstance(part, list):
                    yield from inner(part)
    yield from inner(node.body)


def _bound(stmt, package, source):
    """(name, object) for each name `stmt` binds, its modules imported."""
    try:
        if isinstance(stmt, gast.Import):
            for alias in stmt.names:
                module = importlib.import_module(alias.name)
                if alias.asname:
                    yield alias.asname, module
                else:           # `import a.b` binds `a`, with a.b imported
                    top = alias.name.split('.')[0]
                    yield top, importlib.import_module(top)
            return
        name = '.' * stmt.level + (stmt.module or '')
        module = importlib.import_module(name, package if stmt.level else None)
        for alias in stmt.names:
            if alias.name == '*':
                raise source.error(stmt, 'from ... import * inside a function is not Python '
                                         '3; import the names it uses')
            value = getattr(module, alias.name, None)
            if value is None:       # a submodule not imported by its package
                value = importlib.import_module(f'{module.__name__}.{alias.name}')
            yield alias.asname or alias.name, value
    except ImportError as error:
        raise source.error(stmt, f'this import fails while compiling: {error}') from None


def _only_imported(node, found, source):
    """Refuse a name bound by an import that the function binds otherwise too."""
    both = sorted(set(found) & local_names(node))
    if both:
        where = next(n for n in nodes.walk_terms(node) if isinstance(n, gast.Name) and
                     n.id == both[0] and not isinstance(n.ctx, gast.Load))
        raise source.error(where, f'{both[0]} is bound by an import in this function and '
                                  f'here too: tapeflow resolves an imported name once, while '
                                  f'compiling; use another name for one of them')
