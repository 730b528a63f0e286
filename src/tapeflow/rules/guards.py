"""What `try` and `with` become (`transforms.sugar.exceptions`): `attempt` runs a guarded
body, `enter_context`/`exit_context` a context manager's two halves, `UNBOUND` what a name
a guarded body binds holds before it is bound.

`attempt(types, kept, body, *values)` calls `body(*values)`, which returns `(code, value,
state)`: `state` the values of its parameters named `kept` (the first ones: those the code
after it reads), `code` 0 where it completed, 1 where it returned `value`, 3, 4 where it
broke out of the loop or continued it; where it raises one of `types` it gives `(2, error,
state)`, those values as the body left them (read from its frame). A name in `kept`
marked `WRITTEN` (`'*y'`) is one the body may write into in place. Differentiated (`tapeflow.calls`), a body that raised leaves nothing on the tape.
`attempt_within(manager, ...)` is `attempt` for the body of `with manager`: the reverse
sweep runs inside the manager again where it governs numerics (`np.errstate`).
"""
from __future__ import annotations

import traceback

import numpy as np

from tapeflow.errors import is_tapeflows
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import linear_pair, nondifferentiable
from tapeflow.rules.shapes import zeros_like_value

__all__ = ['UNBOUND', 'WRITTEN', 'COMPLETED', 'HELD', 'completed_positions', 'held_positions', 'attempt', 'kept_names', 'kept_value', 'kept_dict', 'kept_list', 'KEPT_OF_KIND', 'written_positions',
           'written_value', 'attempt_within', 'enter_context', 'exit_context',
           'left_values', 'numerics', 'raised', 'reentered', 'deleted']


class _Unbound:
    """A name not bound yet (Python would say UnboundLocalError where it is read)."""
    __slots__ = ()

    def __repr__(self):
        return '<unbound>'

    def __bool__(self):
        raise UnboundLocalError('a local variable read before it was assigned')


UNBOUND = _Unbound()

WRITTEN = '*'           # marks a name in `kept` that the body may write into in place
COMPLETED = '?'         # marks one only the else block reads: not read where the body raised
HELD = '&'              # marks one through whose items the code after the body may write
_MARKS = WRITTEN + COMPLETED + HELD


def kept_names(kept) -> tuple:
    """The names of `kept`, unmarked."""
    return tuple(name.lstrip(_MARKS) for name in kept)


def _marked(kept, mark) -> frozenset:
    return frozenset(k for k, name in enumerate(kept)
                     if mark in name[:len(name) - len(name.lstrip(_MARKS))])


def completed_positions(kept) -> frozenset:
    """The positions of the names in `kept` that only code run where the body completed
    reads (the `else` block): where it raised, what it left in them is never read."""
    return _marked(kept, COMPLETED)


def written_positions(kept) -> frozenset:
    """The positions of the names in `kept` the body may write into in place."""
    return _marked(kept, WRITTEN)


def held_positions(kept) -> frozenset:
    """The positions of the names in `kept` through whose items (a list's, a dict's, an
    object's fields) the code after the body may write in place."""
    return _marked(kept, HELD)


def left_values(error, kept, values):
    """The values of the body's parameters named `kept` (the first of `values`) as it left
    them when it raised `error`: read from its frame, the outermost frame below the one
    that caught `error` whose parameters include them all."""
    values = tuple(values[:len(kept)])
    kept = kept_names(kept)
    if not kept:
        return values
    for frame, _ in list(traceback.walk_tb(error.__traceback__))[1:]:
        code = frame.f_code
        if set(kept) <= set(code.co_varnames[:code.co_argcount]):
            local = frame.f_locals
            return tuple(local.get(name, value) for name, value in zip(kept, values))
    return values


def attempt(types, kept, body, *values):
    try:
        return body(*values)
    except types as error:
        if is_tapeflows(error):
            raise
        return 2, error, left_values(error, kept, values)


def kept_value(run, k):
    """The `k`-th value of the state `attempt` gives back, `run[2][k]`: what the code after
    the body binds the name to. One call, not two subscripts, so that the alias analysis
    takes it for any of what the body was given, related in ways it does not know (the
    body may have made a view of one, or bound one name to another's value)."""
    return run[2][k]


def kept_dict(run, k):
    """`kept_value(run, k)` of a name every binding of which, in the body and around it,
    is a new dict (`d = {...}`, a dict comprehension, `dict(...)`): to the alias analysis a
    dict (its methods then lowered as its writes), holding any of what the body was given."""
    return run[2][k]


def kept_list(run, k):
    """`kept_value(run, k)` of a name bound only to new lists (`kept_dict`'s, for lists)."""
    return run[2][k]


KEPT_OF_KIND = {'dict': kept_dict, 'list': kept_list}


def written_in_place(given) -> bool:
    """Whether a name the body may write into, given `given`, was written in place: an
    array, a list or a dict (its other readers see the write); a number or a tuple the
    body's `y += v` bound the name to another value."""
    return isinstance(given, (np.ndarray, list, dict))


def written_value(run, k, given):
    """`kept_value(run, k)` of a name the body wrote into in place, `given` its value before
    the body: to the alias analysis `given` itself (the same memory, written), to the
    derivative the body's state (`given`'s own cotangent flows through the body)."""
    return run[2][k]


def _zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def _nothing_vjp(g, ans, run, k, given):
    # (its cotangent flows through the body: `run`'s; a list the body appended to no
    #  longer has the length it had)
    return zeros_like_value(given) if hasattr(given, 'shape') else 0.0


def _nothing_jvp(t, ans, run, k, given):
    return zeros_like_value(ans)


def kept_value_vjp(g, ans, run, k, given=None):
    if _zero(g):
        return 0.0
    state = [0.0] * len(run[2])
    state[k] = g
    return (0.0, 0.0, tuple(state))


def kept_value_jvp(t, ans, run, k, given=None):
    if _zero(t) or _zero(t[2]):
        return 0.0
    return t[2][k]


for _kept in (kept_value, kept_dict, kept_list):
    entry(_kept, kept_value_vjp, kept_value_jvp, static=(1,), forms=None)
entry(written_value, (kept_value_vjp, None, _nothing_vjp), (kept_value_jvp, None, _nothing_jvp),
      static=(1,), forms=None)
linear_pair(kept_value_vjp, kept_value_jvp)


def attempt_within(manager, types, kept, body, *values):
    return attempt(types, kept, body, *values)


attempt.__tapeflow_attempt__ = attempt_within.__tapeflow_attempt__ = True


_NO_CAUSE = object()


def deleted(value):
    """What `del x` leaves in `x` inside a guarded body (`sugar.exceptions`): `UNBOUND`;
    where `x` was not bound, Python's error."""
    if value is UNBOUND:
        raise UnboundLocalError('cannot delete a local variable that is not bound')
    return UNBOUND


def raised(error, cause=_NO_CAUSE):
    """What `raise error [from cause]` raises (a class: an instance of it)."""
    if isinstance(error, type) and issubclass(error, BaseException):
        error = error()
    if not isinstance(error, BaseException):
        raise TypeError('exceptions must derive from BaseException')
    if cause is not _NO_CAUSE:
        error.__cause__ = cause() if isinstance(cause, type) else cause
        error.__suppress_context__ = True
    return error


def enter_context(manager):
    return manager.__enter__()


def exit_context(manager, error):
    """`manager.__exit__` with `error` (None: the body completed): whether it suppresses
    the error."""
    if error is None:
        return bool(manager.__exit__(None, None, None))
    return bool(manager.__exit__(type(error), error, error.__traceback__))


def numerics(manager):
    """What the reverse sweep of a `with manager` body runs inside again, read while the
    body runs: the settings of managers that set how numbers are computed (`np.errstate`:
    `np.geterr()`), None for ones with other effects."""
    return np.geterr() if isinstance(manager, np.errstate) else None


def reentered(settings):
    """The context the reverse sweep of a body `numerics` read `settings` in runs in."""
    return np.errstate(**settings)


nondifferentiable(raised, deleted, exit_context, numerics, reentered, written_in_place)
