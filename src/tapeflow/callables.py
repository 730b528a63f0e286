"""What the compiler reads for a callable: `python_function_of`.

tapeflow compiles Python functions (def, lambda). Everything else a user may
differentiate is first read as one: a bound method as a function of its other
parameters, a `functools.partial` as the def of its remaining ones, a NumPy
function with a rule as a def calling it, a function made by `grad` or `vjp` as
a small def calling its generated code (so derivatives of derivatives transform
the generated code itself), a wrapper as what it wraps when it only compiles,
caches or passes on (`wrappers.inner_function`).

Also here: how calls of a callable are bound (`call_binder`, `with_defaults`:
keyword arguments in their places, defaults filled in).
"""
from __future__ import annotations

import collections
import functools
import inspect
import types
import weakref

import numpy as np

import tapeflow.cache as cache
import tapeflow.runtime.pytree as pytree
import tapeflow.wrappers as wrappers
from tapeflow.arguments import FunctionArgument, argument_kinds, binder
from tapeflow.conversions import real_like
from tapeflow.rules import registry
from tapeflow.rules.shapes import dense as dense_like
from tapeflow.syntax import parse
from tapeflow.syntax.naming import identifier as _id
from tapeflow.syntax.unparse import load_module
from tapeflow.transforms import variants

__all__ = ['python_function_of', 'adjoint_caller', 'jvp_caller', 'call_binder', 'with_defaults',
           'signature_function']


def _make_caller(name, text, compiled, python_fn, namespace=()):
    """Load `text`, a small `def name` calling `compiled.combined`: a function the
    compiler reads like any other, so its derivatives transform generated code."""
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
    python_fn = python_function_of(f, kinds)
    if not kinds and python_fn.__code__.co_flags & inspect.CO_VARARGS:
        return python_fn    # (its signature, until a call says how many values `*args` gets)
    # one caller per function read, whatever `grad(f)` object asks (tf.hvp(f, ...) makes a
    # new one each call): the same caller is the same compiled derivative, not a new compile
    key = (python_fn, kind, wrt, has_aux, kinds)
    cached = _GRAD_CALLERS.get(key)
    if _fits(cached) and cached.__tapeflow_defaults__ is python_fn.__defaults__:
        _GRAD_CALLERS.pop(key, None)          # (most recently used last; no lock: a
        _GRAD_CALLERS[key] = cached           # caller made twice is the same derivative)
        callers[kinds] = cached
        return cached
    from tapeflow import compilation      # (it reads callables through this module)
    compiled = compilation.compile(python_fn, compilation.Spec('reverse', wrt, kinds=kinds))
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
    caller = callers[kinds] = _GRAD_CALLERS[key] = _make_caller(
        name, text, compiled, python_fn,
        namespace={'as_argument': pytree.as_argument, 'real_like': real_like,
                   **{f'_default{k}': v for k, v in enumerate(defaults)}})
    caller.__tapeflow_defaults__ = python_fn.__defaults__
    while len(_GRAD_CALLERS) > GRAD_CALLERS_KEPT:
        _GRAD_CALLERS.popitem(last=False)
    return caller


# the callers `_generated_caller` made last, least recently used first (strong: a caller
# holds the function it reads, which a weak key would never let go)
_GRAD_CALLERS = collections.OrderedDict()
GRAD_CALLERS_KEPT = 64


_CALLERS = weakref.WeakKeyDictionary()     # python function -> {(kind, positions): caller}


def adjoint_caller(f, wrt, nprimals, kinds=(), position=None):
    """`vjp_f(*primals, cotangent)`: the pullback of `f` as a function of everything (a
    tuple, one cotangent per primal); with `position`, the cotangent of that primal only,
    the gradient of `<cotangent, f(*primals)>` there (a row of a Jacobian)."""
    python_fn = python_function_of(f, kinds, nprimals)
    callers = _CALLERS.setdefault(python_fn, {})
    key = ('vjp', wrt, nprimals, kinds, position)
    if _fits(callers.get(key)):
        return callers[key]
    from tapeflow import compilation      # (it reads callables through this module)
    compiled = compilation.compile(python_fn, compilation.Spec('reverse', wrt, kinds=kinds))
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
    adjoint = adjoint_caller(f, wrt, len(primals), argument_kinds(primals))
    names = [f'_primal{k}' for k in range(len(primals))]
    text = (f'def pullback(cotangent):\n'
            f'    return {adjoint.__name__}({", ".join(names + ["cotangent"])})\n')
    caller = _make_caller('pullback', text, *adjoint.__tapeflow_adjoint__,
                          namespace={adjoint.__name__: adjoint, **dict(zip(names, primals))})
    pullback.__tapeflow_caller__ = caller
    return caller


def jvp_caller(f, nprimals):
    """`jvp_f(*primals, *tangents) -> (value, tangent)`: `jvp(f, primals, tangents)`
    inside compiled code (`transforms.desugar`), every argument moving."""
    python_fn = python_function_of(f, (), nprimals)
    callers = _CALLERS.setdefault(python_fn, {})
    if _fits(callers.get(('jvp', nprimals))):
        return callers['jvp', nprimals]
    wrt = tuple(range(nprimals))
    from tapeflow import compilation      # (it reads callables through this module)
    compiled = compilation.compile(python_fn, compilation.Spec('forward', wrt))
    params = ', '.join([f'_primal{k}' for k in wrt] + [f'_tangent{k}' for k in wrt])
    name = f'jvp_{_id(python_fn)}'
    # the tangent of an output that does not move is zeros of its shape, as jvp's
    text = (f'def {name}({params}):\n'
            f'    _pair = {compiled.combined.__name__}({params})\n'
            f'    return (_pair[0], dense(_pair[1], _pair[0]))\n')
    caller = callers['jvp', nprimals] = _make_caller(name, text, compiled, python_fn,
                                                     {'dense': dense_like})
    return caller


def python_function_of(fn, kinds=(), arity=None):
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
    code = fn.__code__
    if variants.keyword_parameters(fn):       # (`arguments.binder` passed them last)
        named = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        fn = variants.keyword_variant(fn, max(arity - named, 0), parse.parse_function)
    elif code.co_flags & inspect.CO_VARARGS:
        fn = variants.arity_variant(fn, max(arity - code.co_argcount, 0), parse.parse_function)
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
    text = f'def {fname}({", ".join(signature)}):\n    return _fn({", ".join(passed)})\n'
    caller = load_module(text, namespace, fname)[fname]
    if len(_PARTIAL_CALLERS) >= _METHOD_CALLERS_MAX:
        _PARTIAL_CALLERS.pop(next(iter(_PARTIAL_CALLERS)))
    _PARTIAL_CALLERS[id(part)] = (part, caller)
    return caller


def with_defaults(f, args):
    """`args` with the defaults of the parameters they leave out (generated code takes every
    parameter by position)."""
    python_fn = signature_function(f)
    code = python_fn.__code__
    if variants.keyword_parameters(python_fn):
        return binder(python_fn, getattr(f, '__name__', 'f'))(tuple(args), {})
    if len(args) >= code.co_argcount or code.co_flags & inspect.CO_VARARGS:
        return tuple(args)
    return binder(python_fn, getattr(f, '__name__', 'f'))(tuple(args), {})


def call_binder(f, wrt=(), what='argnums'):
    """`bind(args, kwargs)` for calls of `f` (entry points other than grad): `args` with
    `kwargs` in their positions and defaults filled in, checking that what is
    differentiated was passed by position (keyword arguments are not, as in JAX)."""
    fname = getattr(f, '__name__', 'f')
    made = []               # made at the first call (reading `f` may compile a gradient)

    def bind(args, kwargs):
        for i in wrt:
            if i >= len(args):
                raise TypeError(f'differentiating with respect to {what}={i} requires at least '
                                f'{i + 1} positional arguments, but {fname}() got {len(args)} '
                                f'(keyword arguments are not differentiated: pass it by '
                                f'position)')
        if not made:
            made.append(binder(signature_function(f), fname))
        return made[0](tuple(args), kwargs)
    return bind


def signature_function(f):
    """The Python function whose signature calls of `f` follow: a gradient function has
    the signature of its function."""
    seen = set()
    while id(f) not in seen:
        seen.add(id(f))
        if wrappers.own(f, '__tapeflow_transform__') is not None:
            f = wrappers.own(f, '__tapeflow_transform__')[1]
        elif wrappers.own(f, '__tapeflow_jacobian__') is not None:      # a Jacobian function
            f = wrappers.own(f, '__tapeflow_jacobian__')[0]
    return python_function_of(f)
