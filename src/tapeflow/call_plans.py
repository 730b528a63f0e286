"""The callee of a call resolved at run time, read (`expand`) and given its arguments
(`bind`): what `tapeflow.calls` differentiates.

A callee is a function with a rule, a Python function, or something that holds one and
values of its own (its *leaves*): a bound method (its object), a `functools.partial` (its
arguments), a `Closure` (its defaults and the locals it read), a callable object (itself).
`Plan` says where the leaves go among the target's arguments and how the callee's
cotangent is made of theirs; `Call` is one call bound, each argument's origin kept, so the
dispatcher knows which carry derivatives and where their cotangents go.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import types

import numpy as np

from tapeflow.arguments import FunctionArgument, argument_kinds
from tapeflow.errors import UnsupportedError
from tapeflow.rules import dicts, registry
from tapeflow.rules.closures import MISSING, Closure
from tapeflow.runtime.helpers import is_zero
from tapeflow.transforms.variants import keyword_parameters

__all__ = ['Plan', 'Call', 'expand', 'bind', 'positions', 'kinds_of', 'carries', 'carries_within',
           'on', 'name_of', 'python_function']


@dataclasses.dataclass
class Plan:
    """How a callee applies to the caller's arguments.

    `leaves`: the callee's own values that reach its target (a bound method's object, a
    partial's arguments, a closure's values); the target is called with the leaves at
    `before`, the call's arguments, the leaves at `after`, keywords `keywords` (name ->
    leaf) and the call's own, and, for a parameter left out, the leaf `defaults` names (a
    closure's default), else the target's own default. `parts` makes the callee's
    cotangent of its leaves' cotangents; `split` the leaves' tangents of the callee's.
    The target is applied by its rule `entry` where it has one."""
    target: object
    entry: object = None
    leaves: tuple = ()
    before: tuple = ()
    after: tuple = ()
    keywords: dict = dataclasses.field(default_factory=dict)
    defaults: dict = dataclasses.field(default_factory=dict)    # parameter position -> leaf
    parts: object = None
    split: object = None
    method: bool = False    # a bound method: the callee's cotangent is its object's

    def cotangent(self, leaf_cotangents):
        return self.parts(leaf_cotangents) if self.leaves else 0.0

    def tangents(self, t):
        if is_zero(t) or not self.leaves:
            return (0.0,) * len(self.leaves)
        return tuple(self.split(t))


def _shifted(plan, by):
    """`plan`'s leaf indices moved up by `by` (leaves put before its own)."""
    return dict(before=tuple(i + by for i in plan.before), after=tuple(i + by for i in plan.after),
                keywords={k: i + by for k, i in plan.keywords.items()},
                defaults={p: i + by for p, i in plan.defaults.items()})


def expand(callee) -> Plan:
    """The `Plan` of a call of `callee`; a located refusal where `callee` has neither a rule
    nor Python source."""
    entry = registry.lookup(callee)
    if entry is not None and (entry.vjps or entry.jvps or entry.nondiff):
        return Plan(callee, entry)
    if isinstance(callee, Closure) and callee.named is not None:    # the locals first
        return Plan(callee.fn, leaves=callee.values,
                    before=tuple(range(callee.ndefaults, len(callee.values))),
                    defaults={name: k for k, name in enumerate(callee.named)},
                    parts=tuple, split=tuple)
    if isinstance(callee, Closure):
        first = callee.nparams - callee.ndefaults
        return Plan(callee.fn, leaves=callee.values,
                    after=tuple(range(callee.ndefaults, len(callee.values))),
                    defaults={first + k: k for k in range(callee.ndefaults)},
                    parts=tuple, split=tuple)
    if isinstance(callee, types.MethodType):
        return _bound(expand(callee.__func__), callee.__self__)
    if isinstance(callee, types.BuiltinMethodType) and type(callee.__self__) is dict and \
            callee.__name__ in dicts.METHODS:      # `d.values()` of a dict known as it runs
        return _bound(expand(dicts.METHODS[callee.__name__]), callee.__self__)
    if isinstance(callee, functools.partial):
        inner = expand(callee.func)
        n, args = len(inner.leaves), tuple(callee.args)
        names = tuple(callee.keywords)
        shifted = _shifted(inner, 0)

        def parts(cots):
            return (inner.cotangent(cots[:n]), tuple(cots[n:n + len(args)]),
                    dict(zip(names, cots[n + len(args):])))

        def split(t):
            return inner.tangents(t[0]) + tuple(t[1]) + tuple(t[2].get(k, 0.0) for k in names)
        keywords = {**shifted['keywords'],
                    **{k: n + len(args) + j for j, k in enumerate(names)}}
        return Plan(inner.target, inner.entry, inner.leaves + args + tuple(callee.keywords.values()),
                    shifted['before'] + tuple(range(n, n + len(args))), shifted['after'],
                    keywords, shifted['defaults'], parts, split)
    if isinstance(callee, types.FunctionType) or _is_transform(callee):
        return Plan(callee)
    if not isinstance(callee, type) and isinstance(
            getattr(type(callee), '__call__', None), types.FunctionType):
        return _bound(expand(type(callee).__call__), callee)       # a callable object
    raise UnsupportedError(f'{name_of(callee)} is called here with values that carry '
                           f'derivatives, but it has no derivative rule and no Python source '
                           f'to differentiate; call it from a def, or give it a rule '
                           f'(tf.defvjp)')


def _bound(inner, obj) -> Plan:
    """`inner` with `obj` as its first argument: a bound method, a callable object (whose
    cotangent is its object's)."""
    n = len(inner.leaves)
    shifted = _shifted(inner, 1)
    return Plan(inner.target, inner.entry, (obj,) + inner.leaves, (0,) + shifted['before'],
                shifted['after'], shifted['keywords'], shifted['defaults'],
                parts=lambda cots: cots[0], split=lambda t: (t,) + (0.0,) * n, method=True)


def _is_transform(fn) -> bool:
    return getattr(fn, '__tapeflow_transform__', None) is not None or \
        getattr(fn, '__wrapped__', None) is not None or \
        getattr(fn, '__tapeflow_pullback__', None) is not None


def name_of(fn) -> str:
    name = getattr(fn, '__qualname__', None) or getattr(fn, '__name__', None)
    if name is None:
        return f'a {type(fn).__name__} object'
    module = getattr(fn, '__module__', None)
    return f'{module}.{name}()' if module and module != 'builtins' else f'{name}()'


def carries(value) -> bool:
    """Whether `value` may carry a derivative (integers, strings, None and functions do
    not: their cotangent is zero)."""
    if value is None or isinstance(value, (bool, str, bytes, numbers.Integral, range)):
        return False
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return value.dtype.kind in 'fc' or value.dtype == object
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type)):
        return False
    return True


def carries_within(value) -> bool:
    """`carries`, looking inside lists, tuples and dicts (a list of ints carries none)."""
    if isinstance(value, (list, tuple)):
        return any(carries_within(v) for v in value)
    if isinstance(value, dict):
        return any(carries_within(v) for v in value.values())
    return carries(value)


# ---------------------------------------------------------------- binding the arguments

@dataclasses.dataclass
class Call:
    """One call, bound: the target's positional arguments (and, for a rule, keywords), and
    where each came from: ('leaf', k) the callee's k-th leaf, ('arg', k) the call's k-th
    positional argument, ('keyword', name) the call's keyword, ('default', name) the
    target's own default."""
    plan: Plan
    args: tuple
    origin: list
    keywords: dict = dataclasses.field(default_factory=dict)
    keyword_origin: dict = dataclasses.field(default_factory=dict)


def bind(plan: Plan, args, kwargs) -> Call:
    leaves = plan.leaves
    positional = [leaves[i] for i in plan.before] + list(args)
    origin = [('leaf', i) for i in plan.before] + [('arg', k) for k in range(len(args))]
    given = {name: (leaves[i], ('leaf', i)) for name, i in plan.keywords.items()}
    given.update((name, (value, ('keyword', name))) for name, value in kwargs.items())
    after = [leaves[i] for i in plan.after]
    after_origin = [('leaf', i) for i in plan.after]
    if plan.entry is not None:
        return Call(plan, tuple(positional + after), origin + after_origin,
                    {k: v for k, (v, _) in given.items()}, {k: o for k, (_, o) in given.items()})
    fn = python_function(plan.target)
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        if keyword_parameters(fn) or not code.co_flags & inspect.CO_VARKEYWORDS:
            return _bind_stars(plan, fn, positional + after, origin + after_origin, given)
        if given:           # (tapeflow's own wrappers: `grad(f)`'s `(*args, **kwargs)`)
            raise UnsupportedError(f'{name_of(plan.target)} takes *args or keyword-only '
                                   f'parameters: pass its arguments by position here')
        return Call(plan, tuple(positional + after), origin + after_origin)
    n = code.co_argcount - len(after)
    names = code.co_varnames[:n]
    if len(positional) > n:
        raise TypeError(f'{fn.__name__}() takes {n} positional arguments but '
                        f'{len(positional)} were given')
    values = positional + [MISSING] * (n - len(positional))
    origin = origin + [None] * (n - len(positional))
    for name, (value, where) in given.items():
        if name not in names:
            raise TypeError(f'{fn.__name__}() got an unexpected keyword argument {name!r}')
        i = names.index(name)
        if values[i] is not MISSING:
            raise TypeError(f'{fn.__name__}() got multiple values for argument {name!r}')
        values[i], origin[i] = value, where
    own = fn.__defaults__ or ()
    first = code.co_argcount - len(own)
    for i in range(n):
        if values[i] is not MISSING:
            continue
        if i in plan.defaults:
            values[i], origin[i] = leaves[plan.defaults[i]], ('leaf', plan.defaults[i])
        elif i >= first:
            values[i], origin[i] = own[i - first], ('default', names[i])
        else:
            raise TypeError(f'{fn.__name__}() missing required positional argument: '
                            f'{names[i]!r}')
    return Call(plan, tuple(values + after), origin + after_origin)


def _bind_stars(plan, fn, positional, origin, given) -> Call:
    """`bind` for a target with `*args`, keyword-only parameters or `**kwargs`, as Python
    binds a call (its TypeErrors too), laid out as its variant takes them
    (`variants.keyword_variant`, `arity_variant`): the named parameters, the star's
    values, the keyword-only parameters, the `**` dict (origin ('dict', ((key, origin),
    ...)): its items' cotangents go back to the keywords they came from)."""
    code = fn.__code__
    named = code.co_varnames[:code.co_argcount]
    kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    star, double = code.co_flags & inspect.CO_VARARGS, code.co_flags & inspect.CO_VARKEYWORDS
    if len(positional) > len(named) and not star:
        raise TypeError(f'{fn.__name__}() takes {len(named)} positional arguments but '
                        f'{len(positional)} were given')
    values = {name: (v, o) for name, v, o in zip(named, positional, origin)}
    packed = {}
    for name, pair in given.items():
        if name in kwonly or name in named[code.co_posonlyargcount:]:
            if name in values:
                raise TypeError(f'{fn.__name__}() got multiple values for argument {name!r}')
            values[name] = pair
        elif double:
            packed[name] = pair
        else:
            raise TypeError(f'{fn.__name__}() got an unexpected keyword argument {name!r}')
    own = dict(zip(named[len(named) - len(fn.__defaults__ or ()):], fn.__defaults__ or ()))
    own.update(fn.__kwdefaults__ or {})
    for i, name in enumerate(named + kwonly):
        if name in values:
            continue
        leaf = plan.defaults.get(name, plan.defaults.get(i))
        if leaf is not None:
            values[name] = (plan.leaves[leaf], ('leaf', leaf))
        elif name in own:
            values[name] = (own[name], ('default', name))
        else:
            raise TypeError(f'{fn.__name__}() missing required argument: {name!r}')
    pairs = [values[name] for name in named] + list(zip(positional[len(named):],
                                                         origin[len(named):]))
    if keyword_parameters(fn):
        pairs += [values[name] for name in kwonly]
        if double:
            pairs.append(({k: v for k, (v, _) in packed.items()},
                          ('dict', tuple((k, o) for k, (_, o) in packed.items()))))
    return Call(plan, tuple(v for v, _ in pairs), [o for _, o in pairs])


def python_function(target):
    from tapeflow.callables import python_function_of
    return python_function_of(target)


def on(where, active) -> bool:
    kind, k = where
    if kind == 'dict':                  # a `**` dict: its items' origins
        return any(on(o, active) for _, o in k)
    if kind == 'leaf':
        return 0 in active
    if kind == 'arg':
        return (k + 1) in active or any(isinstance(key, str) and key[:1] == '*' and
                                        k >= int(key[1:]) for key in active)
    if kind == 'keyword':
        return k in active or any(key.__class__ is tuple and k not in key[1] for key in active)
    return False


def positions(call: Call, active) -> list:
    """The positions of the target's arguments that carry derivatives, given `active`."""
    return [i for i, where in enumerate(call.origin)
            if on(where, active) and carries(call.args[i])]


def kinds_of(args, wrt) -> tuple:
    """The compilation's kinds: a function taken as a constant only where it carries no
    derivative (a closure or a partial holding values that do is read as a value)."""
    kinds = list(argument_kinds(args))
    for i in wrt:
        if kinds[i].__class__ is FunctionArgument:
            kinds[i] = None
    return tuple(kinds)
