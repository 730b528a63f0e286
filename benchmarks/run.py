"""tapeflow benchmarks: what `make bench` runs.

    .venv/bin/python benchmarks/run.py [--quick] [--only W1,W3] [--no-external]
                                       [--json PATH] [--strict] [--wall] [--show-source]

Every figure is measured in this one process and reported as a RATIO: the time
of value and gradient divided by the time of the plain NumPy forward of the
same function (so the forward column is 1.00). The machine is shared and small
(2 cores), so absolute times are not the headline; ratios measured side by side,
in interleaved rounds (min over rounds), are stable enough to compare. Two
figures are latencies by nature and are given in their own unit: W2 (`x*x`
gradient, microseconds per call) and the first-compile time (milliseconds).

Workload families, one module each:

    w1_scalar_loop  W1  100-step scalar loop on a Python float
    w2_latency      W2  x*x gradient latency
    w3_logistic     W3  logistic regression, X 500x100
    w4_mlp          W4  two-layer MLP, batch 128, 64->128->10
    w5_rnn          W5  tanh RNN, 50 steps, batch 32, 64->128
    compile_time        first compile of a 50-line function
    higher_order    H1  Hessian (100-dim), J1 jacfwd (1000 inputs); run when tapeflow
                        has hessian / jacfwd

Each hand-written adjoint is checked against central finite differences, and
every path's gradient against the hand-written one (np.allclose), once, before
timing: a mismatch is printed loudly and marked `!` in the table. A path that
fails (missing rule, API not written yet) shows `fail[n]` with the reason
below the table; the run goes on. Results are also written to
benchmarks/results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

# One BLAS / XLA thread: on a shared 2-core machine a multi-threaded BLAS that
# loses a core to another process spin-waits, and a 200 us matmul becomes 16 ms.
# Single-threaded, load slows every column alike and the ratios hold. Set the
# variables yourself to override.
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')
os.environ.setdefault('XLA_FLAGS', '--xla_cpu_multi_thread_eigen=false '
                                   'intra_op_parallelism_threads=1')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
try:
    import tapeflow  # noqa: F401
except ImportError:                       # run from a checkout without installing
    sys.path.insert(1, os.path.join(ROOT, 'src'))

import numpy as np  # noqa: E402

import harness  # noqa: E402
from harness import COLUMNS, Settings  # noqa: E402

GRADIENT_MODULES = ('w1_scalar_loop', 'w2_latency', 'w3_logistic', 'w4_mlp', 'w5_rnn')


# ----------------------------------------------------------------------------- running

def run(settings, only=None, log=print):
    rows = []
    # First compile first: before autograd and JAX are imported, whose threads
    # and heaps would be charged to it (process CPU time, cyclic GC).
    if not only or 'compile' in only:
        log('... compile: first compile of a 50-line function')
        rows.extend(__import__('compile_time').rows(settings, log))
    for module_name in GRADIENT_MODULES:
        module = __import__(module_name)
        for wl in module.workloads(settings):
            if only and wl.key not in only:
                continue
            log(f'... {wl.key}: {wl.title}')
            rows.append(harness.run_gradient_workload(wl, settings, log))
    if not only or {'H1', 'J1'} & set(only):
        log('... H1/J1: a dense Hessian and a forward-mode Jacobian')
        rows.extend(r for r in __import__('higher_order').rows(settings, log)
                    if not only or r.key in only)
    return rows


# ----------------------------------------------------------------------------- printing

LEGEND = '''columns: time of value and gradient / time of the plain NumPy function (fwd us)
  forward   the plain NumPy function alone (the unit, 1.00)
  hand      a gradient written by hand in NumPy
  tf.grad   tapeflow.value_and_grad: the generated gradient code
  tape      tapeflow's eager GradientTape recording the same code on Tensors
  fn+tape   a @tapeflow.function called under a GradientTape (one fused node)
  autograd  autograd.value_and_grad on the same source
  jax       jax.jit(jax.value_and_grad) on the same source (compiled before timing)'''

class Footnotes:
    def __init__(self):
        self.items = []
        self.unavailable = []       # reasons shown once, not per cell

    def add(self, text):
        if text in self.items:
            return self.items.index(text) + 1
        self.items.append(text)
        return len(self.items)


def _cell_text(row, name, notes):
    cell = row.cells[name]
    if cell.error is not None:
        if cell.error == 'external libraries off (--no-external)':
            return 'off'
        if cell.error == 'skipped for this workload':
            return '-'
        if cell.unavailable:
            if cell.error not in notes.unavailable:
                notes.unavailable.append(cell.error)
            return 'n/a'
        return f'fail[{notes.add(f"{row.key} {name}: {cell.error}")}]'
    if cell.best is None:
        return '-'
    flag = '!' if cell.note else ''
    if row.unit == 'us':
        return f'{cell.best * 1e6:.2f}us{flag}'
    if row.unit == 'ms':
        return f'{cell.best * 1e3:.1f}ms{flag}'
    return f'{row.ratio(name):.2f}{flag}'


def _table(rows, columns, notes, first_header='workload'):
    header = [first_header, 'fwd us'] + list(columns)
    lines = []
    for row in rows:
        fwd = row.cells.get('forward')
        fwd_us = f'{fwd.best * 1e6:.1f}' if fwd is not None and fwd.best is not None else '-'
        lines.append([f'{row.key}', fwd_us] + [_cell_text(row, c, notes) for c in columns])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = lambda cells: '  '.join(  # noqa: E731
        str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    out = [fmt(header), fmt(['-' * w for w in widths])]
    out.extend(fmt(line) for line in lines)
    return '\n'.join(out)


def _ratio_over(row, name, over):
    r = row.ratio(name, over=over)
    return None if r is None else r


def targets(rows):
    """The performance goals: (what is compared with what and the bound, measured, status).

    Each says in words which two figures it divides and how far apart they
    may be; `hand` is a gradient written by hand in NumPy, the fastest a
    Python gradient of that code can be.
    """
    by_key = {r.key: r for r in rows}
    out = []

    def add(desc, value, limit, fmt):
        if value is None:
            out.append((desc, 'n/a', 'n/a'))
        else:
            out.append((desc, fmt(value), 'ok' if value <= limit else 'MISSED'))

    # W2's goal is absolute (a 0.2 us hand-written `2*x` is no baseline for an API call).
    for key in ('W1', 'W3', 'W4', 'W5'):
        r = by_key.get(key)
        if r is None:
            continue
        add(f'{key}: tapeflow.value_and_grad at most 1.5x the time of the hand-written gradient',
            _ratio_over(r, 'tf.grad', 'hand'), 1.5, lambda v: f'{v:.2f}x')
    r = by_key.get('W2')
    if r is not None:
        for name, limit, what in (('tf.grad', 2e-6, 'a call of tapeflow.grad(f)'),
                                  ('tape', 15e-6, 'a gradient through the eager GradientTape')):
            best = r.cells[name].best
            add(f'W2: {what} on x*x under {limit * 1e6:.0f} us', best, limit,
                lambda v: f'{v * 1e6:.2f} us')
    for key in ('W1', 'W2', 'W3', 'W4', 'W5'):
        r = by_key.get(key)
        if r is None:
            continue
        add(f'{key}: a tapeflow.function called under a GradientTape at most 1.2x the time of '
            f'tapeflow.value_and_grad', _ratio_over(r, 'fn+tape', 'tf.grad'),
            1.2, lambda v: f'{v:.2f}x')
    r = by_key.get('W3')
    if r is not None:
        add('W3: the eager GradientTape at most 3x the time of the hand-written gradient',
            _ratio_over(r, 'tape', 'hand'), 3.0, lambda v: f'{v:.2f}x')
    r = by_key.get('compile')
    if r is not None:
        add('first compile of a 50-line function (parse, transform, load) under 100 ms',
            r.cells['first compile'].best, 0.1, lambda v: f'{v * 1e3:.1f} ms')
    return out


def report(rows, settings, elapsed, log=print):
    notes = Footnotes()
    grad_rows = [r for r in rows if r.key.startswith('W')]
    log('')
    log('tapeflow benchmarks: value+grad time / plain NumPy forward time '
        f'(min over {settings.rounds} interleaved rounds, one process, {settings.clock} clock;\n'
        f' W2 in us per gradient call; BLAS threads: {os.environ.get("OPENBLAS_NUM_THREADS")})')
    log('')
    if grad_rows:
        log(_table(grad_rows, COLUMNS, notes))
        log('')
        for r in grad_rows:
            log(f'  {r.key}: {r.title}')
        log('')
        log(LEGEND)
        log('')
        log('the same times divided by the hand-written gradient\'s (1.00: as fast as by hand):')
        over_hand = []
        for r in grad_rows:
            cells = []
            for c in ('tf.grad', 'tape', 'fn+tape', 'autograd', 'jax'):
                v = r.ratio(c, over='hand')
                cells.append('-' if v is None else f'{v:.2f}')
            over_hand.append([r.key] + cells)
        header = ['workload', 'tf.grad', 'tape', 'fn+tape', 'autograd', 'jax']
        widths = [max(len(x) for x in col) for col in zip(header, *over_hand)]
        for line in [header] + over_hand:
            log('  '.join(x.ljust(w) if i == 0 else x.rjust(w)
                          for i, (x, w) in enumerate(zip(line, widths))))
        log('')
    for r in rows:
        if r.key in ('H1', 'J1'):
            log(_table([r], list(r.cells), notes))
            log(f'  {r.key}: {r.title}  (time / one forward evaluation)')
            log('')
    for r in rows:
        if r.key == 'compile':
            c = r.cells['first compile']
            text = f'fail[{notes.add("compile: " + c.error)}]' if c.error else (
                f'{c.best * 1e3:.1f} ms (min of {len(c.times)}; '
                f'median {c.median * 1e3:.1f} ms){" !" + c.note if c.note else ""}')
            log(f'first compile, 50-line function: {text}')
            log('')
    log('goals (ok: met, MISSED: not met, n/a: not measured):')
    for desc, measured, status in targets(rows):
        log(f'  {status:6s} {desc}: {measured}')
    if notes.unavailable:
        log('')
        log('n/a: ' + '; '.join(notes.unavailable))
    if notes.items:
        log('')
        log('failures:')
        for i, text in enumerate(notes.items, 1):
            log(f'  [{i}] {text}')
    loud = [n for r in rows for n in r.notes]
    if loud:
        log('')
        log('!!! CORRECTNESS PROBLEMS (see above):')
        for n in loud:
            log('  ' + n)
    log('')
    log(f'total {elapsed:.1f} s')


# ----------------------------------------------------------------------------- json

def _git_revision():
    try:
        rev = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                               cwd=ROOT, capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + ('+dirty' if dirty else '') if rev else None
    except Exception:  # noqa: BLE001
        return None


def write_json(path, rows, settings, elapsed):
    versions = {'python': platform.python_version(), 'numpy': np.__version__}
    for name in ('autograd', 'jax'):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = getattr(mod, '__version__', '?')
    data = {
        'what': 'value+grad time / plain NumPy forward time, measured in one process',
        'created': time.strftime('%Y-%m-%dT%H:%M:%S'),
        'git': _git_revision(),
        'machine': {'platform': platform.platform(), 'cpus': os.cpu_count()},
        'versions': versions,
        'blas_threads': os.environ.get('OPENBLAS_NUM_THREADS'),
        'settings': {'quick': settings.quick, 'clock': settings.clock, 'rounds': settings.rounds,
                     'min_round_seconds': settings.min_round, 'external': settings.external},
        'elapsed_seconds': elapsed,
        'rows': {r.key: r.to_json() for r in rows},
        'targets': [{'target': d, 'measured': m, 'status': s} for d, m, s in targets(rows)],
    }
    with open(path, 'w') as fh:
        json.dump(data, fh, indent=1, default=float)
        fh.write('\n')


def show_source(settings, only=None):
    """The generated gradient code of each W-workload, to look for wasted work."""
    import tapeflow
    for module_name in GRADIENT_MODULES:
        for wl in __import__(module_name).workloads(settings):
            if only and wl.key not in only:
                continue
            argnums = wl.argnums if len(wl.argnums) > 1 else wl.argnums[0]
            print(f'# ---- {wl.key}: {wl.title}')
            try:
                print(tapeflow.source(wl.fn, argnums=argnums))
            except Exception as exc:  # noqa: BLE001
                print(f'# failed: {harness.short_reason(exc)}')
    return 0


# ----------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='smoke run: few short rounds (seconds, not minutes); figures are rough')
    parser.add_argument('--only', default='',
                        help='comma-separated keys: W1,W2,W3,W4,W5,compile,H1,J1')
    parser.add_argument('--no-external', action='store_true',
                        help='skip the autograd and JAX columns')
    parser.add_argument('--json', default=os.path.join(HERE, 'results.json'),
                        help='where to write the results (default benchmarks/results.json); '
                             'empty to skip')
    parser.add_argument('--show-source', action='store_true',
                        help="print tapeflow.source() of each W-workload's function and exit")
    parser.add_argument('--wall', action='store_true',
                        help='time with the wall clock instead of process CPU time')
    parser.add_argument('--strict', action='store_true',
                        help='exit with status 1 when a gradient disagrees with the reference')
    opts = parser.parse_args(argv)
    settings = Settings(quick=opts.quick, external=not opts.no_external,
                        clock='wall' if opts.wall else 'cpu')
    only = {k.strip() for k in opts.only.split(',') if k.strip()} or None
    if opts.show_source:
        return show_source(settings, only)
    t0 = time.perf_counter()
    rows = run(settings, only)
    elapsed = time.perf_counter() - t0
    report(rows, settings, elapsed)
    if opts.json:
        write_json(opts.json, rows, settings, elapsed)
        print(f'results written to {os.path.relpath(opts.json)}')
    if opts.strict and any(r.notes for r in rows):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
