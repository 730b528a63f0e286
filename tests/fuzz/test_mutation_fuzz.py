"""Generated programs full of aliases, views and in-place writes: each one must get
the plain call's value and the right gradient (central differences), or a refusal
located at a line of its file (`tests/fuzz/oracle.py` says exactly what is checked).

Both tests are deterministic. The Hypothesis one shrinks a failure to a small
program; the seeded one runs the first programs of
`python -m tests.fuzz.run --seed 0 --weights <MUTATION_ONLY>` (rerun one with
`--index I`). Both keep to the grammar of aliases and in-place writes
(`grammar.MUTATION_ONLY`) and to reverse mode (`modes=False`: the time they took);
the Python of issue 29 (calls resolved at run time, containers as values), forward
mode and second order have their own test, `test_python_fuzz.py`. Thousands of
programs of the whole grammar, in all modes: `make fuzz SEED=0 COUNT=20000`.
"""
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.generator import programs, seeded
from tests.fuzz.grammar import MUTATION_ONLY
from tests.fuzz.oracle import Loader, check
from tests.fuzz.shrink import shrink_failure

HYPOTHESIS_PROGRAMS = 200
SEEDED_PROGRAMS = 200
PASSING = ('ok', 'refused', 'discarded')


@pytest.fixture(scope='module')
def loader(tmp_path_factory):
    return Loader(str(tmp_path_factory.mktemp('fuzz')))


@settings(max_examples=HYPOTHESIS_PROGRAMS, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck), print_blob=False,
          phases=(Phase.explicit, Phase.generate, Phase.shrink))
@given(program=programs(MUTATION_ONLY))
def test_hypothesis_programs_are_exact_or_refused(loader, program):
    outcome = check(program, loader, modes=False)
    assert outcome.kind in PASSING, outcome.report(program)


def test_seeded_programs_are_exact_or_refused(loader):
    failures = []
    for index in range(SEEDED_PROGRAMS):
        program = seeded(0, index, MUTATION_ONLY)
        outcome = check(program, loader, modes=False)
        if outcome.kind not in PASSING:
            failures.append((index, program, outcome))
    if failures:
        index, program, outcome = failures[0]
        small, small_outcome = shrink_failure(program, outcome, loader, MUTATION_ONLY, budget=150)
        pytest.fail(f'{len(failures)} of {SEEDED_PROGRAMS} programs are wrong or crash: seed 0, index '
                    f'{", ".join(str(i) for i, _, _ in failures)}. Index {index}, shrunk:\n'
                    + small_outcome.report(small), pytrace=False)
