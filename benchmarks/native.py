"""The native path (`compile='numba'`) on loop-heavy code: W1, W7 and W8.

    .venv/bin/python benchmarks/native.py [--quick] [--wall] [--no-external]

(`make bench` runs it too, through run.py.) Columns, each value and gradient
divided by the plain function's time: the hand-written NumPy adjoint, tapeflow's
NumPy path (`compile='python'`, the default), tapeflow on Numba
(`compile='numba'`), autograd on the same source, and JAX
(`jax.jit(jax.value_and_grad)`, compiled before timing):

    W1  100 steps of x = sin(x)*x + 0.5*x on a float (JAX: the same loop in
        `lax.fori_loop`)
    W7  implicit Euler, each step a Newton solve to a tolerance: a `while` whose
        trips depend on the data. JAX cannot reverse its `while_loop`: its column
        runs a fixed number of Newton iterations in `lax.fori_loop`
    W8  16-body gravity, 1000 steps on arrays of shape (16, 3) (JAX: `fori_loop`)

Steady state: every column is called once first; interleaved rounds, the minimum
per call. First calls (compilation) are listed apart: tapeflow with Numba (tapeflow
generates the gradient, Numba compiles it; Numba imported before) and JAX (tracing
and XLA). Not a test: it prints figures.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import w1_scalar_loop  # noqa: E402
import w7_implicit  # noqa: E402
import w8_gravity  # noqa: E402

COLUMNS = ('forward', 'hand', 'tapeflow', 'tapeflow+numba', 'autograd', 'jax')


def _w1_jax(x):
    """W1 for JAX: the loop in `lax.fori_loop` (`np` is jax.numpy here)."""
    from jax import lax
    return lax.fori_loop(0, 100, lambda i, x: np.sin(x) * x + 0.5 * x, x)


WORKLOADS = [  # key, title, function, hand-written adjoint, JAX's version, arguments, argnums
    ('W1', 'scalar loop, 100 x (sin(x)*x + 0.5*x), Python float', w1_scalar_loop.scalar_loop,
     w1_scalar_loop.scalar_loop_adjoint, _w1_jax, (0.7,), (0,)),
    ('W7', w7_implicit.TITLE, w7_implicit.implicit_euler, w7_implicit.implicit_euler_adjoint,
     w7_implicit.implicit_euler_jax, w7_implicit.ARGS, w7_implicit.ARGNUMS),
    ('W8', w8_gravity.TITLE, w8_gravity.gravity, w8_gravity.gravity_adjoint,
     w8_gravity.gravity_jax, w8_gravity.ARGS, w8_gravity.ARGNUMS),
]


def _tapeflow(fn, args, argnums, compile):
    tf = harness.import_tapeflow()
    if compile == 'numba':
        try:
            import numba  # noqa: F401
        except ImportError:
            raise harness.Unavailable("numba is not installed (pip install 'tapeflow[numba]')")
    vg = tf.value_and_grad(fn, argnums if len(argnums) > 1 else argnums[0], compile=compile)

    def call():
        value, grads = vg(*args)
        return value, grads if len(argnums) > 1 else (grads,)
    return harness.with_raw(call, vg, args)


def row(key, title, fn, hand, jax_fn, args, argnums, settings, log=print):
    """One workload's cells, built, checked against the hand-written adjoint and
    timed. The key is 'native W1' and so on (run.py's W-rows are its own table)."""
    out = harness.Row(f'native {key}', title, COLUMNS)
    builders = {
        'forward': lambda: harness.with_raw(lambda: (fn(*args), None), fn, args),
        'hand': lambda: harness.with_raw(lambda: hand(*args), hand, args),
        'tapeflow': lambda: _tapeflow(fn, args, argnums, 'python'),
        'tapeflow+numba': lambda: _tapeflow(fn, args, argnums, 'numba'),
        'autograd': lambda: harness.autograd_value_and_grad(fn, args, argnums),
        'jax': lambda: harness.jax_value_and_grad(jax_fn, args, argnums),
    }
    results = {}
    for name in COLUMNS:
        if name in harness.EXTERNAL and not settings.external:
            out.cells[name].error = 'external libraries off (--no-external)'
            continue
        results[name] = harness.build(out.cells[name], builders[name])
    expected = results.get('hand')
    for name, result in results.items():
        if name in ('forward', 'hand') or result is None or expected is None:
            continue
        if not harness.close(np.asarray(result[0]), expected[0]) or \
                not harness.close(tuple(np.asarray(g) for g in result[1]), expected[1]):
            out.cells[name].note = 'MISMATCH'
            out.notes.append(f'!!! {key} {name}: value or gradient differs from the '
                             f'hand-written adjoint')
            log(out.notes[-1])
    numpy_path, native = results.get('tapeflow'), results.get('tapeflow+numba')
    if numpy_path is not None and native is not None and not all(
            np.allclose(a, b, rtol=1e-12, atol=0) for a, b in zip(numpy_path[1], native[1])):
        out.notes.append(f'!!! {key}: compile=\'numba\' differs from the NumPy path beyond '
                         f'rounding')
        log(out.notes[-1])
    harness.measure(list(out.cells.values()), settings)
    return out


def rows(settings, log=print):
    try:            # Numba's import is not a compile time (the first call's would include it)
        import numba  # noqa: F401
    except ImportError:
        pass
    if settings.external:
        try:
            harness.jax_modules()
        except harness.Unavailable:
            pass
    made = []
    for key, title, fn, hand, jax_fn, args, argnums in WORKLOADS:
        log(f'... {key} native: {title}')
        made.append(row(key, title, fn, hand, jax_fn, args, argnums, settings, log))
    return made


def _cell(cell, forward):
    if cell.error is not None:
        return 'off' if 'off' in cell.error else 'n/a' if cell.unavailable else 'fail'
    if cell.best is None or forward is None:
        return '-'
    return f'{cell.best / forward:.2f}' + ('!' if cell.note else '')


def lines(native_rows):
    """The table, the first calls, and what each column ran, for people."""
    if not native_rows:
        return []
    header = ['workload', 'fwd us', *COLUMNS[1:]]
    table = []
    for r in native_rows:
        forward = r.cells['forward'].best
        table.append([r.key.split()[-1], '-' if forward is None else f'{forward * 1e6:.1f}',
                      *[_cell(r.cells[c], forward) for c in COLUMNS[1:]]])
    widths = [max(len(x) for x in col) for col in zip(header, *table)]
    out = ['the native path: value+grad time / plain function time (loop-heavy code; '
           'tapeflow+numba is compile=\'numba\')']
    out += ['  ' + '  '.join(x.ljust(w) if i == 0 else x.rjust(w)
                             for i, (x, w) in enumerate(zip(line, widths)))
            for line in [header] + table]
    out += [f'  {r.key.split()[-1]}: {r.title}' for r in native_rows]
    out.append('  JAX cannot differentiate its while_loop in reverse: its W7 runs '
               f'{w7_implicit.NEWTON} Newton iterations a step, fixed, in lax.fori_loop; '
               'its W1 and W8 loops are lax.fori_loop too')
    out.append('  first call (generate and compile; in this process, no disk cache):')
    for r in native_rows:
        parts = []
        for name, label in (('tapeflow+numba', 'tapeflow+numba'), ('jax', 'JAX jit')):
            cell = r.cells[name]
            parts.append(f'{label} {cell.first_call * 1e3:.0f} ms' if cell.first_call
                         else f'{label} -')
        out.append(f'    {r.key.split()[-1]}: ' + ', '.join(parts))
    errors = [f'{r.key} {c.name}: {c.error}' for r in native_rows for c in r.cells.values()
              if c.error is not None and not c.unavailable and 'off' not in c.error]
    return out + [f'  failed: {e}' for e in errors]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='fewer, shorter rounds')
    parser.add_argument('--wall', action='store_true', help='time with the wall clock')
    parser.add_argument('--no-external', action='store_true', help='no autograd or JAX')
    options = parser.parse_args(argv)
    harness.set_clock('wall' if options.wall else 'cpu')
    settings = harness.Settings(quick=options.quick, external=not options.no_external,
                                clock='wall' if options.wall else 'cpu')
    tf = harness.import_tapeflow()
    tf.set_cache_dir(None)
    for line in lines(rows(settings)):
        print(line)


if __name__ == '__main__':
    main()
