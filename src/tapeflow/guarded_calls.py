"""A guarded body (`try`, `with`) differentiated: `attempt(types, kept, body, *values)`
(`rules.guards`) met by the dispatcher (`tapeflow.calls`, `tapeflow.calls_higher`).

The body runs through the dispatcher like any call. Where it completes, its record stays
on the tape and `Guarded(completed=True)` above it; where it raises one of `types`, what
it pushed is taken off again and `attempt` gives `(2, error, values)`: the values the
code after it reads, as the body left them. Those it did not change flow through (their
cotangents and tangents are the values' own); one it changed that carries a derivative
was computed by code that stopped half way, which is refused. The reverse sweep of a
`with np.errstate(...)` body runs in the numerics its forward sweep ran in.
"""
from __future__ import annotations

import weakref

import numpy as np

from tapeflow.call_plans import carries_within
from tapeflow.call_plans import kinds_of
from tapeflow.calls import Cotangents, call_backward, call_forward, call_jvp, check_writes
from tapeflow.rules.closures import Closure
from tapeflow.errors import UnsupportedError
from tapeflow.rules import guards
from tapeflow.runtime.helpers import is_zero

__all__ = ['Guarded', 'forward', 'jvp', 'forward_jvp']


class Guarded:
    """The tape's record of `attempt(...)`: whether the body completed (its record is
    below this one) or raised (it left nothing: the values it gives back are those it was
    given), the body's position in `attempt`'s arguments (its values follow it), how many
    values, and the numerics to run its reverse sweep in (`guards.numerics`)."""
    __slots__ = ('completed', 'at', 'nvalues', 'numerics')
    guarded = True                  # (what tapeflow.calls tells it by)

    def __init__(self, completed, at, nvalues, numerics):
        self.completed, self.at, self.nvalues, self.numerics = completed, at, nvalues, numerics

    def backward(self, tape, g):
        if not self.completed:
            return self._through(g)
        if self.numerics is not None:
            with guards.reentered(self.numerics):
                return self._shifted(call_backward(tape, g))
        return self._shifted(call_backward(tape, g))

    def backward_jvp(self, batched, tape, g, dg):
        """`backward` differentiated in forward mode (`calls_higher.call_backward_jvp`)."""
        from tapeflow.calls_higher import call_backward_jvp
        if not self.completed:
            return self._through(g), self._through(dg)
        if self.numerics is not None:
            with guards.reentered(self.numerics):
                inner, dinner = call_backward_jvp(batched, tape, g, dg)
        else:
            inner, dinner = call_backward_jvp(batched, tape, g, dg)
        return self._shifted(inner), self._shifted(dinner)

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
    for k, (before, after) in enumerate(zip(values, left), at + 1):
        if after is not before and k in active and carries_within(after):
            raise UnsupportedError(
                'the guarded body (try, with) changed a value that carries a derivative and '
                'that the code after it reads, then raised: tapeflow cannot differentiate '
                'what stopped half way; compute it before the try, or after it') from error
    return left


def _checked(args, at, body, values):
    """`_check_body`, leaving a `with`'s manager (entered already) where it refuses."""
    try:
        _check_body(body, values)
    except UnsupportedError as error:
        if at == 4:
            guards.exit_context(args[0], error)
        raise


def _check_body(body, values):
    """Refuse, before it runs, a body that writes into what it did not make: the caller,
    which compiled `attempt(...)` as a call it does not know, followed no such write."""
    fn = body.fn if isinstance(body, Closure) else body
    given = tuple(values) + (body.values[body.ndefaults:] if isinstance(body, Closure) else ())
    try:
        check_writes(fn, kinds_of(given, ()))
        for inner in _nested_bodies(fn, set()):     # run as plain Python inside this one
            check_writes(inner, (None,) * inner.__code__.co_argcount)
    except UnsupportedError as error:
        _refuse_at(body, error.reason)


_NESTED = weakref.WeakKeyDictionary()     # a body -> the bodies of the try/with inside it


def _nested_bodies(fn, seen):
    """The guarded bodies of the try and with statements inside the body `fn`, at any depth:
    where `fn` runs as Python, they run as Python too, the dispatcher checking none."""
    found = _NESTED.get(fn)
    if found is None:
        from tapeflow.syntax import nodes
        from tapeflow.syntax.anno import Key, getanno
        from tapeflow.transforms.pipeline import anf_of
        try:
            node, _ = anf_of(fn)
        except Exception:           # noqa: BLE001  (checked when compiled, located)
            node = None
        found = [] if node is None else [
            v for v in (getanno(n, Key.RESOLVED) for n in nodes.walk_terms(node))
            if getattr(v, '__tapeflow_guarded_body__', False) and v is not fn]
        _NESTED[fn] = found
    for inner in found:
        if id(inner) not in seen:
            seen.add(id(inner))
            yield inner
            yield from _nested_bodies(inner, seen)


def check_plain(fn, args):
    """`call_plain(attempt, *args)`: its body must not write into what it did not make."""
    at, _, _, body, values = _parts(fn, args)
    _checked(args, at, body, values)


def forward(tape, active, fn, args):
    """`call_forward(tape, active, attempt, *args)`."""
    at, types, kept, body, values = _parts(fn, args)
    _checked(args, at, body, values)
    numerics = guards.numerics(args[0]) if at == 4 else None
    depth = len(tape)
    try:
        out = call_forward(tape, _inner(active, at), body, *values)
    except types as error:
        del tape[depth:]
        left = _left_at(body, error, kept, values, active, at)
        tape.append(Guarded(False, at, len(values), None))
        return 2, error, left
    tape.append(Guarded(True, at, len(values), numerics))
    _check_aliases(out, kept, values, body)
    return out


def _mutable(v):
    return isinstance(v, (list, dict, np.ndarray))


def _left_at(body, error, kept, values, active, at):
    """`_left`, its refusal located at the try/with where nothing located it."""
    try:
        return _left(error, kept, values, active, at)
    except UnsupportedError as refusal:
        if refusal.lineno:
            raise
        _refuse_at(body, refusal.reason)


def _holds_arrays(v):
    items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else ()
    return any(isinstance(item, np.ndarray) or _holds_arrays(item) for item in items)


def _refuse_at(body, reason):
    """Refuse, located at the try or with whose body `body` is (its lifted def's place)."""
    fn = body.fn if isinstance(body, Closure) else body
    source = getattr(fn, '__tapeflow_source__', None)
    if source is None:
        raise UnsupportedError(reason)
    raise source.error(source.node, reason) from None


def _check_aliases(out, kept, values, body):
    """Refuse, located at the try/with, a value the body gives back that is, or shares
    memory with, another value it was given (`rows = ys` inside: an alias made in the body,
    which the code after it does not know of)."""
    if not isinstance(out, tuple) or len(out) < 2 or out[0] != 0:
        return
    given = list(values) + (list(body.values) if isinstance(body, Closure) else [])
    for j, v in enumerate(out[1][:len(kept)]):
        if _holds_arrays(v):
            _refuse_at(body, f'{kept[j]}, bound inside a try or with body, holds arrays: '
                               f'tapeflow does not follow writes into them after the body; '
                               f'bind {kept[j]} before or after the try or with')
        if not _mutable(v):
            continue
        for k, u in enumerate(given):
            if k == j or not _mutable(u) or u is values[j]:     # (its own value, kept)
                continue
            if v is u or (isinstance(v, np.ndarray) and isinstance(u, np.ndarray) and
                          np.shares_memory(v, u)):
                _refuse_at(body, f'{kept[j]}, bound inside a try or with body, is (or shares '
                                 f'memory with) a value the body did not make: tapeflow does '
                                 f'not follow an alias made inside the body; bind {kept[j]} '
                                 f'before or after it')


def _value_tangents(active, tangents, at, n):
    given = dict(zip(active, tangents))
    return tuple(given.get(at + 1 + k, 0.0) for k in range(n))


def jvp(active, batched, fn, args, tangents):
    """`call_jvp(active, batched, attempt, args, {}, tangents)`."""
    at, types, kept, body, values = _parts(fn, args)
    _checked(args, at, body, values)
    inner = _inner(active, at)
    given = dict(zip(active, tangents))
    try:
        out = call_jvp(inner, batched, body, values, {}, tuple(given[k + at] for k in inner))
    except types as error:
        left = _left_at(body, error, kept, values, active, at)
        return (2, error, left), (0.0, 0.0, _value_tangents(active, tangents, at, len(left)))
    _check_aliases(out[0], kept, values, body)
    return out


def forward_jvp(active2, batched, tape, active, fn, args, tangents):
    """`call_forward_jvp(active2, batched, tape, active, attempt, args, {}, tangents)`."""
    from tapeflow.calls_higher import call_forward_jvp
    at, types, kept, body, values = _parts(fn, args)
    _checked(args, at, body, values)
    numerics = guards.numerics(args[0]) if at == 4 else None
    inner2 = _inner(active2, at)
    given = dict(zip(active2, tangents))
    depth = len(tape)
    try:
        out = call_forward_jvp(inner2, batched, tape, _inner(active, at), body, values, {},
                               tuple(given[k + at] for k in inner2))
    except types as error:
        del tape[depth:]
        left = _left_at(body, error, kept, values, tuple(active) + tuple(active2), at)
        tape.append(Guarded(False, at, len(values), None))
        tape.append(0.0)
        return (2, error, left), (0.0, 0.0, _value_tangents(active2, tangents, at, len(left)))
    tape.append(Guarded(True, at, len(values), numerics))
    tape.append(0.0)
    _check_aliases(out[0], kept, values, body)
    return out
