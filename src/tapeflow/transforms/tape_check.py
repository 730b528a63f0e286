"""Checks, under `__debug__`, that generated code pops exactly what it pushes.

Runs last, on the three generated functions of one compilation (after the
tape bindings a function does not use are dropped). Guarantees:

- the combined function that keeps a tape ends with `assert not _tape`: every
  push had its pop;
- a forward that pushes notes the tape's depth at its start and pushes it last;
  its backward takes it first and checks at its end that the tape is back at
  that depth: the backward popped exactly what the forward pushed.

A failed check is an AssertionError naming the function: an error of tapeflow,
never of the user's code. `python -O` compiles the checks away (`assert` and
`if __debug__:` both), so they cost nothing there.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.transforms.assemble import unit_roles


def _message(fname: str, what: str) -> str:
    return f'tapeflow internal error: {fname} {what}'


def _binds(fdef, name) -> bool:
    return any(isinstance(s, ast.Assign) and getattr(s.targets[0], 'id', None) == name
               for s in fdef.body)


def transform(combined, forward, backward, names, namer):
    """Add the checks to the three functions (edited in place)."""
    check_combined(combined, names)
    check_pair(forward, backward, names, namer)


def check_combined(combined, names):
    if _binds(combined, names.tape):
        check = nodes.assert_(nodes.not_(names.tape),
                              _message(combined.name, 'left values on its tape'))
        combined.body.insert(len(combined.body) - 1, check)


def check_pair(forward, backward, names, namer):
    if not _binds(forward, names.push):
        return                      # (nothing pushed: nothing to pop)
    depth = namer.new('_depth')
    start = nodes.if_('__debug__', [nodes.assign(depth, nodes.call('len', names.tape))])
    save = nodes.if_('__debug__', [nodes.expr_stmt(nodes.call(names.push, depth))])
    forward.body.insert(1, start)
    forward.body.insert(len(forward.body) - 1, save)
    if not _binds(backward, names.pop):
        backward.body.insert(0, nodes.assign(names.pop, nodes.attribute(names.tape, 'pop')))
    take = nodes.if_('__debug__', [nodes.assign(depth, nodes.call(names.pop))])
    check = nodes.assert_(nodes.compare(nodes.call('len', names.tape), ast.Eq(), depth),
                          _message(backward.name, 'popped other than its forward pushed'))
    backward.body.insert(1, take)
    backward.body.insert(len(backward.body) - 1, check)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): reverse mode's functions (all three, or
    the combined one and, later, the split pair: `assemble.defer`)."""
    unit = unit_roles(tree, ctx)
    if 'combined' in unit:
        check_combined(unit['combined'], ctx.names)
    if 'forward' in unit:
        check_pair(unit['forward'], unit['backward'], ctx.names, ctx.namer)
    return tree
