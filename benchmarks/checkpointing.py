"""Checkpointing: a bounded-memory tape by recomputation, beside the plain tape.

`tapeflow.value_and_grad(f, argnums, checkpoint=True)` keeps a few snapshots
of the loop's state instead of every step's values, and recomputes the steps
between two snapshots on the way back. Two long loops:

    loop  W1's scalar loop body, x = sin(x)*x + a*x, 10**6 steps on a Python
          float, d/d(x, a)
    RNN   W5's tanh RNN, 10 000 steps, batch 8, 32 -> 32, d/d(Wx, Wh, b)

Both return the mean over steps (of x, of h*h / 2), not the last step's value
alone, and are differentiated with respect to parameters that every step uses
(the loop's `a`, W1's 0.5): the loops contract, so the gradient of the last
value with respect to the start would hardly depend on the early steps (W1's
own gradient is about 1e-44), and a wrong recomputation there would go unseen.
This way every step adds to the gradient.

Each is run three ways: a hand-written adjoint (stores every step, as the
plain tape must), tapeflow's plain tape, tapeflow checkpointed. Time is value
and gradient, min over interleaved rounds; peak memory is traced by
tracemalloc (NumPy's allocations included) over one call of each, made after
a warm-up call so compiling is not counted (a --quick run does not trace the
10**6-step loop: under tracemalloc it takes tens of seconds). Checked before timing: the hand
adjoint against finite differences, the plain tape against the hand adjoint,
the checkpointed gradient against the plain tape's (rtol 1e-10).
When `checkpoint=` is not accepted the checkpointed column is n/a.
"""
import gc
import math
import tracemalloc

import numpy as np

from harness import (Row, Unavailable, build, close, finite_difference_check, import_tapeflow,
                     max_error, now)

LOOP_STEPS = 10 ** 6
RNN_STEPS, RNN_BATCH, RNN_IN, RNN_HIDDEN = 10_000, 8, 32, 32
COLUMNS = ('hand', 'plain', 'checkpointed')


def long_loop(x, a, n):
    total = 0.0
    for i in range(n):
        x = math.sin(x) * x + a * x
        total = total + x
    return total / n


def long_loop_adjoint(x, a, n):
    xs = [0.0] * n
    ss = [0.0] * n
    total = 0.0
    for i in range(n):
        s = math.sin(x)
        xs[i] = x
        ss[i] = s
        x = s * x + a * x
        total = total + x
    btotal = 1.0 / n
    bx = 0.0
    ba = 0.0
    for i in range(n - 1, -1, -1):
        bx = bx + btotal
        xi = xs[i]
        ba = ba + bx * xi
        bx = bx * (math.cos(xi) * xi + ss[i] + a)
    return total / n, (bx, ba)


def rnn_mean_loss(Wx, Wh, b, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h * h)
    return 0.5 * total / (xs.shape[0] * h.shape[0])


def rnn_mean_adjoint(Wx, Wh, b, xs, h0):
    steps = xs.shape[0]
    hs = [h0]
    h = h0
    total = 0.0
    for t in range(steps):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        hs.append(h)
        total = total + np.sum(h * h)
    scale = 1.0 / (steps * h0.shape[0])
    bh = np.zeros_like(h0)
    bWx = np.zeros_like(Wx)
    bWh = np.zeros_like(Wh)
    bb = np.zeros_like(b)
    for t in range(steps - 1, -1, -1):
        ht = hs[t + 1]
        bh += scale * ht
        ba = bh * (1.0 - ht * ht)
        bWx += xs[t].T @ ba
        bWh += hs[t].T @ ba
        bb += ba.sum(axis=0)
        bh = ba @ Wh.T
    return 0.5 * total * scale, (bWx, bWh, bb)


def _rnn_arguments():
    rng = np.random.default_rng(10)
    xs = rng.standard_normal((RNN_STEPS, RNN_BATCH, RNN_IN))
    h0 = np.zeros((RNN_BATCH, RNN_HIDDEN))
    Wx = rng.standard_normal((RNN_IN, RNN_HIDDEN)) / np.sqrt(RNN_IN)
    Wh = 0.9 * rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) / np.sqrt(RNN_HIDDEN)
    b = 0.1 * rng.standard_normal(RNN_HIDDEN)
    return (Wx, Wh, b, xs, h0)


WORKLOADS = (
    ('checkpoint-loop', 'loop, 10**6 steps', 'scalar loop x = sin(x)*x + a*x, 10**6 steps, mean of x, '
     'd/d(x, a)', long_loop, long_loop_adjoint, lambda: (0.7, 0.5, LOOP_STEPS), (0, 1), False),
    ('checkpoint-rnn', f'RNN, {RNN_STEPS:,} steps', f'tanh RNN, {RNN_STEPS:,} steps, batch {RNN_BATCH}, '
     f'{RNN_IN}->{RNN_HIDDEN}, mean of h*h/2, d/d(Wx, Wh, b)', rnn_mean_loss, rnn_mean_adjoint,
     _rnn_arguments, (0, 1, 2), True),
)
# The last field: whether --quick traces memory too. Under tracemalloc every
# allocation is recorded, and the 10**6-step loop's millions of floats make it
# 10 to 60 times slower (tens of seconds): a quick run leaves its memory out.
NOT_TRACED = 'memory not traced in a --quick run'



def _as_tuple(grads, n):
    return tuple(grads) if n > 1 else (grads,)


def _tapeflow_path(fn, args, argnums, **options):
    tapeflow = import_tapeflow()
    spec = argnums if len(argnums) > 1 else argnums[0]
    try:
        vg = tapeflow.value_and_grad(fn, argnums=spec, **options)
    except TypeError as exc:
        if options:
            raise Unavailable(f'tapeflow.value_and_grad takes no checkpoint= argument ({exc})')
        raise

    def call():
        try:
            value, grads = vg(*args)
        except TypeError as exc:
            if options and 'checkpoint' in str(exc):
                raise Unavailable(f'tapeflow.value_and_grad takes no checkpoint= argument ({exc})')
            raise
        return value, _as_tuple(grads, len(argnums))
    return call


def peak_memory(call):
    """Peak bytes allocated (traced by tracemalloc) during one call."""
    gc.collect()
    tracemalloc.start()
    try:
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak


def _loud(row, msg, log):
    row.notes.append(msg)
    log(msg)


def _check(row, key, fn, args, argnums, results, log):
    hand = results.get('hand')
    if hand is None:
        _loud(row, f'hand-written adjoint failed: {row.cells["hand"].error}', log)
        return
    ok, fd, analytic = finite_difference_check(fn, args, argnums, hand[1])
    if not ok:
        _loud(row, f'!!! {key}: HAND-WRITTEN ADJOINT DISAGREES WITH FINITE DIFFERENCES '
                   f'(fd={fd:.8g}, adjoint={analytic:.8g})', log)
    plain = results.get('plain')
    if plain is not None and not (close(plain[1], hand[1]) and close(plain[0], hand[0])):
        row.cells['plain'].note = 'MISMATCH'
        _loud(row, f'!!! {key} plain tape: GRADIENT MISMATCH against the hand-written adjoint: '
                   f'max abs error {max_error(plain[1], hand[1]):.3g}', log)
    checkpointed = results.get('checkpointed')
    if plain is not None and checkpointed is not None:
        scale = max(float(np.max(np.abs(g))) for g in plain[1])
        if not (close(checkpointed[1], plain[1], rtol=1e-10, atol=1e-10 * scale)
                and close(checkpointed[0], plain[0], rtol=1e-10, atol=0.0)):
            row.cells['checkpointed'].note = 'MISMATCH'
            _loud(row, f'!!! {key} checkpointed: GRADIENT DIFFERS from the plain tape\'s '
                       f'(rtol 1e-10): max abs error {max_error(checkpointed[1], plain[1]):.3g}',
                  log)


def _run(key, label, title, fn, hand, make_args, argnums, trace, settings, log):
    row = Row(key, title, COLUMNS, unit='s', baseline='plain')
    row.label = label
    args = make_args()
    builders = {
        'hand': lambda: (lambda: hand(*args)),
        'plain': lambda: _tapeflow_path(fn, args, argnums),
        'checkpointed': lambda: _tapeflow_path(fn, args, argnums, checkpoint=True),
    }
    results = {name: build(row.cells[name], builder) for name, builder in builders.items()}
    _check(row, key, fn, args, argnums, results, log)
    del results
    live = [c for c in row.cells.values() if c.call is not None]
    row.extra['peak_bytes'] = {c.name: peak_memory(c.call) for c in live} if trace else {}
    if not trace:
        row.extra['memory_skipped'] = NOT_TRACED
    for _ in range(2 if settings.quick else 5):
        for cell in live:
            start = now()
            cell.call()
            cell.times.append(now() - start)
    return row


def memory_ratio(row):
    """Peak memory checkpointed / plain tape, or None."""
    peaks = row.extra.get('peak_bytes', {})
    if 'checkpointed' in peaks and peaks.get('plain'):
        return peaks['checkpointed'] / peaks['plain']
    return None


def rows(settings, log=print):
    out = []
    for key, label, title, fn, hand, make_args, argnums, traced_in_quick in WORKLOADS:
        log(f'... {key}: {title}')
        out.append(_run(key, label, title, fn, hand, make_args, argnums,
                        traced_in_quick or not settings.quick, settings, log))
    return out


def _cell_texts(row, name, notes):
    cell = row.cells[name]
    if cell.error is not None:
        text = 'n/a' if cell.unavailable else \
            f'fail[{notes.add(f"{row.key} {name}: {cell.error}")}]'
        if cell.unavailable and cell.error not in notes.unavailable:
            notes.unavailable.append(cell.error)
        return [text, text]
    flag = '!' if cell.note else ''
    peak = row.extra['peak_bytes'].get(name)
    return [f'{cell.best:.3f} s{flag}', 'not traced' if peak is None else f'{peak / 1e6:.2f} MB']


def lines(rows_, notes):
    header = ['', 'hand time', 'hand peak', 'plain time', 'plain peak', 'ckpt time', 'ckpt peak',
              'ckpt/plain time', 'ckpt/plain memory']
    table = []
    for row in rows_:
        cells = [row.label]
        for name in COLUMNS:
            cells.extend(_cell_texts(row, name, notes))
        time_ratio, mem_ratio = row.ratio('checkpointed'), memory_ratio(row)
        cells.append('-' if time_ratio is None else f'{time_ratio:.2f}x')
        cells.append('-' if mem_ratio is None else f'{mem_ratio * 100:.1f}%')
        table.append(cells)
    widths = [max(len(x) for x in col) for col in zip(header, *table)]
    out = [f'checkpointing: value and gradient with checkpoint=True (ckpt) beside the plain tape '
           f'and a hand-written gradient;',
           f'time: min of {max((len(r.cells["plain"].times) for r in rows_), default=0)} rounds; '
           'peak: the most memory allocated during one call (tracemalloc)']
    for cells in [header] + table:
        out.append('  ' + '  '.join(x.ljust(w) if i == 0 else x.rjust(w)
                                    for i, (x, w) in enumerate(zip(cells, widths))))
    for row in rows_:
        out.append(f'  {row.label}: {row.title}'
                   + (f' ({row.extra["memory_skipped"]})' if 'memory_skipped' in row.extra else ''))
    return out
