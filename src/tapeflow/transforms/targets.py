"""What the reverse and forward transforms both ask of a statement's names.

Which names may hold lists, tuples or dicts (their derivatives accumulate by
structure, never with `+`), and which name an assignment binds. Reads ANF with
`Key.RESOLVED` annotations (after `resolve` and `anf`).
"""
from __future__ import annotations

import builtins
import functools

from tapeflow.rules import registry
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno


def container_kinds(kinds) -> set:
    """Names that hold lists, tuples or dicts somewhere, by `analysis.aliasing`."""
    return {n for n, kind in kinds.items() if kind in ('list', 'tuple', 'dict')}


def opaque_names(fdef) -> set:
    """Names bound to values whose cotangent may be structured though no kind says so:
    what a call resolved at run time returns (`tapeflow.calls`), a closure, a partial,
    and, from them, items, copies and sums."""
    from tapeflow.transforms.operations import is_dynamic_call
    flows, opaque = [], set()
    for stmt in nodes.statements(fdef.body):
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        if isinstance(value, ast.Call):
            fn = getanno(value.func, Key.RESOLVED)
            if getattr(fn, '__tapeflow_closure__', False) or fn is functools.partial:
                opaque.add(name)
                continue
            if is_dynamic_call(value):
                opaque.add(name)
                continue
        flows.append((name, nodes.load_names(value) if isinstance(
            value, (ast.Name, ast.Subscript, ast.BinOp, ast.Call)) else set()))
    changed = True
    while changed:
        changed = False
        for name, reads in flows:
            if name not in opaque and reads & opaque:
                opaque.add(name)
                changed = True
    return opaque


# Helpers of generated code whose results may be lists or tuples (cotangents of containers).
_STRUCTURED_RESULTS = {'untake', 'getitem_adjoint', 'add_adjoint', 'last_adjoint',
                       'drop_last_adjoint', 'setitem_clear_adjoint', 'setitem_value_adjoint'}


def container_names(body, known=()) -> set:
    """Names that may hold lists, tuples or dicts (`known` ones among them): their adjoints
    accumulate by structure (`add_adjoint`), never with `+`, which would concatenate them."""
    names, copies = set(known), []
    for n in nodes.walk_terms(nodes.module(body)):
        if n.__class__ is not ast.Assign and n.__class__ is not ast.Call:
            continue                        # (what follows looks at these two only)
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            if isinstance(n.value, (ast.Tuple, ast.List, ast.ListComp, ast.Dict)):
                names.add(n.targets[0].id)
            if isinstance(n.value, ast.Call) and getattr(getanno(n.value.func, Key.RESOLVED),
                                                          '__name__', None) in _STRUCTURED_RESULTS:
                names.add(n.targets[0].id)
            if isinstance(n.value, ast.Subscript) and isinstance(n.value.value, ast.Name):
                names.add(n.value.value.id)
            if isinstance(n.value, ast.Attribute) and isinstance(n.value.value, ast.Name) \
                    and n.value.attr not in registry.ATTRIBUTES:
                names.add(n.value.value.id)     # a field's cotangent is a dict or a tuple
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == 'append' \
                and isinstance(n.func.value, ast.Name):
            names.add(n.func.value.id)
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name) and getattr(
                getanno(n.func, Key.RESOLVED), '__name__', None) in _STRUCTURED_ARGUMENTS:
            names.add(n.args[0].id)         # the cotangent of a container, read by structure
        if isinstance(n, ast.Call) and _takes_sequences(getanno(n.func, Key.RESOLVED)):
            names |= {a.id for a in n.args if isinstance(a, ast.Name)}
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            if isinstance(n.value, ast.Name):
                copies.append((n.targets[0].id, n.value.id))
            elif _is_dense(n.value):        # `t = dense(dx, x)`: t, dx and x alike
                copies.extend((n.targets[0].id, a.id) for a in n.value.args
                              if isinstance(a, ast.Name))
    changed = True
    while changed:                          # `a = b`: both or neither hold a container
        changed = False
        for a, b in copies:
            if (a in names) != (b in names):
                names |= {a, b}
                changed = True
    return names


def _is_dense(value) -> bool:
    """`dense(t, like)`, the tangent `t` made concrete in the structure of `like`."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id == 'dense' and len(value.args) == 2


_SEQUENCE_BUILTINS = frozenset({builtins.sum, builtins.max, builtins.min, builtins.sorted,
                                builtins.list, builtins.tuple, builtins.zip, builtins.enumerate,
                                builtins.reversed, builtins.any, builtins.all, builtins.map})


def _takes_sequences(fn) -> bool:
    """Builtins whose arguments are sequences (`sum(xs)`): a cotangent of such is a list."""
    try:
        return fn in _SEQUENCE_BUILTINS
    except TypeError:
        return False


# Helpers of generated code whose first argument may be the cotangent of a list or tuple.
_STRUCTURED_ARGUMENTS = {'getitem_adjoint', 'last_adjoint', 'drop_last_adjoint',
                         'setitem_clear_adjoint', 'setitem_value_adjoint',
                         'star_items'}      # (`a, *b = row`: row a list, or an array)


def target_name(stmt):
    """The name an assignment `y = ...` binds, else None."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None
