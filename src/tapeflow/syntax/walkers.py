"""Walking syntax trees: the nodes under a node, the names it reads or binds, the
statements of a block. Faster than gast's `walk`: a compilation walks its trees dozens
of times (`syntax.nodes` re-exports these names)."""
from __future__ import annotations

import gast


def statements(body):
    """Every statement of a block, nested blocks too (not expressions)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in ('orelse', 'body'):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(reversed(block))


def own_nodes(stmt):
    """The nodes of `stmt` outside its nested blocks (a loop's header, not its body)."""
    for field in stmt._fields:
        if field in ('body', 'orelse'):
            continue
        value = getattr(stmt, field, None)
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, gast.AST):
                yield from walk(part)


def store_names(body) -> set:
    """Names a block assigns (targets, loop variables, nested defs)."""
    out = set()
    for stmt in statements(body):
        if isinstance(stmt, gast.Assign):
            for target in stmt.targets:
                if isinstance(target, gast.Name):
                    out.add(target.id)
                elif isinstance(target, (gast.Tuple, gast.List)):
                    out |= {e.id for e in target.elts if isinstance(e, gast.Name)}
        elif isinstance(stmt, gast.For) and isinstance(stmt.target, gast.Name):
            out.add(stmt.target.id)
        elif isinstance(stmt, gast.FunctionDef):
            out.add(stmt.name)
    return out


def walk(node):
    """Every node under `node` (itself first), in `ast.walk`'s order and as lazily: a
    node's children are read just before it is yielded. About twice as fast."""
    return _walk(node, _CHILD_FIELDS)


def walk_terms(node):
    """`walk` without the contexts and operators (`Load`, `Add`: leaves, so the other
    nodes come in the same order): for scans that look for names, calls, statements.
    About a third faster again."""
    return _walk(node, _TERM_FIELDS)


def _walk(node, fields_by_class):
    todo = [node]
    AST = gast.AST
    fields_of = fields_by_class.get
    for n in todo:                  # the list grows as it is read: breadth first
        fields = fields_of(n.__class__)
        if fields is None:
            fields = _fields_of(n.__class__, fields_by_class)
        for field in fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                todo.extend([v for v in value if isinstance(v, AST)])
            elif isinstance(value, AST):
                todo.append(value)
        yield n


def children(node) -> list:
    """The nodes right under `node` but contexts and operators (`walk_terms`'s steps)."""
    fields = _TERM_FIELDS.get(node.__class__)
    if fields is None:
        fields = _fields_of(node.__class__, _TERM_FIELDS)
    out = []
    for field in fields:
        value = getattr(node, field, None)
        if value.__class__ is list:
            out.extend([v for v in value if isinstance(v, gast.AST)])
        elif isinstance(value, gast.AST):
            out.append(value)
    return out


# Fields that never hold a node (identifiers, flags, a constant's value): not read.
_LEAF_FIELDS = frozenset({'id', 'attr', 'arg', 'type_comment', 'kind', 'level', 'module',
                          'is_async', 'conversion', 'simple'})
_CHILD_FIELDS: dict = {}    # node class -> the fields `walk` reads
_TERM_FIELDS: dict = {}     # node class -> the fields `walk_terms` and the name scans read


def _fields_of(cls, fields_by_class):
    skipped = _LEAF_FIELDS if fields_by_class is _CHILD_FIELDS \
        else _LEAF_FIELDS | _NAMELESS_FIELDS
    if cls is gast.Constant:
        skipped = skipped | {'value'}
    fields = fields_by_class[cls] = tuple(f for f in getattr(cls, '_fields', ()) if f not in skipped)
    return fields


# Fields that hold no names: contexts and operators (`load_names` skips them).
_NAMELESS_FIELDS = frozenset({'ctx', 'op', 'ops'})


def load_names(node, out=None) -> set:
    """Names read in `node` (a faster `gast.walk` for the analyses' hot loop)."""
    return _names(node, set() if out is None else out, gast.Load)


def name_counts(node):
    """({name: times read}, {name: times bound}) under `node` (the `load_names` scan)."""
    loads, stores = {}, {}
    _names(node, None, counts=(loads, stores))
    return loads, stores


def _names(node, out, context=None, counts=None) -> set:
    """Add to `out` the ids of the Name nodes under `node` (of that `context` class only);
    with `counts`, (reads, bindings), count them there instead."""
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    Name, AST, Load = gast.Name, gast.AST, gast.Load
    fields_of = _TERM_FIELDS.get       # (the fields that may hold names)
    while stack:
        n = pop()
        cls = n.__class__
        if cls is Name:
            if counts is not None:
                table = counts[n.ctx.__class__ is not Load]
                table[n.id] = table.get(n.id, 0) + 1
            elif context is None or n.ctx.__class__ is context:
                out.add(n.id)
            continue
        fields = fields_of(cls)
        if fields is None:
            if not isinstance(n, AST):
                continue
            fields = _fields_of(cls, _TERM_FIELDS)
        for field in fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
    return out


def names_in(node) -> set:
    """Every identifier read or written in `node`."""
    return _names(node, set())


def loaded_names(node) -> set:
    return {n.id for n in walk(node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
