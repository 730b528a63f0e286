"""Optimize the output of `reverse`: no dead adjoints, no pushes nobody pops.

Runs after `reverse` on the whole generated body (forward sweep, then the
reverse sweep). Guarantees:

- a statement of the reverse sweep whose result nothing reads is gone;
- a pop whose value nothing reads is gone, and so is its push (matched by
  `Key.TAPE_PAIR`), so the tape holds only what the adjoint needs;
- an adjoint's first accumulation is an assignment (`bx = by * w`, not
  `bx = 0.0; bx = bx + by * w`);
- a pushed variable that may be unassigned at its push starts as `None`.

Forward statements are the user's: they are never removed.
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.analysis.liveness import Liveness
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno


def transform(forward, reverse, live_out, params, effects=None):
    """Return (forward, reverse, names to initialise to None).

    `effects`: the memo of `Liveness`, filled here (the rounds below replace a
    statement's value, never edit one in place); the caller may analyse the reverse
    sweep returned with it."""
    effects = {} if effects is None else effects
    while True:
        reverse = _zeros(reverse)
        liveness = Liveness(reverse, live_out, effects)    # the forward sweep is never swept
        removed, dropped = set(), []
        reverse = _sweep(reverse, liveness, removed, dropped)
        if removed:
            forward = _drop_pushes(forward, removed)
        if not dropped:
            break
    return forward, reverse, undefined_at_push(forward, set(params))


# ------------------------------------------------------------------ rules given the symbolic zero

ZERO, MAYBE = 'zero', 'maybe'      # a name surely is / may be the symbolic zero 0.0 (else: not)


def zero_cotangents(stmts):
    """Rules that do not take the symbolic zero for their cotangent (`Key.COTANGENT`)
    never get it: where the cotangent surely is 0.0 the term is dropped (it adds zero),
    where it may be (a variable overwritten on some trips of a loop), it is guarded."""
    return _zero_flow(stmts, {}, rewrite=True)


def _zero_flow(stmts, state, rewrite):
    """Update `state` (name -> ZERO or MAYBE; absent: not zero) across `stmts`; with
    `rewrite`, return the statements kept and rewrite them, else leave them alone."""
    kept = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            a, b = dict(state), dict(state)
            body, orelse = _zero_flow(stmt.body, a, rewrite), _zero_flow(stmt.orelse, b, rewrite)
            if rewrite:
                stmt.body, stmt.orelse = body or [nodes.pass_()], orelse
            state.clear()
            state.update(_zero_join(a, b))
        elif isinstance(stmt, (ast.For, ast.While)):
            head = dict(state)
            while True:
                end = dict(head)
                _zero_flow(stmt.body, end, rewrite=False)
                joined = _zero_join(head, end)
                if joined == head:
                    break
                head = joined
            body = _zero_flow(stmt.body, dict(head), rewrite)
            if rewrite:
                stmt.body = body or [nodes.pass_()]
            state.clear()
            state.update(head)
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            marked = getanno(stmt, Key.COTANGENT)
            if marked is not None and len(marked) > 3:    # a callee's backward: always runs
                if rewrite:
                    _guard_call(stmt, marked, state)
            elif marked is not None and state.get(marked[0]) == ZERO:
                continue                          # a rule of the zero cotangent: adds nothing
            elif marked is not None and state.get(marked[0]) == MAYBE and rewrite:
                _guard(stmt, *marked[:3])
            # a primal value put back from the tape is no cotangent
            state_of = None if getanno(stmt, Key.TAPE_PAIR) is not None \
                else _zero_of(stmt.value, state)
            if marked is not None and len(marked) > 3:
                state_of = MAYBE                  # a callee's cotangents may be the symbolic zero
            target = stmt.targets[0].id
            if state_of is None:
                state.pop(target, None)
            else:
                state[target] = state_of
        kept.append(stmt)
    return kept


def _zero_of(value, state):
    """ZERO, MAYBE or None (not the symbolic zero) for an assigned value of the reverse sweep."""
    if _is_zero(value):
        return ZERO
    if isinstance(value, ast.Name):
        return state.get(value.id)
    parts = _summands(value)
    if parts is not None:                       # b + e: the symbolic zero only if both are
        found = [_zero_of(p, state) for p in parts]
        if any(f is None for f in found):
            return None
        return ZERO if all(f == ZERO for f in found) else MAYBE
    # a rule or helper: given a (maybe) zero cotangent, it may give back 0.0; and what
    # a pop takes off a stack of cotangents (higher order) may be 0.0
    read = nodes.load_names(value) - ({value.func.id} if isinstance(value, ast.Call)
                                      and isinstance(value.func, ast.Name) else set())
    if isinstance(value, ast.Call) and not read:
        return MAYBE
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id in _ITEM_OF_CONTAINER:
        return MAYBE                 # an item of a list's cotangent may be the symbolic zero
    return MAYBE if any(state.get(n) is not None for n in read) else None


_ITEM_OF_CONTAINER = frozenset({'getitem_adjoint', 'last_adjoint', 'setitem_value_adjoint',
                                'cotangent_of', 'receiver_cotangent'})   # (a dispatched call's)


def _summands(value):
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return [value.left, value.right]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id == 'add_adjoint' and len(value.args) == 2:
        return list(value.args)
    return None


def _zero_join(a, b):
    out = {}
    for name in a.keys() | b.keys():
        x, y = a.get(name), b.get(name)
        out[name] = ZERO if x == y == ZERO else MAYBE
    return {n: v for n, v in out.items() if not (a.get(n) is None and b.get(n) is None)}


def _guard_call(stmt, marked, state):
    """A callee's backward given `g` (or 0.0 where the result is inactive): `dense(g, y)`
    where `g` may be the symbolic zero, zeros shaped like the result `y`."""
    g, y, call = marked[0], marked[1], marked[2]
    if g is None:
        call.args[1] = nodes.call('dense', nodes.const(0.0), y)
    elif state.get(g) is not None:
        call.args[1] = nodes.call('dense', g, y)


def _guard(stmt, g, ans, contribution):
    """In `contribution` (within `stmt`), `g` becomes `dense(g, ans)`: zeros of the result's
    shape where it is the symbolic zero (linear in `g`, so derivatives of the reverse
    sweep, which may move a zero cotangent, stay right)."""
    for node in nodes.walk_terms(contribution):
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.Name) and value.id == g and isinstance(value.ctx, ast.Load):
                setattr(node, field, nodes.call('dense', g, ans))
            elif isinstance(value, list):
                setattr(node, field, [nodes.call('dense', g, ans) if isinstance(v, ast.Name)
                                      and v.id == g and isinstance(v.ctx, ast.Load) else v
                                      for v in value])


# ------------------------------------------------------------------ forward mode

def drop_dead_tangents(body, tail):
    """Remove tangent statements (marked by `forward`) whose result nothing reads."""
    effects = {}                  # the rounds only drop statements: `Liveness` may share it
    while True:
        liveness = Liveness(body + tail, set(), effects)
        removed = []
        body = _drop_tangents(body, liveness, removed)
        if not removed:
            return body


def _drop_tangents(stmts, liveness, removed):
    out = []
    for stmt in stmts:
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and isinstance(stmt, (ast.If, ast.For, ast.While)):
                setattr(stmt, field, _drop_tangents(inner, liveness, removed)
                        or ([] if field == 'orelse' else [nodes.pass_()]))
        if getanno(stmt, Key.SYNTHETIC) == 'tangent' and isinstance(stmt, ast.Assign) \
                and stmt.targets[0].id not in liveness.live_after.get(id(stmt), set()):
            removed.append(stmt)
            continue
        out.append(stmt)
    return out


# ------------------------------------------------------------------ dead code

def _uses_tape(node) -> bool:
    """Reads a tape (ours, or the one of generated code being differentiated again)."""
    return any(name.startswith(('_tape', '_pop', '_push')) for name in nodes.names_in(node))


def _empty(body) -> bool:
    return all(isinstance(s, ast.Pass) for s in body)


def _dead(stmt, live_after) -> bool:
    """A reverse-sweep statement whose effect nothing reads (pops: with their pairs).

    A restore of memory other names held (`Key.SHARES`: a value the tape gives
    back may be that memory), or of memory written as the user wrote it
    (`Key.MUTATES`), always stays.
    """
    if getanno(stmt, Key.MUTATES) is not None or getanno(stmt, Key.SHARES):
        return False
    pair = getanno(stmt, Key.TAPE_PAIR)
    if isinstance(stmt, ast.Assign):
        target = stmt.targets[0]
        base = target.value if isinstance(target, ast.Subscript) else target
        if not isinstance(base, ast.Name) or base.id in live_after:
            return False
        return pair is not None or not _uses_tape(stmt.value)
    if isinstance(stmt, ast.Expr):
        return pair is not None
    if isinstance(stmt, ast.If) and pair is not None:
        return _empty(stmt.body) and _empty(stmt.orelse)
    if isinstance(stmt, ast.For) and pair is not None:
        return _empty(stmt.body)
    return False


def _sweep(stmts, liveness, removed, dropped):
    out = []
    for stmt in stmts:
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and isinstance(stmt, (ast.If, ast.For, ast.While)):
                setattr(stmt, field, _sweep(inner, liveness, removed, dropped)
                        or ([] if field == 'orelse' else [nodes.pass_()]))
        if _dead(stmt, liveness.live_after.get(id(stmt), set())):
            pair = getanno(stmt, Key.TAPE_PAIR)
            if pair is not None:
                removed.add(pair)
            elif any(_uses_tape(t) for t in stmt.targets):   # (an assignment: `_dead` read
                out.append(stmt)                                # its value, no tape there)
                continue
            dropped.append(stmt)
            continue
        out.append(stmt)
    return out


def _drop_pushes(stmts, pairs):
    out = []
    for stmt in stmts:
        if isinstance(stmt, ast.Expr) and getanno(stmt, Key.TAPE_PAIR) in pairs:
            continue
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and isinstance(stmt, (ast.If, ast.For, ast.While)):
                setattr(stmt, field, _drop_pushes(inner, pairs) or ([] if field == 'orelse' else [nodes.pass_()]))
        out.append(stmt)
    return out


# ------------------------------------------------------------------ symbolic zeros

def _is_zero(node) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0.0 and isinstance(node.value, float)


def _accumulated(stmt):
    """For `b = b + e` or `b = add_adjoint(b, e)`: (b, e); else None."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
        return None
    b, value = stmt.targets[0].id, stmt.value
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) \
            and isinstance(value.left, ast.Name) and value.left.id == b:
        return b, value.right
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id == 'add_adjoint' and isinstance(value.args[0], ast.Name) \
            and value.args[0].id == b:
        return b, value.args[1]
    return None


def _zeros(stmts, zero=None):
    """Rewrite first accumulations into assignments, tracking known zeros."""
    zero = set() if zero is None else zero
    _zero_block(stmts, zero, rewrite=True)
    return stmts


def _zero_block(stmts, zero, rewrite):
    """Update `zero` (names surely 0.0) across `stmts`; rewrite accumulations if asked."""
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            acc = _accumulated(stmt)
            name = stmt.targets[0].id
            value = stmt.value
            if acc is not None and acc[0] in zero:
                value = acc[1]
                if rewrite:
                    stmt.value = value
            if _is_zero(value):
                zero.add(name)
            else:
                zero.discard(name)
        elif isinstance(stmt, ast.If):
            a, b = set(zero), set(zero)
            _zero_block(stmt.body, a, rewrite)
            _zero_block(stmt.orelse, b, rewrite)
            zero &= a & b
        elif isinstance(stmt, (ast.For, ast.While)):
            # Zero at the top of every trip: zero before the loop and at the end of a trip.
            entry = set(zero)
            while True:
                end = set(entry)
                _zero_block(stmt.body, end, rewrite=False)
                if entry <= end:
                    break
                entry &= end
            end = set(entry)
            _zero_block(stmt.body, end, rewrite)
            zero &= entry & end
        elif isinstance(stmt, ast.FunctionDef):
            zero.discard(stmt.name)


# ------------------------------------------------------------------ undefined at push

def definitely_assigned(forward, defined) -> set:
    """Names surely bound after `forward` runs (starting from `defined`)."""
    return undefined_at_push(forward, defined, result='defined')


def undefined_at_push(forward, defined, result='needs'):
    """Local names a push may read before they are bound (their prologue is `n = None`);
    a global or closure name pushed (`if flag:` pushes `flag`) is never a local."""
    needs = set()
    local = nodes.store_names(forward)

    def block(stmts, defined):
        for stmt in stmts:
            if isinstance(stmt, ast.Expr) and getanno(stmt, Key.TAPE_PAIR) is not None:
                arg = stmt.value.args[0]
                if isinstance(arg, ast.Name) and arg.id not in defined and arg.id in local:
                    needs.add(arg.id)
            elif isinstance(stmt, ast.Assign):
                defined |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(stmt, ast.If):
                a, b = block(stmt.body, set(defined)), block(stmt.orelse, set(defined))
                defined |= a & b
            elif isinstance(stmt, (ast.For, ast.While)):
                inner = set(defined)
                if isinstance(stmt, ast.For):
                    inner |= {n.id for n in nodes.walk_terms(stmt.target) if isinstance(n, ast.Name)}
                # a later trip sees what an earlier one assigned: a push before
                # the assignment in the body reads last trip's value, or nothing.
                block(stmt.body, inner)
            elif isinstance(stmt, ast.FunctionDef):
                defined.add(stmt.name)
        return defined

    after = block(forward, set(defined))
    return after if result == 'defined' else needs


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): the mode's context (`assemble.ReverseCompile`,
    `forward.ForwardCompile`) holds the sweeps this pass trims."""
    return ctx.optimized()
