"""The tape operations of generated code, as the transforms see them again.

Generated code binds its tape's methods once (`_push = _tape.append`,
`_pop = _tape.pop`). When generated code is differentiated again (higher
order), the forward and reverse transforms recognise these bindings: a pushed
value travels to its pop through the tape, a flow no assignment shows.

Which names are tapes is told, never guessed: `tapes`, the compile context's
field (`transforms.context`), names them; user code has none, whatever its
names look like.
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.rules import registry
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno


def carries_tape(args, tapes) -> bool:
    """A call given generated code's own tape: its callee pushes or pops on it."""
    return bool(tapes) and any(isinstance(a, ast.Name) and a.id in tapes for a in args)


def tape_ops(node, tapes) -> dict:
    """Names bound to a tape's push and pop (`_push = _tape.append`) in generated code."""
    return {name: kind for name, (kind, _) in tape_bindings(node, tapes).items()}


def tape_bindings(node, tapes) -> dict:
    """name -> ('push' or 'pop', the tape's name), for `_push = _tape.append` and the like."""
    ops = {}
    if not tapes:
        return ops
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Attribute) and n.value.attr in ('append', 'pop') \
                and isinstance(n.value.value, ast.Name) and n.value.value.id in tapes:
            ops[n.targets[0].id] = ('push' if n.value.attr == 'append' else 'pop', n.value.value.id)
    return ops


def pushed_names(node, tapes) -> set:
    """Names pushed on a tape (directly, or by a callee given the tape): their
    derivatives are read later, through the tape."""
    ops = tape_ops(node, tapes)
    out = set()
    for n in nodes.walk_terms(node):
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Name) and ops.get(n.func.id) == 'push':
            if n.args and isinstance(n.args[0], ast.Name):
                out.add(n.args[0].id)
        elif carries_tape(n.args, tapes) \
                and not registry.is_nondifferentiable(getanno(n.func, Key.RESOLVED)):
            out.update(a.id for a in n.args if isinstance(a, ast.Name) and a.id not in tapes)
    return out


def popped_names(node, tapes) -> set:
    """Names assigned a value popped from a tape (directly, or by a callee given
    the tape): inputs the tape carries in."""
    ops = tape_ops(node, tapes)
    out = set()
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Call):
            func, args = n.value.func, n.value.args
            if isinstance(func, ast.Name) and ops.get(func.id) == 'pop':
                out.add(n.targets[0].id)
            elif carries_tape(args, tapes) \
                    and not registry.is_nondifferentiable(getanno(func, Key.RESOLVED)):
                out.add(n.targets[0].id)
    return out
