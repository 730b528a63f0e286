"""The functional API: grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, source.

Each transformation compiles the function once per set of differentiated
inputs (see `cache`) and calls the generated code; gradients come back with
the type and shape of their argument. Arguments and results are pytrees
(`runtime.pytree`: a dataclass's gradient is a dataclass); keyword arguments
are put in their places and never differentiated; a bound method is read as a
function of its other parameters, its object a constant.
"""
from __future__ import annotations

import functools
import inspect
import numbers
import types
import weakref

import numpy as np

from tapeflow.syntax.naming import identifier as _id
from tapeflow import cache, wrappers
from tapeflow.analysis.aliasing import kind_of_value
from tapeflow.rules import registry
from tapeflow.rules.arrays import (is_api_only, is_foreign_array, library_of,
                                   mixed_libraries, numpy_dtype, same_library)
from tapeflow.rules.batching import defjvp_batched
from tapeflow.rules.registry import MissingRule
from tapeflow.rules.sequences import dense
from tapeflow.rules.shapes import dense as dense_like
from tapeflow.syntax.errors import UnsupportedError
from tapeflow.syntax import parse, sourcemap
from tapeflow.runtime import pytree, support
from tapeflow.runtime.support import is_zero
from tapeflow.transforms import pipeline, variants

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
    """What each argument is (a scalar, an array, a list...; `analysis.aliasing`), or the
    function it is (`FunctionArgument`): part of a compilation's key, so the compiler
    knows which writes change what, and which function a parameter calls."""
    return tuple(FunctionArgument(a) if variants.is_function(a) else kind_of_value(a)
                 for a in args)


class FunctionArgument:
    """The kind of an argument that is a function, equal only for that same function:
    compiled code made for it reads the parameter as that function (`_unwrap`)."""
    __slots__ = ('fn',)

    def __init__(self, fn):
        self.fn = fn

    def __eq__(self, other):
        return other.__class__ is FunctionArgument and other.fn is self.fn

    def __hash__(self):
        return id(self.fn)

    def __repr__(self):
        return f'FunctionArgument({self.fn!r})'


def _compiler_kinds(kinds) -> tuple:
    """`kinds` as the compiler's analyses read them: a function argument's parameter is
    not read (it is a constant of the code made for it)."""
    return tuple(None if k.__class__ is FunctionArgument else k for k in kinds)


def compile_adjoint(fn, wrt=(0,), lifted=(), optimize=True, scalar_args=(), arg_shapes=(),
                    kinds=(), checkpoint=None):
    """The compiled adjoint of `fn` for the parameters at positions `wrt` (cached).

    `scalar_args` and `arg_shapes` specialise it to the arguments' shapes,
    `kinds` to what they are (`argument_kinds`); `checkpoint` bounds the tape of its
    loops (`transforms.checkpoint`).
    """
    fn = _unwrap(fn, tuple(kinds))
    key = (tuple(wrt), tuple(lifted), optimize, tuple(scalar_args), tuple(arg_shapes), tuple(kinds))
    if checkpoint:
        key += (('checkpoint', checkpoint),)
    return cache.compile_once(fn, key, tuple(wrt), tuple(lifted), lambda: pipeline.compile_reverse(
        fn, tuple(wrt), tuple(lifted), runtime_names=_NAMESPACE, optimize_code=optimize,
        compile_callee=_compile_callee, scalar_args=tuple(scalar_args),
        arg_shapes=tuple(arg_shapes), kinds=_compiler_kinds(kinds), checkpoint=checkpoint),
        link=(_NAMESPACE, _compile_callee))


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
    parts = [f'real_like({"_out[1]" if len(wrt) == 1 else f"_out[1][{k}]"}, '
             f'{compiled.params[i]})' for k, i in enumerate(wrt)]
    grads = parts[0] if len(wrt) == 1 else f'({", ".join(parts)},)'
    if any(i < len(kinds) and kinds[i] is None for i in wrt):
        # a dataclass's or registered object's gradient is of its type, not a dict of fields
        parts = [f'as_argument({"_out[1]" if len(wrt) == 1 else f"_out[1][{k}]"}, '
                 f'{compiled.params[i]})' for k, i in enumerate(wrt)]
        grads = parts[0] if len(wrt) == 1 else f'({", ".join(parts)},)'
    result = {'grad': grads, 'value_and_grad': f'(_out[0], {grads})'}[kind]
    if has_aux and kind == 'grad':
        result = f'({grads}, _out[0][1])'
    seed = ', (1.0, 0.0)' if has_aux else ', 1.0'
    name = f'{kind}_{_id(python_fn)}'
    # the user's defaults stay defaults (grad(grad(f)) called without them)
    defaults = python_fn.__defaults__ or ()
    first = len(compiled.params) - len(defaults)
    signature = ', '.join(p if i < first else f'{p}=_default{i - first}'
                          for i, p in enumerate(compiled.params))
    text = (f'def {name}({signature}):\n'
            f'    _out = {compiled.combined.__name__}({params}{seed})\n'
            f'    return {result}\n')
    caller = callers[kinds] = _make_caller(name, text, compiled, python_fn,
                                           namespace={'as_argument': pytree.as_argument,
                                                      'real_like': real_like,
                                                      **{f'_default{k}': v for k, v in enumerate(defaults)}})
    return caller


_CALLERS = weakref.WeakKeyDictionary()     # python function -> {(kind, positions): caller}


def _adjoint_caller(f, wrt, nprimals, kinds=(), position=None):
    """`vjp_f(*primals, cotangent)`: the pullback of `f` as a function of everything (a
    tuple, one cotangent per primal); with `position`, the cotangent of that primal only,
    the gradient of `<cotangent, f(*primals)>` there (a row of a Jacobian)."""
    python_fn = _unwrap(f, kinds, nprimals)
    callers = _CALLERS.setdefault(python_fn, {})
    key = ('vjp', wrt, nprimals, kinds, position)
    if _fits(callers.get(key)):
        return callers[key]
    compiled = compile_adjoint(python_fn, wrt, kinds=kinds)
    # cotangents of the primals' structure: a symbolic zero made zeros (as vjp's are)
    grads = {i: f'real_like(dense({"_out[1]" if len(wrt) == 1 else f"_out[1][{k}]"}, '
                f'_primal{i}), _primal{i})' for k, i in enumerate(wrt)}
    if position is None:
        result = '(' + ', '.join(grads.get(i, 'None') for i in range(nprimals)) + ',)'
    else:
        result = grads[position]
    params = ', '.join([f'_primal{k}' for k in range(nprimals)] + ['cotangent'])
    name = f'{"vjp" if position is None else "row"}_{_id(python_fn)}'
    text = (f'def {name}({params}):\n'
            f'    _out = {compiled.combined.__name__}({params})\n'
            f'    return {result}\n')
    caller = callers[key] = _make_caller(name, text, compiled, python_fn,
                                         namespace={'real_like': real_like, 'dense': dense_like})
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
    python_fn = _unwrap(f, (), nprimals)
    callers = _CALLERS.setdefault(python_fn, {})
    if _fits(callers.get(('jvp', nprimals))):
        return callers['jvp', nprimals]
    wrt = tuple(range(nprimals))
    compiled = compile_tangent(python_fn, wrt)
    params = ', '.join([f'_primal{k}' for k in wrt] + [f'_tangent{k}' for k in wrt])
    name = f'jvp_{_id(python_fn)}'
    # the tangent of an output that does not move is zeros of its shape, as jvp's
    text = (f'def {name}({params}):\n'
            f'    _pair = {compiled.combined.__name__}({params})\n'
            f'    return (_pair[0], dense(_pair[1], _pair[0]))\n')
    caller = callers['jvp', nprimals] = _make_caller(name, text, compiled, python_fn,
                                                     {'dense': dense_like})
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
        arg_shapes=tuple(arg_shapes), batched=batched, kinds=_compiler_kinds(kinds)),
        link=(_NAMESPACE, callee))


def _unwrap(fn, kinds=(), arity=None):
    """The Python function the compiler reads for `fn` (see `wrappers`), called with
    arguments of `kinds` (or, where their kinds are not known, `arity` arguments).

    A function made by `grad` or `value_and_grad` (or a `vjp` pullback) is read
    as a small function that calls its generated code, so derivatives of
    derivatives transform the generated code itself; a wrapper is read as
    written unless it only compiles, caches or passes on (`wrappers.inner_function`).
    """
    seen = set()
    while id(fn) not in seen:
        seen.add(id(fn))
        if _is_library_rule(fn):
            return _rule_caller(fn)
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            return _made_for(_method_caller(fn), kinds, arity)
        if isinstance(fn, functools.partial):
            return _made_for(_partial_caller(fn), kinds, arity)
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
    return _made_for(fn, kinds, arity)


def _made_for(fn, kinds, arity=None):
    """`fn` made for arguments of `kinds` (or `arity` arguments): for as many values as
    its star parameter gets (`lambda *args: ...`), and reading the functions passed to
    it as constants."""
    arity = len(kinds) if kinds else arity
    if arity is None or not isinstance(fn, types.FunctionType):
        return fn
    if fn.__code__.co_flags & inspect.CO_VARARGS:
        fn = variants.arity_variant(fn, max(arity - fn.__code__.co_argcount, 0),
                                   parse.parse_function)
    bound = {i: k.fn for i, k in enumerate(kinds) if k.__class__ is FunctionArgument}
    return variants.bound_variant(fn, bound, parse.parse_function) if bound else fn


def _is_library_rule(fn) -> bool:
    """Whether `fn` is a NumPy/SciPy/math function with a rule (`grad(np.sin)`): it is
    differentiated by its rule, never by reading the library's source."""
    if registry.lookup(fn) is None:
        return False
    module = getattr(fn, '__module__', None) or ''
    return not isinstance(fn, types.FunctionType) or module.split('.')[0] in ('numpy', 'scipy')


_RULE_CALLERS: dict = {}        # library function -> the def that calls it


def _rule_caller(fn):
    """`def sin(x0): return sin(x0)`: a library function differentiated directly, read as
    a def of its required positional parameters that calls it (as JAX's `grad(jnp.sin)`)."""
    caller = _RULE_CALLERS.get(fn)
    if caller is not None:
        return caller
    if isinstance(fn, np.ufunc):
        names = [f'x{k}' for k in range(fn.nin)]
    else:
        try:
            parameters = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            raise TypeError(f'{fn!r} has no signature to differentiate it by; call it from a '
                            f'def') from None
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        names = [p.name for p in parameters if p.kind in positional and p.default is p.empty]
    from tapeflow.syntax.unparse import load_module
    name = getattr(fn, '__name__', 'fn')
    text = f'def {name}({", ".join(names)}):\n    return _library_fn({", ".join(names)})\n'
    caller = load_module(text, {'_library_fn': fn}, name)[name]
    _RULE_CALLERS[fn] = caller
    return caller


_METHOD_CALLERS: dict = {}      # (function, id(self)) -> (self, caller), the latest few
_METHOD_CALLERS_MAX = 64


def _method_caller(method):
    """A bound method as a function of its other parameters: `def loss(x, n=_default1,
    _self=_the_object): return _method(_self, x, n)`; its object is never differentiated
    (a constant, passed as the default of a last parameter). Argument positions count
    from after `self`, as in JAX."""
    fn, obj = method.__func__, method.__self__
    key = (fn, id(obj))
    cached = _METHOD_CALLERS.get(key)
    if cached is not None and cached[0] is obj:
        return cached[1]
    code = fn.__code__
    if code.co_argcount < 1 or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
            or code.co_kwonlyargcount:
        return fn          # the compiler refuses its signature with a located error
    params = list(code.co_varnames[1:code.co_argcount])
    defaults = fn.__defaults__ or ()
    first = len(params) - len(defaults)
    namespace = {'_method': fn, '_the_object': obj}
    signature = []
    for k, name in enumerate(params):
        if k >= first:
            namespace[f'_default{k}'] = defaults[k - first]
            signature.append(f'{name}=_default{k}')
        else:
            signature.append(name)
    # the object is a last parameter, its default: the compiler reads it as a local, so
    # what the method writes into it is followed (or refused where the user wrote it)
    signature.append('_self=_the_object')
    from tapeflow.syntax.unparse import load_module
    text = (f'def {_id(fn)}({", ".join(signature)}):\n'
            f'    return _method(_self{"".join(", " + p for p in params)})\n')
    load_module(text, namespace, _id(fn))
    caller = namespace[_id(fn)]
    caller.__qualname__ = fn.__qualname__
    if len(_METHOD_CALLERS) >= _METHOD_CALLERS_MAX:
        _METHOD_CALLERS.pop(next(iter(_METHOD_CALLERS)))
    _METHOD_CALLERS[key] = (obj, caller)
    return caller


_PARTIAL_CALLERS: dict = {}     # id(partial) -> (partial, caller), the latest few


def _partial_caller(part):
    """`functools.partial(f, a, k=c)` as the def of its remaining parameters
    `def f(x, n=_default_n): return _fn(_bound0, x, n, k=_keyword_k)`: the bound
    values are constants, never differentiated, and argument positions count
    the parameters left (as JAX's `grad(partial(f, a))`)."""
    cached = _PARTIAL_CALLERS.get(id(part))
    if cached is not None and cached[0] is part:
        return cached[1]
    try:
        parameters = list(inspect.signature(part).parameters.values())
    except (TypeError, ValueError):
        raise TypeError(f'{part!r} has no signature to differentiate it by; call it from '
                        f'a def') from None
    kinds = inspect.Parameter
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in parameters):
        raise TypeError(f'{part!r} takes *args or **kwargs; tapeflow differentiates a '
                        f'function of named parameters: call it from a def')
    namespace = {'_fn': part.func}
    signature, passed = [], []
    for k, arg in enumerate(part.args):
        namespace[f'_bound{k}'] = arg
        passed.append(f'_bound{k}')
    library = not isinstance(part.func, types.FunctionType)
    for p in parameters:
        if p.name in part.keywords:         # bound by keyword: a constant, passed as such
            namespace[f'_keyword_{p.name}'] = part.keywords[p.name]
            passed.append(f'{p.name}=_keyword_{p.name}')
            continue
        if library and p.default is not p.empty:
            continue            # a library function's own default: not passed, never written
        name = p.name
        if p.default is not p.empty:
            namespace[f'_default_{name}'] = p.default
            signature.append(f'{name}=_default_{name}')
        else:
            signature.append(name)
        passed.append(name if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
                      and p.default is p.empty else f'{p.name}={name}')
    fname = _id(part.func)
    if fname in [p.name for p in parameters] or fname.startswith('_'):
        fname = f'partial_{fname}'
    from tapeflow.syntax.unparse import load_module
    text = f'def {fname}({", ".join(signature)}):\n    return _fn({", ".join(passed)})\n'
    caller = load_module(text, namespace, fname)[fname]
    if len(_PARTIAL_CALLERS) >= _METHOD_CALLERS_MAX:
        _PARTIAL_CALLERS.pop(next(iter(_PARTIAL_CALLERS)))
    _PARTIAL_CALLERS[id(part)] = (part, caller)
    return caller


_MISSING = object()


def _binder(python_fn, fname):
    """`bind(args, kwargs)`: all of `python_fn`'s positional parameters, keyword arguments
    put in their places and defaults filled in (generated code takes them by position)."""
    code = python_fn.__code__
    names = code.co_varnames[:code.co_argcount]
    defaults = python_fn.__defaults__ or ()
    nparams, first_default = len(names), len(names) - len(defaults)
    star = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)

    def bind(args, kwargs):
        if star:
            if kwargs:
                raise TypeError(f'{fname}() takes *args or **kwargs, which tapeflow does not '
                                f'compile: name each parameter')
            return args             # compiling says where: the fence rejects *args
        if not kwargs:
            if len(args) == nparams:
                return args
            missing = nparams - len(args)
            if 0 <= missing <= len(defaults):
                return args + tuple(defaults[len(defaults) - missing:])
        if len(args) > nparams:
            raise TypeError(f'{fname}() takes {nparams} positional arguments but {len(args)} '
                            f'were given')
        out = list(args) + [_MISSING] * (nparams - len(args))
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError(f'{fname}() got an unexpected keyword argument {name!r}')
            i = names.index(name)
            if out[i] is not _MISSING:
                raise TypeError(f'{fname}() got multiple values for argument {name!r}')
            out[i] = value
        for i in range(nparams):
            if out[i] is _MISSING:
                if i < first_default:
                    raise TypeError(f'{fname}() missing required positional argument: '
                                    f'{names[i]!r}')
                out[i] = defaults[i - first_default]
        return tuple(out)
    return bind


def _with_defaults(f, args):
    """`args` with the defaults of the parameters they leave out (generated code takes every
    parameter by position)."""
    python_fn = _signature_function(f)
    code = python_fn.__code__
    if len(args) >= code.co_argcount or code.co_flags & (inspect.CO_VARARGS |
                                                        inspect.CO_VARKEYWORDS):
        return tuple(args)
    return _binder(python_fn, getattr(f, '__name__', 'f'))(tuple(args), {})


def _call_binder(f, wrt=(), what='argnums'):
    """`bind(args, kwargs)` for calls of `f` (entry points other than grad): `args` with
    `kwargs` in their positions and defaults filled in, checking that what is
    differentiated was passed by position (keyword arguments are not, as in JAX)."""
    fname = getattr(f, '__name__', 'f')
    binder = []             # made at the first call (reading `f` may compile a gradient)

    def bind(args, kwargs):
        for i in wrt:
            if i >= len(args):
                raise TypeError(f'differentiating with respect to {what}={i} requires at least '
                                f'{i + 1} positional arguments, but {fname}() got {len(args)} '
                                f'(keyword arguments are not differentiated: pass it by '
                                f'position)')
        if not binder:
            binder.append(_binder(_signature_function(f), fname))
        return binder[0](tuple(args), kwargs)
    return bind


def _signature_function(f):
    """The Python function whose signature calls of `f` follow: a gradient function has
    the signature of its function."""
    seen = set()
    while id(f) not in seen:
        seen.add(id(f))
        if wrappers.own(f, '__tapeflow_transform__') is not None:
            f = wrappers.own(f, '__tapeflow_transform__')[1]
        elif wrappers.own(f, '__tapeflow_jacobian__') is not None:      # a Jacobian function
            f = wrappers.own(f, '__tapeflow_jacobian__')[0]
    return _unwrap(f)


# ------------------------------------------------------------------ checks and conversions

def _check_differentiable(value, position, fname):
    dtype = _dtype_of(value)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        raise TypeError(
            f'grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of '
            f'np.inexact), but got {dtype.name} for argument {position} of {fname}(). '
            f'If you want to differentiate with respect to it, pass a float.')


def _check_pytree_argument(value, position, fname):
    """A differentiated argument is a pytree of numbers and arrays (`runtime.pytree`)."""
    for path, leaf in pytree.leaves_with_paths(value):
        if not isinstance(leaf, (numbers.Number, np.ndarray, np.generic, str, bytes)) and not \
                hasattr(leaf, '__array__') and not hasattr(leaf, '__array_namespace__'):
            raise TypeError(f'cannot differentiate {fname}() with respect to argument {position}: '
                            f'{pytree.path_text("it", path) if path else "it"} is a '
                            f'{type(leaf).__name__}, not a float, an array or a pytree of them '
                            f'(dataclasses and NamedTuples are; register other classes with '
                            f'tf.register_pytree)')


def _dtype_of(value):
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, numbers.Integral) and not isinstance(value, np.ndarray):
        return np.dtype(int)
    if isinstance(value, (float, complex)):
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if is_foreign_array(value):
        return numpy_dtype(value)
    return None


def _like(g, arg):
    """The gradient `g` in the type and shape of the argument `arg` (a pytree: the
    gradient of a dataclass is a dataclass of its fields' gradients)."""
    cls = arg.__class__
    if cls is float:
        return 0.0 if is_zero(g) else float(np.real(g))
    if cls is np.ndarray and g.__class__ is np.ndarray and g.dtype is arg.dtype \
            and g.shape == arg.shape and g.dtype.kind == 'f':
        return g                        # the common case, as the lines below would return it
    if isinstance(arg, np.ndarray):
        if g.__class__ is not np.ndarray and is_foreign_array(g):   # NumPy weights, Dask data
            return _like_foreign(g, arg)
        dtype = arg.dtype if np.issubdtype(arg.dtype, np.inexact) else np.float64
        if is_zero(g):
            return np.zeros(arg.shape, dtype)
        g = np.asarray(g)
        if np.iscomplexobj(g) and not np.issubdtype(dtype, np.complexfloating):
            g = g.real                  # a real argument's gradient (see `real_like`)
        if g.shape != arg.shape:
            g = np.broadcast_to(g, arg.shape).copy()
        return g.astype(dtype, copy=False)
    if arg is None:
        return None
    if is_foreign_array(arg):
        return _like_foreign(g, arg)
    children = pytree.children(arg)
    if children is not None:
        parts = pytree.child_cotangents(g, arg, children)
        return pytree.rebuild(arg, [_like(p, child) for p, (_, child) in zip(parts, children)])
    if isinstance(arg, np.generic):
        if np.iscomplexobj(g) and not np.iscomplexobj(arg):
            g = np.real(g)              # a real argument's gradient (see `real_like`)
        return arg.dtype.type(0 if is_zero(g) else g)
    if isinstance(arg, complex):
        return complex(g)
    if isinstance(arg, (bool, numbers.Number, str, bytes)):
        return dense(g)
    raise TypeError(f'cannot differentiate with respect to a {type(arg).__name__}: arguments '
                    f'are pytrees (tuples, lists, dicts, dataclasses, NamedTuples, classes '
                    f'registered with tf.register_pytree) of floats and float arrays')


def check_libraries(fn, compiled, args):
    """A clear error where `fn`'s arguments, or an argument and an array global it
    reads, belong to array libraries that cannot compute together (`rules.arrays`),
    before generated code fails deep inside with a TypeError (once per argument types)."""
    if not any(is_foreign_array(leaf) for a in args for leaf in pytree.leaves(a)):
        return
    names = inspect.signature(fn).parameters if hasattr(fn, '__code__') else {}
    names = list(names) + [f'argument {i}' for i in range(len(names), len(args))]
    named = [(f'argument {names[i]!r}', leaf) for i, a in enumerate(args)
             for leaf in pytree.leaves(a)]
    bindings = getattr(compiled, 'bindings', None)
    values = getattr(bindings, 'values', {}) if bindings is not None else {}
    named += [(f'the global {name!r}', v) for name, v in values.items()]
    why = mixed_libraries(named)
    if why:
        code = fn.__code__
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: {fn.__name__}() mixes '
                        f'array libraries: {why}')


def _like_foreign(g, arg):
    """`_like` for an array of another library (CuPy, Dask), or a NumPy argument whose
    gradient another library computed (NumPy weights, Dask data): made in that library,
    by functions NumPy dispatches to it (`rules.arrays`); a Dask gradient stays lazy."""
    if is_api_only(arg) or is_api_only(g):
        return _like_api(g, arg)
    dtype = numpy_dtype(arg)
    dtype = dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)
    if is_zero(g):
        return np.zeros_like(arg, dtype=dtype)
    if not is_foreign_array(g):
        g = np.zeros_like(arg, dtype=dtype) + g      # a number, or a NumPy scalar: into arg's library
    elif is_foreign_array(arg) and not same_library(g, arg):
        raise TypeError(f'the gradient of a {library_of(arg)} argument came out as a '
                        f'{library_of(g)} array: mixed array libraries (see docs/scaling-out.md)')
    if np.iscomplexobj(g) and not np.issubdtype(dtype, np.complexfloating):
        g = np.real(g)
    if g.shape != arg.shape:
        g = np.broadcast_to(g, arg.shape)
    return g.astype(dtype, copy=False) if g.dtype != dtype else g


def _like_api(g, arg):
    """`_like` for an array of a namespace NumPy cannot reach (array_api_strict): with
    the functions of its own namespace."""
    xp = arg.__array_namespace__()
    if is_zero(g) or g.__class__ in (float, int):
        return xp.full(arg.shape, 0.0 if is_zero(g) else g, dtype=arg.dtype, device=arg.device)
    if not same_library(g, arg):
        raise TypeError(f'the gradient of a {library_of(arg)} argument came out as a '
                        f'{library_of(g)} array: mixed array libraries (see docs/scaling-out.md)')
    if tuple(g.shape) != tuple(arg.shape):
        g = xp.broadcast_to(g, arg.shape)
    return g if g.dtype == arg.dtype else xp.astype(g, arg.dtype)


def _check_not_structured(fn, args, kind):
    """A seed of 1.0 given to a tuple, list or dict output fails inside generated code;
    say what JAX says instead, at the user's def (runs `fn` again: an error path only)."""
    try:
        out = fn(*args)
    except Exception:
        return
    code = fn.__code__
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: {kind} requires a scalar '
                        f'output, but {fn.__name__}() returned a {type(out).__name__}; to '
                        f'return more, use has_aux=True (output, aux) or vjp') from None
    if isinstance(out, np.ndarray) and out.ndim:
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: Gradient only defined for '
                        f'scalar-output functions. Output of {fn.__name__}() had shape: '
                        f'{out.shape}; for a Jacobian, use jacrev or jacfwd') from None


def _check_scalar(value, fname):
    if not isinstance(value, (numbers.Number, np.ndarray, np.generic)) and not is_foreign_array(value):
        forgot = ' (None: does it lack a return?)' if value is None else ''
        raise TypeError(f'grad requires real-valued outputs (output dtype that is a sub-dtype of '
                        f'np.floating), but {fname}() returned {type(value).__name__}{forgot}')
    if np.ndim(value) != 0:
        raise TypeError(f'Gradient only defined for scalar-output functions. Output of {fname}() '
                        f'had shape: {np.shape(value)}')
    if _dtype_of(value) is not None and not np.issubdtype(_dtype_of(value), np.inexact):
        raise TypeError(f'grad requires real-valued outputs (output dtype that is a sub-dtype of '
                        f'np.floating), but {fname}() returned {_dtype_of(value)}')


# ------------------------------------------------------------------ transformations

def value_and_grad(f, argnums=0, has_aux=False, checkpoint=None):
    """`f` -> a function returning `(value, gradient)`; `((value, aux), gradient)` with has_aux.

    `checkpoint`: see `grad`.
    """
    return _differentiated(f, argnums, has_aux, 'value_and_grad', checkpoint)


def grad(f, argnums=0, has_aux=False, checkpoint=None):
    """`f` -> its gradient function (a tuple of gradients when `argnums` is a tuple).

    `checkpoint=True` bounds the memory of `f`'s loops (those at the top level of `f`,
    over `range` or `while`): snapshots of the loop's variables every ~sqrt(n) trips
    instead of a tape of every trip, each trip run once more. `checkpoint=k` (an int)
    keeps at most k snapshots (binomial checkpointing: less memory, more reruns).
    """
    return _differentiated(f, argnums, has_aux, 'grad', checkpoint)


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


def _checkpoint_policy(checkpoint):
    if checkpoint is None or checkpoint is False or checkpoint is True:
        return checkpoint or None
    if isinstance(checkpoint, int) and not isinstance(checkpoint, bool) and checkpoint >= 1:
        return checkpoint
    raise ValueError(f'checkpoint= takes True, False, None or a number of snapshots >= 1, '
                     f'not {checkpoint!r}')


def _differentiated(f, argnums, has_aux, kind, checkpoint=None):
    """The function `grad` or `value_and_grad` returns (one frame per call: W2 is a latency)."""
    checkpoint = _checkpoint_policy(checkpoint)
    if hasattr(f, '__tapeflow_jacobian__') and isinstance(argnums, int) and not has_aux:
        if checkpoint:
            raise ValueError('checkpoint= applies to a function, not to a Jacobian function')
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
            _check_pytree_argument(args[i], i, fname)
        kinds = argument_kinds(args)
        compiled = compile_adjoint(f, wrt, scalar_args=scalar_positions(args),
                                   arg_shapes=array_shapes(args), kinds=kinds, checkpoint=checkpoint)
        check_libraries(python_fn, compiled, args)
        dtype_checked = tuple(i for i in wrt if args[i].__class__ not in _SCALAR_TYPES)
        # (`compiled.fn`: what was read, a fresh caller if `f` is generated code gone stale)
        valid = cache.validator(compiled, compiled.fn)
        if any(k.__class__ is FunctionArgument for k in kinds):
            valid = _never      # made for these functions: `key` holds only their type
        entry = state[key] = (compiled, valid, dtype_checked)
        return entry

    def finish(value, grads, args):
        out = value
        if has_aux:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
            out = value[0]
        if out.__class__ is not float and out.__class__ is not np.float64:
            _check_scalar(out, fname)
        if single:
            grads = _like(grads, args[argnums])
        else:
            grads = tuple(_like(g, args[i]) for g, i in zip(grads if len(wrt) > 1 else (grads,), wrt))
        if with_value:
            return value, grads
        return (grads, value[1]) if has_aux else grads

    bind = _binder(python_fn, fname)
    ndarray = np.ndarray
    nparams = python_fn.__code__.co_argcount
    if python_fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        nparams = None              # compiling says where: the fence rejects *args

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
        key = tuple([a.shape if a.__class__ is ndarray else a.__class__ for a in args])
        entry = state.get(key)
        if entry is None or not entry[1]():
            entry = prepare(args, key)
        for i in entry[2]:
            if args[i].__class__ is not np.ndarray or args[i].dtype.kind not in 'fc':
                _check_differentiable(args[i], i, fname)
        try:
            value, grads = entry[0].combined(*args, seed)
        except Exception as error:
            if not has_aux and isinstance(error, (TypeError, IndexError, KeyError, ValueError)):
                _check_not_structured(python_fn, args, kind)
            sourcemap.reraise(error)
        if value.__class__ is float and grads.__class__ is float and single and not has_aux \
                and args[argnums].__class__ is float:
            return (value, grads) if with_value else grads      # the scalar fast path
        return finish(value, grads, args)

    differentiated.__dict__.pop('__tapeflow_callers__', None)   # wraps copied f's
    differentiated.__tapeflow_transform__ = (kind, f, wrt, has_aux)
    return differentiated


def _never():
    return False


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


def vjp(f, *primals, has_aux=False):
    """`(out, vjp_fn)`: `vjp_fn(cotangent)` is a tuple, one cotangent per primal;
    `(out, vjp_fn, aux)` with has_aux (`f` returns a pair `(out, aux)`)."""
    wrt = tuple(i for i, p in enumerate(primals) if _dtype_of(p) is None or
                np.issubdtype(_dtype_of(p), np.inexact))
    given, primals = primals, _with_defaults(f, primals)
    compiled = compile_adjoint(f, wrt, kinds=argument_kinds(primals))
    tape = []
    out = forward_value(compiled, tape, primals)
    tapes = backward_tapes(compiled, primals, tape)
    out, aux = _split_aux(out, has_aux, getattr(f, '__name__', 'f'))

    def vjp_fn(cotangent):
        try:
            grads = compiled.backward(tapes(), (cotangent, 0.0) if has_aux else cotangent)
        except Exception as error:
            sourcemap.reraise(error)
        if len(wrt) == 1:
            grads = (grads,)
        result = [None] * len(given)
        for g, i in zip(grads, wrt):
            result[i] = _like(g, primals[i])
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


def jvp(f, primals, tangents, has_aux=False):
    """Forward mode: `(f(*primals), the tangent of the output along tangents)`;
    `(out, tangent_out, aux)` with has_aux (`f` returns a pair `(out, aux)`)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f'jvp: {len(primals)} primals but {len(tangents)} tangents')
    wrt = tuple(i for i, p in enumerate(primals) if _dtype_of(p) is None or
                np.issubdtype(_dtype_of(p), np.inexact))
    for i in wrt:
        _check_tangent(primals[i], tangents[i], f'argument {i}')
    primals = _with_defaults(f, primals)
    compiled = compile_tangent(f, wrt, scalar_args=scalar_positions(primals),
                               arg_shapes=array_shapes(primals), kinds=argument_kinds(primals))
    try:
        value, tangent = compiled.combined(*primals, *[tangents[i] for i in wrt])
    except Exception as error:
        sourcemap.reraise(error)
    value = dense(value)               # a gradient read as a function may be a list's `Items`
    if has_aux:
        out, aux = _split_aux(value, has_aux, getattr(f, '__name__', 'f'))
        tangent = 0.0 if is_zero(tangent) else tangent[0]
        return out, _tangent_like(tangent, out), aux
    return value, _tangent_like(tangent, value)


def _check_tangent(primal, tangent, where):
    """A tangent has its primal's structure (`runtime.pytree`), and each leaf its primal's shape."""
    kids = pytree.children(primal)
    if kids is None:
        if np.shape(tangent) != np.shape(primal):
            raise ValueError(f'jvp: the tangent of {where} has shape {np.shape(tangent)}, '
                             f'its primal {np.shape(primal)}')
        return
    if primal is None:
        return
    if isinstance(primal, dict):
        if not isinstance(tangent, dict) or set(tangent) != set(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a dict with the keys '
                             f'{sorted(map(repr, primal))} of its primal')
    elif isinstance(primal, (list, tuple)):
        if not isinstance(tangent, (list, tuple)) or len(tangent) != len(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a sequence of {len(primal)} '
                             f'like its primal, not {type(tangent).__name__} {tangent!r}')
    elif type(tangent) is not type(primal):
        raise ValueError(f'jvp: the tangent of {where} must be a {type(primal).__name__} like '
                         f'its primal, not {type(tangent).__name__}')
    for (key, p), t in zip(kids, pytree.child_cotangents(tangent, primal, kids)):
        _check_tangent(p, t, pytree.path_text(where, (key,)))


def _tangent_like(tangent, value):
    """The tangent of the output `value`, of its structure (symbolic zeros made zeros)."""
    if is_zero(tangent) and isinstance(value, (np.ndarray, np.generic)):
        return np.zeros(np.shape(value), np.result_type(value, float))
    kids = pytree.children(value) if value is not None else None
    if not kids:
        return tangent
    parts = pytree.child_cotangents(tangent, value, kids)
    return pytree.rebuild(value, [_tangent_like(t, v) for t, (_, v) in zip(parts, kids)])


def source(f, argnums=0, mode='reverse', optimize=True, args=None, checkpoint=None):
    """The generated Python source of `f`'s gradient (or, forward, its jvp), as a string.

    The combined value-and-gradient function first, then the forward and
    backward functions of every user function it calls. With `args` (example
    arguments), the code specialised to their shapes, as `grad` runs it; with
    `checkpoint`, its loops checkpointed as `grad(f, checkpoint=...)` runs them.
    """
    checkpoint = _checkpoint_policy(checkpoint)
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    shapes = {} if args is None else dict(scalar_args=scalar_positions(args),
                                           arg_shapes=array_shapes(args),
                                           kinds=argument_kinds(args))
    if mode == 'forward':
        if checkpoint:
            raise ValueError('checkpoint= applies to reverse mode: forward mode keeps no tape')
        compiled = compile_tangent(f, wrt, optimize=optimize, **shapes)
        part = 'source'
    elif mode == 'reverse':
        compiled = compile_adjoint(f, wrt, optimize=optimize, checkpoint=checkpoint, **shapes)
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


def _float_leaf(leaf) -> bool:
    dtype = _dtype_of(leaf)
    return (dtype is None and isinstance(leaf, numbers.Number)) or \
        (dtype is not None and np.issubdtype(dtype, np.inexact))


def _parts_at_leaves(t, like):
    """The pieces of `t` (a tangent or cotangent of `like`, kept as generated code keeps it)
    at the leaves of `like`, in `pytree.leaves` order; 0.0 where it is zero."""
    kids = pytree.children(like)
    if kids is None:
        return [t]
    out = []
    for part, (_, child) in zip(pytree.child_cotangents(t, like, kids), kids):
        out.extend(_parts_at_leaves(part, child))
    return out


def _rows(part, leaf, n):
    """`part`, a batch of `n` tangents of `leaf` or one for all, as `(n, leaf.size)`."""
    if is_zero(part) or part is None:
        return np.zeros((n, int(np.size(leaf))), np.result_type(leaf, float))
    part = np.asarray(part)
    if part.ndim != np.ndim(leaf) + 1:
        part = np.broadcast_to(part, (n,) + np.shape(leaf))
    return part.reshape((n, int(np.size(leaf))))


def _basis(leaves, total, start=0):
    """For each leaf, its unit directions among `total` (one row each), the float leaves
    numbered from `start` on: `(total,) + leaf.shape`, or 0.0 for a leaf that does not move."""
    parts, offset = [], start
    for leaf in leaves:
        if not _float_leaf(leaf):
            parts.append(0.0)
            continue
        size = int(np.size(leaf))
        dtype = _dtype_of(leaf) if _dtype_of(leaf) is not None else np.float64
        if size == total:                   # the one moving leaf (the common case)
            rows = np.eye(size, dtype=dtype)
        else:
            rows = np.zeros((total, size), dtype)
            rows[offset:offset + size] = np.eye(size, dtype=dtype)
        parts.append(rows.reshape((total,) + np.shape(leaf)))
        offset += size
    return parts


def _sizes(leaves):
    return [int(np.size(leaf)) if _float_leaf(leaf) else 0 for leaf in leaves]


def _assemble(out, ins, block, single):
    """The Jacobian of the output `out` (a pytree) with respect to the inputs `ins` (one
    pytree per differentiated argument), JAX's shapes: the output's structure outside, the
    input's inside (a tuple of inputs for a tuple of argnums), each leaf of
    `out_leaf.shape + in_leaf.shape`. `block(o, k, l)` gives the `(out size, in size)`
    matrix of output leaf `o` and leaf `l` of input `k`."""
    out_leaves, out_def = pytree.flatten(out)
    in_flat = [pytree.flatten(x) for x in ins]
    results = []
    for o, ol in enumerate(out_leaves):
        per_input = []
        for k, (leaves, treedef) in enumerate(in_flat):
            blocks = []
            for l, leaf in enumerate(leaves):
                m = block(o, k, l)
                shape = np.shape(ol) + np.shape(leaf)
                blocks.append(np.zeros(shape, np.result_type(ol, float)) if m is None
                              else np.ascontiguousarray(m).reshape(shape))
            per_input.append(treedef.unflatten(blocks))
        results.append(per_input[0] if single else tuple(per_input))
    return out_def.unflatten(results)


def _argnums(argnums):
    single = isinstance(argnums, int)
    wrt = (argnums,) if single else tuple(argnums)
    if not all(isinstance(i, int) for i in wrt):
        raise TypeError(f'argnums must be an int or a tuple of ints, not {argnums!r}')
    return single, wrt


def _split_aux(value, has_aux, fname):
    if not has_aux:
        return value, None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
    return value[0], value[1]


def jacfwd(f, argnums=0, has_aux=False):
    """Dense Jacobian by forward mode, JAX's shapes (`out.shape + in.shape` per leaf; pytrees
    in and out; a tuple for a tuple of argnums); `(jacobian, aux)` with has_aux.

    One forward sweep carries every input direction at once: the tangent of
    the arguments is the identity, with a leading batch axis (see
    `tapeflow.rules.batching`), so the primal is computed once.
    """
    single, wrt = _argnums(argnums)
    fname = getattr(f, '__name__', 'f')
    bind = _call_binder(f, wrt)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        args = bind(args, kwargs)
        if single and not has_aux and hasattr(f, '__tapeflow_jacobian__'):
            return _jacobian_of_jacobian(*f.__tapeflow_jacobian__, wrt[0], args)
        for i in wrt:
            _check_differentiable(args[i], i, fname)
        in_leaves = [pytree.leaves(args[i]) for i in wrt]
        sizes = [_sizes(leaves) for leaves in in_leaves]
        total = sum(map(sum, sizes))
        tangents, start = [], 0
        for i, leaves in zip(wrt, in_leaves):
            tangents.append(pytree.flatten(args[i])[1].unflatten(_basis(leaves, total, start)))
            start += sum(_sizes(leaves))
        compiled = compile_tangent(f, wrt, scalar_args=scalar_positions(args),
                                   arg_shapes=array_shapes(args), batched=True,
                                   kinds=argument_kinds(args))
        try:
            value, tangent = compiled.combined(*args, *tangents)
        except Exception as error:
            transform = wrappers.own(f, '__tapeflow_transform__')
            if transform is not None and not transform[3]:     # a gradient, without aux
                _check_not_structured(_unwrap(transform[1]), args, transform[0])
            sourcemap.reraise(error)
        value = dense(value)
        out, aux = _split_aux(value, has_aux, fname)
        if has_aux:
            tangent = 0.0 if is_zero(tangent) else tangent[0]
        out_leaves = pytree.leaves(out)
        rows = [_rows(part, leaf, total) for part, leaf in
                zip(_parts_at_leaves(tangent, out), out_leaves)]
        offsets = [[sum(map(sum, sizes[:k])) + sum(sizes[k][:l]) for l in range(len(sizes[k]))]
                   for k in range(len(wrt))]

        def block(o, k, l):
            if not sizes[k][l]:
                return None
            return rows[o][offsets[k][l]:offsets[k][l] + sizes[k][l]].T

        jac = _assemble(out, [args[i] for i in wrt], block, single)
        return (jac, aux) if has_aux else jac
    jacobian_f.__tapeflow_opaque__ = wrappers.JACOBIAN_OPAQUE.format('jacfwd')
    jacobian_f.__dict__.pop('__tapeflow_jacobian__', None)      # wraps copied f's
    if single and not has_aux:              # what a Jacobian of it differentiates again
        jacobian_f.__tapeflow_jacobian__ = (f, wrt[0])
    return jacobian_f


def jacrev(f, argnums=0, has_aux=False):
    """Dense Jacobian by reverse mode, JAX's shapes (as `jacfwd`); `(jacobian, aux)` with
    has_aux.

    The reverse sweep is linear in its cotangent, so it carries every output
    direction at once: the pullback of `vjp` is swept forward with the
    identity as a batch of cotangents (one row per output element), and the
    primal runs once.
    """
    single, wrt = _argnums(argnums)
    fname = getattr(f, '__name__', 'f')
    moving = tuple(sorted(set(wrt)))
    bind = _call_binder(f, wrt)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        args = bind(args, kwargs)
        if single and not has_aux:
            if hasattr(f, '__tapeflow_jacobian__'):
                return _jacobian_of_jacobian(*f.__tapeflow_jacobian__, wrt[0], args)
            kind, inner_f, inner_wrt, inner_aux = getattr(f, '__tapeflow_transform__', (None,) * 4)
            if kind == 'grad' and len(inner_wrt) == 1 and not inner_aux:
                # the Jacobian of a gradient: forward over reverse, as `hessian`
                return _jacobian_of_jacobian(inner_f, inner_wrt[0], wrt[0], args)
        for i in wrt:
            _check_differentiable(args[i], i, fname)
        value = f(*args)
        out, aux = _split_aux(value, has_aux, fname)
        out_leaves, out_def = pytree.flatten(out)
        for leaf in out_leaves:
            if not _float_leaf(leaf):
                raise TypeError(f'jacrev requires real-valued outputs (output dtype that is a '
                                f'sub-dtype of np.floating), but {fname}() returned '
                                f'{type(leaf).__name__ if _dtype_of(leaf) is None else _dtype_of(leaf)}')
        out_sizes = _sizes(out_leaves)
        total = sum(out_sizes)
        seed = out_def.unflatten([np.zeros(np.shape(leaf), np.result_type(leaf, float))
                                  if np.ndim(leaf) else 0.0 for leaf in out_leaves])
        basis = out_def.unflatten(_basis(out_leaves, total))
        if has_aux:
            seed, basis = (seed, 0.0), (basis, 0.0)
        pullback = _adjoint_caller(f, moving, len(args), argument_kinds(args))
        inputs = args + (seed,)
        try:
            compiled = compile_tangent(pullback, (len(args),), scalar_args=scalar_positions(inputs),
                                       arg_shapes=array_shapes(inputs), batched=True,
                                       kinds=argument_kinds(inputs))
            try:
                _, tangents = compiled.combined(*inputs, basis)
            except (UnsupportedError, MissingRule):
                raise
            except Exception as error:
                sourcemap.reraise(error)
            if not isinstance(tangents, (tuple, list)):
                tangents = (tangents,)
            grads = {i: [_rows(part, leaf, total) for part, leaf in
                         zip(_parts_at_leaves(tangents[i], args[i]), pytree.leaves(args[i]))]
                     for i in moving}
        except (UnsupportedError, MissingRule):
            # the adjoint cannot be swept forward (a user rule written as a lambda,
            # say): one reverse sweep per output element instead
            per_row = []
            for m in range(total):
                ct = out_def.unflatten([np.asarray(part[m]) if not is_zero(part) else 0.0
                                        for part in _basis(out_leaves, total)])
                per_row.append(pullback(*args, (ct, 0.0) if has_aux else ct))
            grads = {i: [np.stack([np.reshape(np.asarray(dense(part)) if not is_zero(part)
                                              else np.zeros(np.shape(leaf)), np.size(leaf))
                                   for part in column])
                         for column, leaf in zip(zip(*[_parts_at_leaves(row[i], args[i])
                                                       for row in per_row]),
                                                 pytree.leaves(args[i]))]
                     for i in moving}
        out_offsets = [sum(out_sizes[:o]) for o in range(len(out_sizes))]

        def block(o, k, l):
            leaf = pytree.leaves(args[wrt[k]])[l]
            if not _float_leaf(leaf):
                return None
            return grads[wrt[k]][l][out_offsets[o]:out_offsets[o] + out_sizes[o]]

        jac = _assemble(out, [args[i] for i in wrt], block, single)
        return (jac, aux) if has_aux else jac
    jacobian_f.__tapeflow_opaque__ = wrappers.JACOBIAN_OPAQUE.format('jacrev')
    jacobian_f.__dict__.pop('__tapeflow_jacobian__', None)      # wraps copied f's
    if single and not has_aux:              # what a Jacobian of it differentiates again
        jacobian_f.__tapeflow_jacobian__ = (f, wrt[0])
    return jacobian_f


jacobian = jacrev


def _jacobian_of_jacobian(f, inner, outer, args):
    """The Jacobian, in `args[outer]`, of the Jacobian of `f` in `args[inner]`; shape
    `out.shape + inner.shape + outer.shape`, whichever modes were asked for (they
    agree): forward over reverse, one sweep per element of `f`'s output, each
    carrying every direction of `args[outer]` at once."""
    out = f(*args)
    if isinstance(out, (tuple, list, dict)):
        raise TypeError('a Jacobian of a Jacobian: the function must return one array or scalar')
    for position in (inner, outer):
        if pytree.is_node(args[position]):
            raise TypeError(f'a Jacobian of a Jacobian in argument {position}, a '
                            f'{type(args[position]).__name__}: nested Jacobians take arrays and '
                            f'scalars; for structured arguments, write hessian(f)')
        dtype = _dtype_of(args[position])
        if dtype is not None and not np.issubdtype(dtype, np.inexact):
            raise TypeError(f'a Jacobian of a Jacobian in argument {position}, which holds '
                            f'{dtype} values: only float and complex arguments are differentiated')
    wrt = tuple(sorted({inner, outer}))
    row = _adjoint_caller(f, wrt, len(args), argument_kinds(args), position=inner)
    column = jacfwd(row, argnums=outer)
    seeds = _basis_batch(out) if np.ndim(out) else [np.ones((), np.result_type(out, float))[()]]
    rows = [np.asarray(column(*args, seed)) for seed in seeds]
    shape = np.shape(out) + np.shape(args[inner]) + np.shape(args[outer])
    return np.stack(rows).reshape(shape)


def hessian(f, argnums=0, has_aux=False):
    """Dense Hessian: forward over reverse (the Jacobian of the compiled gradient); for a
    tuple of argnums a tuple of tuples, for pytree arguments JAX's nesting."""
    return jacfwd(grad(f, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


def real_like(g, x):
    """The cotangent `g` of the argument `x` in `x`'s number field (as in JAX and
    autograd): real for a real `x` (the imaginary part a complex intermediate leaves in
    it is the derivative of nothing), complex for a complex one; leaf by leaf in a
    pytree. Callers of generated code apply it, so derivatives of derivatives keep it."""
    if isinstance(x, (np.ndarray, np.generic, float, int, complex)):
        if isinstance(g, (np.ndarray, np.generic, complex)) and np.iscomplexobj(g):
            return g if np.iscomplexobj(x) else np.real(g)
        if np.iscomplexobj(x) and isinstance(g, (np.ndarray, np.generic, float)) \
                and not _is_zero(g):
            return complex(g) if isinstance(x, complex) else \
                np.asarray(g).astype(np.result_type(g, np.asarray(x).dtype))
        return g
    if isinstance(g, (list, tuple)) and isinstance(x, (list, tuple)) and len(g) == len(x):
        items = [real_like(a, b) for a, b in zip(g, x)]
        return g.__class__(*items) if hasattr(g, '_fields') else g.__class__(items)
    if isinstance(g, dict) and isinstance(x, dict):
        return {k: real_like(v, x[k]) if k in x else v for k, v in g.items()}
    return g


def _is_zero(g):
    return g.__class__ is float and g == 0.0


def _real_like_jvp(t, ans, g, x):
    return real_like(t, x)


def _real_like_vjp(h, ans, g, x):
    return real_like(h, x)


registry.defjvp(real_like, _real_like_jvp)
registry.defvjp(real_like, _real_like_vjp)
registry.static(real_like, 1)
defjvp_batched(real_like, _real_like_jvp)


# Generated code calls `as_argument` (see `_generated_caller`): linear in its cotangent.
registry.defjvp(pytree.as_argument, lambda t, ans, g, arg: pytree.as_argument(t, arg))
registry.defvjp(pytree.as_argument, lambda h, ans, g, arg: pytree.as_fields(h, arg))
registry.static(pytree.as_argument, 1)
defjvp_batched(pytree.as_argument, lambda t, ans, g, arg: pytree.as_argument(t, arg))


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
