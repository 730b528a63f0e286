"""The fuzzer's programs on other array libraries: Dask, CuPy and the CuPy stand-in.

    python -m tests.fuzz.libraries --library dask|cupy|duck --seed S --count N

(`cupy` needs CuPy and a CUDA GPU; `duck` is tests/duck_gpu.py's stand-in for it.)

Each program is first checked on NumPy (`oracle.check`: its gradient against
central differences). A program that is `ok` there runs again, plain and through
`tf.value_and_grad`, with its float arrays converted to the library:

- where the plain call fails on the library (a NumPy constant meets a CuPy
  array, a Dask reshape it cannot do), the program is discarded;
- where it returns NumPy's value, tapeflow must return that value and NumPy's
  gradients (to rounding), or refuse with an error located in the program;
- where it returns another value (the library means something else by the code:
  `x /= c` makes a new Dask array, where NumPy writes into x), tapeflow must
  return that value and a gradient that agrees with central differences of the
  plain function on the library, or refuse, located.

Anything else is `wrong` (a different number) or `crash` (an exception not
located in the program: tapeflow made an array the library refuses).
"""
from __future__ import annotations

import argparse
import collections
import copy
import sys
import tempfile
import warnings

import numpy as np

import tapeflow as tf
from tests.duck_gpu import DuckArray
from tests.fuzz.generator import seeded
from tests.fuzz.oracle import Loader, check, close, numeric_central, refusal, summary
from tests.gradcheck import inner, random_direction

TOLERANCE = 1e-9


def to_dask(a):
    import dask.array as da
    return da.from_array(a, chunks=tuple(max(1, s // 2) for s in a.shape))


def to_cupy(a):
    import cupy
    return cupy.asarray(a)


LIBRARIES = {'cupy': to_cupy, 'dask': to_dask, 'duck': DuckArray}


def convert(value, to):
    if isinstance(value, np.ndarray) and value.dtype.kind == 'f':
        return to(value)
    if isinstance(value, list):
        return [convert(v, to) for v in value]
    return value


def host(value):
    if isinstance(value, DuckArray) or type(value).__module__.startswith('cupy'):
        return value.get()
    if hasattr(value, 'compute'):
        return value.compute()
    if isinstance(value, (list, tuple)):
        return type(value)(host(v) for v in value)
    return value


def same(a, b) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) \
            and all(same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE)


def classify(program, loader, library) -> tuple:
    """(kind, reason): ok, refused, discarded, wrong or crash (see the module docstring)."""
    numpy_outcome = check(program, loader, modes=False)
    if numpy_outcome.kind != 'ok':
        return 'discarded', f'on NumPy: {numpy_outcome.kind}'
    module, path = loader.load(program)
    to = LIBRARIES[library]

    def plain(*numpy_args):         # the plain function on the library, as a float
        return float(host(module.f(*[convert(a, to) for a in copy.deepcopy(numpy_args)])))

    try:
        numpy_args = program.args()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            try:
                value_plain = plain(*numpy_args)
            except Exception as error:  # noqa: BLE001 -- the library's own limits
                return 'discarded', f'plain call on {library} raised {summary(error)}'
            try:
                args = [convert(a, to) for a in copy.deepcopy(numpy_args)]
                value, grads = tf.value_and_grad(module.f, argnums=program.wrt)(*args)
            except tf.UnsupportedError as error:
                outcome = refusal(program, path, error, value_plain)
                return outcome.kind, outcome.reason
            except Exception as error:  # noqa: BLE001
                return 'crash', summary(error) + _tapeflow_frame(error)
            if not np.isclose(float(host(value)), value_plain, rtol=1e-10, atol=1e-10):
                return 'wrong', f'value {host(value)!r} differs from the plain call\'s {value_plain!r}'
            if np.isclose(value_plain, numpy_outcome.plain, rtol=1e-10, atol=1e-10):
                if not same(host(grads), numpy_outcome.grads):   # NumPy's meaning: its gradient
                    return 'wrong', f'gradients {host(grads)!r} differ from NumPy\'s {numpy_outcome.grads!r}'
                return 'ok', ''
            return derivative_check(plain, numpy_args, program, host(grads), value_plain)
    finally:
        loader.unload(module)


def _tapeflow_frame(error) -> str:
    """Where in tapeflow's own code the error was raised, if there."""
    import traceback
    frames = [f for f in traceback.extract_tb(error.__traceback__) if '/tapeflow/' in f.filename]
    return f' [in {frames[-1].name}, {frames[-1].filename.rsplit("/", 2)[-1]}:{frames[-1].lineno}]' \
        if frames else ''


def derivative_check(plain, args, program, grads, value):
    """Where the code means another value on the library: its gradient against central
    differences of the plain function on the library."""
    rng = np.random.default_rng(program.value_seed + 1)
    atol = 1e-7 * max(1.0, abs(value))
    for k in range(2):
        directions = [random_direction(args[i], rng) for i in program.wrt]
        analytic = sum(inner(g, d) for g, d in zip(grads, directions))
        numeric = [numeric_central(plain, args, program.wrt, directions, h) for h in (1e-5, 1e-6)]
        if any(v is None for v in numeric) or not close(numeric[0], numeric[1], atol):
            return 'discarded', 'not smooth here'
        if not close(analytic, numeric[0], atol):
            return 'wrong', (f'the code means another value on this library, and its directional '
                             f'derivative {analytic!r} differs from central differences {numeric[0]!r}')
    return 'ok', ''


def run(library, seed, count, directory):
    tally, failures = collections.Counter(), []
    loader = Loader(directory)
    for index in range(count):
        program = seeded(seed, index, {})
        kind, reason = classify(program, loader, library)
        tally[kind] += 1
        if kind in ('wrong', 'crash'):
            failures.append((index, kind, reason, program))
    return tally, failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tests.fuzz.libraries',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--library', choices=sorted(LIBRARIES), default='dask')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--count', type=int, default=500)
    parser.add_argument('--show', type=int, default=5, help='failures printed, wrong ones first')
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='tapeflow-fuzz-') as directory:
        tally, failures = run(options.library, options.seed, options.count, directory)
    return report(f'tapeflow fuzz on {options.library}: seed {options.seed}, {options.count} programs',
                  tally, failures, options.show)


def report(title, tally, failures, show) -> int:
    """The tally, then up to `show` failures (wrong ones first); the exit status."""
    print(f'{title}: ' + ', '.join(f'{k} {tally[k]}' for k in ('ok', 'refused', 'discarded', 'wrong', 'crash')))
    failures.sort(key=lambda failure: failure[1] != 'wrong')
    for index, kind, reason, program in failures[:show]:
        print(f'--- {kind} (index {index}): {reason}\n{program}')
    return int(bool(failures))


if __name__ == '__main__':
    sys.exit(main())
