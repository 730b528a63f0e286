"""A `custom_vjp` function in reverse mode: `bwd` gets the residuals of the very `fwd` call
that produced the value (JAX's semantics).

`compilation.compile` asks here first for a reverse-mode compilation of the function
`custom_vjp` returns: instead of the compiler's reading of it (a primitive whose rule
would run `fwd` again for the backward pass: another dropout mask's gradient), a
`Compiled` whose three functions are written by hand, as the compiler writes those
of a user function:

    def drop_forward(_tape, *args):           # what a caller's forward sweep calls
        value, residuals = fwd(*args)          # fwd runs once, in the forward sweep
        _tape.append((residuals, value, args))
        return value

    def drop_backward(_tape, g):               # what its reverse sweep calls
        residuals, value, args = _tape.pop()
        return bwd(*nondiff, residuals, g)     # the cotangents of the differentiated ones

    def ddrop(*args, g=1.0):                   # grad, value_and_grad: both at once

So `grad`, `vjp`, `jacrev`, a user function calling it (compiled or under a tape
through `tf.function`'s fused node) all keep the residuals on the tape. A zero
cotangent (an output nothing reads) does not call `bwd`; parts of a structured
output nothing reads are given as zeros of their shape. These functions are not
read by the compiler again: a second derivative through them is refused (as it
was), at the user's `fwd`, saying to use the eager `GradientTape`.

Forward mode (`jvp`, `jacfwd`) keeps the compiler's reading: the primitive's
call runs `fun` for the value, and its JVP rule runs `fwd` again for the
residuals (`residuals_again`). Where forward-mode code runs (`forward_mode`,
entered by `jvp` and `jacfwd`), the primitive keeps the random state `fun`
drew from, and `fwd` replays it; a `fwd` whose value is not `fun`'s is refused.
"""
from __future__ import annotations

import contextlib
import inspect
import threading

import numpy as np

from tapeflow.linear_maps import leaves_of, located, rebuild, zero_leaf, zeros_like
from tapeflow.runtime.randomness import replay_random, restore_random
from tapeflow.runtime.support import is_zero

__all__ = ['compiled_rule', 'forward_mode', 'in_forward_mode', 'residuals_again']

AGAIN = ('{name} is a custom_vjp function, whose rule is not differentiated again (no '
         'second derivatives through custom_vjp, custom_jvp or vmap in compiled code: use '
         'the eager GradientTape)')


def compiled_rule(custom, spec):
    """The `pipeline.Compiled` of `custom`'s function for the reverse-mode `spec`, or None
    where the compiler must read it (no rule yet, lifted Variables)."""
    if custom.bwd is None or spec.lifted:
        return None
    wrt = tuple(spec.wrt)
    made = custom.compiled_units
    if wrt not in made:
        made[wrt] = _unit(custom, wrt)
    return made[wrt]


def _unit(custom, wrt):
    from tapeflow.transforms.pipeline import Compiled
    caller, name = custom.caller, custom.__name__
    nargs = custom.nargs
    signature = inspect.signature(caller)
    one = len(wrt) == 1

    def arguments(args, kwargs):
        if len(args) == nargs and not kwargs:
            return args
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def gradients(g, value, residuals, args):
        if is_zero(g):
            cts = [zeros_like(args[i]) for i in wrt]
        else:
            g = _dense(g, value)
            found = custom.cotangents(g, args, residuals)
            cts = [found[i] if i in found else custom.nondiff_cotangent(i, g, args) for i in wrt]
        return cts[0] if one else tuple(cts)

    def forward(tape, *args, **kwargs):
        args = arguments(args, kwargs)
        value, residuals = custom.forward_residuals(args)
        tape.append((residuals, value, args))
        return value

    def backward(tape, g):
        residuals, value, args = tape.pop()
        return gradients(g, value, residuals, args)

    def combined(*args, **kwargs):
        seed = kwargs.pop('bout', 1.0)
        if len(args) == nargs + 1 and not kwargs:
            *args, seed = args
        args = arguments(tuple(args), kwargs)
        value, residuals = custom.forward_residuals(args)
        return value, gradients(seed, value, residuals, args)

    for role, function in (('forward', forward), ('backward', backward), ('combined', combined)):
        function.__name__ = function.__qualname__ = f'{name}_{role}' if role != 'combined' \
            else f'd{name}'
        function.__tapeflow_opaque__ = AGAIN.format(name=name)
        function.__tapeflow_order__, function.__tapeflow_tapes__ = 1, ()
        function.__wrapped__ = custom.fwd           # (the refusal is located at `fwd`)
    params = [f'_a{k}' for k in range(nargs)]
    text = _text(name, params, wrt, custom)
    rules = {getattr(rule, '__name__', ''): rule for rule in (custom.fwd, custom.bwd)}
    namespace = {n: rule for n, rule in rules.items() if n.isidentifier()}   # (for `export`)
    compiled = Compiled(caller, wrt, (), params, text[0], '\n\n'.join(text), namespace,
                        _split_source='\n\n'.join(text[1:]), combined=combined,
                        _forward=forward, _backward=backward)
    compiled.code = caller.__code__
    return compiled


def _dense(g, value):
    """`g` with the parts nothing read (symbolic zeros) as zeros of their value's shape."""
    if isinstance(g, (tuple, list, dict)) and isinstance(value, (tuple, list, dict)):
        leaves = leaves_of(g)
        if any(is_zero(leaf) for leaf in leaves):
            values = leaves_of(value)
            if len(values) == len(leaves):
                return rebuild(g, iter([zero_leaf(v) if is_zero(leaf) else leaf
                                        for leaf, v in zip(leaves, values)]))
    return g


def _text(name, params, wrt, custom):
    """What `tf.source` shows: the three functions, as they run."""
    fwd, bwd = (getattr(rule, '__name__', '') for rule in (custom.fwd, custom.bwd))
    fwd = fwd if fwd.isidentifier() else f'{name}.fwd'      # (a lambda: read where it is)
    bwd = bwd if bwd.isidentifier() else f'{name}.bwd'
    args = ', '.join(params)
    nondiff = ''.join(f'{params[i]}, ' for i in custom.nondiff_argnums)
    cts = ', '.join(f'b{params[i][1:]}' for i in wrt)
    positions = custom.diff_positions(len(params))
    every = ', '.join(f'b{params[i][1:]}' if i in wrt else '_' for i in positions)
    pick = f'    {every}{"," if len(positions) == 1 else ""} = {bwd}({nondiff}_residuals, bout)'
    combined = (f'def d{name}({args}, bout=1.0):\n'
                f'    _value, _residuals = {fwd}({args})    # custom_vjp: fwd, once\n'
                f'{pick}\n    return (_value, {cts})\n')
    forward = (f'def {name}_forward(_tape, {args}):\n'
               f'    _value, _residuals = {fwd}({args})    # custom_vjp: fwd, once\n'
               f'    _tape.append((_residuals, _value, ({args},)))\n    return _value\n')
    backward = (f'def {name}_backward(_tape, bout):\n'
                f'    _residuals, _value, ({args},) = _tape.pop()\n'
                f'{pick}\n    return {cts}\n')
    return [combined, forward, backward]


_MODE = threading.local()       # .forward: forward-mode code runs (`forward_mode`)


@contextlib.contextmanager
def forward_mode():
    """Around a run of forward-mode code (`jvp`, `jacfwd`): a custom_vjp function called
    there keeps the random state its `fun` drew from, which `fwd` replays for its residuals."""
    _MODE.forward = getattr(_MODE, 'forward', 0) + 1
    try:
        yield
    finally:
        _MODE.forward -= 1


def in_forward_mode() -> bool:
    return bool(getattr(_MODE, 'forward', 0))


def residuals_again(custom, ans, args):
    """Forward mode: `fwd` run again for its residuals, drawing the random numbers the primal
    call drew (the primitive kept their state); refused where its value is not the primal's
    (residuals of another evaluation: a plausible wrong tangent)."""
    last = getattr(custom.primitive.running, 'last', None)
    drawn = last[1] if last is not None and len(last[0]) == len(args) and all(
        a is b for a, b in zip(last[0], args)) else None
    replayed = replay_random(drawn)
    try:
        value, res = custom.forward_residuals(args)
    finally:
        restore_random(replayed)
    name = custom.__name__
    if not all(np.allclose(a, b, rtol=1e-6, atol=0.0, equal_nan=True)
               for a, b in zip(leaves_of(value), leaves_of(ans))):
        raise located(custom.fwd, f'the fwd rule of {name} gave another value than {name}() at '
                      f'the same point (does it draw random numbers that {name}() does not draw '
                      f'alike?): forward mode (jvp, jacfwd) runs fwd again for its residuals; '
                      f"make fwd compute {name}()'s value, or use reverse mode")
    return res
