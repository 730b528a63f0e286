"""Timing, verification and the differentiation paths every workload is run through.

A workload (one module per family, see `run.py`) describes one function: how to
make its inputs, its plain NumPy forward, a hand-written NumPy adjoint, and
which arguments are differentiated. This module turns that into *paths*, one
zero-argument callable per column of the table, each returning
`(value, gradients)`:

    forward     the plain NumPy function (the unit: its ratio is 1.0)
    hand        the hand-written adjoint (value and gradient)
    tf.grad     tapeflow.value_and_grad (tapeflow.grad for the latency workload)
    tape        the eager GradientTape around the same NumPy code on Tensors
    fn+tape     a @tapeflow.function called under a GradientTape
    autograd    autograd.value_and_grad, same source with autograd.numpy bound
    torch       torch eager: same source on torch tensors (NumPy's names mapped to
                torch's), torch.autograd.grad, one thread
    jax         jax.jit(jax.value_and_grad), same source with jax.numpy bound

Timing is interleaved: every round times every column once, so a burst of load
on the (shared, 2-core) machine hits all columns alike; each column's figure is
the minimum over rounds of the per-call time. Ratios are computed from those
minima. Nothing here is a pass/fail test: a path that fails records why.
"""
from __future__ import annotations

import functools
import math
import time
import traceback
import types

import numpy as np

COLUMNS = ('forward', 'hand', 'tf.grad', 'tape', 'fn+tape', 'autograd', 'torch', 'jax')


# ----------------------------------------------------------------------------- settings

class Settings:
    """How hard to time: `quick` is a smoke run (seconds), the default a real one."""

    def __init__(self, quick=False, external=True, clock='cpu'):
        self.quick = quick
        self.external = external            # autograd / torch / JAX columns
        self.rounds = 3 if quick else 15    # interleaved rounds; min over rounds
        self.min_round = 0.002 if quick else 0.015   # seconds per column per round
        self.max_loops = 200_000
        # CPU time of this process, not wall time: on a shared machine the time
        # other processes hold the cores is not ours. BLAS runs one thread (see
        # run.py), so CPU time is the time the work takes.
        self.clock = clock
        set_clock(clock)


# ----------------------------------------------------------------------------- failures

class Unavailable(Exception):
    """A path that cannot run here (a library or API that does not exist yet)."""


def short_reason(exc: BaseException) -> str:
    """One line: the exception's type and the first line of its message."""
    if isinstance(exc, Unavailable):
        return str(exc)
    msg = str(exc).strip().splitlines()
    text = msg[-1] if msg else ''
    # The compiler's errors start with file:line:col; keep the reason only.
    if ': ' in text and text.split(':', 1)[0].endswith('.py'):
        text = text.split(': ', 1)[1] if text.count(': ') else text
    return f'{type(exc).__name__}: {text}'[:200]


# ----------------------------------------------------------------------------- optional libraries

def import_tapeflow():
    import tapeflow
    return tapeflow


_EXTERNAL = {}


def _optional(name, load):
    """What `load()` returns, loaded once; raises Unavailable (with the reason) when it failed."""
    if name not in _EXTERNAL:
        try:
            _EXTERNAL[name] = load()
        except ModuleNotFoundError as exc:
            _EXTERNAL[name] = Unavailable(f'{name} is not installed' if exc.name == name else
                                          f'{name} not importable (no module {exc.name})')
        except Exception as exc:  # noqa: BLE001
            _EXTERNAL[name] = Unavailable(f'{name} not importable ({type(exc).__name__})')
    mods = _EXTERNAL[name]
    if isinstance(mods, Exception):
        raise mods
    return mods


def autograd_modules():
    def load():
        import autograd
        import autograd.numpy as anp
        return autograd, anp
    return _optional('autograd', load)


def jax_modules():
    def load():
        import jax
        jax.config.update('jax_enable_x64', True)     # compare in float64 like the rest
        jax.config.update('jax_platforms', 'cpu')
        import jax.numpy as jnp
        return jax, jnp
    return _optional('jax', load)


def torch_modules():
    """torch, one thread, and a namespace that answers the NumPy names the workloads use."""
    def load():
        import torch
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:            # already set, or parallel work already ran
            pass
        return torch, _torch_numpy(torch)
    return _optional('torch', load)


def _torch_numpy(torch):
    """NumPy's names for torch's functions; reductions take NumPy's `axis` and `keepdims`."""
    def reduction(whole, along):
        def reduce(a, axis=None, keepdims=False):
            if axis is None and not keepdims:
                return whole(a)
            return along(a, dim=axis, keepdim=keepdims)
        return reduce
    return types.SimpleNamespace(
        sin=torch.sin, cos=torch.cos, tan=torch.tan, exp=torch.exp, log=torch.log,
        tanh=torch.tanh, sqrt=torch.sqrt, dot=torch.dot,
        sum=reduction(torch.sum, torch.sum), mean=reduction(torch.mean, torch.mean),
        max=reduction(torch.max, torch.amax))


def rebind(fn, numpy_module):
    """`fn` with the same code but `np` (and `math`) bound to another NumPy.

    The workload source is written once, against NumPy and `math`; autograd and
    JAX run exactly that source with their own NumPy in its globals.
    """
    math_shim = types.SimpleNamespace(**{name: getattr(numpy_module, name)
                                         for name in ('sin', 'cos', 'tan', 'exp', 'log', 'tanh',
                                                      'sqrt')})
    math_shim.pi = math.pi
    env = dict(fn.__globals__)
    env['np'] = numpy_module
    env['math'] = math_shim
    return types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)


# ----------------------------------------------------------------------------- path builders
# Each builder returns a zero-argument callable returning (value, grads) with
# grads a tuple (one entry per differentiated argument), or raises.

def _as_tuple(g, n):
    return tuple(g) if n > 1 else (g,)


def with_raw(call, fn, args):
    """`call` (returns (value, grads) for checking) timed as the bare `fn(*args)`.

    The timing loop calls `call.raw`, a `functools.partial` (no Python frame of
    its own), so a sub-microsecond latency is not padded by the harness.
    """
    call.raw = functools.partial(fn, *args)
    return call


def tapeflow_value_and_grad(fn, args, argnums, grad_only=False):
    tapeflow = import_tapeflow()
    many = len(argnums) > 1
    spec = tuple(argnums) if many else argnums[0]
    if grad_only:
        g = tapeflow.grad(fn, argnums=spec)
        return with_raw(lambda: (None, _as_tuple(g(*args), len(argnums))), g, args)
    vg = tapeflow.value_and_grad(fn, argnums=spec)

    def call():
        value, grads = vg(*args)
        return value, _as_tuple(grads, len(argnums))
    return with_raw(call, vg, args)


def _tensor_inputs(tapeflow, args, argnums):
    """Trainable Variables for the differentiated arguments, constants for float arrays."""
    values, variables = [], []
    for i, a in enumerate(args):
        if i in argnums:
            v = tapeflow.Variable(np.array(a, dtype=np.float64) if isinstance(a, float) else a)
            variables.append(v)
            values.append(v)
        elif isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.inexact):
            values.append(tapeflow.constant(a))
        else:
            values.append(a)
    return values, variables


def _tensor_result(value, grads):
    value = None if value is None else np.asarray(value)
    return value, tuple(None if g is None else np.asarray(g) for g in grads)


def eager_tape(fn, args, argnums, grad_only=False):
    tapeflow = import_tapeflow()
    if not hasattr(tapeflow, 'GradientTape'):
        raise Unavailable('tapeflow.GradientTape does not exist yet')
    values, variables = _tensor_inputs(tapeflow, args, argnums)
    GradientTape = tapeflow.GradientTape

    def call():
        with GradientTape() as tape:
            out = fn(*values)
        return out, tape.gradient(out, variables)

    value, grads = call()                      # fail at build time, not while timing
    _check_tensor_grads(grads)
    return call


def compiled_under_tape(fn, args, argnums, grad_only=False):
    tapeflow = import_tapeflow()
    if not hasattr(tapeflow, 'function'):
        raise Unavailable('tapeflow.function does not exist yet')
    if not hasattr(tapeflow, 'GradientTape'):
        raise Unavailable('tapeflow.GradientTape does not exist yet')
    compiled = tapeflow.function(fn)
    values, variables = _tensor_inputs(tapeflow, args, argnums)
    GradientTape = tapeflow.GradientTape

    def call():
        with GradientTape() as tape:
            out = compiled(*values)
        return out, tape.gradient(out, variables)

    value, grads = call()
    _check_tensor_grads(grads)
    return call


def _check_tensor_grads(grads):
    if any(g is None for g in grads):
        raise RuntimeError('tape.gradient returned None for a differentiated input')


def autograd_value_and_grad(fn, args, argnums, grad_only=False):
    autograd, anp = autograd_modules()
    f = rebind(fn, anp)
    many = len(argnums) > 1
    vg = autograd.value_and_grad(f, argnum=tuple(argnums) if many else argnums[0])
    if grad_only:
        g = autograd.grad(f, argnum=tuple(argnums) if many else argnums[0])
        return with_raw(lambda: (None, _as_tuple(g(*args), len(argnums))), g, args)

    def call():
        value, grads = vg(*args)
        return value, _as_tuple(grads, len(argnums))
    return with_raw(call, vg, args)


def jax_value_and_grad(fn, args, argnums, grad_only=False):
    jax, jnp = jax_modules()
    f = rebind(fn, jnp)
    many = len(argnums) > 1
    spec = tuple(argnums) if many else argnums[0]
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (int, bool)) and not
                   isinstance(a, float))
    transform = jax.grad if grad_only else jax.value_and_grad
    jitted = jax.jit(transform(f, argnums=spec), static_argnums=static)
    dev_args = tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)

    def call():
        out = jax.block_until_ready(jitted(*dev_args))
        if grad_only:
            return None, _as_tuple(out, len(argnums))
        value, grads = out
        return value, _as_tuple(grads, len(argnums))
    return call


def torch_value_and_grad(fn, args, argnums, grad_only=False):
    """Eager torch: the forward on tensors (inputs made before timing), then torch.autograd.grad."""
    torch, tnp = torch_modules()
    f = rebind(fn, tnp)
    tensors = []
    for i, a in enumerate(args):
        if i in argnums:
            tensors.append(torch.tensor(a, dtype=torch.float64, requires_grad=True))
        elif isinstance(a, np.ndarray):
            tensors.append(torch.from_numpy(a))
        else:
            tensors.append(a)
    wrt = [tensors[i] for i in argnums]
    autograd_grad = torch.autograd.grad

    def raw():
        value = f(*tensors)
        return value, autograd_grad(value, wrt)

    def call():
        value, grads = raw()
        return (None if grad_only else value.detach().numpy()), tuple(g.numpy() for g in grads)
    call.raw = raw
    return call


STANDARD_PATHS = {
    'tf.grad': tapeflow_value_and_grad,
    'tape': eager_tape,
    'fn+tape': compiled_under_tape,
    'autograd': autograd_value_and_grad,
    'torch': torch_value_and_grad,
    'jax': jax_value_and_grad,
}
EXTERNAL = ('autograd', 'torch', 'jax')


# ----------------------------------------------------------------------------- verification

def close(a, b, rtol=1e-6, atol=1e-8):
    """np.allclose on values or tuples of values; None (not returned) is not compared."""
    if a is None or b is None:
        return True
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(close(x, y, rtol, atol) for x, y in zip(a, b))
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def max_error(a, b):
    if isinstance(a, (tuple, list)):
        return max((max_error(x, y) for x, y in zip(a, b)), default=0.0)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float('inf')
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def finite_difference_check(fn, args, argnums, grads, eps=1e-6, seed=0):
    """Directional central difference of `fn` against <grads, v>: (ok, fd, analytic)."""
    rng = np.random.default_rng(seed)
    directions = []
    for i in argnums:
        a = args[i]
        directions.append(rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray)
                          else float(rng.standard_normal()))

    def shifted(sign):
        new = list(args)
        for i, v in zip(argnums, directions):
            new[i] = args[i] + sign * eps * v
        return fn(*new)

    fd = (shifted(1.0) - shifted(-1.0)) / (2 * eps)
    analytic = sum(float(np.sum(np.asarray(g) * v)) for g, v in zip(grads, directions))
    ok = abs(fd - analytic) <= 1e-4 * max(1.0, abs(fd), abs(analytic))
    return ok, float(fd), analytic


# ----------------------------------------------------------------------------- timing

class Cell:
    """One column of one workload: timings, or why it has none."""

    def __init__(self, name):
        self.name = name
        self.call = None
        self.error = None          # short reason, when the path failed
        self.note = None           # e.g. a gradient mismatch
        self.loops = 1
        self.times = []            # per-call seconds, one per round
        self.first_call = None     # seconds of the first call (compile included)
        self.unavailable = False   # the library or API does not exist here (not a failure)

    @property
    def best(self):
        return min(self.times) if self.times else None

    @property
    def median(self):
        return float(np.median(self.times)) if self.times else None


_clock = time.process_time


def set_clock(name):
    global _clock
    _clock = {'cpu': time.process_time, 'wall': time.perf_counter}[name]


def now():
    """The benchmark clock (process CPU time unless --wall)."""
    return _clock()


def _time_loops(call, loops):
    clock = _clock
    t0 = clock()
    for _ in range(loops):
        call()
    return clock() - t0


def calibrate(cell, settings):
    """Loops per round so one round of this column takes about `min_round` seconds."""
    once = _time_loops(cell.call, 1)
    loops = 1
    total = once
    while total < settings.min_round and loops < settings.max_loops:
        loops = min(settings.max_loops, loops * 10 if total < settings.min_round / 10 else
                    max(loops + 1, int(loops * settings.min_round / max(total, 1e-9))))
        total = _time_loops(cell.call, loops)
    cell.loops = loops
    return total / loops


def measure(cells, settings):
    """Interleaved rounds over every working cell; per-call minimum is the figure.

    A path slower than `SLOW` seconds a call is timed in fewer rounds, so one
    pathological column cannot blow the whole run's time budget.
    """
    live = [c for c in cells if c.call is not None]
    for c in live:
        c.call = getattr(c.call, 'raw', c.call)
        try:
            calibrate(c, settings)
        except Exception as exc:  # noqa: BLE001
            c.error, c.call = short_reason(exc), None
    live = [c for c in live if c.call is not None]
    for r in range(settings.rounds):
        for c in live:
            if c.call is None or (r >= 2 and c.times and c.times[0] * c.loops > SLOW):
                continue
            try:
                c.times.append(_time_loops(c.call, c.loops) / c.loops)
            except Exception as exc:  # noqa: BLE001
                c.error, c.call = short_reason(exc), None
                c.times = []


SLOW = 0.25


def build(cell, builder):
    """Run a path's builder and its first call; record the error instead of raising."""
    t0 = now()
    try:
        cell.call = builder()
        result = cell.call()
    except Unavailable as exc:
        cell.error, cell.call, cell.unavailable = str(exc), None, True
        return None
    except Exception as exc:  # noqa: BLE001
        cell.error, cell.call = short_reason(exc), None
        cell.traceback = traceback.format_exc()
        return None
    cell.first_call = now() - t0
    return result


def latency_text(cell, notes, where):
    """A millisecond figure for a report line: 'best ms (min of n; median)', `n/a: why`
    for what cannot run here, or `fail[k]` with the reason added to `notes` (run.Footnotes)."""
    if cell.error is not None:
        if cell.unavailable:
            return 'n/a: ' + cell.error
        return f'fail[{notes.add(f"{where}: {cell.error}")}]'
    return (f'{cell.best * 1e3:6.1f} ms  (min of {len(cell.times)}; median '
            f'{cell.median * 1e3:.1f} ms){"  ! " + cell.note if cell.note else ""}')


# ----------------------------------------------------------------------------- workloads and rows

class Workload:
    """One function to differentiate, with everything each column needs.

    fn        the function, written against `np` and `math` (tapeflow, fn+tape,
              autograd, torch and JAX all run this source)
    args      its arguments; `argnums` the differentiated ones
    hand      hand(*args) -> (value, (grad, ...)): the hand-written NumPy adjoint
    eager_fn  the same function for the eager tape, when `fn` cannot take Tensors
              (e.g. `math.sin` on a Tensor would leave the tape); defaults to fn
    unit      'ratio' (time / forward time) or 'us' (microseconds per call)
    grad_only time the gradient alone (the latency workload), not value and gradient
    """

    def __init__(self, key, title, fn, args, argnums, hand, eager_fn=None, unit='ratio',
                 grad_only=False, skip=()):
        self.key, self.title, self.fn, self.args = key, title, fn, tuple(args)
        self.argnums = tuple(argnums)
        self.hand, self.eager_fn = hand, eager_fn or fn
        self.unit, self.grad_only, self.skip = unit, grad_only, tuple(skip)


class Row:
    """One line of a table: a workload's cells, with the forward cell as the unit."""

    def __init__(self, key, title, columns, unit='ratio', baseline='forward'):
        self.key, self.title, self.unit, self.baseline = key, title, unit, baseline
        self.cells = {name: Cell(name) for name in columns}
        self.notes = []            # loud messages (mismatches) printed under the table
        self.extra = {}            # figures for results.json beyond the cells

    def ratio(self, name, over=None):
        base = self.cells.get(over or self.baseline)
        cell = self.cells.get(name)
        if base is None or cell is None or base.best is None or cell.best is None:
            return None
        return cell.best / base.best

    def to_json(self):
        out = {'title': self.title, 'unit': self.unit, 'baseline': self.baseline,
               'notes': self.notes, 'cells': {}}
        out.update(self.extra)
        for name, c in self.cells.items():
            entry = {'seconds_min': c.best, 'seconds_median': c.median, 'loops': c.loops,
                     'rounds': len(c.times), 'first_call_seconds': c.first_call,
                     'ratio': self.ratio(name), 'error': c.error, 'note': c.note,
                     'unavailable': c.unavailable}
            if c.best is not None:
                entry['us_min'] = c.best * 1e6
            out['cells'][name] = entry
        return out


def run_gradient_workload(wl: Workload, settings: Settings, log=print) -> Row:
    """Build, verify and time every column of a W-workload."""
    row = Row(wl.key, wl.title, COLUMNS, unit=wl.unit)
    args = wl.args

    def forward():
        return wl.fn(*args)

    builders = {
        'forward': lambda: with_raw(lambda: (forward(), None), wl.fn, args),
        'hand': lambda: with_raw(lambda: wl.hand(*args), wl.hand, args),
    }
    for name, builder in STANDARD_PATHS.items():
        fn = wl.eager_fn if name == 'tape' else wl.fn
        builders[name] = (lambda b=builder, f=fn: b(f, args, wl.argnums, wl.grad_only))

    results = {}
    for name in COLUMNS:
        cell = row.cells[name]
        if name in wl.skip:
            cell.error = 'skipped for this workload'
            continue
        if name in EXTERNAL and not settings.external:
            cell.error = 'external libraries off (--no-external)'
            continue
        results[name] = build(cell, builders[name])
    _verify(wl, row, results, log)
    measure(list(row.cells.values()), settings)
    return row


def _verify(wl, row, results, log):
    ref = results.get('hand')
    if ref is None:
        row.notes.append(f'hand-written adjoint failed: {row.cells["hand"].error}')
        return
    value, grads = ref
    ok, fd, analytic = finite_difference_check(wl.fn, wl.args, wl.argnums, grads)
    if not ok:
        msg = (f'!!! {wl.key}: HAND-WRITTEN ADJOINT DISAGREES WITH FINITE DIFFERENCES '
               f'(directional derivative fd={fd:.8g}, adjoint={analytic:.8g})')
        row.notes.append(msg)
        log(msg)
    fwd = results.get('forward')
    if fwd is not None and not close(fwd[0], value):
        msg = f'!!! {wl.key}: hand-written adjoint value {value} != forward value {fwd[0]}'
        row.notes.append(msg)
        log(msg)
    for name in COLUMNS:
        if name in ('forward', 'hand') or results.get(name) is None:
            continue
        v, g = results[name]
        v = None if v is None else np.asarray(v)
        g = tuple(None if x is None else np.asarray(x) for x in g)
        if not close(g, grads) or (v is not None and not close(v, value)):
            err = max_error(g, grads)
            cell = row.cells[name]
            cell.note = f'MISMATCH (max |grad err| {err:.3g})'
            msg = (f'!!! {wl.key} {name}: GRADIENT MISMATCH against the hand-written adjoint: '
                   f'max abs error {err:.3g}; value {v} vs {value}')
            row.notes.append(msg)
            log(msg)
