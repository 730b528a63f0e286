"""Shrinking a failing program found from a seed, by replaying smaller choice records.

A program is a function of its record of choices (`choices.ReplayChoices`),
and smaller records make smaller programs: fewer choices, and choices
nearer 0 (the first row of each table). `shrink` deletes whole statements,
then runs of choices, then lowers single choices, keeping every candidate that still fails the
same way, until a round helps no more or the budget of tries is spent.
"""
from __future__ import annotations

import re

from .choices import ReplayChoices
from .generator import generate
from .oracle import check


def shrink(record, still_fails, budget=400, spans=()):
    """The smallest record found for which `still_fails(candidate)` holds.

    `still_fails` returns (record, spans) of the replay (a candidate is
    normalised by replaying it) when the program still fails, else None;
    `spans` are the (start, end) of the choices of each statement.
    """
    search = Search(record, spans, still_fails, budget)
    improved = True
    while improved and search.tries < budget:
        improved = search.delete_statements() | search.delete_runs() | search.lower_choices()
    return search.best


class Search:
    """The best record so far, and the tries left to improve it."""

    def __init__(self, record, spans, still_fails, budget):
        self.best, self.spans, self.still_fails = list(record), list(spans), still_fails
        self.tries, self.budget = 0, budget

    def attempt(self, candidate) -> bool:
        if self.tries >= self.budget:
            return False
        self.tries += 1
        replayed = self.still_fails(candidate)
        if replayed is not None and key(replayed[0]) < key(self.best):
            self.best, self.spans = list(replayed[0]), list(replayed[1])
            return True
        return False

    def delete_statements(self) -> bool:
        """Delete whole statements, the longest first."""
        improved, k = False, 0
        while k < len(self.spans) and self.tries < self.budget:
            start, end = sorted(self.spans, key=lambda span: span[0] - span[1])[k]
            if self.attempt(self.best[:start] + self.best[end:]):
                improved, k = True, 0
            else:
                k += 1
        return improved

    def delete_runs(self) -> bool:
        """Delete runs of choices, long runs first, from the end (a success stays in place)."""
        improved = False
        for size in (32, 16, 8, 4, 2, 1):
            start = len(self.best) - size
            while start >= 0 and self.tries < self.budget:
                if self.attempt(self.best[:start] + self.best[start + size:]):
                    improved = True
                    start = min(start, len(self.best) - size)
                else:
                    start -= max(1, size // 2)
        return improved

    def lower_choices(self) -> bool:
        """Lower single choices: to 0, else to half, else by one."""
        improved = False
        for i in range(len(self.best)):
            for lower in (lambda v: 0, lambda v: v // 2, lambda v: v - 1):
                if i < len(self.best) and lower(self.best[i]) < self.best[i] and self.attempt(
                        self.best[:i] + [lower(self.best[i])] + self.best[i + 1:]):
                    improved = True
                    break
        return improved


def key(record):
    return len(record), record


def shrink_failure(program, outcome, loader, weights=None, budget=400):
    """(program, outcome): the smallest program found that fails as `outcome` did."""
    found = {}

    def still_fails(record):
        replay = ReplayChoices(record)
        candidate = generate(replay, weights)
        result = check(candidate, loader)
        if same_failure(result, outcome):
            found[tuple(replay.record)] = (candidate, result)
            return replay.record, replay.spans
        return None

    best = shrink(program.record, still_fails, budget, program.spans)
    return found.get(tuple(best), (program, outcome))


def same_failure(result, outcome) -> bool:
    """Same class; for crashes, the same exception and the same start of its message (its
    locations, numbers and the tail saying where tapeflow raised it left out)."""
    if result.kind != outcome.kind:
        return False
    return result.kind != 'crash' or crash_key(result.reason) == crash_key(outcome.reason)


def crash_key(reason) -> str:
    """'TypeError: f.py:9:5: op1() takes ...' -> 'TypeError: op#() takes ...', 60 characters."""
    text = re.sub(r'(<[^>]*>|\S+):\d+:\d+: ', '', reason.split(' (at ')[0])
    return re.sub(r'\d+', '#', text)[:60]
