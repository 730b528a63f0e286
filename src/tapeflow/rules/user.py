"""Derivative rules for your own functions: `tapeflow.defvjp`, `tapeflow.defjvp`.

A function with a rule is a primitive: the compiler calls it and applies the
rule instead of differentiating its body, and the eager tape records it as
one operation. The rule forms are those of the built-in rules:

    vjp_rule(g, ans, *args, **kwargs) -> cotangent of the argument, in its shape
    jvp_rule(t, ans, *args, **kwargs) -> output tangent when the argument moves by t

    def softclip(x, limit):
        return limit * np.tanh(x / limit)

    tapeflow.defvjp(softclip, lambda g, ans, x, limit: g * (1 - (ans / limit) ** 2),
                    jvp_rule=lambda t, ans, x, limit: t * (1 - (ans / limit) ** 2))

    @tapeflow.defvjp(softclip)              # decorator form, argument 0
    def softclip_vjp(g, ans, x, limit):
        return g * (1 - (ans / limit) ** 2)

Several arguments: pass a list of rules, one per positional argument (None
for an argument without a derivative), or `argnum=` in the decorator form.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

from tapeflow.rules import registry

__all__ = ['defvjp', 'defjvp']

Rules = Union[Callable, Sequence[Optional[Callable]], None]


def _register(table, fn, rules, argnum):
    if callable(rules):
        rules = {argnum: rules}
    else:
        rules = {i: rule for i, rule in enumerate(rules) if rule is not None}
    for i, rule in rules.items():
        if not callable(rule):
            raise TypeError(f'the rule for argument {i} of {fn!r} is not callable: {rule!r}')
        table(fn, rule, argnums=[i])


def defvjp(fn, vjp_rule: Rules = None, jvp_rule: Rules = None, *, argnum: int = 0):
    """Give `fn` a reverse rule (and optionally a forward one).

    With `vjp_rule` omitted, returns a decorator that registers the decorated
    function as the reverse rule of argument `argnum`.
    """
    if not callable(fn):
        raise TypeError(f'defvjp needs the function to differentiate first, got {fn!r}')
    if vjp_rule is None and jvp_rule is None:
        def decorate(rule):
            _register(registry.defvjp, fn, rule, argnum)
            return rule
        return decorate
    if vjp_rule is not None:
        _register(registry.defvjp, fn, vjp_rule, argnum)
    if jvp_rule is not None:
        _register(registry.defjvp, fn, jvp_rule, argnum)
    return fn


def defjvp(fn, jvp_rule: Rules = None, *, argnum: int = 0):
    """Give `fn` a forward rule; without `jvp_rule`, a decorator."""
    if jvp_rule is None:
        def decorate(rule):
            _register(registry.defjvp, fn, rule, argnum)
            return rule
        return decorate
    _register(registry.defjvp, fn, jvp_rule, argnum)
    return fn
