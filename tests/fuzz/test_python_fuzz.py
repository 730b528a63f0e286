"""The fuzzer's programs written in the Python of issue 29: functions taken from lists
and dicts, methods of objects calling `self`, closures, partials, star-calls,
generators, dicts and tuples as values, loops over what they lengthen or bind again,
`del` (`dynamic.py`, `containers.py`), mixed with the aliases and in-place writes of
the rest of the grammar. Each program must get the plain call's value and the right
gradient, and where the program draws them forward mode and second order
(`oracle.py`), or a refusal located in the program: never a wrong number, never a crash.

Deterministic: the first programs of
`python -m tests.fuzz.run --seed 29 --weights <WEIGHTS>`. Thousands more, the whole
grammar: `make fuzz SEED=1 COUNT=2000`.
"""
import collections

import pytest

from tests.fuzz import grammar
from tests.fuzz.generator import seeded
from tests.fuzz.oracle import Loader, check
from tests.fuzz.shrink import shrink_failure

SEED, PROGRAMS = 29, 60
# issue 29's constructs drawn three times as often as the rest of the grammar
WEIGHTS = {c.name: 3 * c.weight for c in grammar.CONSTRUCTS if c.name in grammar.ISSUE_29}
PASSING = ('ok', 'refused', 'discarded')


@pytest.fixture(scope='module')
def loader(tmp_path_factory):
    return Loader(str(tmp_path_factory.mktemp('python-fuzz')))


def test_every_construct_of_issue_29_is_written():
    used, checks = collections.Counter(), collections.Counter()
    for index in range(150):
        program = seeded(SEED, index, WEIGHTS)
        used.update(program.used)
        checks[program.checks] += 1
    assert set(grammar.ISSUE_29) <= set(used), set(grammar.ISSUE_29) - set(used)
    assert set(checks) == {'reverse', 'forward', 'second'}


def test_issue_29_programs_are_exact_or_refused(loader):
    outcomes, failures = collections.Counter(), []
    for index in range(PROGRAMS):
        program = seeded(SEED, index, WEIGHTS)
        outcome = check(program, loader)
        outcomes[outcome.kind] += 1
        for mode, (kind, _) in outcome.modes.items():
            outcomes[f'{mode} {kind}'] += 1
        if outcome.kind not in PASSING:
            failures.append((index, program, outcome))
    if failures:
        index, program, outcome = failures[0]
        small, small_outcome = shrink_failure(program, outcome, loader, WEIGHTS, budget=100)
        pytest.fail(f'{len(failures)} of {PROGRAMS} programs are wrong or crash: seed {SEED}, index '
                    f'{", ".join(str(i) for i, _, _ in failures)}. Index {index}, shrunk:\n'
                    + small_outcome.report(small), pytrace=False)
    assert outcomes['ok'] >= PROGRAMS // 2, outcomes
    assert outcomes['forward ok'] and outcomes['second ok'], outcomes


# The fuzzer's findings, shrunk and written by hand, are regression tests beside what they
# found: tests/python/test_generator_exactness.py, test_found_exactness.py,
# test_second_order_containers.py, test_sequences.py.
