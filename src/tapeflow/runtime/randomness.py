"""Random state replayed by recomputations: a rerun draws the numbers the forward sweep drew.

A recomputation (the trips of a checkpointed loop run again, a `tf.checkpoint`
function's forward run again in the reverse sweep, a forward sweep run again
for a second pullback) must draw what the forward sweep drew, or its gradient
is another sample's. It sets each source of random numbers to the state it had
before that part of the forward sweep, runs, and afterwards puts back the state
the sources had before the rerun: a gradient call leaves the random state as
the plain call leaves it.

Sources (`GENERATOR_TYPES`): NumPy's global RandomState (`np.random.rand`,
`np.random.seed`), Python's `random` module, and the `np.random.Generator`,
`np.random.RandomState` and `random.Random` objects the code reaches: global
and closure values, and values reached from the arguments (or from the
variables of a checkpointed loop), through tuples, lists, dicts and objects'
attributes, a few levels deep (`random_plans.walk`).

`runtime.random_plans` reads what code draws from; here its states are taken
and set. `random_sources(flags, candidates)` is what generated code calls: the
`Sources` to capture and replay, or None when nothing draws.
"""
from __future__ import annotations

import contextlib
import random as _random
import types

import numpy as np

from tapeflow.runtime.random_plans import (GENERATOR_TYPES, MISSING, NUMPY, PYTHON, WALK, follow,
                                           plan_of, run_by, walk)

__all__ = ['Sources', 'random_sources', 'function_sources', 'capture_random', 'replay_random',
           'restore_random', 'replaying']


# ------------------------------------------------------------------ states

def _state_of(source):
    if source.__class__ is np.random.Generator or isinstance(source, np.random.Generator):
        return source.bit_generator.state
    if isinstance(source, np.random.RandomState):
        return source.get_state(legacy=False)
    return source.getstate()


def _set_state(source, state):
    if isinstance(source, np.random.Generator):
        source.bit_generator.state = state
    elif isinstance(source, np.random.RandomState):
        source.set_state(state)
    else:
        source.setstate(state)


class Sources:
    """The random sources one recomputation replays; `walk`: also those found, at the
    first `capture`, in the values it is given (a loop's variables, the arguments)."""
    __slots__ = ('objects', 'walk', 'ready')

    def __init__(self, objects, walk):
        self.objects, self.walk, self.ready = list(objects), walk, not walk

    def capture(self, values=()):
        """The state of every source now (a tuple, in the order of `objects`)."""
        if not self.ready:
            found = []
            walk(values, found, set(map(id, self.objects)), 0)
            self.objects.extend(found)
            self.ready = True
        return tuple([_state_of(s) for s in self.objects])

    def replay(self, states):
        for source, state in zip(self.objects, states):
            _set_state(source, state)


def random_sources(flags, candidates=()):
    """The `Sources` of code whose plan has `flags` and names the `candidates` (values of
    its roots: generators, the user functions it calls, values holding generators), or
    None when nothing draws."""
    objects, seen = [], set()
    if flags & NUMPY:
        _add(np.random.mtrand._rand, objects, seen)
    if flags & PYTHON:
        _add(_random._inst, objects, seen)
    walk = bool(flags & WALK)
    for value in candidates:
        walk = _collect(value, objects, seen, set()) or walk
    if not objects and not walk:
        return None
    return Sources(objects, walk)


def function_sources(fn, arguments=()):
    """The `Sources` of a call of `fn` on `arguments`, their states taken now: None when
    `fn` draws nothing."""
    sources = random_sources(0, (fn,))
    if sources is None:
        return None
    return sources, sources.capture(arguments)


def capture_random(flags, candidates, arguments):
    """What generated code pushes before a call it will run again (`tf.checkpoint`): the
    sources and their states, or None."""
    sources = random_sources(flags, candidates)
    return None if sources is None else (sources, sources.capture(arguments))


def replay_random(captured):
    """Set the sources to the states `capture_random` took; what `restore_random` takes
    to put back the states they have now."""
    if captured is None:
        return None
    sources, states = captured
    now = sources.capture()
    sources.replay(states)
    return sources, now


def restore_random(token):
    if token is not None:
        token[0].replay(token[1])


@contextlib.contextmanager
def replaying(captured):
    """Run the block drawing what was drawn after `captured` (`function_sources`, or None),
    then put the sources back as they were."""
    token = replay_random(captured)
    try:
        yield
    finally:
        restore_random(token)


def _add(source, objects, seen):
    if id(source) not in seen:
        seen.add(id(source))
        objects.append(source)


def _collect(value, objects, seen, visiting) -> bool:
    """Add the sources `value` names; whether values passed in must be searched too."""
    if isinstance(value, GENERATOR_TYPES):
        _add(value, objects, seen)
        return False
    if isinstance(value, types.MethodType) or isinstance(value, types.BuiltinMethodType):
        owner = getattr(value, '__self__', None)
        if isinstance(owner, GENERATOR_TYPES):
            _add(owner, objects, seen)
            return False
        value = getattr(value, '__func__', value)
    functions = run_by(value)
    if functions is not None:
        walked = False
        for function in functions:
            if id(function) in visiting:
                continue
            visiting.add(id(function))
            plan = plan_of(function)
            if plan.flags & NUMPY:
                _add(np.random.mtrand._rand, objects, seen)
            if plan.flags & PYTHON:
                _add(_random._inst, objects, seen)
            walked = walked or bool(plan.flags & WALK)
            for path in plan.roots:
                found = follow(function, path)
                if found is not MISSING:
                    walked = _collect(found, objects, seen, visiting) or walked
        return walked
    found = []
    walk(value, found, seen, 1)
    for source in found:
        _add(source, objects, seen)
    return False


