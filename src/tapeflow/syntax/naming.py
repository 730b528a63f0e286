"""Fresh, readable names: `bx` is the adjoint of `x`, `dx` its tangent.

A `Namer` knows every name of the function it serves and never hands out one
of them twice.
"""
from __future__ import annotations

import keyword
import re

import gast

from tapeflow.syntax import nodes


class Namer:
    def __init__(self, taken=()):
        self.taken = set(taken)
        self.made = set()           # the names `new` gave (the user never wrote them)
        self.shown = {}             # a name made for one of the user's: the user's, in messages

    @classmethod
    def for_function(cls, node) -> 'Namer':
        return cls(nodes.names_in(node) |
                   {n.name for n in nodes.walk_terms(node) if isinstance(n, gast.FunctionDef)})

    def new(self, base: str) -> str:
        """`base`, or `base2`, `base3`... whichever is free."""
        candidate, k = base, 1
        while candidate in self.taken:
            k += 1
            candidate = f'{base}{k}'
        self.taken.add(candidate)
        self.made.add(candidate)
        return candidate

    def reserve(self, name: str) -> str:
        self.taken.add(name)
        return name


class AdjointNames:
    """Adjoint (or tangent) names, one per primal name, stable within a function."""

    def __init__(self, namer: Namer, prefix: str = 'b'):
        self.namer, self.prefix, self.names = namer, prefix, {}

    def __getitem__(self, primal: str) -> str:
        if primal not in self.names:
            self.names[primal] = self.namer.new(self.prefix + primal.lstrip('_'))
        return self.names[primal]

    def __contains__(self, primal):
        return primal in self.names


def identifier(fn) -> str:
    """`fn.__name__` as a name generated code may use: a lambda's `<lambda>` is `lambda_`."""
    name = getattr(fn, '__name__', None) or 'f'
    if name == '<lambda>':
        return 'lambda_'
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    name = re.sub(r'\W', '_', name)
    return name if name.isidentifier() and not keyword.iskeyword(name) else f'f_{name}'
