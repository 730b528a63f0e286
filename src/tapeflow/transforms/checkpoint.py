"""Checkpointed loops: trade recomputation for tape memory (`grad(f, checkpoint=...)`).

Runs after `optimize`, on the combined function's sweeps. A loop of the
forward sweep and its mirror in the reverse sweep (they share a
`Key.TAPE_PAIR`: the trip count's push and pop) become:

    _ck = checkpoints(len(_range), policy)         # the forward sweep: no tape
    for _a, _b in _ck.forward():
        _ck.save(_a, (x, s, ...))                   # the loop's variables before trip _a
        for i in _range[_a:_b]:
            <the body without its pushes>

    for _act, _a, _b in _ck.backward():             # the reverse sweep
        if _act == 0:   (x, s, ...) = _ck.load(_a)
        elif _act == 1: <trips _a.._b without the tape>
        elif _act == 2: _ck.save(_a, (x, s, ...))
        else:           <trips _a.._b with pushes>; <their adjoints, backwards>
    (x, s, ...) = _ck.load(0)                       # as the loop found them

The schedule (`runtime.checkpoint`) decides which trips are kept and rerun. A
segment's pushes and pops pair up as in the loop without checkpointing, and
the reverse of a segment leaves the variables as they were before it: each
segment of the reverse sweep sees exactly the values the plain tape would
have given it. Snapshots hold references, so a loop that writes memory in
place (`y[i] = v`, `ys.append(v)`, a call writing into its arguments) is
refused, as are loops that exit early and loops over anything but `range`.
"""
from __future__ import annotations

from tapeflow.analysis.call_writes import writes_given_values
from tapeflow.syntax import ast

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms import draws
from tapeflow.transforms.optimize import definitely_assigned

# On the forward sweep's call `y = f_forward(_tape, ...)` of a user function: the
# primal statement `y = f(...)`, which a checkpointed loop runs without the tape.
PRIMAL = Key.PRIMAL


def transform(forward, reverse, ctx, policy):
    """(forward, reverse, names to bind to None first) with every top-level loop of
    `forward` checkpointed by `policy` (True, or a number of snapshots); with `policy`
    None, only the loops marked `for i in tf.checkpoint(range(n))`, by True."""
    loops = {getanno(stmt, Key.TAPE_PAIR): stmt for stmt in reverse
             if isinstance(stmt, ast.For) and getanno(stmt, Key.TAPE_PAIR) is not None}
    out, unbound, defined = [], set(), set(ctx.params)
    local = defined | nodes.store_names(forward) | nodes.store_names(reverse)
    k = 0
    while k < len(forward):
        stmt = forward[k]
        trip_push = forward[k + 1] if k + 1 < len(forward) else None
        pair = getanno(trip_push, Key.TAPE_PAIR) if trip_push is not None else None
        marked = getanno(stmt, Key.CHECKPOINT)
        backwards = _runs_backwards(stmt, reverse)
        if backwards is not None and (policy or marked):
            pair, trip_push = getanno(backwards, Key.TAPE_PAIR), None
        if isinstance(stmt, (ast.For, ast.While)) and pair in loops and (policy or marked):
            rev_loop = loops.pop(pair)
            step = 1 if trip_push is None else 2    # (no trip count: the loop alone)
            _check_after(stmt, forward[k + step:], ctx)
            state = _state(stmt, ctx, local)
            unbound |= set(state) - _assigned_before(out, defined)
            fwd, rev = _checkpointed(stmt, trip_push, rev_loop, state, ctx, policy or True)
            out.extend(fwd)
            reverse = [s for r in reverse for s in (rev if r is rev_loop else [r])]
            k += step
            continue
        if isinstance(stmt, (ast.For, ast.While)) and (policy or marked) and any(
                _is_push(s, ctx) for s in nodes.statements(stmt.body)):
            raise ctx.source.error(stmt, 'cannot checkpoint this loop: its reverse sweep is not '
                                         'one loop; differentiate without checkpoint=')
        out.append(stmt)                  # (a loop that keeps no tape is left as it is)
        k += 1
    return out, reverse, unbound


class Context:
    """What the rewrite needs: the tape's names, a namer, the function's parameters,
    the source (for located errors)."""

    def __init__(self, names, namer, params, source, order, fn=None, bindings=None,
                 namespace=None):
        self.names, self.namer, self.params, self.source = names, namer, params, source
        self.order = order
        # the function (whose instructions say what a loop draws from), what its names
        # denote, the generated module's namespace
        self.fn, self.bindings, self.namespace = fn, bindings, namespace


def _assigned_before(stmts, defined) -> set:
    return definitely_assigned(stmts, set(defined))


def _state(loop, ctx, local) -> list:
    """The local names the loop reads or assigns (the tape's own aside): what a rerun of
    its trips needs. Those it only reads count too: the optimizer keeps no tape entry
    for a value the plain reverse sweep does not read, so a statement after the loop
    may have rebound one (`s = 2.0`) by the time the reverse sweep reruns the loop."""
    own = {ctx.names.tape, ctx.names.push, ctx.names.pop}
    names = nodes.store_names([loop]) | nodes.load_names(loop)
    return sorted((names & local) - own)


def _checkpointed(loop, trip_push, rev_loop, state, ctx, policy):
    lists = sorted(_check(loop, rev_loop, ctx))
    namer = ctx.namer
    ck, a, b, act = namer.new('_ck'), namer.new('_a'), namer.new('_b'), namer.new('_act')
    values = nodes.tuple_(*state)
    grown = [nodes.tuple_(*lists)] if lists else []      # lists the loop appends to

    def snapshot(at):
        return nodes.call(nodes.attribute(ck, 'save'), at, values, *grown)

    def save(at):
        return nodes.expr_stmt(snapshot(at))

    def load(at):
        stmts = [nodes.assign(nodes.tuple_(*state, store=True),
                              nodes.call(nodes.attribute(ck, 'load'), at))]
        if lists:                          # appended since: cut back to their length then
            stmts.append(nodes.expr_stmt(nodes.call(nodes.attribute(ck, 'trim'), at, *grown)))
        return stmts

    taped = loop.body
    plain = _plain(taped, ctx)
    drawn = _draws(loop, ctx)
    if isinstance(loop, ast.For):
        trips = nodes.call('len', loop.iter)
        run = lambda body: nodes.for_(nodes.clone(loop.target), nodes.subscript(  # noqa: E731
            loop.iter, nodes.slice_(a, b)), body)
        forward = [nodes.assign(ck, nodes.call('checkpoints', trips, nodes.const(policy), *drawn)),
                   nodes.for_(nodes.tuple_(a, b, store=True),
                              nodes.call(nodes.attribute(ck, 'forward')),
                              [save(a), run(nodes.clone(plain))])]
    else:
        counter = trip_push.value.args[0].id
        nxt = namer.new('_next')
        run = lambda body: nodes.for_(namer.new('_'), nodes.call(  # noqa: E731
            'range', nodes.binop(nodes.name(b), ast.Sub(), nodes.name(a))), body)
        due = nodes.if_(_equals(counter, nxt), [nodes.assign(nxt, snapshot(counter))], [])
        forward = [nodes.assign(ck, nodes.call('checkpoints', nodes.const(None), nodes.const(policy),
                                               *drawn)),
                   nodes.assign(nxt, snapshot(nodes.const(0))),
                   nodes.while_(loop.test, nodes.clone(plain) + [due]),
                   nodes.expr_stmt(nodes.call(nodes.attribute(ck, 'finish'), counter))]
    back = nodes.for_(nodes.tuple_(act, a, b, store=True), nodes.call(nodes.attribute(ck, 'backward')), [
        nodes.if_(_equals(act, nodes.const(0)), load(a), [
            nodes.if_(_equals(act, nodes.const(1)), [run(nodes.clone(plain))], [
                nodes.if_(_equals(act, nodes.const(2)), [save(a)], [
                    run(taped),
                    _reverse_trips(rev_loop, loop, a, b, namer)])])])])
    for stmt in forward + [back]:
        nodes.located(stmt, loop)
    return forward, [back] + nodes.located(load(nodes.const(0)), loop)


def _draws(loop, ctx) -> list:
    """[the loop's random sources] for `checkpoints(...)`, or [] where it draws none: a rerun
    replays what the forward sweep drew. A draw no rerun can replay is refused there."""
    if ctx.fn is None:
        return []
    plan = draws.loop_plan(loop, ctx.fn)
    if plan.refusal is not None:
        raise draws.refuse(plan, 'cannot checkpoint this loop', 'give it a seed, or pass the '
                           'generator in as an argument, or differentiate without checkpoint=')
    sources = draws.sources_expression(plan, ctx.fn, ctx.bindings, ctx.namespace, ctx.namer)
    return [] if sources is None else [sources]


def _runs_backwards(loop, reverse):
    """The reverse sweep's `for i in reversed(_range)` mirroring `loop` (`for i in _range`)."""
    if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Name)):
        return None
    for stmt in reverse:
        if isinstance(stmt, ast.For) and _is_reversed(stmt.iter) \
                and isinstance(stmt.iter.args[0], ast.Name) and stmt.iter.args[0].id == loop.iter.id:
            return stmt
    return None


def _is_reversed(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'reversed'


def _reverse_trips(rev_loop, loop, a, b, namer):
    """The reverse of trips `a`..`b`: `rev_loop`'s body that many times, binding the loop's
    variable as `rev_loop` does where it runs the range backwards (`for i in reversed(...)`)."""
    if isinstance(loop, ast.For) and _is_reversed(rev_loop.iter):
        trips = nodes.subscript(loop.iter, nodes.slice_(nodes.name(a), nodes.name(b)))
        return nodes.for_(nodes.clone(rev_loop.target), nodes.call('reversed', trips), rev_loop.body)
    return nodes.for_(namer.new('_'), nodes.call('range', nodes.binop(
        nodes.name(b), ast.Sub(), nodes.name(a))), rev_loop.body)


def _check(loop, rev_loop, ctx) -> set:
    """Refuse what snapshots of references cannot undo, where it is written; the names
    of the lists the loop appends to (a snapshot keeps their length)."""
    def refuse(node, why):
        raise ctx.source.error(node, f'cannot checkpoint this loop: {why}; rewrite the loop '
                                     f'without it, or differentiate without checkpoint=')
    if ctx.order > 1:
        refuse(loop, 'it is generated code differentiated again')
    lists = set()
    for stmt in nodes.statements(loop.body):
        if getanno(stmt, Key.LOOP_EXIT):
            refuse(stmt, 'it may exit early (break or return)')
        if getanno(stmt, Key.MUTATES) is not None or (
                isinstance(stmt, ast.Assign) and not isinstance(stmt.targets[0], ast.Name)
                and not isinstance(stmt.targets[0], ast.Tuple)):
            refuse(stmt, 'it writes into memory in place, and snapshots hold references, not copies')
        method = _method(stmt)
        if method == 'append':
            lists.add(stmt.value.func.value.id)
        elif method is not None and not _is_push(stmt, ctx):
            refuse(stmt, f'.{method}() changes its object in place, and snapshots hold '
                         f'references, not copies')
        called = getanno(stmt, PRIMAL) or stmt          # the user's call, not its forward
        if isinstance(called, ast.Assign) and isinstance(called.value, ast.Call) and getattr(
                getanno(called.value.func, Key.RESOLVED), '__tapeflow_variant_of__', None):
            refuse(stmt, 'the function it calls writes into its arguments, and snapshots '
                         'hold references, not copies')
        if isinstance(called, ast.Assign) and writes_given_values(called.value):
            refuse(stmt, 'a try or with body in it writes into memory in place, and '
                         'snapshots hold references, not copies')
    for stmt in nodes.statements(loop.body):          # a name appended to, rebound in the
        name = ast.assigned_name(stmt)                # loop to a list it did not make: the
        if name in lists and not _fresh_list(stmt.value):     # snapshot's length is another's
            refuse(stmt, f'it appends to {name}, which it rebinds here to a list made before '
                         f'it (a snapshot keeps the lengths of the lists its names hold then)')
    for stmt in nodes.statements(rev_loop.body):
        undoes_append = _method(stmt) == 'pop' and not stmt.value.args and \
            stmt.value.func.value.id in lists
        if getanno(stmt, Key.RESTORES_IN_PLACE) and not undoes_append:
            refuse(loop, 'it writes into memory in place, and snapshots hold references, not copies')
    return lists


def _fresh_list(value) -> bool:
    """A list made where it is assigned: `[...]`, a comprehension, `list(...)`."""
    if value.__class__ in (ast.List, ast.ListComp):
        return True
    return value.__class__ is ast.Call and getanno(value.func, Key.RESOLVED) is list


def _check_after(loop, later, ctx):
    """Refuse a loop whose rerun could read memory a later statement writes into: the
    optimizer keeps no restore of contents the plain reverse sweep does not read."""
    fresh = set()                   # lists made after the loop: no rerun reads them
    for stmt in nodes.statements(later):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            made = isinstance(stmt.value, (ast.List, ast.ListComp))
            (fresh.add if made else fresh.discard)(stmt.targets[0].id)
        called = getanno(stmt, PRIMAL) or stmt
        method = _method(stmt)
        if method is not None and getattr(stmt.value.func.value, 'id', None) in fresh:
            continue
        if getanno(stmt, Key.MUTATES) is not None or (
                isinstance(stmt, ast.Assign) and not isinstance(stmt.targets[0], (ast.Name, ast.Tuple))) \
                or (method is not None and not _is_push(stmt, ctx)) or (
                isinstance(called, ast.Assign) and isinstance(called.value, ast.Call) and getattr(
                    getanno(called.value.func, Key.RESOLVED), '__tapeflow_variant_of__', None)):
            line = (nodes.origin(stmt) or ('?',))[0]
            raise ctx.source.error(loop, f'cannot checkpoint this loop: line {line} writes into '
                                         f'memory after it, which a rerun of the loop could read; '
                                         f'write a copy there, or differentiate without '
                                         f'checkpoint=')


def _method(stmt):
    """`m` for a statement `name.m(...)`, else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
            stmt.value.func, ast.Attribute):
        return stmt.value.func.attr if isinstance(stmt.value.func.value, ast.Name) else '?'
    return None


def _is_push(stmt, ctx) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
        isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == ctx.names.push


def _plain(body, ctx):
    """The body as the primal runs it: no pushes, user functions called themselves."""
    out = []
    for stmt in body:
        if _is_push(stmt, ctx):
            continue
        primal = getanno(stmt, PRIMAL)
        if primal is not None:
            out.append(nodes.clone(primal))
            continue
        stmt = nodes.shallow_copy(stmt)
        for field in ('body', 'orelse'):
            if isinstance(getattr(stmt, field, None), list):
                setattr(stmt, field, _plain(getattr(stmt, field), ctx))
        if getattr(stmt, 'body', None) == []:
            stmt.body = [nodes.pass_()]
        out.append(stmt)
    return out


def _equals(left, right):
    return nodes.compare(left, ast.Eq(), right)      # (a string is a name)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): the combined function of the unit
    (`transforms.assemble`), checkpointed where asked."""
    return ctx.checkpointed(tree)
