"""`vjp` and `jvp`: the pullback of a function at a point, and its pushforward.

`vjp` runs the compiled forward sweep once and returns a pullback that runs the
reverse sweep on a copy of its tape (`backward_tapes`); `jvp` runs the compiled
forward mode. Both compile through `compilation.compile`.

The pullback owns its point: what the forward sweep kept on its tape is copied
(arrays, and the lists, tuples and dicts holding them: `owned`), so writes the
caller makes afterwards into its arrays (`x -= 0.5 * x`) change nothing, and
the reverse sweep writes nothing of the caller's. Where the forward sweep must
run again (a function that writes into its arguments, whose reverse sweep
restores memory in place; the native path), it runs on a copy of the
arguments taken before the call, replaying the random numbers it drew
(`runtime.randomness`).
"""
from __future__ import annotations

import tapeflow.runtime.support as support
from tapeflow.arguments import (argument_kinds, array_shapes, check_cotangent,
                                check_primals, moving_positions, scalar_positions, split_aux)
from tapeflow.caller_arguments import contract_call, owned
from tapeflow.callables import adjoint_caller, jvp_caller, with_defaults
from tapeflow.compilation import Spec
from tapeflow.compilation import entry
from tapeflow.conversions import check_tangent, like_argument, tangent_like
from tapeflow.custom_residuals import forward_mode
from tapeflow.rules.sequences import dense
from tapeflow.runtime.randomness import function_sources, replay_random, restore_random
from tapeflow.runtime.support import is_zero
from tapeflow.syntax import sourcemap

__all__ = ['vjp', 'jvp', 'forward_value', 'backward_tapes', 'owned']


def vjp(f, *primals, has_aux=False, compile='python'):
    """`(out, vjp_fn)`: `vjp_fn(cotangent)` is a tuple, one cotangent per primal;
    `(out, vjp_fn, aux)` with has_aux (`f` returns a pair `(out, aux)`).

    `compile='numba'` (or 'auto', see `grad`): `out` is the NumPy path's, and each
    `vjp_fn(cotangent)` runs the native value-and-gradient with `cotangent` as its
    seed (the forward sweep again, natively, in place of the tape's copy)."""
    check_primals(f, primals, 'vjp')
    wrt = moving_positions(primals)
    given, primals = primals, with_defaults(f, primals)
    own, compiled, written = entry(f, Spec('reverse', wrt, kinds=argument_kinds(primals),
                                           compile=compile))
    again = any(c.in_place or bool(c.native_source) for c in (own, compiled))   # run again
    point = owned(primals, arrays=again)          # (its lists and dicts: what the caller
                                                  # may change, arrays too where it runs again)
    drawn = function_sources(own.fn, primals) if own.in_place or compiled.in_place else None
    tapes_of = {id(own): [], id(compiled): []}
    out, _, _, ran = contract_call(
        f, primals, written, lambda: (forward_value(compiled, tapes_of[id(compiled)], primals), 0),
        lambda: (forward_value(own, tapes_of[id(own)], primals), 0))
    if not ran:             # (its own code ran: its tape, its seed)
        compiled, written = own, ()
    tape = tapes_of[id(compiled)]
    tapes = backward_tapes(compiled, point, tape, drawn, own=True)
    out, aux = split_aux(out, has_aux, getattr(f, '__name__', 'f'))
    if compiled.native_source:
        compiled.combined.admit(primals)

    def vjp_fn(cotangent):
        check_cotangent(cotangent, out, getattr(f, '__name__', 'f'))
        seed = (cotangent, 0.0) if has_aux else cotangent
        if written:
            seed = (seed,) + (0.0,) * len(written)
        try:
            if compiled.native_source:
                grads = compiled.combined(*owned(point), seed)[1]
            else:
                grads = compiled.backward(tapes(), seed)
        except Exception as error:
            sourcemap.reraise(error)
        if len(wrt) == 1:
            grads = (grads,)
        result = [None] * len(given)
        for g, i in zip(grads, wrt):
            result[i] = like_argument(g, point[i])
        return tuple(result)

    if has_aux:
        vjp_fn.__tapeflow_opaque__ = ('a pullback of vjp(..., has_aux=True) cannot be '
                                      'differentiated again; use has_aux=False there')
        return out, vjp_fn, aux
    vjp_fn.__tapeflow_pullback__ = (f, primals, wrt)
    return out, vjp_fn


def forward_value(compiled, tape, values):
    """`compiled`'s forward sweep on `values`, its value kept apart from memory the reverse
    sweep will restore in place (a callee's forward hands its caller the objects themselves)."""
    try:
        out = compiled.forward(tape, *values)
    except Exception as error:
        sourcemap.reraise(error)
    return support.snapshot(out) if compiled.in_place else out


def backward_tapes(compiled, values, tape, drawn=None, own=False):
    """The tape each call of `compiled`'s backward sweep pops.

    The forward's own, copied, while the reverse sweep leaves memory alone.
    One that restores memory in place (its function writes into arrays or
    lists) undoes the forward's writes, so a second pullback could not read
    them: from the second call on, the forward runs again on `values`,
    drawing what it drew (`drawn`: the random sources and their states before
    the forward sweep, `randomness.function_sources`). `own` (`vjp`): the tape
    is the pullback's, copied from the forward's (`owned`), and a forward that
    runs again does so on a copy of `values` (the point before the call), each time.
    """
    saved, used = (owned(tuple(tape)) if own and not compiled.in_place else tuple(tape)), [False]

    def fresh():
        if not compiled.in_place or (not own and not used[0]):
            used[0] = True
            return list(saved)
        again = []
        replayed = replay_random(drawn)
        try:
            compiled.forward(again, *(owned(values) if own else values))
        finally:
            restore_random(replayed)
        return again
    return fresh


def jvp(f, primals, tangents, has_aux=False, compile='python'):
    """Forward mode: `(f(*primals), the tangent of the output along tangents)`;
    `(out, tangent_out, aux)` with has_aux (`f` returns a pair `(out, aux)`).
    `compile='numba'` (or 'auto', see `grad`): the jvp compiled by Numba."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f'primal and tangent arguments to jvp must be tuples or lists; found '
                        f'{type(primals).__name__} and {type(tangents).__name__}: write '
                        f'jvp(f, (x,), (v,))')
    check_primals(f, primals, 'jvp', tangents)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f'jvp: {len(primals)} primals but {len(tangents)} tangents')
    wrt = moving_positions(primals)
    for i in wrt:
        check_tangent(primals[i], tangents[i], f'argument {i}')
    primals = with_defaults(f, primals)
    own, compiled, written = entry(f, Spec('forward', wrt, scalar_args=scalar_positions(primals),
                                           arg_shapes=array_shapes(primals),
                                           kinds=argument_kinds(primals), compile=compile))
    if compiled.native_source:
        compiled.combined.admit(primals)
    moving = [tangents[i] for i in wrt]

    def run(code):
        with forward_mode():
            return code.combined(*primals, *moving)
    try:
        value, tangent, _, _ = contract_call(f, primals, written, lambda: run(compiled),
                                             lambda: run(own), first_tangent)
    except Exception as error:
        sourcemap.reraise(error)
    value = dense(value)               # a gradient read as a function may be a list's `Items`
    if has_aux:
        out, aux = split_aux(value, has_aux, getattr(f, '__name__', 'f'))
        tangent = 0.0 if is_zero(tangent) else tangent[0]
        return out, tangent_like(tangent, out), aux
    return value, tangent_like(tangent, value)


def first_tangent(tangent):
    """The tangent of a variant's value (`compilation.entry`) as the function's."""
    return 0.0 if is_zero(tangent) else tangent[0]


# Inside compiled code (`transforms.desugar`), `jvp(f, (x, ...), (v, ...))` is a call of
# `f`'s compiled jvp; `out, pb = vjp(f, x)` computes `f(x)`, and each `pb(u)` is a call
# of `f`'s adjoint caller (every argument differentiated).
jvp.__tapeflow_fold_call__ = jvp_caller
vjp.__tapeflow_fold_pullback__ = lambda f, n: adjoint_caller(f, tuple(range(n)), n)
