"""The fuzzer's programs under `compile='numba'`: the oracle's checks, the same.

    python -m tests.fuzz.native --seed S --count N

Each program goes through `oracle.check` with `tf.value_and_grad(..., compile='numba')`:
its value against the plain call, its gradient against central differences, or a
refusal located in the program. The generator's helpers (`square_plus_one`,
`add_into`, ...) exercise `transforms.native_calls`; most of its array programs
(views, in-place writes) are refused, at their line. Needs Numba.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile

import tapeflow as tf
from tests.fuzz.generator import seeded
from tests.fuzz.libraries import report
from tests.fuzz.oracle import Loader, check


def native_value_and_grad(f, argnums):
    return tf.value_and_grad(f, argnums, compile='numba')


def run(seed, count, directory):
    tally, failures = collections.Counter(), []
    loader = Loader(directory)
    for index in range(count):
        program = seeded(seed, index, {})
        outcome = check(program, loader, native_value_and_grad)
        tally[outcome.kind] += 1
        if outcome.kind in ('wrong', 'crash'):
            failures.append((index, outcome.kind, outcome.reason, program))
    return tally, failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tests.fuzz.native',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--count', type=int, default=300)
    parser.add_argument('--show', type=int, default=5, help='failures printed, wrong ones first')
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='tapeflow-fuzz-native-') as directory:
        tally, failures = run(options.seed, options.count, directory)
    return report(f"tapeflow fuzz with compile='numba': seed {options.seed}, {options.count} programs",
                  tally, failures, options.show)


if __name__ == '__main__':
    sys.exit(main())
