"""The disk cache: a gradient compiled by an earlier process, loaded by a new one.

Each sample is a fresh process (see fresh_process.py) that imports tapeflow,
points it at a temporary cache directory (`tapeflow.set_cache_dir(path)`) and
times the first call of `tapeflow.grad(fifty_lines)` (compile_time.py's
50-line function) minus a warm call:

    cold  the directory is empty: the process compiles and fills it (a first
          compile as users meet it, with whatever tapeflow imports lazily)
    hit   the directory was filled by an earlier process: goal under 5 ms

Every child's gradient is checked against this process's; when
`tapeflow.cache.stats` counts `disk_hits`, a hit that read nothing from disk
is reported. Without `tapeflow.set_cache_dir` both figures are n/a.
"""
import os
import tempfile

from compile_time import arguments, fifty_lines
from fresh_process import run_python, user_environment
from harness import Row, close, import_tapeflow, latency_text, max_error, short_reason

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = '''
import json, sys, time
bench_dir, cache_dir, clock_name = sys.argv[1:4]
clock = time.process_time if clock_name == 'cpu' else time.perf_counter
sys.path.insert(0, bench_dir)
import numpy as np
import tapeflow
from compile_time import arguments, fifty_lines, first_call_cost
tapeflow.set_cache_dir(cache_dir)
seconds, grad = first_call_cost(tapeflow.grad(fifty_lines), arguments(), clock)
print(json.dumps({'seconds': seconds, 'grad': np.asarray(grad).tolist(),
                  'stats': dict(tapeflow.cache.stats)}))
'''


def _files(path):
    return sum(len(names) for _, _, names in os.walk(path))


def rows(settings, log=print):
    row = Row('disk-cache', 'first call in a fresh process (ms)', ('cold', 'hit'), unit='ms',
              baseline='cold')
    tapeflow = import_tapeflow()
    if not hasattr(tapeflow, 'set_cache_dir'):
        for cell in row.cells.values():
            cell.error, cell.unavailable = 'tapeflow has no disk cache', True
        return [row]
    env = user_environment()
    env.pop('TAPEFLOW_CACHE_DIR', None)
    reference = tapeflow.grad(fifty_lines)(*arguments())
    cold_samples, hit_samples = (1, 3) if settings.quick else (3, 7)

    def sample(cell, cache_dir):
        try:
            out = run_python(CHILD, HERE, cache_dir, settings.clock, env=env)
        except Exception as exc:  # noqa: BLE001
            cell.error = short_reason(exc)
            return None
        cell.times.append(out['seconds'])
        if not close(out['grad'], reference) and not cell.note:
            cell.note = 'MISMATCH'
            _loud(row, f'!!! disk cache ({cell.name}): the fresh process\'s gradient differs from '
                       f'this one\'s: max abs error {max_error(out["grad"], reference):.3g}', log)
        return out

    with tempfile.TemporaryDirectory(prefix='tapeflow-bench-cache-') as top:
        for i in range(cold_samples):
            cache_dir = os.path.join(top, str(i))
            os.mkdir(cache_dir)
            if sample(row.cells['cold'], cache_dir) is None:
                break
        row.extra['files_written'] = _files(cache_dir)
        if row.cells['cold'].error is not None:
            row.cells['hit'].error = 'the cold run failed'
            return [row]
        if not row.extra['files_written']:
            row.cells['hit'].note = 'nothing written'
            _loud(row, '!!! disk cache: a first compile wrote nothing to the cache directory', log)
        counts = []
        for _ in range(hit_samples):
            out = sample(row.cells['hit'], cache_dir)
            if out is None:
                break
            counts.append(out['stats'].get('disk_hits'))
    row.extra['disk_hits_reported'] = bool(counts) and None not in counts
    if 0 in counts:
        row.cells['hit'].note = row.cells['hit'].note or 'no disk hit'
        _loud(row, '!!! disk cache: a fresh process with a filled cache compiled again '
                   "(tapeflow.cache.stats['disk_hits'] is 0)", log)
    row.extra['samples_ms'] = {k: [t * 1e3 for t in c.times] for k, c in row.cells.items()}
    return [row]


def _loud(row, msg, log):
    row.notes.append(msg)
    log(msg)


def entries(row, notes):
    """(label, text) for the cold and the hit figure, and remarks to print under them."""
    labels = {'cold': 'first compile in a fresh process, empty disk cache',
              'hit': 'disk-cache hit in a fresh process (cache filled by an earlier one)'}
    pairs = []
    for name, label in labels.items():
        pairs.append((label, latency_text(row.cells[name], notes, f'disk cache {name}')))
    remarks = []
    if row.cells['hit'].times and not row.extra.get('disk_hits_reported'):
        remarks.append("(tapeflow.cache.stats counts no 'disk_hits': that the hit read the disk "
                       'is not confirmed)')
    return pairs, remarks
