"""The fuzzer's programs on Dask arrays and on the CuPy stand-in (`tests/fuzz/libraries.py`
says what is checked): the library's plain value and the right gradient, or a refusal
located at a line of the program, never another number and never a crash.

Deterministic: the first programs of `python -m tests.fuzz.libraries --library L --seed 0`.
Thousands more: `python -m tests.fuzz.libraries --library dask --seed 0 --count 2000`.
"""
import pytest

from tests.fuzz.libraries import run

PROGRAMS = {'duck': 120, 'dask': 60}


@pytest.mark.parametrize('library', sorted(PROGRAMS))
def test_library_fuzz(library, tmp_path):
    tally, failures = run(library, 0, PROGRAMS[library], str(tmp_path))
    assert not failures, [(index, kind, reason) for index, kind, reason, _ in failures[:3]]
    assert tally['ok'] >= PROGRAMS[library] // 4, tally     # most programs get through
