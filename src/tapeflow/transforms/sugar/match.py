"""Desugar, `match` statements: the subject evaluated once into a name, each case a test
of it and the captures it binds, the cases an `if`/`elif` chain:

    match p:                              _subject = p
        case [x, 0.0]:                    if _is_sequence(_subject) and len(_subject) == 2
            B1                                    and _subject[1] == 0.0:
        case float(v) if v > 1.0:
            B2                                x = _subject[0]
        case _:                               B1
            B3                            else:
                                              _matched = False
                                              if isinstance(_subject, float):
                                                  v = _subject
                                                  _matched = v > 1.0
                                              if _matched:
                                                  B2
                                              else:
                                                  B3

Python's semantics: a value pattern compares with `==`, `None`/`True`/`False` with `is`;
a sequence pattern matches what CPython's match calls a sequence (its type's sequence
flag: a `collections.abc.Sequence`, and NumPy 2.5's ndarray, not earlier NumPy's) that is
no string, bytes or bytearray (`rules.objects.matches_sequence`), of its length, item by
item (`*rest` binds a list); a
mapping pattern a `collections.abc.Mapping` holding its keys; a class pattern an instance
(`float(v)`: the value itself, for the builtins that match themselves); `|` any
alternative; captures are bound once the pattern matched, before its guard. Refused,
located: alternatives that bind names, a mapping's `**rest`, a class pattern's
sub-patterns but for the builtins'. Runs first in desugar, before loop `else` blocks
and `:=` are lowered (a guard's `:=` is lowered with them).
"""
from __future__ import annotations

import collections.abc

from tapeflow.rules import objects
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno

# The builtins whose class pattern's one positional sub-pattern matches the value itself.
_SELF_MATCHING = frozenset({bool, bytearray, bytes, dict, float, frozenset, int, list, set,
                            str, tuple})


def lower_match(node, namer, source, bindings):
    """`node` (a function, its nested defs too) with its `match` statements as `if`s."""
    matches = [n for n in nodes.walk(node) if type(n).__name__ == 'Match']
    if not matches:
        return
    for n in nodes.walk(node):
        name = getattr(n, 'name', None) if type(n).__name__ in ('MatchAs', 'MatchStar') \
            else getattr(n, 'rest', None) if type(n).__name__ == 'MatchMapping' else None
        if isinstance(name, str):
            namer.reserve(name)
    lowering = _Lowering(namer, source, bindings if bindings is not None else _Scratch())
    node.body = lowering.block(node.body)


class _Scratch:
    computed: dict = {}


class _Lowering:
    def __init__(self, namer, source, bindings):
        self.namer, self.source, self.bindings = namer, source, bindings
        self.refs = {}

    def refuse(self, node, what, instead):
        raise self.source.error(node, f'{what} in a match statement is not supported; '
                                      f'{instead}')

    def ref(self, value, base):
        """A name resolved to `value`, bound in generated code (`Bindings.computed`)."""
        if base not in self.refs:
            self.refs[base] = self.namer.new(base)
            self.bindings.computed[self.refs[base]] = value
        made = nodes.name(self.refs[base])
        setanno(made, Key.RESOLVED, value)
        return made

    def block(self, stmts):
        out = []
        for stmt in stmts:
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, self.block(inner))
            for handler in getattr(stmt, 'handlers', None) or ():
                handler.body = self.block(handler.body)
            if type(stmt).__name__ == 'Match':
                out.extend(nodes.located(self.match(stmt), stmt))
            else:
                out.append(stmt)
        return out

    def match(self, stmt):
        subject = self.namer.new('_subject')
        for case in stmt.cases:
            case.body = self.block(case.body)
        return [nodes.assign(subject, stmt.subject)] + self.chain(stmt.cases, subject)

    def chain(self, cases, subject):
        if not cases:
            return []
        case, rest = cases[0], cases[1:]
        tests, binds = self.pattern(case.pattern, nodes.name(subject))
        binds = [nodes.located(nodes.assign(name, value), case.body[0])
                 for name, value in binds]
        test = _all_of(tests) if tests else None
        if case.guard is None:
            if test is None:
                return binds + case.body
            return [nodes.if_(test, binds + case.body, self.chain(rest, subject))]
        if test is None:
            return binds + [nodes.if_(case.guard, case.body, self.chain(rest, subject))]
        matched = self.namer.new('_matched')
        return [nodes.assign(matched, False),
                nodes.if_(test, binds + [nodes.assign(matched, case.guard)]),
                nodes.if_(nodes.name(matched), case.body, self.chain(rest, subject))]

    # ------------------------------------------------------------------ patterns

    def pattern(self, p, subject):
        """(tests, captures): the tests, in the order Python makes them, that `subject`
        (an expression of the subject's name) matches `p`; the (name, value) it binds."""
        kind = type(p).__name__
        if kind == 'MatchValue':
            return [nodes.compare(subject, ast.Eq(), nodes.clone(p.value))], []
        if kind == 'MatchSingleton':
            return [nodes.compare(subject, ast.Is(), nodes.const(p.value))], []
        if kind == 'MatchAs':
            tests, binds = ([], []) if p.pattern is None else self.pattern(p.pattern, subject)
            return tests, binds + ([(p.name, nodes.clone(subject))] if p.name else [])
        if kind == 'MatchOr':
            return self.alternatives(p, subject)
        if kind == 'MatchSequence':
            return self.sequence(p, subject)
        if kind == 'MatchMapping':
            return self.mapping(p, subject)
        if kind == 'MatchClass':
            return self.class_(p, subject)
        self.refuse(p, f'the pattern {kind}', 'test the value with if/elif')

    def alternatives(self, p, subject):
        tests = []
        for alternative in p.patterns:
            alt_tests, binds = self.pattern(alternative, subject)
            if binds:
                self.refuse(alternative, 'an alternative (|) that binds names',
                            'write a case for each alternative')
            if not alt_tests:            # irrefutable: the whole pattern is
                return [], []
            tests.append(_all_of(alt_tests))
        return [nodes.any_of(tests)], []

    def sequence(self, p, subject):
        stars = [k for k, sub in enumerate(p.patterns) if type(sub).__name__ == 'MatchStar']
        count = len(p.patterns)
        tests = [nodes.call(self.ref(objects.matches_sequence, '_is_sequence'), subject)]
        length = nodes.call(nodes.builtin('len'), nodes.clone(subject))
        if stars:
            tests.append(nodes.compare(length, ast.GtE(), nodes.const(count - 1)))
        else:
            tests.append(nodes.compare(length, ast.Eq(), nodes.const(count)))
        binds = []
        star = stars[0] if stars else count
        for k, sub in enumerate(p.patterns):
            if k == star:
                if sub.name is not None:
                    after = count - 1 - star
                    part = nodes.slice_(nodes.const(star), nodes.const(-after) if after else None)
                    binds.append((sub.name, nodes.call(nodes.builtin('list'), nodes.subscript(
                        nodes.clone(subject), part))))
                continue
            index = k if k < star else k - count
            sub_tests, sub_binds = self.pattern(sub, nodes.subscript(nodes.clone(subject),
                                                                     nodes.const(index)))
            tests += sub_tests
            binds += sub_binds
        return tests, binds

    def mapping(self, p, subject):
        if p.rest is not None:
            self.refuse(p, 'a mapping pattern with **' + p.rest,
                        'match the keys and build the rest in the body')
        tests = [nodes.call(nodes.builtin('isinstance'), subject,
                            self.ref(collections.abc.Mapping, '_Mapping'))]
        tests += [nodes.compare(nodes.clone(key), ast.In(), nodes.clone(subject))
                  for key in p.keys]
        binds = []
        for key, sub in zip(p.keys, p.patterns):
            sub_tests, sub_binds = self.pattern(sub, nodes.subscript(nodes.clone(subject),
                                                                     nodes.clone(key)))
            tests += sub_tests
            binds += sub_binds
        return tests, binds

    def class_(self, p, subject):
        cls = getanno(p.cls, Key.RESOLVED)
        if not isinstance(cls, type):
            self.refuse(p.cls, 'a class pattern whose class is not known when compiling',
                        'test isinstance(value, cls) with if/elif')
        tests = [nodes.call(nodes.builtin('isinstance'), subject, nodes.clone(p.cls))]
        if p.kwd_patterns or len(p.patterns) > 1 or \
                (p.patterns and cls not in _SELF_MATCHING):
            self.refuse(p, f'a class pattern with attribute sub-patterns ({cls.__name__}(...))',
                        f'write case {cls.__name__}() and read the attributes in its body')
        if not p.patterns:
            return tests, []
        sub_tests, binds = self.pattern(p.patterns[0], subject)
        return tests + sub_tests, binds


def _all_of(tests):
    return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=list(tests))

