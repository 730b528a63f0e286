"""The functional API: grad, value_and_grad, vjp, source.

Each transformation compiles the function once per set of differentiated
inputs (see `cache`) and calls the generated code; gradients come back with
the type and shape of their argument.
"""
from __future__ import annotations

import functools
import inspect
import numbers
import types
import weakref

import numpy as np

from tapeflow import cache, wrappers
from tapeflow.analysis.aliasing import kind_of_value
from tapeflow.rules.batching import is_batched
from tapeflow.rules.registry import MissingRule
from tapeflow.rules.sequences import dense
from tapeflow.syntax.errors import UnsupportedError
from tapeflow.syntax import sourcemap
from tapeflow.runtime import support
from tapeflow.runtime.support import is_zero
from tapeflow.transforms import pipeline

__all__ = ['grad', 'value_and_grad', 'vjp', 'jvp', 'source', 'compile_adjoint', 'compile_tangent']

_NAMESPACE = support.generated_namespace()


_SCALAR_TYPES = (float, int, bool)


def scalar_positions(args) -> tuple:
    """Positions of scalar arguments (Python or NumPy): part of a compilation's key."""
    return tuple(i for i, a in enumerate(args)
                 if a.__class__ in _SCALAR_TYPES or isinstance(a, np.generic))


def array_shapes(args) -> tuple:
    """(position, shape) of the NumPy array arguments: part of a compilation's key."""
    return tuple((i, a.shape) for i, a in enumerate(args) if a.__class__ is np.ndarray)


def argument_kinds(args) -> tuple:
    """What each argument is (a scalar, an array, a list...; `analysis.aliasing`): part of
    a compilation's key, so the compiler knows which writes change what."""
    return tuple(kind_of_value(a) for a in args)


def compile_adjoint(fn, wrt=(0,), lifted=(), optimize=True, scalar_args=(), arg_shapes=(),
                    kinds=()):
    """The compiled adjoint of `fn` for the parameters at positions `wrt` (cached).

    `scalar_args` and `arg_shapes` specialise it to the arguments' shapes,
    `kinds` to what they are (`argument_kinds`).
    """
    fn = _unwrap(fn, tuple(kinds))
    key = (tuple(wrt), tuple(lifted), optimize, tuple(scalar_args), tuple(arg_shapes), tuple(kinds))
    return cache.compile_once(fn, key, tuple(wrt), tuple(lifted), lambda: pipeline.compile_reverse(
        fn, tuple(wrt), tuple(lifted), runtime_names=_NAMESPACE, optimize_code=optimize,
        compile_callee=_compile_callee, scalar_args=tuple(scalar_args),
        arg_shapes=tuple(arg_shapes), kinds=tuple(kinds)))


def _make_caller(name, text, compiled, python_fn, namespace=()):
    """Load `text`, a small `def name` calling `compiled.combined`: a function the
    compiler reads like any other, so its derivatives transform generated code."""
    from tapeflow.syntax.unparse import load_module
    namespace = dict(namespace)
    namespace[compiled.combined.__name__] = compiled.combined
    load_module(text, namespace, name)
    caller = namespace[name]
    caller.__tapeflow_order__ = compiled.combined.__tapeflow_order__
    caller.__tapeflow_adjoint__ = (compiled, python_fn)     # what it calls, compiled from what
    return caller


def _fits(caller) -> bool:
    """Whether the generated code `caller` calls still fits the user's code (globals
    and closures unchanged: a redefined helper makes it stale)."""
    return caller is not None and cache.valid(*caller.__tapeflow_adjoint__)


def _generated_caller(wrapper, kind, f, wrt, has_aux, kinds=()):
    callers = wrapper.__dict__.setdefault('__tapeflow_callers__', {})     # kinds -> caller
    cached = callers.get(kinds)
    if _fits(cached):
        return cached
    python_fn = _unwrap(f, kinds)
    compiled = compile_adjoint(python_fn, wrt, kinds=kinds)
    params = ', '.join(compiled.params)
    result = {'grad': '_out[1]', 'value_and_grad': '_out'}[kind]
    if has_aux and kind == 'grad':
        result = '(_out[1], _out[0][1])'
    seed = ', (1.0, 0.0)' if has_aux else ', 1.0'
    name = f'{kind}_{python_fn.__name__}'
    # the user's defaults stay defaults (grad(grad(f)) called without them)
    defaults = python_fn.__defaults__ or ()
    first = len(compiled.params) - len(defaults)
    signature = ', '.join(p if i < first else f'{p}=_default{i - first}'
                          for i, p in enumerate(compiled.params))
    text = (f'def {name}({signature}):\n'
            f'    _out = {compiled.combined.__name__}({params}{seed})\n'
            f'    return {result}\n')
    caller = callers[kinds] = _make_caller(name, text, compiled, python_fn,
                                           {f'_default{k}': v for k, v in enumerate(defaults)})
    return caller


_CALLERS = weakref.WeakKeyDictionary()     # python function -> {(kind, positions): caller}


def _adjoint_caller(f, wrt, nprimals, kinds=()):
    """`vjp_f(*primals, cotangent)`: the pullback of `f` as a function of everything."""
    python_fn = _unwrap(f, kinds)
    callers = _CALLERS.setdefault(python_fn, {})
    key = ('vjp', wrt, nprimals, kinds)
    if _fits(callers.get(key)):
        return callers[key]
    compiled = compile_adjoint(python_fn, wrt, kinds=kinds)
    grads = {i: '_out[1]' if len(wrt) == 1 else f'_out[1][{k}]' for k, i in enumerate(wrt)}
    result = ', '.join(grads.get(i, 'None') for i in range(nprimals))
    params = ', '.join([f'_primal{k}' for k in range(nprimals)] + ['cotangent'])
    name = f'vjp_{python_fn.__name__}'
    text = (f'def {name}({params}):\n'
            f'    _out = {compiled.combined.__name__}({params})\n'
            f'    return ({result},)\n')
    caller = callers[key] = _make_caller(name, text, compiled, python_fn)
    return caller


def _pullback_caller(pullback, f, primals, wrt):
    """The `vjp_fn` that `vjp(f, *primals)` returned, as a function the compiler reads:
    the adjoint caller of `f` with the primals bound as constants."""
    cached = pullback.__dict__.get('__tapeflow_caller__')
    if _fits(cached):
        return cached
    adjoint = _adjoint_caller(f, wrt, len(primals), argument_kinds(primals))
    names = [f'_primal{k}' for k in range(len(primals))]
    text = (f'def pullback(cotangent):\n'
            f'    return {adjoint.__name__}({", ".join(names + ["cotangent"])})\n')
    caller = _make_caller('pullback', text, *adjoint.__tapeflow_adjoint__,
                          namespace={adjoint.__name__: adjoint, **dict(zip(names, primals))})
    pullback.__tapeflow_caller__ = caller
    return caller


def _jvp_caller(f, nprimals):
    """`jvp_f(*primals, *tangents) -> (value, tangent)`: `jvp(f, primals, tangents)`
    inside compiled code (`transforms.desugar`), every argument moving."""
    python_fn = _unwrap(f)
    callers = _CALLERS.setdefault(python_fn, {})
    if _fits(callers.get(('jvp', nprimals))):
        return callers['jvp', nprimals]
    wrt = tuple(range(nprimals))
    compiled = compile_tangent(python_fn, wrt)
    params = ', '.join([f'_primal{k}' for k in wrt] + [f'_tangent{k}' for k in wrt])
    name = f'jvp_{python_fn.__name__}'
    text = (f'def {name}({params}):\n'
            f'    return {compiled.combined.__name__}({params})\n')
    caller = callers['jvp', nprimals] = _make_caller(name, text, compiled, python_fn)
    return caller


def _compile_callee(fn, wrt, kinds=()):
    return compile_adjoint(fn, wrt, kinds=kinds)


def compile_tangent(fn, wrt=(0,), optimize=True, scalar_args=(), arg_shapes=(), batched=False,
                    kinds=()):
    """The compiled forward mode (`f_jvp(*args, *tangents)`) of `fn` (cached).

    `batched`: for tangents with a leading batch axis (one row per direction).
    """
    fn = _unwrap(fn, tuple(kinds))
    key = ('forward', tuple(wrt), optimize, tuple(scalar_args), tuple(arg_shapes), batched,
           tuple(kinds))
    callee = functools.partial(compile_tangent, batched=True) if batched else compile_tangent
    return cache.compile_once(fn, key, tuple(wrt), (), lambda: pipeline.compile_forward(
        fn, tuple(wrt), runtime_names=_NAMESPACE, optimize_code=optimize,
        compile_callee=callee, scalar_args=tuple(scalar_args),
        arg_shapes=tuple(arg_shapes), batched=batched, kinds=tuple(kinds)))


def _unwrap(fn, kinds=()):
    """The Python function the compiler reads for `fn` (see `wrappers`), called with
    arguments of `kinds`.

    A function made by `grad` or `value_and_grad` (or a `vjp` pullback) is read
    as a small function that calls its generated code, so derivatives of
    derivatives transform the generated code itself; a wrapper is read as
    written unless it only compiles, caches or passes on (`wrappers.inner_function`).
    """
    seen = set()
    while id(fn) not in seen:
        seen.add(id(fn))
        transform = wrappers.own(fn, '__tapeflow_transform__')
        if transform is not None:
            return _generated_caller(fn, *transform, kinds=kinds)
        pullback = wrappers.own(fn, '__tapeflow_pullback__')
        if pullback is not None:
            return _pullback_caller(fn, *pullback)
        inner = wrappers.inner_function(fn)
        if inner is None:
            break
        fn = inner
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f'tapeflow differentiates Python functions (def ...), not {fn!r}; '
                        f'call it from a def')
    return fn


# ------------------------------------------------------------------ checks and conversions

def _check_differentiable(value, position, fname):
    dtype = _dtype_of(value)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        raise TypeError(
            f'grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of '
            f'np.inexact), but got {dtype.name} for argument {position} of {fname}(). '
            f'If you want to differentiate with respect to it, pass a float.')


def _dtype_of(value):
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, numbers.Integral) and not isinstance(value, np.ndarray):
        return np.dtype(int)
    if isinstance(value, (float, complex)):
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    return None


def _like(g, arg):
    """The gradient `g` in the type and shape of the argument `arg`."""
    cls = arg.__class__
    if cls is float:
        return 0.0 if is_zero(g) else float(g)
    if isinstance(arg, np.ndarray):
        dtype = arg.dtype if np.issubdtype(arg.dtype, np.inexact) else np.float64
        if is_zero(g):
            return np.zeros(arg.shape, dtype)
        g = np.asarray(g)
        if g.shape != arg.shape:
            g = np.broadcast_to(g, arg.shape).copy()
        return g.astype(dtype, copy=False)
    if isinstance(arg, dict):
        return {k: _like(0.0 if is_zero(g) else g.get(k, 0.0), a) for k, a in arg.items()}
    if isinstance(arg, (list, tuple)):
        parts = [_like(0.0 if is_zero(g) else g[i], a) for i, a in enumerate(arg)]
        return cls(parts) if cls in (list, tuple) else parts
    if isinstance(arg, np.generic):
        return arg.dtype.type(0 if is_zero(g) else g)
    if isinstance(arg, complex):
        return complex(g)
    return dense(g)


def _check_not_structured(fn, args, kind):
    """A seed of 1.0 given to a tuple, list or dict output fails inside generated code;
    say what JAX says instead, at the user's def (runs `fn` again: an error path only)."""
    try:
        out = fn(*args)
    except Exception:
        return
    if isinstance(out, (tuple, list, dict)):
        code = fn.__code__
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: {kind} requires a scalar '
                        f'output, but {fn.__name__}() returned a {type(out).__name__}; to '
                        f'return more, use has_aux=True (output, aux) or vjp') from None


def _check_scalar(value, fname):
    if np.ndim(value) != 0:
        raise TypeError(f'Gradient only defined for scalar-output functions. Output of {fname}() '
                        f'had shape: {np.shape(value)}')
    if _dtype_of(value) is not None and not np.issubdtype(_dtype_of(value), np.inexact):
        raise TypeError(f'grad requires real-valued outputs (output dtype that is a sub-dtype of '
                        f'np.floating), but {fname}() returned {_dtype_of(value)}')


# ------------------------------------------------------------------ transformations

def value_and_grad(f, argnums=0, has_aux=False):
    """`f` -> a function returning `(value, gradient)`; `((value, aux), gradient)` with has_aux."""
    return _differentiated(f, argnums, has_aux, 'value_and_grad')


def grad(f, argnums=0, has_aux=False):
    """`f` -> its gradient function (a tuple of gradients when `argnums` is a tuple)."""
    return _differentiated(f, argnums, has_aux, 'grad')


def _differentiated(f, argnums, has_aux, kind):
    """The function `grad` or `value_and_grad` returns (one frame per call: W2 is a latency)."""
    if hasattr(f, '__tapeflow_jacobian__') and isinstance(argnums, int) and not has_aux:
        return _gradient_of_jacobian(f, argnums, kind)
    single = isinstance(argnums, int)
    wrt = (argnums,) if single else tuple(argnums)
    fname = getattr(f, '__name__', 'f')
    python_fn = _unwrap(f)
    state = cache.Recent()  # argument classes (and array shapes) -> (compiled, validity check,
                            #                                    positions to dtype-check)
    seed = (1.0, 0.0) if has_aux else 1.0
    with_value = kind == 'value_and_grad'

    def prepare(args, key):
        for i in wrt:
            if i >= len(args):
                raise TypeError(f'differentiating with respect to argument {i}, but {fname}() '
                                f'was called with {len(args)} positional arguments')
            _check_differentiable(args[i], i, fname)
        compiled = compile_adjoint(f, wrt, scalar_args=scalar_positions(args),
                                   arg_shapes=array_shapes(args), kinds=argument_kinds(args))
        dtype_checked = tuple(i for i in wrt if args[i].__class__ not in _SCALAR_TYPES)
        # (`compiled.fn`: what was read, a fresh caller if `f` is generated code gone stale)
        entry = state[key] = (compiled, cache.validator(compiled, compiled.fn), dtype_checked)
        return entry

    def finish(value, grads, args):
        out = value
        if has_aux:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
            out = value[0]
        if out.__class__ is not float:
            _check_scalar(out, fname)
        if single:
            grads = _like(grads, args[argnums])
        else:
            grads = tuple(_like(g, args[i]) for g, i in zip(grads if len(wrt) > 1 else (grads,), wrt))
        if with_value:
            return value, grads
        return (grads, value[1]) if has_aux else grads

    nparams = python_fn.__code__.co_argcount
    defaults = python_fn.__defaults__ or ()
    if python_fn.__code__.co_flags & inspect.CO_VARARGS:
        nparams = None              # compiling says where: the fence rejects *args

    @functools.wraps(f)
    def differentiated(*args):
        if len(args) != nparams and nparams is not None:
            args = _complete(args, nparams, defaults, fname)
        key = tuple(map(type, args))
        if np.ndarray in key:             # specialised on array shapes too
            key += tuple(a.shape for a in args if a.__class__ is np.ndarray)
        entry = state.get(key)
        if entry is None or not entry[1]():
            entry = prepare(args, key)
        for i in entry[2]:
            _check_differentiable(args[i], i, fname)
        try:
            value, grads = entry[0].combined(*args, seed)
        except Exception as error:
            if not has_aux and isinstance(error, (TypeError, IndexError, KeyError)):
                _check_not_structured(python_fn, args, kind)
            sourcemap.reraise(error)
        if value.__class__ is float and grads.__class__ is float and single and not has_aux \
                and args[argnums].__class__ is float:
            return (value, grads) if with_value else grads      # the scalar fast path
        return finish(value, grads, args)

    differentiated.__dict__.pop('__tapeflow_callers__', None)   # wraps copied f's
    differentiated.__tapeflow_transform__ = (kind, f, wrt, has_aux)
    return differentiated


def _gradient_of_jacobian(jacobian_f, argnums, kind):
    """`grad` of a Jacobian function whose value is a scalar (a scalar function of a
    scalar argument): the second derivative, forward over reverse."""
    fname = getattr(jacobian_f, '__name__', 'f')

    @functools.wraps(jacobian_f)
    def differentiated(*args):
        value = jacobian_f(*args)
        _check_scalar(value, fname)
        _check_differentiable(args[argnums], argnums, fname)
        grads = _jacobian_of_jacobian(*jacobian_f.__tapeflow_jacobian__, argnums, args)
        grads = _like(grads.reshape(np.shape(args[argnums])), args[argnums])
        return (value, grads) if kind == 'value_and_grad' else grads
    differentiated.__dict__.pop('__tapeflow_jacobian__', None)   # wraps copied it
    return differentiated


def _complete(args, nparams, defaults, fname):
    """The arguments with the function's defaults filled in (the seed comes after them)."""
    missing = nparams - len(args)
    if missing < 0 or missing > len(defaults):
        raise TypeError(f'{fname}() takes {nparams} positional arguments but {len(args)} were given')
    return args + tuple(defaults[len(defaults) - missing:])


def vjp(f, *primals):
    """`(out, vjp_fn)`: `vjp_fn(cotangent)` is a tuple, one cotangent per primal."""
    wrt = tuple(i for i, p in enumerate(primals) if _dtype_of(p) is None or
                np.issubdtype(_dtype_of(p), np.inexact))
    compiled = compile_adjoint(f, wrt, kinds=argument_kinds(primals))
    tape = []
    out = forward_value(compiled, tape, primals)
    tapes = backward_tapes(compiled, primals, tape)

    def vjp_fn(cotangent):
        try:
            grads = compiled.backward(tapes(), cotangent)
        except Exception as error:
            sourcemap.reraise(error)
        if len(wrt) == 1:
            grads = (grads,)
        result = [None] * len(primals)
        for g, i in zip(grads, wrt):
            result[i] = _like(g, primals[i])
        return tuple(result)

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


def backward_tapes(compiled, values, tape):
    """The tape each call of `compiled`'s backward sweep pops.

    The forward's own, copied, while the reverse sweep leaves memory alone.
    One that restores memory in place (its function writes into arrays or
    lists) undoes the forward's writes, so a second pullback could not read
    them: from the second call on, the forward runs again on `values`.
    """
    saved, used = tuple(tape), [False]

    def fresh():
        if not (compiled.in_place and used[0]):
            used[0] = True
            return list(saved)
        again = []
        compiled.forward(again, *values)
        return again
    return fresh


def jvp(f, primals, tangents):
    """Forward mode: `(f(*primals), the tangent of the output along tangents)`."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f'jvp: {len(primals)} primals but {len(tangents)} tangents')
    wrt = tuple(i for i, p in enumerate(primals) if _dtype_of(p) is None or
                np.issubdtype(_dtype_of(p), np.inexact))
    for i in wrt:
        _check_tangent(primals[i], tangents[i], f'argument {i}')
    compiled = compile_tangent(f, wrt, scalar_args=scalar_positions(primals),
                               arg_shapes=array_shapes(primals), kinds=argument_kinds(primals))
    try:
        value, tangent = compiled.combined(*primals, *[tangents[i] for i in wrt])
    except Exception as error:
        sourcemap.reraise(error)
    value = dense(value)               # a gradient read as a function may be a list's `Items`
    return value, _tangent_like(tangent, value)


def _check_tangent(primal, tangent, where):
    """A tangent has its primal's structure, and each leaf its primal's shape."""
    if isinstance(primal, dict):
        if not isinstance(tangent, dict) or set(tangent) != set(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a dict with the keys '
                             f'{sorted(map(repr, primal))} of its primal')
        for key, p in primal.items():
            _check_tangent(p, tangent[key], f'{where}[{key!r}]')
    elif isinstance(primal, (list, tuple)):
        if not isinstance(tangent, (list, tuple)) or len(tangent) != len(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a sequence of {len(primal)} '
                             f'like its primal, not {type(tangent).__name__} {tangent!r}')
        for key, (p, t) in enumerate(zip(primal, tangent)):
            _check_tangent(p, t, f'{where}[{key}]')
    elif np.shape(tangent) != np.shape(primal):
        raise ValueError(f'jvp: the tangent of {where} has shape {np.shape(tangent)}, '
                         f'its primal {np.shape(primal)}')


def _tangent_like(tangent, value):
    if isinstance(value, dict):
        return {k: _tangent_like(0.0 if is_zero(tangent) else tangent[k], v)
                for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        parts = [_tangent_like(0.0 if is_zero(tangent) else t, v) for t, v in
                 zip(tangent if not is_zero(tangent) else [0.0] * len(value), value)]
        return type(value)(parts)
    if is_zero(tangent) and isinstance(value, (np.ndarray, np.generic)):
        return np.zeros(np.shape(value), np.result_type(value, float))
    return tangent


def source(f, argnums=0, mode='reverse', optimize=True, args=None):
    """The generated Python source of `f`'s gradient (or, forward, its jvp), as a string.

    The combined value-and-gradient function first, then the forward and
    backward functions of every user function it calls. With `args` (example
    arguments), the code specialised to their shapes, as `grad` runs it.
    """
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    shapes = {} if args is None else dict(scalar_args=scalar_positions(args),
                                           arg_shapes=array_shapes(args),
                                           kinds=argument_kinds(args))
    if mode == 'forward':
        compiled = compile_tangent(f, wrt, optimize=optimize, **shapes)
        part = 'source'
    elif mode == 'reverse':
        compiled = compile_adjoint(f, wrt, optimize=optimize, **shapes)
        part = 'split_source'
    else:
        raise ValueError(f"mode must be 'reverse' or 'forward', not {mode!r}")
    parts, seen, pending = [compiled.source], {id(compiled)}, list(compiled.callees)
    while pending:
        callee = pending.pop(0)
        if id(callee) not in seen:
            seen.add(id(callee))
            parts.append(getattr(callee, part))
            pending.extend(callee.callees)
    return '\n\n'.join(parts)


# ------------------------------------------------------------------ jacobians

def _basis_batch(x):
    """Every unit direction of the argument `x` at once: shape `(x.size,) + x.shape`."""
    dtype = _dtype_of(x)
    dtype = dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64
    size = int(np.size(x))
    return np.eye(size, dtype=dtype).reshape((size,) + np.shape(x))


def jacfwd(f, argnums=0):
    """Dense Jacobian by forward mode; shape `out.shape + in.shape`.

    One forward sweep carries every input direction at once: the tangent of
    the argument is the identity, with a leading batch axis (see
    `tapeflow.rules.batching`), so the primal is computed once.
    """
    @functools.wraps(f)
    def jacobian_f(*args):
        if hasattr(f, '__tapeflow_jacobian__'):
            return _jacobian_of_jacobian(*f.__tapeflow_jacobian__, argnums, args)
        x = args[argnums]
        wrt = (argnums,)
        compiled = compile_tangent(f, wrt, scalar_args=scalar_positions(args),
                                   arg_shapes=array_shapes(args), batched=True,
                                   kinds=argument_kinds(args))
        try:
            value, tangent = compiled.combined(*args, _basis_batch(x))
        except Exception as error:
            sourcemap.reraise(error)
        return _jacobian_from_batch(tangent, value, x)
    jacobian_f.__tapeflow_opaque__ = wrappers.JACOBIAN_OPAQUE.format('jacfwd')
    jacobian_f.__tapeflow_jacobian__ = (f, argnums)
    return jacobian_f


def _jacobian_from_batch(tangent, value, x):
    """`out.shape + in.shape` out of a batch `(in.size,) + out.shape` of tangents."""
    if isinstance(value, (tuple, list)):
        parts = tangent if isinstance(tangent, (tuple, list)) else [tangent] * len(value)
        return type(value)(_jacobian_from_batch(t, v, x) for t, v in zip(parts, value))
    size, out_shape = int(np.size(x)), np.shape(value)
    batch = np.broadcast_to(tangent, (size,) + out_shape) if not is_batched(tangent, value) \
        else np.asarray(tangent)
    jac = np.moveaxis(batch.reshape((size, -1)), 0, -1)
    return np.ascontiguousarray(jac).reshape(out_shape + np.shape(x))


def jacrev(f, argnums=0):
    """Dense Jacobian by reverse mode; shape `out.shape + in.shape`.

    The reverse sweep is linear in its cotangent, so it carries every output
    direction at once: the pullback of `vjp` is swept forward with the
    identity as a batch of cotangents (one row per output element), and the
    primal runs once.
    """
    @functools.wraps(f)
    def jacobian_f(*args):
        if hasattr(f, '__tapeflow_jacobian__'):
            return _jacobian_of_jacobian(*f.__tapeflow_jacobian__, argnums, args)
        kind, inner_f, inner_wrt, has_aux = getattr(f, '__tapeflow_transform__', (None,) * 4)
        if kind == 'grad' and len(inner_wrt) == 1 and not has_aux:
            # the Jacobian of a gradient: forward over reverse, as `hessian`
            return _jacobian_of_jacobian(inner_f, inner_wrt[0], argnums, args)
        wrt = tuple(i for i, p in enumerate(args) if _dtype_of(p) is None or
                    np.issubdtype(_dtype_of(p), np.inexact))
        out = f(*args)
        if isinstance(out, (tuple, list, dict)):
            raise TypeError('jacrev: the function must return one array or scalar')
        seed = np.zeros(np.shape(out), np.result_type(out, float)) if np.ndim(out) else 0.0
        pullback = _adjoint_caller(f, wrt, len(args), argument_kinds(args))
        inputs = args + (seed,)
        x = args[argnums]
        try:
            compiled = compile_tangent(pullback, (len(args),), scalar_args=scalar_positions(inputs),
                                       arg_shapes=array_shapes(inputs), batched=True,
                                       kinds=argument_kinds(inputs))
        except (UnsupportedError, MissingRule):
            # the adjoint cannot be swept forward (a user rule written as a lambda,
            # say): one reverse sweep per output element instead
            _, pullback = vjp(f, *args)
            rows = [np.asarray(pullback(ct)[argnums]) for ct in _basis_batch(out)]
            return np.stack(rows).reshape(np.shape(out) + np.shape(x))
        try:
            _, tangents = compiled.combined(*inputs, _basis_batch(out))
        except Exception as error:
            sourcemap.reraise(error)
        rows = tangents[argnums] if isinstance(tangents, (tuple, list)) else tangents
        size = int(np.size(out))
        if not is_batched(rows, x):
            rows = np.broadcast_to(rows, (size,) + np.shape(x))
        return np.asarray(rows).reshape(np.shape(out) + np.shape(x))
    jacobian_f.__tapeflow_opaque__ = wrappers.JACOBIAN_OPAQUE.format('jacrev')
    jacobian_f.__tapeflow_jacobian__ = (f, argnums)
    return jacobian_f


jacobian = jacrev


def _row_caller(f, wrt, nprimals, position, kinds=()):
    """`row_f(*primals, cotangent)`: the gradient of `<cotangent, f(*primals)>` in the
    argument at `position`, as a function the compiler reads (and sweeps forward)."""
    python_fn = _unwrap(f, kinds)
    callers = _CALLERS.setdefault(python_fn, {})
    key = ('row', wrt, nprimals, position, kinds)
    if _fits(callers.get(key)):
        return callers[key]
    compiled = compile_adjoint(python_fn, wrt, kinds=kinds)
    result = '_out[1]' if len(wrt) == 1 else f'_out[1][{wrt.index(position)}]'
    params = ', '.join([f'_primal{k}' for k in range(nprimals)] + ['cotangent'])
    name = f'row_{python_fn.__name__}'
    text = (f'def {name}({params}):\n'
            f'    _out = {compiled.combined.__name__}({params})\n'
            f'    return {result}\n')
    caller = callers[key] = _make_caller(name, text, compiled, python_fn)
    return caller


def _jacobian_of_jacobian(f, inner, outer, args):
    """The Jacobian, in `args[outer]`, of the Jacobian of `f` in `args[inner]`; shape
    `out.shape + inner.shape + outer.shape`, whichever modes were asked for (they
    agree): forward over reverse, one sweep per element of `f`'s output, each
    carrying every direction of `args[outer]` at once."""
    out = f(*args)
    if isinstance(out, (tuple, list, dict)):
        raise TypeError('a Jacobian of a Jacobian: the function must return one array or scalar')
    for position in (inner, outer):
        dtype = _dtype_of(args[position])
        if dtype is not None and not np.issubdtype(dtype, np.inexact):
            raise TypeError(f'a Jacobian of a Jacobian in argument {position}, which holds '
                            f'{dtype} values: only float and complex arguments are differentiated')
    wrt = tuple(sorted({inner, outer}))
    row = _row_caller(f, wrt, len(args), inner, argument_kinds(args))
    column = jacfwd(row, argnums=outer)
    seeds = _basis_batch(out) if np.ndim(out) else [np.ones((), np.result_type(out, float))[()]]
    rows = [np.asarray(column(*args, seed)) for seed in seeds]
    shape = np.shape(out) + np.shape(args[inner]) + np.shape(args[outer])
    return np.stack(rows).reshape(shape)


def hessian(f, argnums=0):
    """Dense Hessian: forward over reverse (the Jacobian of the compiled gradient)."""
    return jacfwd(grad(f, argnums), argnums)


# Inside compiled code, `grad(f)` and the like are computed while compiling
# (`transforms.desugar`): their calls are then calls of user functions.
for _transform in (grad, value_and_grad, jacfwd, jacrev, hessian):
    _transform.__tapeflow_fold__ = True
# `jvp(f, (x, ...), (v, ...))` there is a call of `f`'s compiled jvp.
jvp.__tapeflow_fold_call__ = _jvp_caller
# `out, pb = vjp(f, x)` there computes `f(x)`, and each `pb(u)` is a call of
# `f`'s adjoint caller (every argument differentiated).
vjp.__tapeflow_fold_pullback__ = lambda f, n: _adjoint_caller(f, tuple(range(n)), n)


def hvp(f, primals, vectors):
    """Hessian-vector product without forming the Hessian: `jvp` of the gradient."""
    return jvp(grad(f), primals, vectors)[1]
