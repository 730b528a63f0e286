"""The mutation fuzzer from the command line (`make fuzz SEED=0 COUNT=2000`).

    python -m tests.fuzz.run --seed S --count N [--minutes M] [--out DIR] [--shrink K]
    python -m tests.fuzz.run --seed S --index I          # one program, printed with its outcome

Program I of seed S is `generator.seeded(S, I)`, so a run and
each of its programs reproduce exactly. Prints the counts per class, the
refusal rate and where refusals and failures come from; writes each wrong or
crashing program as a runnable reproducer into DIR (the first K of them also
shrunk, as `...-min.py`); exits 1 if any program was wrong or crashed.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time

from .generator import seeded
from .oracle import Loader, check
from .report import Tally, write_reproducer
from .shrink import shrink_failure


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.fuzz.run', description=__doc__.split('\n')[0])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--count', type=int, default=2000)
    parser.add_argument('--out', default='build/fuzz', help='where failing programs go (default %(default)s)')
    parser.add_argument('--shrink', type=int, default=10, metavar='K',
                        help='shrink the first K failures (default %(default)s; 0: none)')
    parser.add_argument('--refused', type=int, default=0, metavar='K',
                        help='also write the first K refused programs (refused-SEED-INDEX.py)')
    parser.add_argument('--index', type=int, help='run only this program of the seed and print it')
    parser.add_argument('--minutes', type=float, default=None,
                        help='stop after this long (the programs run so far are reported)')
    parser.add_argument('--weights', default='', metavar='NAME=W,...',
                        help='override construct weights, e.g. view=0,closure=5')
    return parser.parse_args(argv)


def weights_of(text):
    pairs = [item.split('=') for item in text.split(',') if item]
    return {name.strip(): float(weight) for name, weight in pairs}


def main(argv=None) -> int:
    options = parse(argv)
    weights = weights_of(options.weights)
    with tempfile.TemporaryDirectory(prefix='tapeflow-fuzz-') as directory:
        loader = Loader(directory)
        if options.index is not None:
            program = seeded(options.seed, options.index, weights)
            outcome = check(program, loader)
            print(outcome.report(program))
            failed = outcome.kind in ('wrong', 'crash')
            if failed and options.shrink:
                print('shrunk:\n' + (lambda p, o: o.report(p))(*shrink_failure(program, outcome, loader, weights)))
            return int(failed)
        return fuzz(options, weights, loader)


def fuzz(options, weights, loader) -> int:
    tally, shrunk, written = Tally(), 0, []
    start = time.perf_counter()
    ran = 0
    for index in range(options.count):
        if options.minutes is not None and time.perf_counter() - start > 60 * options.minutes:
            break
        ran = index + 1
        program = seeded(options.seed, index, weights)
        outcome = check(program, loader)
        tally.add(program, outcome)
        if outcome.kind == 'refused' and tally.classes['refused'] <= options.refused:
            write_reproducer(options.out, f'refused-{options.seed}-{index}', program, outcome)
        if outcome.kind in ('wrong', 'crash'):
            stem = f'{outcome.kind}-{options.seed}-{index}'
            written.append(write_reproducer(options.out, stem, program, outcome))
            if shrunk < options.shrink:
                shrunk += 1
                small, small_outcome = shrink_failure(program, outcome, loader, weights)
                written.append(write_reproducer(options.out, stem + '-min', small, small_outcome))
        if (index + 1) % 1000 == 0:
            print(f'... {index + 1} programs, {tally.failures} failures', file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    print(f'tapeflow mutation fuzz: seed {options.seed}, {ran} programs in {elapsed:.1f} s '
          f'({60 * ran / max(elapsed, 1e-9):.0f} per minute)')
    print(tally.summary())
    if written:
        print(f'wrote {len(written)} reproducers of wrong or crashing programs to {options.out}/')
    return int(tally.failures > 0)


if __name__ == '__main__':
    sys.exit(main())
