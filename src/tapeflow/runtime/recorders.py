"""The recorders active in each thread: GradientTapes and ForwardAccumulators.

`state.tapes` is this thread's stack of recorders, innermost last; a recorder
joins it with `enter` and leaves with `leave` (keeping its position, so that
`stop_recording` can put it back among the others), and an accumulator
computing a tangent hides itself and the recorders inside it
(`narrow_to_outer`, then `restore`). Hot paths read `state` directly; nothing
else changes it.

What a recorder offers (the protocol :mod:`tapeflow.runtime.recording` uses):
`_live`, the ids of the values it knows (watched, or recorded outputs);
`_nodes`, a GradientTape's list of nodes; `_forward` (an accumulator, which
computes tangents as operations run: `_accumulate`, `_accumulate_custom`);
`_watch_accessed` and `_watch_one`, for Variables read while it records.

Reading a Variable (`variable_accessed`) makes every active tape that watches
the Variables it reads watch a trainable one, and shows it to the collectors
custom_gradient opened (`collecting_variable_reads`). Knows nothing of Tensors'
class: it sits below :mod:`tapeflow.runtime.tensor`.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ['state', 'enter', 'leave', 'narrow_to_outer', 'restore', 'collecting_variable_reads',
           'active_tapes', 'is_recording', 'is_watched', 'is_tracked', 'variable_accessed',
           'variable_read']


class _State(threading.local):
    """Per thread: `tapes`, the recorders active now (innermost last), and `watchers`,
    the lists custom_gradient collects the Variables read into."""

    def __init__(self):
        self.tapes = []
        self.watchers = []


# This thread's recorders. Read `state.tapes` and `state.watchers` (the hot paths
# do); change them only through the functions below.
state = _State()


def enter(recorder, index=None):
    """Make `recorder` active: innermost, or at position `index` of the stack."""
    if index is None:
        state.tapes.append(recorder)
    else:
        state.tapes.insert(index, recorder)


def leave(recorder):
    """Make `recorder` inactive; returns the position it had (for `enter`)."""
    tapes = state.tapes
    if tapes and tapes[-1] is recorder:
        tapes.pop()
        return len(tapes)
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is recorder:
            del tapes[i]
            return i
    return len(tapes)


def narrow_to_outer(recorder):
    """Leave active only the recorders entered before `recorder` (none when it is not
    active); returns the whole stack, for `restore`."""
    tapes = state.tapes
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is recorder:
            state.tapes = tapes[:i]
            return tapes
    state.tapes = []
    return tapes


def restore(tapes):
    """Undo `narrow_to_outer`: `tapes` is what it returned."""
    state.tapes = tapes


@contextlib.contextmanager
def collecting_variable_reads():
    """Within: the Variables read by recorded operations (and compiled calls) are
    appended to the list this yields, in order, repeats included."""
    watcher = []
    watchers = state.watchers
    watchers.append(watcher)
    try:
        yield watcher
    finally:
        for i in range(len(watchers) - 1, -1, -1):
            if watchers[i] is watcher:
                del watchers[i]
                break


def active_tapes():
    """The tapes recording in this thread, innermost last (a copy)."""
    return list(state.tapes)


def is_recording():
    """True when some tape (or forward accumulator) records in this thread."""
    return bool(state.tapes)


def is_watched(x):
    """True when an active tape of this thread would differentiate through `x`."""
    key = id(x)
    return any(key in tape._live for tape in state.tapes)


def is_tracked(x):
    """True when an active recorder of this thread would differentiate through the Tensor
    `x`: it watches `x` or recorded its producer, or `x` is a trainable Variable that
    a tape watching the Variables it reads would watch."""
    for tape in state.tapes:
        live = tape._live
        if live is not None and id(x) in live:
            return True
        if x._is_variable and x._trainable and tape._watch_accessed:
            return True
    return False


# ---------------------------------------------------------------- variables

def variable_accessed(variable):
    """Tell the active tapes that `variable` was read (auto-watch, TF semantics).

    The compiled-function path calls this for the Variables a compiled
    function reads from its globals or closure.
    """
    tapes = state.tapes
    if tapes:
        variable_read(variable, tapes)


def variable_read(variable, tapes):
    """`variable_accessed`, for a caller that has `state.tapes` (non-empty) at hand."""
    if variable._trainable:
        for tape in tapes:
            if tape._watch_accessed and id(variable) not in tape._live:
                tape._watch_one(variable)
    for watcher in state.watchers:
        watcher.append(variable)
