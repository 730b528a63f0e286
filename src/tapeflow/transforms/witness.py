"""Shape witnesses: push what `unbroadcast` reads of a value, not the value.

Generic code (shapes unknown) keeps `unbroadcast(g, x)` for the operands of
every broadcasting operation, so a name rebound in a loop is pushed on the tape
only for the reverse sweep to read its shape there. This pass, run on the
finished functions, finds the names the reverse sweep reads only as the second
argument of `unbroadcast` and pushes `shape_witness(x)` for them instead
(`rules.shapes`): for a NumPy array, a stand-in of the same class, shape and
dtype holding one zero, so the tape no longer keeps the array alive;
`unbroadcast` computes from it the very same cotangent, of the same type.

A witness lands only in the name it stands for: the reverse transform restores
a name from its own pushes (`_push(x)` ... `x = _pop()`), and a name is taken
only where its pushes and its restores are as many. Not run on checkpointed
code, whose forward sweep runs again in the reverse one.
"""
from __future__ import annotations

import math

from tapeflow.syntax import ast
from tapeflow.syntax import nodes
from tapeflow.transforms.assemble import unit_roles
from tapeflow.transforms import fusion
from tapeflow.transforms.fusion import copy_blocks

WITNESS = 'shape_witness'


def transform(forward: list, reverse: list, push: str, pop: str, params=()) -> list:
    """`forward` (a block; a copy where it changes) pushing witnesses for the names
    that `reverse` (the sweep popping what `forward` pushed) reads only as shapes, and
    that hold arrays (`_array_valued`; `params`, the function's, are not known to)."""
    pushes = _pushed(forward, push)
    witnessed = set(pushes) and set(pushes) & _array_valued(forward, set(params))
    if witnessed:
        restores = _restored(reverse, pop)
        witnessed = _shape_only(reverse, {n for n in witnessed if pushes[n] == restores.get(n)})
    return _with_witnesses(forward, witnessed, push) if witnessed else forward


def unread(forward: list, reverse: list, push: str, pop: str):
    """(forward, reverse) without the names pushed in tuples that `reverse` restores as
    often from tuples and then never reads (a later pass made their reads go: `factor`
    reads `_mul2 = -0.5 * x` as `x`); each block a copy where it changes, or None where
    nothing is dropped. A tuple keeps one name at least."""
    pushes, restores = _pushed(forward, push, tuples=True), _restored(reverse, pop, tuples=True)
    dropped = {n for n, k in pushes.items() if restores.get(n) == k} - _loads(reverse)
    if not dropped:
        return None
    for block, is_tuple in ((forward, lambda s: _is_push(s, push) and isinstance(
            s.value.args[0], ast.Tuple)), (reverse, lambda s: _restore_targets(s, pop)
                                           and isinstance(s.targets[0], ast.Tuple))):
        for stmt in nodes.statements(block):        # (every tuple keeps a name)
            if is_tuple(stmt):
                elts = stmt.value.args[0].elts if block is forward else stmt.targets[0].elts
                if all(isinstance(e, ast.Name) and e.id in dropped for e in elts):
                    dropped -= {e.id for e in elts}
    if not dropped:
        return None

    def rewrite(block):
        block = copy_blocks(block, rewrite)
        for k, stmt in enumerate(block):
            if _is_push(stmt, push) and isinstance(stmt.value.args[0], ast.Tuple):
                kept = [e for e in stmt.value.args[0].elts if not _named(e, dropped)]
                if len(kept) < len(stmt.value.args[0].elts):
                    block[k] = nodes.copy_location(
                        nodes.expr_stmt(nodes.call(push, nodes.tuple_(*kept))), stmt)
            elif _restore_targets(stmt, pop) and isinstance(stmt.targets[0], ast.Tuple):
                kept = [e for e in stmt.targets[0].elts if not _named(e, dropped)]
                if len(kept) < len(stmt.targets[0].elts):
                    new = nodes.assign(nodes.tuple_(*[nodes.name(e.id) for e in kept]),
                                       stmt.value)
                    new.targets[0].ctx = nodes.Store()
                    block[k] = nodes.copy_location(new, stmt)
        return block
    return rewrite(forward), rewrite(reverse)


def _named(e, names) -> bool:
    return isinstance(e, ast.Name) and e.id in names


def _loads(block) -> set:
    out = set()
    for stmt in block:
        nodes.load_names(stmt, out)
    return out


def _with_witnesses(forward, witnessed, push):
    """`forward` pushing `shape_witness(x)` for each name `x` in `witnessed`."""

    def rewrite(block):
        block = copy_blocks(block, rewrite)
        for k, stmt in enumerate(block):
            if _is_push(stmt, push):
                new = _witnessed(stmt.value.args[0], witnessed)
                if new is not stmt.value.args[0]:
                    block[k] = nodes.copy_location(nodes.expr_stmt(nodes.call(push, new)), stmt)
        return block
    return rewrite(forward)


def _array_valued(block, params) -> set:
    """Names every assignment of which (but `None`, a prologue's) is a matrix product or
    arithmetic on one: NumPy arrays (or NumPy scalars), never Python numbers, so that a
    witness costs less than what it frees."""
    values, other = {}, set(params)
    for stmt in nodes.statements(block):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            values.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, ast.Assign):                  # (a, b) = ..., x[i] = ...
            other |= {n.id for t in stmt.targets for n in nodes.walk_terms(t) if isinstance(n, ast.Name)}
        elif isinstance(stmt, ast.For):
            other |= {n.id for n in nodes.walk_terms(stmt.target) if isinstance(n, ast.Name)}
        elif not isinstance(stmt, _BINDING_NOTHING):      # anything else: all it names
            other |= nodes.names_in(stmt)
    arrays = {n for n, vs in values.items() if n not in other
              and all(v.__class__ in _ARITHMETIC or v.__class__ is ast.Constant and v.value is None
                      for v in vs)}

    def array(v):
        if v.__class__ is ast.Name:
            return v.id in arrays
        if v.__class__ is ast.BinOp:
            return v.op.__class__ is ast.MatMult or array(v.left) or array(v.right)
        return v.__class__ is ast.UnaryOp and array(v.operand)
    changed = True
    while changed:
        changed = False
        for name in list(arrays):
            if not all(v.__class__ is ast.Constant or array(v) for v in values[name]):
                arrays.discard(name)
                changed = True
    return arrays


_ARITHMETIC = frozenset({ast.BinOp, ast.UnaryOp, ast.Name})
_BINDING_NOTHING = (ast.Expr, ast.If, ast.While, ast.Return, ast.Pass, ast.Break)


def _witnessed(value, witnessed):
    if isinstance(value, ast.Name) and value.id in witnessed:
        return nodes.call(WITNESS, value.id)
    if isinstance(value, ast.Tuple) and any(isinstance(e, ast.Name) and e.id in witnessed
                                            for e in value.elts):
        return nodes.tuple_(*[_witnessed(e, witnessed) for e in value.elts])
    return value


def _is_push(stmt, push) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == push \
        and len(stmt.value.args) == 1 and not stmt.value.keywords


def _shape_only(block, names) -> set:
    """Those of `names` that `block` reads only as `unbroadcast`'s second argument."""
    whole = set()
    for stmt in block:
        if names.isdisjoint(nodes.load_names(stmt)):      # (most statements: no walk)
            continue
        shapes = set()
        for n in nodes.walk_terms(stmt):
            if n.__class__ is ast.Call and isinstance(n.func, ast.Name) \
                    and n.func.id == 'unbroadcast' and len(n.args) == 2 and not n.keywords \
                    and isinstance(n.args[1], ast.Name):
                shapes.add(id(n.args[1]))
            elif n.__class__ is ast.Name and n.id in names and id(n) not in shapes \
                    and isinstance(n.ctx, ast.Load):
                whole.add(n.id)
    return names - whole


def _restore_targets(stmt, pop):
    """The names `x = _pop()`, `(x, y) = _pop()` or `x = _pop()[0]` restores, else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    value = stmt.value
    if isinstance(value, ast.Subscript):
        value = value.value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == pop and not value.args):
        return None
    target = stmt.targets[0]
    elts = target.elts if isinstance(target, ast.Tuple) else [target]
    return [e.id for e in elts if isinstance(e, ast.Name)]


def _pushed(block, push, tuples=False):
    """{name: times pushed} in `block` (`tuples`: those pushed in tuples only; any other
    push of the name counts as never restored)."""
    pushed = {}
    for stmt in nodes.statements(block):
        if _is_push(stmt, push):
            value = stmt.value.args[0]
            if tuples and not isinstance(value, ast.Tuple):
                for e in nodes.walk_terms(value):
                    if isinstance(e, ast.Name):
                        pushed[e.id] = math.nan       # (equal to no count)
                continue
            for e in value.elts if isinstance(value, ast.Tuple) else [value]:
                if isinstance(e, ast.Name):
                    pushed[e.id] = pushed.get(e.id, 0) + 1
    return pushed


def _restored(block, pop, tuples=False):
    """{name: times restored} in `block` (`tuples`: from tuples only, as `_pushed`)."""
    restored = {}
    for stmt in nodes.statements(block):
        names = _restore_targets(stmt, pop) or ()
        if tuples and names and not (isinstance(stmt.targets[0], ast.Tuple)
                                     and not isinstance(stmt.value, ast.Subscript)):
            restored.update(dict.fromkeys(names, math.nan))
            continue
        for name in names:
            restored[name] = restored.get(name, 0) + 1
    return restored


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`), reverse mode, when optimizing and no loop
    was checkpointed: the combined function's forward part and the split forward push
    witnesses where their reverse sweeps read shapes only, and nothing their reverse
    sweeps restore and never read (then fused again, where a value lost its push)."""
    if not ctx.optimize or ctx.loops_checkpointed:
        return tree
    names, unit = ctx.names, unit_roles(tree, ctx)
    if 'combined' in unit:
        combined = unit['combined']
        at = next(k for k, stmt in enumerate(combined.body)
                  if ast.assigned_name(stmt) == names.value)
        forward, reverse = combined.body[:at], combined.body[at:]
        dropped = unread(forward, reverse, names.push, names.pop)
        if dropped:
            forward, reverse = dropped
        combined.body = transform(forward, reverse, names.push, names.pop, ctx.params) + reverse
        if dropped:
            _fused_again(tree, unit, 'combined', ctx)
    if 'forward' in unit:
        fwd_fn, bwd_fn = unit['forward'], unit['backward']
        dropped = unread(fwd_fn.body, bwd_fn.body, names.push, names.pop)
        if dropped:
            fwd_fn.body, bwd_fn.body = dropped
        fwd_fn.body = transform(fwd_fn.body, bwd_fn.body, names.push, names.pop, ctx.params)
        if dropped:
            _fused_again(tree, unit, 'forward', ctx)
    return tree


def _fused_again(tree, unit, role, ctx):
    """Fuse `unit[role]` again (in `tree`): a value that lost its push may have one reader."""
    fdef = unit[role]
    k = next(i for i, f in enumerate(tree.body) if f is fdef)
    tree.body[k] = fusion.transform(fdef, **ctx.fusion_options())
