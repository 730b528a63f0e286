"""Which calls compute a new value and change nothing: what `fusion` may move past and
into other statements, and what `terms` needs of a function whose names it reads as
multiples of others.

A call is pure when it is a `math` function, a NumPy ufunc without keywords (no
`out=`), a NumPy reduction over constant axes (`np.sum(x, axis=1)`: no `out`,
`where`, or third positional argument), or a helper of the generated module the
rules mark `__tapeflow_pure__` (`unbroadcast`, `grad_of_sum`...).
"""
from __future__ import annotations

import math

import numpy as np

from tapeflow.syntax import ast
from tapeflow.syntax import nodes

_ARITHMETIC = (ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.operator, ast.unaryop,
               ast.Load, ast.expr_context)
_REDUCTIONS = frozenset({'sum', 'mean', 'max', 'min', 'amax', 'amin', 'prod'})


def _constant(node) -> bool:
    """A literal, or a tuple of literals (`axis=(0, 1)`)."""
    return isinstance(node, ast.Constant) or isinstance(node, ast.Tuple) and all(
        isinstance(e, ast.Constant) for e in node.elts)


def pure_helpers(namespace, stores) -> set:
    """The names of the generated module's helpers marked `__tapeflow_pure__` that a
    function does not rebind (`stores`: its bindings of each name)."""
    return {name for name, value in (namespace or {}).items()
            if getattr(value, '__tapeflow_pure__', False) and not stores.get(name)}


class Calls:
    """What the calls of one function are. `push` and `pop`: the names of the tape's
    push and pop in it (calls that change no array the code reads); `helpers`: the pure
    helpers' names (`pure_helpers`); `modules`: the names that are `math` and `np`."""

    def __init__(self, push, pop, helpers, modules):
        self.push, self.pop, self.helpers, self.modules = push, pop, helpers, modules

    def harmless_call(self, value) -> bool:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
            value.func.id in self.push

    def is_pop(self, call) -> bool:
        return isinstance(call.func, ast.Name) and call.func.id in self.pop and not call.args

    def pure(self, value) -> bool:
        """Arithmetic on names and constants: no attribute (`_tape.pop` must stay bound
        to its name: generated code differentiated again finds its tape by it)."""
        functions, options = set(), set()
        for node in nodes.walk_terms(value):
            if id(node) in options:             # a constant keyword argument (`axis=1`)
                continue
            if isinstance(node, ast.Call):
                if not self.pure_call(node):
                    return False
                functions.add(id(node.func))
                options.update(id(n) for k in node.keywords for n in nodes.walk_terms(k))
            elif isinstance(node, ast.Attribute):
                if id(node) not in functions:
                    return False
            elif not isinstance(node, _ARITHMETIC):
                return False
        return True

    def pure_call(self, call) -> bool:
        """A call computing a new value from its arguments, changing none of them."""
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in self.helpers and not call.keywords
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in self.modules):
            return False
        if func.value.id == 'math':
            return callable(getattr(math, func.attr, None)) and not call.keywords
        if func.attr in _REDUCTIONS:    # over constant axes (no `out`, `where`, positional too)
            return len(call.args) <= 2 and all(k.arg in ('axis', 'keepdims') and _constant(k.value) for k in call.keywords)
        return isinstance(getattr(np, func.attr, None), np.ufunc) and not call.keywords


def writes_nothing(fdef: ast.FunctionDef, push=(), pop=(), namespace=None, **_) -> bool:
    """Whether `fdef` surely changes no array in place: it stores into no subscript or
    attribute, updates nothing with an augmented assignment, defines no function, and
    calls nothing but what is pure and the tape's push and pop (options as
    `fusion.transform`'s)."""
    _, stores = nodes.name_counts(fdef)
    calls = Calls(set(push), set(pop), pure_helpers(namespace, stores),
                  {m for m in ('math', 'np') if not stores.get(m)})
    for node in nodes.walk(fdef):
        kind = node.__class__
        if kind is ast.AugAssign or kind in (ast.Subscript, ast.Attribute) \
                and node.ctx.__class__ is not ast.Load:
            return False
        if kind is ast.Call and not (calls.pure_call(node) or calls.is_pop(node)
                                     or calls.harmless_call(node)):
            return False
        if kind in (ast.FunctionDef, ast.Lambda) and node is not fdef:
            return False
    return True
