"""W8 before and after `transforms.native_loops`, in one process.

    .venv/bin/python benchmarks/native_loops_ab.py

`compile='numba'` with its array statements as loops (after) and without them
(before: `native_loops.lower` a no-op while that one compiles), beside the plain
function: first calls, then interleaved rounds, process CPU time, the minimum per
call. The two gradients are compared bit for bit. Not a test: it prints figures.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import w8_gravity as w  # noqa: E402


def main(rounds=15):
    tf = harness.import_tapeflow()
    import numba  # noqa: F401  (its import is no compile time)
    from tapeflow.transforms import native_loops
    after = tf.value_and_grad(w.gravity, (0, 1), compile='numba')
    start = time.perf_counter()
    value, grads = after(*w.ARGS)
    first_after = time.perf_counter() - start
    lower, native_loops.lower = native_loops.lower, lambda fdef, ctx, tapes=(): None
    try:                # (wrt in the other order: another key, compiled afresh)
        before = tf.value_and_grad(w.gravity, (1, 0), compile='numba')
        start = time.perf_counter()
        old_value, old_grads = before(*w.ARGS)
        first_before = time.perf_counter() - start
    finally:
        native_loops.lower = lower
    same = value == old_value and all(np.array_equal(a, b) for a, b in
                                      zip(grads, old_grads[::-1]))
    calls = {'plain': lambda: w.gravity(*w.ARGS), 'before': lambda: before(*w.ARGS),
             'after': lambda: after(*w.ARGS)}
    best = dict.fromkeys(calls, float('inf'))
    for _ in range(rounds):
        for key, call in calls.items():
            start = time.process_time()
            call()
            best[key] = min(best[key], time.process_time() - start)
    print(f'W8 ({w.TITLE}), one process:')
    print(f"  plain {best['plain'] * 1e3:.2f} ms; compile='numba' before "
          f"{best['before'] * 1e3:.2f} ms ({best['before'] / best['plain']:.2f}x), after "
          f"{best['after'] * 1e3:.2f} ms ({best['after'] / best['plain']:.2f}x)")
    print(f'  first call: after {first_after:.2f} s, before {first_before:.2f} s '
          f'(compiled second: the twins both use were compiled by then)')
    print(f'  value and gradients bit-identical: {same}')


if __name__ == '__main__':
    main()
