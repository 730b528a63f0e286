"""Desugar, what the code after a `try`/`with` body knows of the names it gives back
(`sugar.exceptions`): the names a block binds (`binds`), and the kind of one every binding
of which makes a new dict or list (`kept_of`: `guards.kept_dict`, `guards.kept_list`), so
that its methods after the body are lowered as its writes.
"""
from __future__ import annotations

from tapeflow.rules import guards
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.sugar.written import own_statements


def binds(stmts) -> set:
    """The names a block binds itself (nested blocks too, not nested defs' bodies)."""
    out = set()
    for stmt in own_statements(stmts):
        if isinstance(stmt, ast.FunctionDef):
            out.add(stmt.name)
            continue
        targets = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [stmt.target]
        elif isinstance(stmt, ast.With):
            targets = [item.optional_vars for item in stmt.items if item.optional_vars]
        for handler in getattr(stmt, 'handlers', None) or ():
            if handler.name is not None:
                out.add(handler.name.id if isinstance(handler.name, ast.Name) else handler.name)
        for target in targets:
            out |= {n.id for n in nodes.walk_terms(target) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}       # (not x, i of x[i] = v)
        for n in nodes.walk_terms(stmt) if not isinstance(stmt, (ast.For, ast.While, ast.If,
                                                                  ast.Try, ast.With)) else ():
            if isinstance(n, ast.NamedExpr):
                out.add(n.target.id)
    return out


_NEW = {ast.Dict: 'dict', ast.DictComp: 'dict', ast.List: 'list', ast.ListComp: 'list'}


def kept_of(root, name) -> str:
    """The `rules.guards` function giving back `name` after a body: `kept_dict` where every
    binding of `name` in the function (this body's, others' given back, its own) makes a
    new dict (`{...}`, a dict comprehension, `dict(...)`; `kept_list` for lists), so that
    the code after the body knows its kind; else `kept_value`."""
    if name in {a.id for a in root.args.args}:
        return 'kept_value'
    kinds = set()
    for stmt in own_statements(root.body):
        if isinstance(stmt, ast.FunctionDef):
            if stmt.name == name:
                return 'kept_value'
            continue
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            continue                    # (`rows += [...]`, `d |= {...}`: the same object)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name):
            if stmt.targets[0].id != name:
                continue
            value = stmt.value
            kind = _NEW.get(type(value))
            if isinstance(value, ast.Call):
                fn = getanno(value.func, Key.RESOLVED)
                kind = 'dict' if fn is dict else 'list' if fn is list else next(
                    (k for k, f in guards.KEPT_OF_KIND.items() if fn is f), None)
            kinds.add(kind)
            continue
        if name in _bound_by_itself(stmt):
            return 'kept_value'         # (a loop's or a manager's target, `:=`, `as e`...)
    return f'kept_{kinds.pop()}' if len(kinds) == 1 and None not in kinds else 'kept_value'


def _bound_by_itself(stmt) -> set:
    """The names `stmt` itself binds (a compound statement's head, not its blocks)."""
    if isinstance(stmt, ast.For):
        heads = [stmt.target, stmt.iter]
    elif isinstance(stmt, (ast.While, ast.If)):
        heads = [stmt.test]
    elif isinstance(stmt, ast.With):
        heads = [part for item in stmt.items for part in (item.context_expr, item.optional_vars)
                 if part is not None]
    elif isinstance(stmt, ast.Try):
        return {getattr(h.name, 'id', h.name) for h in stmt.handlers if h.name is not None}
    else:
        return binds([stmt])
    return {n.id for head in heads for n in nodes.walk_terms(head) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)} | \
        {n.target.id for head in heads for n in nodes.walk_terms(head)
         if isinstance(n, ast.NamedExpr)}
