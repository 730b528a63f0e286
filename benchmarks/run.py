"""tapeflow benchmarks: what `make bench` runs.

    .venv/bin/python benchmarks/run.py [--quick] [--only KEYS] [--no-external]
                                       [--json PATH] [--strict] [--wall] [--show-source]

    --quick         a smoke run of about a minute: fewer and shorter rounds, rough figures
    --only KEYS     comma-separated: W1,W2,W3,W4,W5,W6 (gradient workloads), import,
                    compile, disk-cache, checkpoint, H1, J1, native
    --no-external   leave out the autograd, torch and JAX columns
    --json PATH     where to write the results (default benchmarks/results.json; '' skips)
    --strict        exit with status 1 when a gradient disagrees with its reference
    --wall          time with the wall clock instead of process CPU time
    --show-source   print the gradient code tapeflow generates for each W-workload, and exit

Gradient workloads are measured in this one process and reported as RATIOS:
the time of value and gradient divided by the time of the plain NumPy forward
of the same function (so the forward column is 1.00), and again divided by
the hand-written gradient's time. The machine is shared and small (2 cores),
so absolute times are not the headline; ratios measured side by side, in
interleaved rounds (min over rounds), are stable enough to compare. Figures
that are latencies by nature are given in their own unit: W2 (`x*x` gradient,
microseconds per call), import time, first compile and the disk cache
(milliseconds); checkpointing gives seconds and peak megabytes.

Modules, one family each:

    w1_scalar_loop  W1  100-step scalar loop on a Python float
    w2_latency      W2  x*x gradient latency
    w3_logistic     W3  logistic regression, X 500x100
    w4_mlp          W4  two-layer MLP, batch 128, 64->128->10
    w5_rnn          W5  tanh RNN, 50 steps, batch 32, 64->128
    w6_elementwise  W6  elementwise chain over 10**6 float64 values
    import_time         `import tapeflow` in a fresh process, with and without SciPy,
                        and whether it imports SciPy
    compile_time        first compile of a 50-line function
    disk_cache          the same function's first call in a fresh process whose disk
                        cache an earlier process filled (n/a without a disk cache)
    checkpointing       checkpoint=True against the plain tape: time and peak memory
                        of a 10**6-step loop and a 10 000-step RNN (n/a without it)
    higher_order    H1  Hessian (100-dim), J1 jacfwd (1000 inputs); run when tapeflow
                        has hessian / jacfwd
    native              compile='numba' on loop-heavy code, its own table: W1, W7
                        (w7_implicit: a Newton solve to a tolerance in each step, a
                        data-dependent while) and W8 (w8_gravity: 16-body gravity on
                        (16, 3) arrays), beside autograd and JAX, and first-call times

Columns of the gradient workloads: the plain forward, a hand-written NumPy
gradient, tapeflow.value_and_grad, the eager GradientTape, a @tapeflow.function
under a tape, and the same source through autograd, torch (eager, one thread)
and JAX (jit), each when installed (n/a otherwise).

Each hand-written adjoint is checked against central finite differences, and
every path's gradient against the hand-written one (np.allclose), once, before
timing: a mismatch is printed loudly and marked `!` in the table. A path that
fails (missing rule, API not written yet) shows `fail[n]` with the reason
below the table; one that cannot run here shows `n/a` with the reason; the run
goes on. The goals are printed last (ok, MISSED, or n/a when not measured).
Results are also written to benchmarks/results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
# Before the thread limits below: fresh processes (import time, the disk cache)
# get the environment the user started this one with.
import fresh_process  # noqa: E402,F401

# One BLAS / XLA thread: on a shared 2-core machine a multi-threaded BLAS that
# loses a core to another process spin-waits, and a 200 us matmul becomes 16 ms.
# Single-threaded, load slows every column alike and the ratios hold. Set the
# variables yourself to override.
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')
os.environ.setdefault('XLA_FLAGS', '--xla_cpu_multi_thread_eigen=false '
                                   'intra_op_parallelism_threads=1')


def _fixed_malloc_threshold():
    """glibc serves a block over its mmap threshold with a fresh mapping (page faults on
    every touch), and moves the threshold up as such blocks are freed: whether a 130 kB
    array costs page faults then depends on what the process allocated before, and the
    same code timed after another import order ran 50% slower (W4's eager tape: 300 or
    450 us). One fixed threshold (32 MB, the most the dynamic one reaches) makes runs of
    different code comparable. Linux/glibc only; elsewhere nothing changes."""
    try:
        import ctypes
        libc = ctypes.CDLL('libc.so.6')
        M_MMAP_THRESHOLD = -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 32 * 2 ** 20))
    except (OSError, AttributeError):
        return False


MALLOC_FIXED = _fixed_malloc_threshold()

try:
    import tapeflow  # noqa: F401
except ImportError:                       # run from a checkout without installing
    sys.path.insert(1, os.path.join(ROOT, 'src'))

import numpy as np  # noqa: E402

import checkpointing  # noqa: E402
import disk_cache  # noqa: E402
import harness  # noqa: E402
import import_time  # noqa: E402
import native  # noqa: E402
from harness import COLUMNS, Settings  # noqa: E402

GRADIENT_MODULES = ('w1_scalar_loop', 'w2_latency', 'w3_logistic', 'w4_mlp', 'w5_rnn',
                    'w6_elementwise')


# ----------------------------------------------------------------------------- running

def run(settings, only=None, log=print):
    rows = []
    # This process compiles with no disk cache: its figures are measured in fresh
    # processes (disk_cache.py), and the user's cache gets no benchmark entries.
    tapeflow = sys.modules.get('tapeflow')      # None when it failed to import (each row says why)
    if hasattr(tapeflow, 'set_cache_dir'):
        tapeflow.set_cache_dir(None)
    # First compile first: before autograd and JAX are imported, whose threads
    # and heaps would be charged to it (process CPU time, cyclic GC).
    if not only or 'compile' in only:
        log('... compile: first compile of a 50-line function')
        rows.extend(__import__('compile_time').rows(settings, log))
    # Fresh processes next, while this one is still small.
    if not only or 'import' in only:
        log('... import: import tapeflow in fresh processes')
        rows.extend(import_time.rows(settings, log))
    if not only or 'disk-cache' in only:
        log('... disk-cache: the first call in a fresh process, cache filled by an earlier one')
        rows.extend(disk_cache.rows(settings, log))
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
    if not only or 'checkpoint' in only:
        rows.extend(checkpointing.rows(settings, log))
    if not only or 'native' in only:
        rows.extend(native.rows(settings, log))
    return rows


# ----------------------------------------------------------------------------- printing

LEGEND = '''columns: time of value and gradient / time of the plain NumPy function (fwd us)
  forward   the plain NumPy function alone (the unit, 1.00)
  hand      a gradient written by hand in NumPy
  tf.grad   tapeflow.value_and_grad: the generated gradient code
  tape      tapeflow's eager GradientTape recording the same code on Tensors
  fn+tape   a @tapeflow.function called under a GradientTape (one fused node)
  autograd  autograd.value_and_grad on the same source
  torch     torch eager on the same source (NumPy's names mapped to torch's), torch.autograd.grad,
            one thread
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


# The slowest tapeflow.value_and_grad may be beside a gradient written by hand.
GRADIENT_GOALS = {'W1': 1.2, 'W3': 1.15, 'W4': 1.2, 'W5': 1.2, 'W6': 1.15}


def targets(rows):
    """The performance goals: (what is measured and its bound, measured, status).

    Each says in words what it measures: either which two figures it divides
    and how far apart they may be, or a time or a share it must stay under.
    The hand-written gradient is the fastest a Python gradient of that code
    can be; status is ok, MISSED, or n/a when the figure was not measured.
    A measured figure whose check failed carries `!` and the reason; n/a may say why.
    """
    by_key = {r.key: r for r in rows}
    out = []

    def add(desc, value, limit, fmt, flag=None):
        if value is None:
            out.append((desc, f'n/a ({flag})' if flag else 'n/a', 'n/a'))
        else:
            out.append((desc, fmt(value) + (f' ! {flag}' if flag else ''),
                        'ok' if value <= limit else 'MISSED'))

    def best(key, cell):
        r = by_key.get(key)
        return None if r is None else r.cells[cell].best

    def flag(key, cell):
        return by_key[key].cells[cell].note

    times = lambda v: f'{v:.2f}x'          # noqa: E731
    ms = lambda v: f'{v * 1e3:.1f} ms'     # noqa: E731
    # W2's goal is absolute (a 0.2 us hand-written `2*x` is no baseline for an API call).
    for key, limit in GRADIENT_GOALS.items():
        r = by_key.get(key)
        if r is not None:
            add(f'{key}: tapeflow.value_and_grad at most {limit}x the time of the hand-written '
                'gradient', r.ratio('tf.grad', over='hand'), limit, times, flag(key, 'tf.grad'))
    if 'W2' in by_key:
        for name, limit, what in (('tf.grad', 0.8e-6, 'one call of tapeflow.grad(f)'),
                                  ('tape', 15e-6, 'a gradient through the eager GradientTape')):
            add(f'W2: {what} on x*x under {limit * 1e6:g} us', best('W2', name), limit,
                lambda v: f'{v * 1e6:.2f} us', flag('W2', name))
    for key in ('W1', 'W2', 'W3', 'W4', 'W5', 'W6'):
        r = by_key.get(key)
        if r is not None:
            add(f'{key}: a tapeflow.function called under a GradientTape at most 1.2x the time of '
                'tapeflow.value_and_grad', r.ratio('fn+tape', over='tf.grad'), 1.2, times)
    r = by_key.get('W3')
    if r is not None:
        add('W3: the eager GradientTape at most 3x the time of the hand-written gradient',
            r.ratio('tape', over='hand'), 3.0, times)
    r = by_key.get('import')
    if r is not None:
        add('import tapeflow, in a fresh process with SciPy installed, under 150 ms',
            r.cells['tapeflow'].best, 0.150, ms, flag('import', 'tapeflow'))
        imported = import_time.scipy_imported(r)
        out.append(('import tapeflow does not import SciPy',
                    'n/a' if imported is None else ('SciPy imported' if imported else 'not imported'),
                    'n/a' if imported is None else ('MISSED' if imported else 'ok')))
    if 'compile' in by_key:
        add('first compile of a 50-line function (parse, transform, load) under 50 ms',
            best('compile', 'first compile'), 0.050, ms, flag('compile', 'first compile'))
    if 'disk-cache' in by_key:
        add("a 50-line function's gradient loaded from the disk cache by a fresh process "
            '(first call minus a warm call) under 5 ms', best('disk-cache', 'hit'), 0.005, ms,
            flag('disk-cache', 'hit'))
    r = by_key.get('native W1')
    if r is not None:
        add("W1: compile='numba' at most 0.3x the time of the plain function",
            r.ratio('tapeflow+numba'), 0.3, times, flag('native W1', 'tapeflow+numba'))
    for key in ('native W7', 'native W8'):
        r = by_key.get(key)
        if r is not None and r.cells['jax'].best is not None:
            add(f"{key.split()[-1]}: compile='numba' ahead of JAX jit (time / JAX's at most 1)",
                r.ratio('tapeflow+numba', over='jax'), 1.0, times, flag(key, 'tapeflow+numba'))
    r = by_key.get('checkpoint-loop')
    if r is not None:
        ratio = checkpointing.memory_ratio(r)
        add('10**6-step loop checkpointed: peak memory under 5% of the plain tape\'s',
            ratio, 0.05, lambda v: f'{v * 100:.1f}%',
            flag('checkpoint-loop', 'checkpointed') or r.extra.get('memory_skipped'))
        add('10**6-step loop checkpointed: time at most 2.5x the plain tape\'s',
            r.ratio('checkpointed'), 2.5, times, flag('checkpoint-loop', 'checkpointed'))
    return out


def _over_hand_table(rows, notes):
    """Each path's time divided by the hand-written gradient's, n/a and failures as above."""
    columns = ('tf.grad', 'tape', 'fn+tape', 'autograd', 'torch', 'jax')
    lines = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.ratio(c, over='hand')
            cells.append(_cell_text(r, c, notes) if v is None else
                         f'{v:.2f}{"!" if r.cells[c].note else ""}')
        lines.append([r.key] + cells)
    header = ['workload', *columns]
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    return ['  '.join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in
                      enumerate(zip(line, widths))) for line in [header] + lines]


def _compile_lines(by_key, notes):
    out = []
    r = by_key.get('compile')
    if r is not None:
        out.append(('first compile in this process (in-memory cache cleared)',
                    harness.latency_text(r.cells['first compile'], notes, 'compile')))
    remarks = []
    if 'disk-cache' in by_key:
        pairs, remarks = disk_cache.entries(by_key['disk-cache'], notes)
        out.extend(pairs)
    if not out:
        return []
    width = max(len(label) for label, _ in out)
    return (['first compile and the disk cache, 50-line function (first call minus a warm call):']
            + [f'  {label:{width}}  {text}' for label, text in out]
            + [f'  {remark}' for remark in remarks])


def report(rows, settings, elapsed, log=print):
    notes = Footnotes()
    by_key = {r.key: r for r in rows}
    grad_rows = [r for r in rows if r.key.startswith('W')]
    log('')
    if grad_rows:
        log('tapeflow benchmarks: value+grad time / plain NumPy forward time '
            f'(min over {settings.rounds} interleaved rounds, one process, {settings.clock} clock;\n'
            f' W2 in us per gradient call; BLAS threads: {os.environ.get("OPENBLAS_NUM_THREADS")};'
            f' malloc mmap threshold {"fixed at 32 MB" if MALLOC_FIXED else "left to the C library"})')
        log('')
        log(_table(grad_rows, COLUMNS, notes))
        log('')
        for r in grad_rows:
            log(f'  {r.key}: {r.title}')
        log('')
        log(LEGEND)
        log('')
        log('the same times divided by the hand-written gradient\'s (1.00: as fast as by hand):')
        for line in _over_hand_table(grad_rows, notes):
            log(line)
        log('')
    for r in rows:
        if r.key in ('H1', 'J1'):
            log(_table([r], list(r.cells), notes))
            log(f'  {r.key}: {r.title}  (time / one forward evaluation)')
            log('')
    if 'import' in by_key:
        for line in import_time.lines(by_key['import'], notes):
            log(line)
        log('')
    compile_lines = _compile_lines(by_key, notes)
    if compile_lines:
        for line in compile_lines:
            log(line)
        log('')
    native_rows = [r for r in rows if r.key.startswith('native ')]
    if native_rows:
        for line in native.lines(native_rows):
            log(line)
        log('')
    checkpoint_rows = [r for r in rows if r.key.startswith('checkpoint-')]
    if checkpoint_rows:
        for line in checkpointing.lines(checkpoint_rows, notes):
            log(line)
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
    for name in ('autograd', 'torch', 'jax'):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = getattr(mod, '__version__', '?')
    data = {
        'what': 'value+grad time / plain NumPy forward time, measured in one process; import, '
                'first-compile and disk-cache times in ms; checkpointing times and peak bytes',
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
                        help='smoke run of about a minute: fewer, shorter rounds; figures are rough')
    parser.add_argument('--only', default='',
                        help='comma-separated keys: W1,W2,W3,W4,W5,W6,import,compile,'
                             'disk-cache,checkpoint,H1,J1,native')
    parser.add_argument('--no-external', action='store_true',
                        help='skip the autograd, torch and JAX columns')
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
