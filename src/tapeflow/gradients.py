"""`grad`, `value_and_grad`, `checkpoint` and `source`.

`grad(f)` returns a function that, at each call, reads its arguments into a key
(their classes, arrays' shapes), finds the compiled adjoint for that key in a
small table of its own (`cache.Recent`), and calls the generated code; on a miss
it asks `compilation.compile` (the one compile path, cached). The per-call path
is one frame (W2 is a latency).
"""
from __future__ import annotations

import functools
import inspect
import types

import numpy as np

import tapeflow.cache as cache
from tapeflow.errors import UnsupportedError
from tapeflow.arguments import (SCALAR_TYPES, FunctionArgument, argument_kinds, array_shapes, binder,
                                check_differentiable, check_holomorphic_input, check_libraries,
                                check_not_structured, check_pytree_argument, check_scalar,
                                parameter_name, parse_argnums, scalar_positions)
from tapeflow.callables import python_function_of
from tapeflow.compilation import Spec
from tapeflow.compilation import compile as compile_path
from tapeflow.compilation import entry as compiled_entry
from tapeflow.conversions import like_argument
from tapeflow.caller_arguments import contract_call
from tapeflow.syntax import sourcemap

__all__ = ['grad', 'value_and_grad', 'checkpoint', 'source']


# ------------------------------------------------------------------ transformations


def value_and_grad(f, argnums=0, has_aux=False, checkpoint=None, compile='python',
                   holomorphic=False):
    """`f` -> a function returning `(value, gradient)`; `((value, aux), gradient)` with has_aux.

    `checkpoint`, `compile`, `holomorphic`: see `grad`.
    """
    return _differentiated(f, argnums, has_aux, 'value_and_grad', checkpoint, compile,
                           holomorphic)


def grad(f, argnums=0, has_aux=False, checkpoint=None, compile='python', holomorphic=False):
    """`f` -> its gradient function (a tuple of gradients when `argnums` is a tuple).

    `f` returns a real scalar; a complex output is a TypeError, as in JAX, unless
    `holomorphic=True`: then `f` is a holomorphic function of complex arguments and the
    gradient is its complex derivative f'(z) (JAX's convention).

    `checkpoint=True` bounds the memory of `f`'s loops (those at the top level of `f`,
    over `range` or `while`): snapshots of the loop's variables every ~sqrt(n) trips
    instead of a tape of every trip, each trip run once more. `checkpoint=k` (an int)
    keeps at most k snapshots (binomial checkpointing: less memory, more reruns).

    `compile='numba'` compiles the generated value-and-gradient function with Numba
    (installed with `pip install 'tapeflow[numba]'`; docs/native.md): what Numba cannot
    compile is an error at its line, before anything runs. `compile='auto'`: Numba where
    it compiles, else the NumPy path (`compile='python'`, the default) with one warning.
    """
    return _differentiated(f, argnums, has_aux, 'grad', checkpoint, compile, holomorphic)


def checkpoint(fn):
    """`fn`, recomputed in the reverse sweep instead of taped, like `jax.checkpoint`.

    A differentiated function that calls the returned function (decorate `fn` with
    `@tf.checkpoint`, or bind `cell = tf.checkpoint(step)` at module level) calls it
    plainly in its forward sweep, keeping nothing of its insides; its reverse sweep
    calls `fn`'s forward again, with the tape, just before `fn`'s backward. Called
    outside a gradient, it is `fn`.

    `for i in tf.checkpoint(range(n)):` marks one loop of the differentiated function
    (at its top level) to checkpoint as `grad(f, checkpoint=True)` checkpoints every
    loop; outside a gradient `tf.checkpoint(range(n))` is the range.
    """
    if isinstance(fn, range):
        return fn           # `for i in tf.checkpoint(range(n))`: the loop is checkpointed
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f'tf.checkpoint takes a Python function or a range (the range of a '
                        f'loop to checkpoint), not a {type(fn).__name__}')
    marked = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    marked.__kwdefaults__ = fn.__kwdefaults__
    marked.__dict__.update(fn.__dict__)
    marked.__qualname__, marked.__module__, marked.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    marked.__tapeflow_checkpoint__ = True
    return marked


checkpoint.__tapeflow_loop_marker__ = True


def checkpoint_policy(checkpoint):
    if checkpoint is None or checkpoint is False or checkpoint is True:
        return checkpoint or None
    if isinstance(checkpoint, int) and not isinstance(checkpoint, bool) and checkpoint >= 1:
        return checkpoint
    raise ValueError(f'checkpoint= takes True, False, None or a number of snapshots >= 1, '
                     f'not {checkpoint!r}')


def _differentiated(f, argnums, has_aux, kind, checkpoint=None, target='python',
                    holomorphic=False):
    """The function `grad` or `value_and_grad` returns (one frame per call: W2 is a latency)."""
    checkpoint = checkpoint_policy(checkpoint)
    Spec(compile=target)                # its check: compile= names a target
    if not callable(f):
        raise TypeError(f'{kind}(f) takes a function to differentiate, not {type(f).__name__} '
                        f'{f!r:.60}')
    single, wrt = parse_argnums(argnums, f, kind)
    if single:
        argnums = wrt[0]
    if hasattr(f, '__tapeflow_jacobian__') and single and not has_aux:
        if checkpoint:
            raise ValueError('checkpoint= applies to a function, not to a Jacobian function')
        if holomorphic:
            raise TypeError(f'{kind}(..., holomorphic=True) of a Jacobian function: take the '
                            f'derivative of the function itself')
        from tapeflow.jacobians import gradient_of_jacobian     # (jacobians reads `grad`)
        return gradient_of_jacobian(f, argnums, kind)
    fname = getattr(f, '__name__', 'f')
    python_fn = python_function_of(f)
    state = cache.Recent()  # argument classes (and array shapes) -> (compiled, validity check,
                            #   positions to dtype-check, the function to call, the function
                            #   compiled and its code: still its code, or compiled again)
    seed = (1.0, 0.0) if has_aux else 1.0
    with_value = kind == 'value_and_grad'

    def prepare(args, key):
        for i in wrt:
            if i >= len(args):
                raise TypeError(f'differentiating with respect to argnums={i} requires at least '
                                f'{i + 1} positional arguments, but {fname}() got {len(args)}')
            check_differentiable(args[i], i, fname, parameter_name(python_fn, i))
            check_pytree_argument(args[i], i, fname)
            if holomorphic:
                check_holomorphic_input(args[i], i, fname, parameter_name(python_fn, i), kind)
        kinds = argument_kinds(args)
        try:
            compiled, runs, written = compiled_entry(f, Spec(
                'reverse', wrt, scalar_args=scalar_positions(args), arg_shapes=array_shapes(args),
                kinds=kinds, checkpoint=checkpoint, compile=target))
        except UnsupportedError as error:
            if not getattr(error, 'by_forward_mode', False) or has_aux or target != 'python':
                raise
            by_forward = forward_gradient(f, wrt)   # (a gradient of a gradient through a call
            entry = state[key] = (None, None, (), by_forward, by_forward, by_forward.__code__,
                                  ())
            return entry                            # the compiler resolves at run time)
        check_libraries(python_fn, compiled, args)
        if runs.native_source:              # compile='numba': arguments it computes as NumPy
            runs.combined.admit(args)
        dtype_checked = tuple(i for i in wrt if args[i].__class__ not in SCALAR_TYPES)
        # (`compiled.fn`: what was read, a fresh caller if `f` is generated code gone stale)
        # (the function's code is compared here, in `differentiated`'s frame: W2's latency)
        valid = cache.validator(compiled, compiled.fn, inline=True)
        if any(k.__class__ is FunctionArgument for k in kinds):
            valid = _never      # made for these functions: `key` holds only their type
        code = compiled.code if compiled.code is not None else compiled.fn.__code__
        entry = state[key] = (compiled, valid, dtype_checked, runs.combined, compiled.fn, code,
                              written)
        return entry

    def finish(value, grads, args):
        out = value
        if has_aux:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
            out = value[0]
        if out.__class__ is not float and out.__class__ is not np.float64 or holomorphic:
            check_scalar(out, fname, python_fn, holomorphic, kind)
        if single:
            grads = like_argument(grads, args[argnums])
        else:
            grads = tuple(like_argument(g, args[i]) for g, i in zip(grads if len(wrt) > 1 else (grads,), wrt))
        if with_value:
            return value, grads
        return (grads, value[1]) if has_aux else grads

    bind = binder(python_fn, fname)
    ndarray, float64 = np.ndarray, np.float64
    nparams = python_fn.__code__.co_argcount
    if python_fn.__code__.co_flags & inspect.CO_VARARGS:
        nparams = None              # (`variants.arity_variant` names the star's values)
    if python_fn.__code__.co_kwonlyargcount or python_fn.__code__.co_flags & inspect.CO_VARKEYWORDS:
        nparams = -1                # every call bound: keyword-only parameters, a ** dict

    @functools.wraps(f)
    def differentiated(*args, **kwargs):
        if kwargs:
            for i in wrt:
                if i >= len(args):
                    raise TypeError(
                        f'differentiating with respect to argnums={i} requires at least {i + 1} '
                        f'positional arguments, but {fname}() got {len(args)} (keyword '
                        f'arguments are not differentiated: pass it by position)')
            args = bind(args, kwargs)
        elif len(args) != nparams and nparams is not None:
            args = bind(args, kwargs)
        # argument classes, array shapes in place of the ndarray class: specialised on both
        n = len(args)           # (up to three without a comprehension's frame)
        if n == 1:
            key = args[0].shape if args[0].__class__ is ndarray else args[0].__class__,
        elif n == 2:
            a, b = args
            key = (a.shape if a.__class__ is ndarray else a.__class__,
                   b.shape if b.__class__ is ndarray else b.__class__)
        elif n == 3:
            a, b, c = args
            key = (a.shape if a.__class__ is ndarray else a.__class__,
                   b.shape if b.__class__ is ndarray else b.__class__,
                   c.shape if c.__class__ is ndarray else c.__class__)
        else:
            key = tuple([a.shape if a.__class__ is ndarray else a.__class__ for a in args])
        entry = state.get(key)
        if entry is None or entry[4].__code__ is not entry[5] or (
                entry[1] is not None and not entry[1]()):
            entry = prepare(args, key)
        if entry[2]:                        # (a float argument: no loop to start)
            for i in entry[2]:
                if args[i].__class__ is not np.ndarray or args[i].dtype.kind not in 'fc':
                    check_differentiable(args[i], i, fname)
        if entry[6] is None or entry[6]:
            return writing_back(entry, args)
        try:
            value, grads = entry[3](*args, seed)
        except Exception as error:
            if not has_aux and isinstance(error, (TypeError, IndexError, KeyError, ValueError)):
                check_not_structured(python_fn, args, kind)
            sourcemap.reraise(error)
        if single and not has_aux:
            arg = args[argnums]
            if value.__class__ is float and grads.__class__ is float and arg.__class__ is float:
                return (value, grads) if with_value else grads      # the scalar fast path
            if value.__class__ is float64 and grads.__class__ is ndarray \
                    and arg.__class__ is ndarray and grads.dtype is arg.dtype \
                    and grads.shape == arg.shape and grads.dtype.kind == 'f':
                return (value, grads) if with_value else grads      # the array's: `finish`'s
        return finish(value, grads, args)

    def writing_back(entry, args):
        """`differentiated` of a function writing into its arguments (`entry[6]`: their
        positions, or None where its variant was refused): `contract_call`, the gradient
        shaped as the arguments were given."""
        written = entry[6]
        own = entry[0].combined
        try:
            value, grads, given, _ = contract_call(
                f, args, written, lambda: entry[3](*args, (seed,) + (0.0,) * len(written)),
                lambda: own(*args, seed))
        except Exception as error:
            sourcemap.reraise(error)
        return finish(value, grads, given)

    differentiated.__dict__.pop('__tapeflow_callers__', None)   # wraps copied f's
    differentiated.__tapeflow_transform__ = (kind, f, wrt, has_aux)
    return differentiated


def forward_gradient(f, wrt):
    """`f`'s gradient in its arguments at `wrt` by forward mode, one direction per element
    (`jacfwd`): where reverse mode over `f`'s code cannot run (generated code calling a
    function resolved at run time, `tapeflow.calls`); `f(*args, seed)` -> (value, gradient)."""
    from tapeflow.jacobians import jacfwd       # (jacobians reads `grad`)
    jacobian = jacfwd(f, argnums=wrt if len(wrt) > 1 else wrt[0])

    def by_forward_mode(*args):
        *args, seed = args
        grads = jacobian(*args)
        if seed != 1.0:
            grads = tuple(g * seed for g in grads) if len(wrt) > 1 else grads * seed
        return f(*args), grads
    return by_forward_mode


def _never():
    return False


def source(f, argnums=0, mode='reverse', optimize=True, args=None, checkpoint=None,
           compile='python'):
    """The generated Python source of `f`'s gradient (or, forward, its jvp), as a string.

    The combined value-and-gradient function first, then the forward and
    backward functions of every user function it calls. With `args` (example
    arguments), the code specialised to their shapes, as `grad` runs it; with
    `checkpoint`, its loops checkpointed as `grad(f, checkpoint=...)` runs them.
    With `compile='numba'`, the combined function (or the jvp) as Numba compiles it
    (alone).
    """
    checkpoint, target = checkpoint_policy(checkpoint), compile
    compile = compile_path                  # (the keyword shadows the one compile path)
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    shapes = {} if args is None else dict(scalar_args=scalar_positions(args),
                                           arg_shapes=array_shapes(args),
                                           kinds=argument_kinds(args))
    if mode == 'forward':
        if checkpoint:
            raise ValueError('checkpoint= applies to reverse mode: forward mode keeps no tape')
        compiled = compile(f, Spec('forward', wrt, optimize=optimize, compile=target,
                                   **shapes))
        part = 'source'
    elif mode == 'reverse':
        compiled = compile(f, Spec('reverse', wrt, optimize=optimize, checkpoint=checkpoint,
                                   compile=target, **shapes))
        part = 'split_source'
    else:
        raise ValueError(f"mode must be 'reverse' or 'forward', not {mode!r}")
    if target != 'python':
        return compiled.native_source or compiled.source     # 'auto' fell back
    parts, seen, pending = [compiled.source], {id(compiled)}, list(compiled.callees)
    while pending:
        callee = pending.pop(0)
        if id(callee) not in seen:
            seen.add(id(callee))
            parts.append(getattr(callee, part))
            pending.extend(callee.callees)
    return '\n\n'.join(parts)


# Inside compiled code, `grad(f)` and the like are computed while compiling
# (`transforms.desugar`): their calls are then calls of user functions.
grad.__tapeflow_fold__ = value_and_grad.__tapeflow_fold__ = True
