"""Calls resolved at run time, differentiated again: forward mode over the reverse sweep's
code (`tf.hessian`, `jvp` of `grad`, `hvp`).

Generated code differentiated again meets the dispatcher's `call_forward(_tape, ...)` and
`call_backward(_tape, g)` (`tapeflow.calls`). Forward mode makes them

    y, dy = call_forward_jvp(ACTIVE2, BATCHED, _tape, ACTIVE, f, (x, ...), {}, (dx, ...))
    c, dc = call_backward_jvp(BATCHED, _tape, g, dg)

which read the callee as `call_forward` does, compile its adjoint as it did, and run the
forward mode of that adjoint's own generated functions: its forward sweep given `_tape`,
whose pushes carry their tangents after them (the convention of generated code
differentiated again, `transforms.forward`), and its backward sweep, whose pops read them.
The record `call_forward` pushes is followed by its tangent (none: 0.0). `call_plain`
differentiated again is `call_jvp` of its function.

Reverse over reverse of such a call is refused here; `tf.grad` of a gradient computes it
by forward mode instead (`gradients`).
"""
from __future__ import annotations

import tapeflow.compilation as compilation
from tapeflow import guarded_calls
from tapeflow.calls import (Adjoint, Nothing, distribute, resolved_call, reverse_of, tangents_of,
                            call_jvp)
from tapeflow.call_plans import kinds_of
from tapeflow.rules.shapes import dense

__all__ = ['call_forward_jvp', 'call_backward_jvp']


def _forward_mode(fn, wrt, args, batched):
    """The forward mode of the generated function `fn` in its arguments at `wrt` (a
    function among them, a closure or a partial holding what moves, read as a value: its
    calls carry the tangents of what it holds; WRONG before, seed 5090 index 7050, where
    it was taken for a constant and the term of a partial's held value was missing)."""
    return compilation.compile(fn, compilation.Spec('forward', tuple(wrt),
                                                    kinds=kinds_of(args, wrt),
                                                    batched=bool(batched)))


def call_forward_jvp(active2, batched, tape, active, fn, args, kwargs, tangents):
    """`(value, tangent)` of `call_forward(tape, active, fn, *args, **kwargs)`, given the
    tangents of `active2` (the arguments moving now)."""
    if getattr(fn, '__tapeflow_attempt__', False):
        return guarded_calls.forward_jvp(active2, batched, tape, active, fn, args, tangents)
    resolved = resolved_call(fn, tuple(active) + tuple(active2), args, kwargs)
    if resolved is None:
        tape.append(Nothing(None))
        tape.append(0.0)
        return fn(*args, **kwargs), 0.0
    call, _ = resolved
    first = resolved_call(fn, active, args, kwargs)[1]
    tangent = tangents_of(call, active2, tangents)
    moving = [i for i in resolved_call(fn, active2, args, kwargs)[1]]
    if not first:                   # the first sweep differentiated nothing of it
        value, out = call_jvp(active2, batched, fn, args, kwargs, tangents)
        tape.append(Nothing(call))
        tape.append(0.0)
        return value, out
    compiled = reverse_of(call, first)
    forward = compiled.forward
    full = (tape,) + tuple(call.args)
    if moving:
        made = _forward_mode(forward, [1 + i for i in moving], full, batched)
        value, out = made.combined(*full, *[tangent(i) for i in moving])
    else:
        value, out = forward(*full), 0.0
    tape.append(Adjoint(call, value, first, compiled))
    tape.append(0.0)                # the record's tangent (it has none)
    return value, out


def call_backward_jvp(batched, tape, g, dg):
    """`(cotangents, their tangents)` of `call_backward(tape, g)`, `dg` the tangent of `g`."""
    tape.pop()                      # the record's tangent
    record = tape.pop()
    if getattr(record, 'guarded', False):
        return record.backward_jvp(batched, tape, g, dg)
    if not isinstance(record, Adjoint):
        empty = distribute(record, [])
        return empty, empty
    backward = record.compiled.backward
    g = dense(g, record.ans)
    made = _forward_mode(backward, [1], (tape, g), batched)
    grads, dgrads = made.combined(tape, g, dense(dg, record.ans))
    if len(record.wrt) == 1:
        grads, dgrads = [grads], [dgrads]
    return distribute(record, list(grads)), distribute(record, list(dgrads))


for _fn in (call_forward_jvp, call_backward_jvp):
    _fn.__tapeflow_dispatcher__ = True
compilation.RUNTIME.update(call_forward_jvp=call_forward_jvp, call_backward_jvp=call_backward_jvp)
