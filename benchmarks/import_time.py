"""Import time: `import tapeflow` in a fresh process, as users start a program.

Three imports, each in its own new interpreter, in interleaved rounds (min and
median over rounds, after one warm-up round that also writes __pycache__):

    numpy      `import numpy` alone, the floor tapeflow builds on
    tapeflow   `import tapeflow` with SciPy installed and importable
    no SciPy   `import tapeflow` with SciPy blocked (`sys.modules['scipy'] = None`
               before the import): what a user without SciPy pays

Each time covers the import statement only (NumPy included for tapeflow), not
the interpreter's start. The child also says whether `import tapeflow` imported
SciPy as a side effect (it should not: SciPy costs hundreds of ms and is needed
only by the rules of scipy.special) and whether tapeflow's bytecode was cached.
Runs in fresh processes (see fresh_process.py), timed by the wall clock whatever the
harness's clock: an import is a wait, and process CPU time also counts OpenBLAS's worker
threads starting on other cores while NumPy imports (here NumPy alone: ~85 ms of CPU
against ~48 ms of wall time).
"""
import importlib.util

from fresh_process import run_python, tapeflow_location
from harness import Row, latency_text, short_reason

CHILD = '''
import sys, time
clock = time.process_time if sys.argv[1] == 'cpu' else time.perf_counter
what = sys.argv[2]
if what == 'no SciPy':
    sys.modules['scipy'] = None
module = 'numpy' if what == 'numpy' else 'tapeflow'
already = module in sys.modules
start = clock()
if what == 'numpy':
    import numpy
else:
    import tapeflow
seconds = clock() - start
import importlib.util, json, os
out = {'seconds': seconds, 'already': already, 'scipy_imported': sys.modules.get('scipy') is not None,
       'dont_write_bytecode': bool(sys.flags.dont_write_bytecode)}
if what != 'numpy':
    out['file'] = tapeflow.__file__
    out['bytecode'] = os.path.exists(importlib.util.cache_from_source(tapeflow.__file__))
print(json.dumps(out))
'''

IMPORTS = ('numpy', 'tapeflow', 'no SciPy')


def rows(settings, log=print):
    row = Row('import', 'import time in a fresh process (ms)', IMPORTS, unit='ms',
              baseline='numpy')
    row.extra['clock'] = 'wall'
    if importlib.util.find_spec('scipy') is None:
        row.cells['tapeflow'].error = 'SciPy is not installed here'
        row.cells['tapeflow'].unavailable = True
    try:
        expected = tapeflow_location()
    except ImportError as exc:
        for cell in row.cells.values():
            cell.error = short_reason(exc)
        return [row]
    runs = 3 if settings.quick else 7
    seen = {}
    for round_ in range(runs + 1):           # round 0 warms up: __pycache__, page cache
        for what in IMPORTS:
            cell = row.cells[what]
            if cell.error is not None:
                continue
            try:
                out = run_python(CHILD, 'wall', what)
            except Exception as exc:  # noqa: BLE001
                cell.error = short_reason(exc)
                continue
            seen[what] = out
            if round_:
                cell.times.append(out['seconds'])
    _check(row, seen, expected, log)
    found = seen.get('tapeflow')
    row.extra['scipy_imported_by_tapeflow'] = None if found is None else found['scipy_imported']
    row.extra['bytecode_cached'] = None if found is None else found.get('bytecode')
    row.extra['samples_ms'] = {k: [t * 1e3 for t in c.times] for k, c in row.cells.items()}
    return [row]


def _check(row, seen, expected, log):
    for what, out in seen.items():
        if out['already']:
            row.cells[what].note = 'imported before the timed statement'
            msg = (f'!!! import ({what}): the module was imported at start-up (sitecustomize or a '
                   '.pth file?): this time measures nothing')
            row.notes.append(msg)
            log(msg)
        if what == 'numpy':
            continue
        if not out['file'].startswith(expected):
            msg = f'!!! import: the fresh process imported {out["file"]}, not the tapeflow under {expected}'
            row.notes.append(msg)
            log(msg)
        elif not out['bytecode'] or out['dont_write_bytecode']:
            row.cells[what].note = 'no bytecode cached'
            log(f'note: import ({what}): tapeflow\'s bytecode could not be cached; '
                'the time includes compiling its source')


def scipy_imported(row):
    """True or False: did `import tapeflow` import SciPy; None when not measured."""
    return row.extra.get('scipy_imported_by_tapeflow')


def lines(row, notes):
    out = [f'import time, each in a fresh process after a warm-up run ({row.extra["clock"]} '
           'clock; the import statement only, NumPy included):']
    labels = {'numpy': 'import numpy (for reference)',
              'tapeflow': 'import tapeflow, SciPy installed',
              'no SciPy': 'import tapeflow, SciPy blocked'}
    width = max(map(len, labels.values()))
    for what, label in labels.items():
        text = latency_text(row.cells[what], notes, f'import {what}')
        out.append(f'  {label:{width}}  {text}')
    imported = scipy_imported(row)
    if imported is not None:
        out.append(f'  SciPy imported as a side effect of import tapeflow: {"YES" if imported else "no"}')
    return out
