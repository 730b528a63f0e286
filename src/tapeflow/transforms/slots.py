"""Slots: a loop over `range(n)` at the top of the combined function keeps what a trip
saves in a list indexed by the trip, not on the tape.

    _range = range(100)                      _range = range(100)
    for i in _range:                         _xs = [None] * len(_range)
        _push(x)                             for i in _range:
        x = math.sin(x) * x + 0.5 * x   ->       _xs[i] = x
    _push(len(_range))                           x = math.sin(x) * x + 0.5 * x
    ...                                      ...
    for _ in range(_pop()):                  for _trip in reversed(_range):
        x = _pop()                               x = _xs[_trip]

A store and a load by index cost the interpreter less than calls of the tape's `append`
and `pop`: the loop saves and restores the same values in the same trips. Only where that
is plain from the code: the range has one argument, is bound once and the loop's variable
is not rebound in the body (so it counts the trips from 0); the push runs once a trip, at
the top of the loop's body, and its pop (`Key.TAPE_PAIR`) at the top of the reverse
loop's, which runs the range backwards (`reversed(_range)`, or the trip count the loop
pushed). Other pushes of the loop stay on the tape, in their order.

The combined function only: the split pair's backward does not see `_range`, and it is
what code differentiated again reads. Not with `compile='numba'` (its tapes are its own)
or checkpointed loops. Runs before `tape_check`, which then finds the tape unused.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.assemble import trim_tape, unit_roles


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): the combined function's top-level loops."""
    combined = unit_roles(tree, ctx).get('combined')
    if combined is not None and ctx.optimize and not ctx.loops_checkpointed:
        if transform(combined, ctx.names, ctx.namer):
            trim_tape(combined, ctx.names, ctx.tape_reads)
    return tree


def transform(fdef, names, namer) -> bool:
    """Rewrite `fdef`'s top-level range loops (a new body: statements are shared with the
    split pair); whether any changed."""
    body = fdef.body
    ranges = {s.iter.id for s in body if isinstance(s, ast.For) and isinstance(s.iter, ast.Name)}
    if not ranges:
        return False
    stores = _stores(fdef.body, ranges)
    changed, at = False, 0
    while at < len(body):
        stmt = body[at]
        iterations = _range_loop(stmt, body, stores)
        counted = iterations and _trip_count_push(body, at, iterations, names.push)
        back = iterations and _reverse_loop(body, at, iterations, counted, names.pop)
        pairs = back and _pairs(stmt.body, body[back].body, names)
        if pairs:
            body = _rewritten(body, at, back, counted, pairs, iterations, namer)
            at += len(pairs)                # (past the slots made before the loop)
            changed = True
        at += 1
    if changed:
        fdef.body = [s for s in body if s is not None]
    return changed


def _stores(body, names) -> dict:
    """{name: times bound} of `names` in `body` (a statement's targets, a loop's variable)."""
    out = {}
    for stmt in nodes.statements(body):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.For) else ()
        for target in targets:
            for node in nodes.walk_terms(target):
                if isinstance(node, ast.Name) and node.id in names:
                    out[node.id] = out.get(node.id, 0) + 1
    return out


def _range_loop(stmt, body, stores):
    """The name of the range `stmt` loops over, when it is a loop counting trips from 0:
    `for i in _range` with `_range = range(n)` bound once, before, and `i` not rebound."""
    if not (isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Name)
            and isinstance(stmt.target, ast.Name) and not stmt.orelse):
        return None
    iterations = stmt.iter.id
    if stores.get(iterations) != 1 or stmt.target.id in nodes.store_names(stmt.body):
        return None
    for other in body:
        if other is stmt:
            return None
        if ast.assigned_name(other) == iterations:
            call = other.value
            one = ast.called_name(call) == 'range' and len(call.args) == 1 and not call.keywords \
                and not isinstance(call.args[0], ast.Starred)
            return iterations if one else None
    return None


def _trip_count_push(body, at, iterations, push):
    """`_push(len(_range))` right after the loop at `at`, or None."""
    after = body[at + 1] if at + 1 < len(body) else None
    if _pushed(after, push) is not None and ast.called_name(after.value.args[0]) == 'len' \
            and [ast.name_id(a) for a in after.value.args[0].args] == [iterations]:
        return after
    return None


def _reverse_loop(body, at, iterations, counted, pop):
    """Where the loop running `iterations` backwards is: `for t in reversed(_range)`, or
    `for _ in range(_pop())` popping the trip count `counted` pushed."""
    for k in range(at + 1, len(body)):
        stmt = body[k]
        if not isinstance(stmt, ast.For) or stmt.orelse:
            continue
        header = stmt.iter
        if ast.called_name(header) == 'reversed' and \
                [ast.name_id(a) for a in header.args] == [iterations] and \
                isinstance(stmt.target, ast.Name) and \
                stmt.target.id not in nodes.store_names(stmt.body):
            return k
        if counted is not None and ast.called_name(header) == 'range' and len(header.args) == 1 \
                and _popped(header.args[0], pop) and \
                getanno(stmt, Key.TAPE_PAIR) == getanno(counted, Key.TAPE_PAIR) is not None:
            return k
    return None


def _pairs(forward, reverse, names) -> dict:
    """{pair: (push statement, pop statement)} of the pushes at the top of the loop's body
    whose pops are at the top of the reverse loop's (each of their pair)."""
    pushes = {}
    for stmt in forward:
        if _pushed(stmt, names.push) is not None and getanno(stmt, Key.TAPE_PAIR) is not None:
            pushes.setdefault(getanno(stmt, Key.TAPE_PAIR), []).append(stmt)
    pops = {}
    for stmt in nodes.statements(reverse):
        pair = getanno(stmt, Key.TAPE_PAIR)
        if pair in pushes:
            pops.setdefault(pair, []).append(stmt)
    for stmt in nodes.statements(forward):
        pair = getanno(stmt, Key.TAPE_PAIR)
        if pair in pushes and stmt not in pushes[pair]:
            pushes[pair].append(stmt)       # (pushed in a branch too: stays on the tape)
    out = {}
    for stmt in reverse:
        pair = getanno(stmt, Key.TAPE_PAIR)
        if len(pushes.get(pair, ())) == 1 and pops.get(pair) == [stmt] and \
                isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                _popped(stmt.value, names.pop):
            out[pair] = pushes[pair][0], stmt
    return out


def _rewritten(body, at, back, counted, pairs, iterations, namer) -> list:
    loop, rev = body[at], body[back]
    index = rev.target.id if counted is None else namer.new('_trip')
    slots, saved, restored = [], {}, {}
    for push, pop in pairs.values():
        value = push.value.args[0]
        slot = namer.new(f"_{value.id.lstrip('_')}s" if isinstance(value, ast.Name) else '_saved')
        slots.append(nodes.copy_location(nodes.assign(slot, nodes.binop(
            nodes.list_(nodes.const(None)), ast.Mult(), nodes.call('len', iterations))), loop))
        saved[id(push)] = nodes.copy_location(nodes.assign(
            nodes.subscript(slot, nodes.name(loop.target.id), store=True), value), push)
        restored[id(pop)] = nodes.copy_location(nodes.assign(
            pop.targets[0], nodes.subscript(slot, nodes.name(index))), pop)
    loop = nodes.shallow_copy(loop)
    loop.body = [saved.get(id(s), s) for s in loop.body]
    rev = nodes.shallow_copy(rev)
    rev.body = [restored.get(id(s), s) for s in rev.body]
    if counted is not None:
        rev.target = nodes.name(index, store=True)
        rev.iter = nodes.call('reversed', iterations)
    body = list(body)
    body[at:at + 1] = slots + [loop]
    shift = len(slots)
    body[back + shift] = rev
    if counted is not None:
        body[at + shift + 1] = None         # (the trip count: the range says it)
    return body


def _pushed(stmt, push):
    """The value `stmt` pushes (`_push(v)`), or None."""
    if isinstance(stmt, ast.Expr) and ast.called_name(stmt.value) == push \
            and len(stmt.value.args) == 1 and not stmt.value.keywords:
        return stmt.value.args[0]
    return None


def _popped(node, pop) -> bool:
    return ast.called_name(node) == pop and not node.args and not node.keywords
