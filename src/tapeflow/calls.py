"""Calls resolved at run time: a callee the compiler cannot name when it compiles.

`layer(x)` with `layer` taken from a list, `fns[i](x)`, `self.predict(x)`, a
`functools.partial`, a closure or lambda made in the function, a callable object: the
compiler (`transforms.reverse_calls`, `transforms.forward`) turns such a call into a
call of the dispatcher, whose first arguments it knows when compiling:

    y = call_forward(_tape, ACTIVE, f, x, ...)     the forward sweep
    _bf = call_backward(_tape, by)                 the reverse sweep: one cotangent per ACTIVE
    _jf = call_jvp(ACTIVE, BATCHED, f, (x, ...), {}, (tx, ...))    forward mode: (y, ty)
    y = call_plain(f, x, ...)                      nothing flows through it

`ACTIVE` names what carries a derivative: 0 the callee itself (a bound method's object,
what a closure or a partial holds), 1, 2, ... the positional arguments, '*s' those from
the s-th on, spread from one tuple (`f(a, *rest)`: '*1', whose cotangent is the tuple's),
a string a keyword argument. When the call runs, the dispatcher reads the callee (`expand`):

- a function with a derivative rule (`np.tanh` taken from a list): its rule;
- a Python function (a def, a lambda, a bound method, a partial, a `Closure`, a callable
  object, a `tf.grad`-made function, a wrapped helper): its own adjoint, compiled for
  the arguments it is given (`compilation.compile`, cached like any compile); its forward
  sweep pushes on the caller's tape, and the dispatcher pushes what its reverse needs;
- anything else (a builtin without a rule, a C extension's function) is the located
  refusal, at the caller's line, raised when the call runs.

A callee reached this way that writes into its arguments (or into what they hold) is
refused at the call: the caller was compiled not knowing which function it calls, so it
cannot follow the write. `call_plain` checks that too, where an argument is varied.
"""
from __future__ import annotations

import dataclasses
import functools
import types

import tapeflow.compilation as compilation
from tapeflow.arguments import argument_kinds, call_flat, compiler_kinds
from tapeflow.call_plans import (Call, bind, carries_within, expand, kinds_of, name_of, on,
                                 positions, python_function)
from tapeflow.errors import UnsupportedError
from tapeflow.rules import guards, registry
from tapeflow.rules.closures import Closure, closure
from tapeflow.rules.shapes import dense
from tapeflow.runtime.helpers import add_adjoint, is_zero
from tapeflow.transforms import callees
from tapeflow.transforms.variants import keyword_parameters
from tapeflow.transforms.pipeline import anf_of

__all__ = ['Closure', 'closure', 'call_forward', 'call_backward', 'call_jvp', 'call_plain']


# ---------------------------------------------------------------- writes into arguments

def check_writes(target, kinds):
    """Refuse a Python callee that writes into its arguments or the globals (the caller,
    not knowing which function it calls, followed no write); a guarded body (`try`, `with`)
    that writes into anything it did not make but the values its caller reads as written
    (`rules.guards.WRITTEN`)."""
    fn = python_function(target)
    summary = callees.Summaries(anf_of)(fn, compiler_kinds(kinds))
    if callees.is_guarded_body(fn):
        allowed = guards.written_positions(getattr(fn, '__tapeflow_kept__', None) or ())
        if not (summary.writes - allowed or summary.outer):
            return
        raise UnsupportedError('the guarded body (try, with) writes into a value it did not '
                               'make and that tapeflow did not see written there (a global, '
                               'a closure value, a name reached through another): write it '
                               'before or after the try or with, or bind a new value '
                               '(y = y * 2) inside')
    if summary.outer:
        raise UnsupportedError(f'{name_of(target)}, called here through a value, writes into a '
                               f'global or closure value: a derivative through it is not '
                               f'followed; return the new value instead')
    if summary.writes:
        names = fn.__code__.co_varnames
        which = ', '.join(repr(names[i]) if i < len(names) else str(i)
                          for i in sorted(summary.writes))
        raise UnsupportedError(f'{name_of(target)}, called here through a value, writes into '
                               f'its argument {which}: tapeflow follows such writes only in '
                               f'calls of functions it knows when compiling; return the new '
                               f'value instead')


# ---------------------------------------------------------------- the target, compiled

_WRAPPERS: dict = {}        # (function, positional count, keyword names) -> the def calling it
_WRAPPERS_MOST = 256


def _through_def(call):
    """A call of a function with a rule as a call of a small def that calls it (`def
    call_sin(a0, k_out): return _fn(a0, out=k_out)`): compiled like any callee, its rule
    applied there, so every call the dispatcher runs is generated code (higher orders
    too). The keyword values are its last parameters."""
    from tapeflow.syntax.unparse import load_module
    fn = call.plan.target
    names = tuple(call.keywords)
    key = (fn, len(call.args), names)
    try:
        made = _WRAPPERS.get(key)
    except TypeError:                   # an unhashable callable
        key, made = None, None
    if made is None:
        params = [f'a{k}' for k in range(len(call.args))] + [f'k_{n}' for n in names]
        passed = [f'a{k}' for k in range(len(call.args))] + [f'{n}=k_{n}' for n in names]
        name = 'call_' + ''.join(c if c.isalnum() else '_' for c in
                                 getattr(fn, '__name__', 'function'))
        text = f'def {name}({", ".join(params)}):\n    return _fn({", ".join(passed)})\n'
        made = load_module(text, {'_fn': fn}, name)[name]
        if key is not None:
            if len(_WRAPPERS) >= _WRAPPERS_MOST:
                _WRAPPERS.pop(next(iter(_WRAPPERS)))
            _WRAPPERS[key] = made
    plan = dataclasses.replace(call.plan, target=made, entry=None)
    return Call(plan, tuple(call.args) + tuple(call.keywords.values()),
                list(call.origin) + [call.keyword_origin[n] for n in names])


def resolved_call(fn, active, args, kwargs):
    """The call of `fn` bound, its target a Python function (`_through_def` for a rule's),
    and the positions of the target's arguments that `active` names and that carry a
    derivative; None where `fn` has no source or rule but nothing it is given carries one."""
    plan = _expand(fn, active, args, kwargs)
    if plan is None:
        return None
    call = bind(plan, args, kwargs)
    if plan.entry is not None:
        call = _through_def(call)
    return call, positions(call, active)


def reverse_of(call, wrt):
    kinds = kinds_of(call.args, wrt)
    check_writes(call.plan.target, kinds)
    return compilation.compile(call.plan.target, compilation.Spec('reverse', tuple(wrt),
                                                                  kinds=kinds))


# ---------------------------------------------------------------- reverse mode

class Adjoint:
    """The tape's record of a callee run by its compiled forward sweep."""
    __slots__ = ('call', 'ans', 'wrt', 'compiled')

    def __init__(self, call, ans, wrt, compiled):
        self.call, self.ans, self.wrt, self.compiled = call, ans, wrt, compiled

    def backward(self, tape, g):
        grads = self.compiled.backward(tape, dense(g, self.ans))
        return list(grads) if len(self.wrt) > 1 else [grads]


class Nothing:
    """The tape's record of a call through which nothing flows."""
    __slots__ = ('call', 'wrt')

    def __init__(self, call):
        self.call, self.wrt = call, []

    def backward(self, tape, g):
        return []


def call_forward(tape, active, fn, *args, **kwargs):
    """The forward sweep of `fn(*args, **kwargs)`: its value; what `call_backward`
    needs goes on `tape`, above what the callee's own forward sweep pushed."""
    if getattr(fn, '__tapeflow_attempt__', False):
        from tapeflow import guarded_calls          # (it reads this module)
        return guarded_calls.forward(tape, active, fn, args)
    resolved = resolved_call(fn, active, args, kwargs)
    if resolved is None:                            # nothing it is given carries a derivative
        tape.append(Nothing(None))
        return fn(*args, **kwargs)
    call, wrt = resolved
    if not wrt:
        check_writes(call.plan.target, kinds_of(call.args, wrt))
        tape.append(Nothing(call))
        return _run(call)
    compiled = reverse_of(call, wrt)
    ans = compiled.forward(tape, *call.args)
    tape.append(Adjoint(call, ans, wrt, compiled))
    return ans


def _run(call):
    """The target applied to the call's arguments, as Python takes them: the keyword-only
    values and the `**` dict (`call_plans._bind_stars` laid them out last) by keyword."""
    target = call.plan.target
    if keyword_parameters(target):
        return call_flat(target, call.args)
    return target(*call.args)


def _expand(fn, active, args, kwargs):
    """`expand(fn)`; None where `fn` has neither a rule nor source but nothing `active`
    names carries a derivative when the call runs (an int that shares a tuple with an
    array, which the compiler counted as moving)."""
    try:
        return expand(fn)
    except UnsupportedError:
        given = [getattr(fn, '__self__', fn)] if 0 in active else []
        given += [a for k, a in enumerate(args, 1) if on(('arg', k - 1), active)]
        given += [v for k, v in kwargs.items() if k in active]
        if any(carries_within(v) for v in given):
            raise
        return None


def call_backward(tape, g):
    """The cotangents of what `call_forward` was told carries derivatives (`Cotangents`),
    from the cotangent `g` of its value."""
    record = tape.pop()
    if getattr(record, 'guarded', False):           # (guarded_calls.Guarded)
        return record.backward(tape, g)
    return distribute(record, record.backward(tape, g))


def distribute(record, grads):
    """The target's arguments' cotangents `grads` (of `record.wrt`), as the caller reads
    them: the callee's own (from its leaves'), each argument's, each keyword's."""
    call = record.call
    if call is None:
        return Cotangents(0.0, {}, {}, False, 0)
    plan = call.plan
    leaves = [0.0] * len(plan.leaves)
    args, keywords = {}, {}

    def give(where, g_i):
        kind, k = where
        if kind == 'leaf':
            leaves[k] = add_adjoint(leaves[k], g_i)
        elif kind == 'arg':
            args[k + 1] = g_i
        elif kind == 'keyword':
            keywords[k] = g_i
        elif kind == 'dict' and not is_zero(g_i):      # a `**` dict: each item's keyword
            for key, origin in k:
                give(origin, g_i.get(key, 0.0))
    for i, g_i in zip(record.wrt, grads):
        give(call.origin[i], g_i)
    nargs = sum(1 for kind, _ in call.origin if kind == 'arg')
    return Cotangents(plan.cotangent(leaves) if any(not is_zero(c) for c in leaves) else 0.0,
                      args, keywords, plan.method, nargs)


class Cotangents:
    """What `call_backward` returns: `[0]` the callee's, `[k]` the k-th argument's,
    `['name']` a keyword argument's (0.0 where none flowed); `receiver(name)` the
    cotangent of `obj` where the callee was `obj.name`."""
    __slots__ = ('callee', 'args', 'keywords', 'method', 'nargs')

    def __init__(self, callee, args, keywords, method, nargs):
        self.callee, self.args, self.keywords, self.method = callee, args, keywords, method
        self.nargs = nargs

    def __getitem__(self, key):
        if key == 0:
            return self.callee
        if key.__class__ is tuple:          # a `**` dict's: ('**', the keywords written out)
            return {k: g for k, g in self.keywords.items() if k not in key[1]}
        if isinstance(key, str) and key[:1] == '*':     # those spread: f(a, *rest): '*1'
            if not self.args:
                return 0.0
            return tuple(self.args.get(k, 0.0) for k in range(int(key[1:]) + 1, self.nargs + 1))
        if isinstance(key, str):
            return self.keywords.get(key, 0.0)
        return self.args.get(key, 0.0)

    def receiver(self, name):
        if self.method or is_zero(self.callee):
            return self.callee          # a bound method's cotangent is its object's
        return {name: self.callee}      # a function held in an attribute: a field's


def cotangent_of(cotangents, key):
    """`cotangents[key]` (`Cotangents`, or 0.0): generated code's read of one of them."""
    return 0.0 if is_zero(cotangents) else cotangents[key]


def receiver_cotangent(cotangents, name):
    """The cotangent of `obj` where the callee was `obj.name`."""
    return 0.0 if is_zero(cotangents) else cotangents.receiver(name)


registry.defjvp(cotangent_of, lambda t, ans, cotangents, key: cotangent_of(t, key))
registry.defjvp(receiver_cotangent, lambda t, ans, cotangents, name: receiver_cotangent(t, name))
registry.static(cotangent_of, 1)
registry.static(receiver_cotangent, 1)


# ---------------------------------------------------------------- forward mode

def receiver_tangent(t, obj, name):
    """The tangent of the callee `obj.name`, given `obj`'s: a bound method's is its
    object's, a function held in an attribute that field's."""
    if is_zero(t):
        return 0.0
    method = getattr(obj, name, None)
    if isinstance(method, (types.MethodType, types.BuiltinMethodType)) and \
            method.__self__ is obj:     # (a dict's own, `d.values`, too)
        return t
    if isinstance(t, dict):
        return t.get(name, 0.0)
    return getattr(t, name, 0.0)


def tangents_of(call, active, tangents):
    """`tangent(i)`: the tangent of the target's argument i, from those of `active`."""
    given = dict(zip(active, tangents))
    leaves = call.plan.tangents(given.get(0, 0.0))
    spread = next(((int(key[1:]), t) for key, t in given.items()
                   if isinstance(key, str) and key[:1] == '*'), None)
    table = next(((key[1], t) for key, t in given.items() if key.__class__ is tuple), None)

    def tangent(i, where=None):
        kind, k = where or call.origin[i]
        if kind == 'dict':                  # a `**` dict: its items' tangents
            return {key: tangent(None, origin) for key, origin in k}
        if kind == 'leaf':
            return leaves[k]
        if kind == 'arg' and spread is not None and k >= spread[0]:
            return 0.0 if is_zero(spread[1]) else spread[1][k - spread[0]]
        if kind == 'default':
            return 0.0
        if kind == 'keyword' and k not in given and table is not None and k not in table[0]:
            return 0.0 if is_zero(table[1]) else table[1].get(k, 0.0)     # a `**` dict's item
        return given.get(k + 1 if kind == 'arg' else k, 0.0)
    return tangent


def call_jvp(active, batched, fn, args, kwargs, tangents):
    """`(value, tangent)` of `fn(*args, **kwargs)`, given the tangents of `active` (in its
    order)."""
    if getattr(fn, '__tapeflow_attempt__', False):
        from tapeflow import guarded_calls
        return guarded_calls.jvp(active, batched, fn, args, tangents)
    resolved = resolved_call(fn, active, args, kwargs)
    if resolved is None:
        return fn(*args, **kwargs), 0.0
    call, wrt = resolved
    kinds = kinds_of(call.args, wrt)
    check_writes(call.plan.target, kinds)
    if not wrt:
        return _run(call), 0.0
    tangent = tangents_of(call, active, tangents)
    compiled = compilation.compile(call.plan.target, compilation.Spec(
        'forward', tuple(wrt), kinds=kinds, batched=bool(batched)))
    return compiled.combined(*call.args, *[tangent(i) for i in wrt])


# ---------------------------------------------------------------- no derivative

def call_plain(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` where no derivative flows through it, but an argument varies:
    a Python callee must not write into its arguments (see the module's docstring)."""
    if getattr(fn, '__tapeflow_attempt__', False):
        from tapeflow import guarded_calls
        guarded_calls.check_plain(fn, args)
        return fn(*args, **kwargs)
    plan = expand(fn) if not _plain_callable(fn) else None
    if plan is not None and plan.entry is None:
        call = bind(plan, args, kwargs)
        check_writes(plan.target, argument_kinds(call.args))
    return fn(*args, **kwargs)


def _plain_callable(fn) -> bool:
    """A callee with no Python source and no rule: run as it is (nothing flows)."""
    try:
        return registry.lookup(fn) is None and not isinstance(
            fn, (types.FunctionType, types.MethodType, functools.partial, Closure)) and not \
            isinstance(getattr(type(fn), '__call__', None), types.FunctionType)
    except TypeError:
        return True


for _fn in (call_forward, call_backward, call_jvp, call_plain):
    _fn.__tapeflow_dispatcher__ = True
compilation.RUNTIME.update(call_forward=call_forward, call_backward=call_backward,
                           call_jvp=call_jvp, call_plain=call_plain, closure=closure,
                           receiver_tangent=receiver_tangent, cotangent_of=cotangent_of,
                           receiver_cotangent=receiver_cotangent)
