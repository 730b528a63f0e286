"""A guarded body (`try`, `with`) differentiated: `attempt(types, kept, body, *values)`
(`rules.guards`) met by the dispatcher (`tapeflow.calls`, `tapeflow.calls_higher`).

The body runs through the dispatcher like any call. Where it completes, its record stays
on the tape and `Guarded(completed=True)` above it; where it raises one of `types`, what
it pushed is taken off again and `attempt` gives `(2, error, values)`: the values the
code after it reads, as the body left them. Those it did not change flow through (their
cotangents and tangents are the values' own); one it changed that carries a derivative
was computed by code that stopped half way, which is refused. The reverse sweep of a
`with np.errstate(...)` body runs in the numerics its forward sweep ran in. What a body
that completed gives back is made Python's and checked in `tapeflow.guarded_state`.
"""
from __future__ import annotations

import weakref

import numpy as np

from tapeflow.call_plans import carries_within
from tapeflow.call_plans import kinds_of
from tapeflow.arguments import compiler_kinds
from tapeflow.calls import Cotangents, call_backward, call_forward, call_jvp, check_writes
from tapeflow.transforms import callees
from tapeflow.transforms.pipeline import anf_of
from tapeflow.rules.closures import Closure
from tapeflow.errors import UnsupportedError, is_tapeflows
from tapeflow.rules import guards
from tapeflow.rules.write_checks import memory_parts
from tapeflow.runtime.helpers import is_zero
from tapeflow.guarded_prefix import as_one, half_way, ran_as_python, restore, same_as_left
from tapeflow.guarded_state import (check_aliases, contents, contents_before, kept_identity,
                                    refuse_at, unchanged)

__all__ = ['Guarded', 'forward', 'jvp', 'forward_jvp']


class Guarded:
    """The tape's record of `attempt(...)`: whether the body completed (its record is
    below this one) or raised (it left nothing: the values it gives back are those it was
    given), the body's position in `attempt`'s arguments (its values follow it), how many
    values, the numerics to run its reverse sweep in (`guards.numerics`), and the arrays
    the body wrote into with what they held before it (`kept_identity`)."""
    __slots__ = ('completed', 'at', 'nvalues', 'numerics', 'before')
    guarded = True                  # (what tapeflow.calls tells it by)

    def __init__(self, completed, at, nvalues, numerics, before=()):
        self.completed, self.at, self.nvalues, self.numerics = completed, at, nvalues, numerics
        self.before = before

    def backward(self, tape, g):
        if not self.completed:
            return self._through(g)
        self._give_back()
        if self.numerics is not None:
            with guards.reentered(self.numerics):
                return self._shifted(call_backward(tape, g))
        return self._shifted(call_backward(tape, g))

    def backward_jvp(self, batched, tape, g, dg):
        """`backward` differentiated in forward mode (`calls_higher.call_backward_jvp`)."""
        from tapeflow.calls_higher import call_backward_jvp
        if not self.completed:
            return self._through(g), self._through(dg)
        self._give_back()
        if self.numerics is not None:
            with guards.reentered(self.numerics):
                inner, dinner = call_backward_jvp(batched, tape, g, dg)
        else:
            inner, dinner = call_backward_jvp(batched, tape, g, dg)
        return self._shifted(inner), self._shifted(dinner)

    def _give_back(self):
        """The arrays the body wrote into, as they were before it: what its own record
        (below this one) holds of them, read by its reverse sweep."""
        for given, before in self.before:
            given[...] = before

    def _through(self, g):
        """The cotangents of `attempt`'s values from that `g` of `(2, error, values)`."""
        left = 0.0 if is_zero(g) else g[2]
        args = {} if is_zero(left) else {self.at + 1 + k: c for k, c in enumerate(left)}
        return Cotangents(0.0, args, {}, False, self.at + self.nvalues)

    def _shifted(self, inner):
        """The body call's cotangents as `attempt`'s: the body's own (its closure) at its
        position, its values' after it."""
        args = {k + self.at: c for k, c in inner.args.items()}
        args[self.at] = inner.callee
        return Cotangents(0.0, args, {}, False, self.at + self.nvalues)


def _parts(fn, args):
    """`attempt`'s arguments: the body's position (1: the first argument), the types it
    catches, the names of the values kept, the body, its values."""
    at = 4 if fn is guards.attempt_within else 3
    return at, args[at - 3], args[at - 2], args[at - 1], args[at:]


def _inner(active, at):
    """The positions `active` of `attempt`'s arguments as the body call's (0: the body)."""
    return tuple(k - at for k in active if isinstance(k, int) and k >= at)


def _left(error, kept, values, active, at):
    """The kept values as the body left them when it raised `error`; one it changed that
    carries a derivative refused."""
    left = guards.left_values(error, kept, values)
    completed = guards.completed_positions(kept)
    if completed:                       # (never read after a raise: as they were given)
        left = tuple(values[k] if k in completed else v for k, v in enumerate(left))
    for k, (before, after) in enumerate(zip(values, left), at + 1):
        if after is not before and k in active and carries_within(after):
            raise UnsupportedError(
                'the guarded body (try, with) changed a value that carries a derivative and '
                'that the code after it reads, then raised: tapeflow cannot differentiate '
                'what stopped half way; compute it before the try, or after it') from error
    return left


def _checked(args, at, body, values, kept):
    """`_check_body`, leaving a `with`'s manager (entered already) where it refuses."""
    try:
        return _check_body(body, values, kept)
    except UnsupportedError as error:
        if at == 4:
            guards.exit_context(args[0], error)
        raise


def _check_body(body, values, kept):
    """Refuse, before it runs, a body that writes into what it did not make, but for the
    values marked written in `kept` (the caller follows those writes as a call's); and one
    whose written value shares memory with another value it reads (it would not see the
    write as a write into that one). Two of its values that are one object are given to
    it as one (`guarded_prefix.as_one`): the body returned is the one to run."""
    fn = body.fn if isinstance(body, Closure) else body
    given = tuple(values) + (body.values[body.ndefaults:] if isinstance(body, Closure) else ())
    written = guards.written_positions(kept)
    try:
        check_writes(fn, kinds_of(given, ()))
        for inner in _nested_bodies(fn, set()):     # run as plain Python inside this one
            check_writes(inner, (None,) * inner.__code__.co_argcount)
    except UnsupportedError as error:
        refuse_at(body, error.reason)
    names = guards.kept_names(kept)
    deep = callees.Summaries(anf_of)(fn, compiler_kinds(kinds_of(given, ()))).deep
    unread = _bound_before_read(fn)
    same = []
    for k in written:
        if not _mutable(given[k]):
            continue
        for j, other in enumerate(given):
            if j != k and j not in unread and other is given[k] and \
                    not any(j in pair for pair in same):
                same.append((j, k))         # (one object: the body binds j to k first)
                continue
            if j != k and j not in unread and (
                    _reaches(other, given[k]) or k in deep and _mutable(other) and
                    _reaches(given[k], other)):     # (it writes into another's memory)
                what = repr(names[j]) if j < len(names) else 'a value it reads'
                refuse_at(body, f'the guarded body (try, with) writes into {names[k]}, '
                                 f'and {what} shares its memory: tapeflow does not follow '
                                 f'that write into it inside the body; copy one of them '
                                 f'before the try or with ({names[k]} = {names[k]}.copy())')
    return as_one(body, tuple(same)) if same else body


_UNREAD = weakref.WeakKeyDictionary()     # a body -> the positions of _bound_before_read


def _bound_before_read(fn) -> frozenset:
    """The positions of the parameters of the body `fn` that it binds before it reads them
    (`a = x[:, 1]` in a loop's body, given the last time round's `a`): what they held is
    never read there, so it may share memory with what the body writes. Read from the
    body's statements in order: a name read anywhere inside a compound statement before
    a statement of the body itself binds it counts as read."""
    found = _UNREAD.get(fn)
    if found is None:
        from tapeflow.syntax import ast, nodes
        node = _anf_or_none(fn)
        params = [a.id for a in node.args.args] if node is not None else []
        bound, read = set(), set()
        for stmt in node.body if node is not None else ():
            loads = {n.id for n in nodes.walk_terms(stmt) if isinstance(n, ast.Name)
                     and not isinstance(n.ctx, ast.Store)}
            read |= loads - bound
            if isinstance(stmt, ast.Assign):
                bound |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        found = frozenset(k for k, p in enumerate(params) if p in bound and p not in read)
        _UNREAD[fn] = found
    return found


def _reaches(value, target) -> bool:
    """Whether `value` is `target`, shares its memory, or holds one that does: in a list,
    tuple or dict, a closure's values, a partial's arguments, a bound method's object, an
    object's fields (`write_checks.memory_parts`; a function value the body calls reads
    them as they are then: WRONG before, 9.58 for 16.57, a lambda reading x called after
    the body wrote x)."""
    if value is target:
        return True
    return any(part is target or isinstance(part, np.ndarray) and
               isinstance(target, np.ndarray) and np.shares_memory(part, target)
               for part in memory_parts(value, True))


_NESTED = weakref.WeakKeyDictionary()     # a body -> the bodies of the try/with inside it


def _anf_or_none(fn):
    """The body `fn` in ANF, or None where it does not compile (refused, located, where it
    is compiled)."""
    from tapeflow.transforms.pipeline import anf_of
    try:
        return anf_of(fn)[0]
    except Exception:           # noqa: BLE001
        return None


def _nested_bodies(fn, seen):
    """The guarded bodies of the try and with statements inside the body `fn`, at any depth:
    where `fn` runs as Python, they run as Python too, the dispatcher checking none."""
    found = _NESTED.get(fn)
    if found is None:
        from tapeflow.syntax import nodes
        from tapeflow.syntax.anno import Key, getanno
        node = _anf_or_none(fn)
        found = [] if node is None else [
            v for v in (getanno(n, Key.RESOLVED) for n in nodes.walk_terms(node))
            if callees.is_guarded_body(v) and v is not fn]
        _NESTED[fn] = found
    for inner in found:
        if id(inner) not in seen:
            seen.add(id(inner))
            yield inner
            yield from _nested_bodies(inner, seen)


def check_plain(fn, args):
    """`call_plain(attempt, *args)`: its body must not write into what it did not make."""
    at, _, kept, body, values = _parts(fn, args)
    body = _checked(args, at, body, values, kept)


def forward(tape, active, fn, args):
    """`call_forward(tape, active, attempt, *args)`."""
    at, types, kept, body, values = _parts(fn, args)
    body = _checked(args, at, body, values, kept)
    numerics = guards.numerics(args[0]) if at == 4 else None
    depth = len(tape)
    snapshot = contents_before(kept, values)
    try:
        out = call_forward(tape, _inner(active, at), body, *values)
    except types as error:
        if is_tapeflows(error):
            raise
        del tape[depth:]
        ran = _part_that_ran(body, error, kept, values, active, at, types, snapshot)
        if ran is not None:                 # (what it changed is read after it)
            out = call_forward(tape, _inner(active, at), ran[0], *values)
            ran_as_python(ran, values, body, kept)
            out, before = kept_identity(out, kept, values, body)
            tape.append(Guarded(True, at, len(values), numerics, before))
            check_aliases(out, kept, values, body)
            return 2, error, same_as_left(out[2], error, kept, values, body)
        left = _left_at(body, error, kept, values, active, at)
        tape.append(Guarded(False, at, len(values), None))
        return 2, error, left
    out, before = kept_identity(out, kept, values, body)
    tape.append(Guarded(True, at, len(values), numerics, before))
    check_aliases(out, kept, values, body)
    return out


def _part_that_ran(body, error, kept, values, active, at, types, snapshot):
    """Where the body raised after it changed a value that carries a derivative and that
    the code after it reads, or after it wrote into a value it was given: the body
    stopping before the statement that raised (`guarded_prefix`), what it wrote given
    back first; else None (nothing to differentiate, or refused as before)."""
    changed = [k for k, before in (snapshot or {}).items() if not unchanged(before, values[k])]
    if not changed:
        try:
            _left(error, kept, values, active, at)
            return None
        except UnsupportedError:
            pass
    from tapeflow.guarded_prefix import prefix
    left = {k: contents(values[k]) for k in changed}      # (as Python's run left them)
    if changed:
        restore(snapshot, values)
    ran = prefix(body, values, types)       # (it runs the body again as Python)
    if changed:
        restore(snapshot, values)
    if ran is None and changed:
        half_way(body, kept, changed[0])
    return None if ran is None else (ran, left)


def _mutable(v):
    return isinstance(v, (list, dict, np.ndarray))


def _left_at(body, error, kept, values, active, at):
    """`_left`, its refusal located at the try/with where nothing located it."""
    try:
        return _left(error, kept, values, active, at)
    except UnsupportedError as refusal:
        if refusal.lineno:
            raise
        refuse_at(body, refusal.reason)


def _value_tangents(active, tangents, at, n):
    given = dict(zip(active, tangents))
    return tuple(given.get(at + 1 + k, 0.0) for k in range(n))


def jvp(active, batched, fn, args, tangents):
    """`call_jvp(active, batched, attempt, args, {}, tangents)`."""
    at, types, kept, body, values = _parts(fn, args)
    body = _checked(args, at, body, values, kept)
    inner = _inner(active, at)
    given = dict(zip(active, tangents))
    snapshot = contents_before(kept, values)
    try:
        out = call_jvp(inner, batched, body, values, {}, tuple(given[k + at] for k in inner))
    except types as error:
        if is_tapeflows(error):
            raise
        ran = _part_that_ran(body, error, kept, values, active, at, types, snapshot)
        if ran is not None:
            out = call_jvp(inner, batched, ran[0], values, {}, tuple(given[k + at] for k in inner))
            ran_as_python(ran, values, body, kept)
            return (2, error, same_as_left(out[0][2], error, kept, values, body)), \
                (0.0, 0.0, out[1][2] if not is_zero(out[1]) else 0.0)
        left = _left_at(body, error, kept, values, active, at)
        return (2, error, left), (0.0, 0.0, _value_tangents(active, tangents, at, len(left)))
    primal, _ = kept_identity(out[0], kept, values, body)
    check_aliases(primal, kept, values, body)
    return (primal,) + tuple(out[1:])


def forward_jvp(active2, batched, tape, active, fn, args, tangents):
    """`call_forward_jvp(active2, batched, tape, active, attempt, args, {}, tangents)`."""
    from tapeflow.calls_higher import call_forward_jvp
    at, types, kept, body, values = _parts(fn, args)
    body = _checked(args, at, body, values, kept)
    numerics = guards.numerics(args[0]) if at == 4 else None
    inner2 = _inner(active2, at)
    given = dict(zip(active2, tangents))
    depth = len(tape)
    snapshot = contents_before(kept, values)
    try:
        out = call_forward_jvp(inner2, batched, tape, _inner(active, at), body, values, {},
                               tuple(given[k + at] for k in inner2))
    except types as error:
        if is_tapeflows(error):
            raise
        del tape[depth:]
        ran = _part_that_ran(body, error, kept, values, tuple(active) + tuple(active2), at,
                             types, snapshot)
        if ran is not None:
            out = call_forward_jvp(inner2, batched, tape, _inner(active, at), ran[0], values,
                                   {}, tuple(given[k + at] for k in inner2))
            ran_as_python(ran, values, body, kept)
            primal, before = kept_identity(out[0], kept, values, body)
            tape.append(Guarded(True, at, len(values), numerics, before))
            tape.append(0.0)
            check_aliases(primal, kept, values, body)
            return (2, error, same_as_left(out[0][2], error, kept, values, body)), \
                (0.0, 0.0, out[1][2] if not is_zero(out[1]) else 0.0)
        left = _left_at(body, error, kept, values, tuple(active) + tuple(active2), at)
        tape.append(Guarded(False, at, len(values), None))
        tape.append(0.0)
        return (2, error, left), (0.0, 0.0, _value_tangents(active2, tangents, at, len(left)))
    primal, before = kept_identity(out[0], kept, values, body)
    tape.append(Guarded(True, at, len(values), numerics, before))
    tape.append(0.0)
    check_aliases(primal, kept, values, body)
    return (primal,) + tuple(out[1:])
