"""W1 on the native path: `value_and_grad(compile='numba')` beside the NumPy path.

    .venv/bin/python benchmarks/native.py [--rounds N] [--wall]

Columns, each value and gradient of W1 (100 steps of `x = sin(x)*x + 0.5*x` on a
float) divided by the plain forward's time: the hand-written adjoint, tapeflow's
NumPy path (`compile='python'`), tapeflow on Numba (`compile='numba'`). Steady
state: every column is called once before timing; the rounds are interleaved and
each figure is the minimum over rounds of the per-call time (process CPU time
unless --wall). The first call of the native path is timed apart, in fresh
processes: with tapeflow's disk cache folder (TAPEFLOW_CACHE_DIR, where the native
module and Numba's machine code are kept) empty (compile) and filled (load), each
including `import tapeflow` and `import numba`. Not a test: it prints figures.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import import_tapeflow, now, set_clock  # noqa: E402
from w1_scalar_loop import scalar_loop, scalar_loop_adjoint  # noqa: E402

FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
t0 = time.perf_counter()
import tapeflow as tf
from w1_scalar_loop import scalar_loop
g = tf.value_and_grad(scalar_loop, compile='numba')
g(0.7)
print(time.perf_counter() - t0)
"""


def per_call(call, seconds=0.02):
    loops, total = 1, 0.0
    while True:
        t0 = now()
        for _ in range(loops):
            call()
        total = now() - t0
        if total >= seconds:
            return total / loops
        loops *= 4


def first_call(cache_dir):
    """Seconds of the first native call in a fresh process (import of tapeflow included)."""
    env = dict(os.environ, TAPEFLOW_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(os.path.dirname(
                   os.path.dirname(os.path.abspath(__file__))), 'src'),
                   os.environ.get('PYTHONPATH')])))
    code = FIRST_CALL.format(here=os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--wall', action='store_true')
    options = parser.parse_args(argv)
    set_clock('wall' if options.wall else 'cpu')
    tf = import_tapeflow()
    x = 0.7
    columns = {
        'forward': lambda: scalar_loop(x),
        'hand': lambda: scalar_loop_adjoint(x),
        'tf (NumPy path)': (lambda g: lambda: g(x))(tf.value_and_grad(scalar_loop)),
        'tf compile=numba': (lambda g: lambda: g(x))(
            tf.value_and_grad(scalar_loop, compile='numba')),
    }
    reference = columns['tf (NumPy path)']()
    for name, call in columns.items():      # steady state: every column has run once
        result = call()
        if name != 'forward':
            value, grad = result[0], result[1][0] if name == 'hand' else result[1]
            assert abs(value - reference[0]) <= 1e-12 * abs(reference[0]), name
            assert abs(grad - reference[1]) <= 1e-9 * abs(reference[1]) + 1e-300, name
    best = dict.fromkeys(columns, float('inf'))
    for _ in range(options.rounds):
        for name, call in columns.items():
            best[name] = min(best[name], per_call(call))
    clock = 'wall' if options.wall else 'CPU'
    print(f'W1, value and gradient ({clock} time, min over {options.rounds} interleaved rounds)')
    for name, seconds in best.items():
        print(f'  {name:18s} {seconds * 1e6:9.2f} us   {seconds / best["forward"]:6.2f}x forward')
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = first_call(cache_dir)
        warm = first_call(cache_dir)
    print('First call of compile=numba in a fresh process (import tapeflow and numba, compile):')
    print(f'  Numba cache empty   {cold * 1e3:8.0f} ms')
    print(f'  Numba cache filled  {warm * 1e3:8.0f} ms')


if __name__ == '__main__':
    main()
