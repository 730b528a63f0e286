"""Shrinking a failing program found from a seed, by replaying smaller choice records.

A program is a function of its record of choices (`choices.ReplayChoices`),
and smaller records make smaller programs: fewer choices, and choices
nearer 0 (the first row of each table). `shrink` tries deleting runs of
choices, then lowering single choices, keeping every candidate that still
fails the same way, until nothing helps or the budget of tries is spent.
"""
from __future__ import annotations

from .choices import ReplayChoices
from .generator import generate
from .oracle import check


def shrink(record, still_fails, budget=400):
    """The smallest record found for which `still_fails(candidate)` holds.

    `still_fails` returns the record the replay actually used (a candidate is
    normalised by replaying it) when the program still fails, else None.
    """
    best = list(record)
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for candidate in candidates(best):
            if tries >= budget:
                break
            tries += 1
            used = still_fails(candidate)
            if used is not None and key(used) < key(best):
                best, improved = used, True
                break
    return best


def key(record):
    return len(record), record


def candidates(record):
    """Smaller records: runs deleted (long runs first), then single choices lowered."""
    n = len(record)
    for size in (32, 16, 8, 4, 2, 1):
        for start in range(n - size, -1, -max(1, size // 2)):
            yield record[:start] + record[start + size:]
    for i in range(n):
        if record[i] > 0:
            yield record[:i] + [0] + record[i + 1:]
    for i in range(n):
        if record[i] > 1:
            yield record[:i] + [record[i] // 2] + record[i + 1:]
            yield record[:i] + [record[i] - 1] + record[i + 1:]


def shrink_failure(program, outcome, loader, weights=None, budget=400):
    """(program, outcome): the smallest program found that fails as `outcome` did."""
    found = {}

    def still_fails(record):
        replay = ReplayChoices(record)
        candidate = generate(replay, weights)
        result = check(candidate, loader)
        if same_failure(result, outcome):
            found[tuple(replay.record)] = (candidate, result)
            return replay.record
        return None

    best = shrink(program.record, still_fails, budget)
    return found.get(tuple(best), (program, outcome))


def same_failure(result, outcome) -> bool:
    """Same class; for crashes, the same exception type."""
    if result.kind != outcome.kind:
        return False
    return result.kind != 'crash' or result.reason.split(':')[0] == outcome.reason.split(':')[0]
