"""Whether tapeflow differentiates one generated program exactly, or refuses it properly.

`check(program, loader)` classifies the program:

- discarded: the plain call raises, warns of a floating-point error, or does
  not return a finite scalar; or central differences with two step sizes
  disagree (the function is not smooth there);
- refused:   `value_and_grad` raised `UnsupportedError` located in the
  program's file, on a line of a function, at a column within it;
- crash:     any other exception, or a refusal that is not so located;
- wrong:     the value differs from the plain call's, a gradient has the
  wrong structure or is not finite, or a directional derivative differs
  from central differences;
- ok:        none of these.

A share of programs (`Program.checks`) is also differentiated in forward mode
(`tf.jvp` along the first random direction, against the same central
differences) and to second order (`tf.jvp` of `tf.grad`: the Hessian along a
direction, against central differences of the gradient along it). A wrong
number or an internal error there makes the program wrong or a crash; a located
refusal there is counted apart (`Outcome.modes`), the program stays ok. A program
whose plain call runs longer than `PLAIN_SECONDS` is discarded, one that tapeflow
takes longer than `TAPEFLOW_SECONDS` on is a crash.

Every call gets deep copies of the arguments. `value_and_grad` must leave its
copies as the plain call leaves its own (the contract: `compilation.entry`); a
program where it does not is wrong (`arguments_problem`). Whether tapeflow
changed them at all is reported apart (`mutated_args`).
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
import itertools
import linecache
import contextlib
import os
import signal
import sys
import threading
import traceback
import warnings

import numpy as np

import tapeflow as tf
from tapeflow import cache as tf_cache
from tests.gradcheck import inner, numeric_directional, perturb, random_direction

CLASSES = ('ok', 'refused', 'wrong', 'crash', 'discarded')
STEPS = (1e-5, 1e-6)     # central differences with both must agree, or the program is discarded
RTOL, ATOL = 1e-5, 1e-7  # ATOL is scaled by max(1, |value|)
VALUE_RTOL = 1e-10
DIRECTIONS = 2
SECOND_STEPS = (1e-4, 1e-5)   # central differences of the gradient, for second order
PLAIN_SECONDS, TAPEFLOW_SECONDS = 10, 120
MODES = ('forward', 'second')
# generated sources tapeflow keeps beyond its cache (the dispatcher's `def call_sin(a0)`
# around a rule, made once per function and bounded): their linecache entries stay.
# (Dropping them while tapeflow.cache.clear() leaves the defs made the next compile of
# one a SourceUnavailableError, as linecache.clearcache() does in a user's session.)
KEPT_SOURCES = ('<tapeflow call_',)


@dataclasses.dataclass
class Outcome:
    kind: str
    reason: str = ''
    construct: str = ''         # a refusal's construct (the one that wrote its line)
    plain: float | None = None
    value: object = None
    grads: object = None
    comparisons: list = dataclasses.field(default_factory=list)  # (analytic, fd at each step)
    numeric_grads: tuple | None = None  # of a wrong program: central differences, coordinatewise
    mutated_args: bool = False   # tapeflow's copies of the arguments differ from the originals after
    plain_mutates: bool = False  # the plain call's copies do
    like_plain: bool = True      # tapeflow's copies end as the plain call's do
    directions: list = dataclasses.field(default_factory=list)  # along which it was checked
    modes: dict = dataclasses.field(default_factory=dict)   # 'forward'/'second' -> (kind, reason)

    def details(self) -> list:
        """The class, the reason, both values, tapeflow's gradients, each direction checked."""
        lines = [f'class: {self.kind}', f'reason: {self.reason}',
                 f'plain value:    {self.plain!r}', f'tapeflow value: {self.value!r}',
                 f'tapeflow gradients: {self.grads!r}']
        if self.numeric_grads is not None:
            lines.append(f'central differences (h={STEPS[0]}): {self.numeric_grads!r}')
        for k, (analytic, *numeric) in enumerate(self.comparisons):
            lines.append(f'direction {k}: tapeflow {analytic!r}, central differences '
                         + ', '.join(f'{v!r} (h={h})' for v, h in zip(numeric, STEPS)))
        lines += [f'{mode}: {kind}' + (f' ({reason})' if reason else '')
                  for mode, (kind, reason) in self.modes.items()]
        return '\n'.join(lines).splitlines()

    def report(self, program) -> str:
        """A failure report: the program with its arguments, then `details`."""
        return f'{program}\n' + '\n'.join(self.details()) + '\n'


class Loader:
    """Writes programs as .py files in `directory` and imports each under a new name.

    `unload` forgets a program and all that compiling it left behind (the module,
    tapeflow's cache, the sources of generated code in `linecache`): each program
    is compiled once, and a run of 20 000 must stay in bounded memory.
    """

    def __init__(self, directory, prefix='fuzzprog'):
        self.directory, self.prefix = directory, prefix
        self.counter = itertools.count()
        self.lines_before = set()

    def load(self, program):
        self.lines_before = set(linecache.cache)
        name = f'{self.prefix}_{os.getpid()}_{next(self.counter)}'
        path = os.path.join(self.directory, name + '.py')
        with open(path, 'w') as handle:
            handle.write(program.source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        code = compile(program.source, path, 'exec', dont_inherit=True)
        exec(code, module.__dict__)
        return module, path

    def unload(self, module):
        sys.modules.pop(module.__name__, None)
        for filename in set(linecache.cache) - self.lines_before:
            if not filename.startswith(KEPT_SOURCES):
                linecache.cache.pop(filename, None)
        tf_cache.clear()


class Timeout(BaseException):
    """Raised by `deadline` (a BaseException: no `except Exception` swallows it)."""


@contextlib.contextmanager
def deadline(seconds):
    """Raise `Timeout` in this block after `seconds` (on the main thread; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise Timeout(f'over {seconds} s')
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(program, loader, value_and_grad=None, modes=True) -> Outcome:
    """`program`'s outcome; `modes=False` leaves out forward mode and second order."""
    value_and_grad = value_and_grad or tf.value_and_grad
    module, path = loader.load(program)
    try:
        return classify(program, module.f, path, value_and_grad, modes)
    finally:
        loader.unload(module)


def classify(program, f, path, value_and_grad, modes=True) -> Outcome:
    args = program.args()
    plain_args = copy.deepcopy(args)
    try:
        with deadline(PLAIN_SECONDS):
            plain = plain_value(f, plain_args)
    except Timeout as error:
        return Outcome('discarded', f'plain call ran {error}')
    if isinstance(plain, str):
        return Outcome('discarded', plain)
    try:
        with deadline(TAPEFLOW_SECONDS):
            return differentiate(program, f, path, value_and_grad, args, plain, plain_args, modes)
    except Timeout as error:
        return Outcome('crash', f'Timeout: tapeflow ran {error} (the plain call: under {PLAIN_SECONDS} s)',
                       plain=plain)


def differentiate(program, f, path, value_and_grad, args, plain, plain_args, modes) -> Outcome:
    ours = copy.deepcopy(args)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            value, grads = value_and_grad(f, argnums=program.wrt)(*ours)
    except tf.UnsupportedError as error:
        return refusal(program, path, error, plain)
    except Exception as error:  # noqa: BLE001 -- every other exception is a crash, reported
        return Outcome('crash', summary(error), plain=plain)
    outcome = Outcome('ok', plain=plain, value=value, grads=grads,
                      mutated_args=not same_values(ours, args), plain_mutates=not same_values(plain_args, args),
                      like_plain=same_values(ours, plain_args))
    problem = (value_problem(value, plain) or structure_problem(grads, args, program.wrt)
               or derivative_problem(outcome, f, args, program, grads, plain)
               or arguments_problem(outcome, ours, plain_args))
    if problem:
        outcome.kind, outcome.reason = problem
    if outcome.kind == 'ok' and value_and_grad is tf.value_and_grad:
        problem = checkpoint_problem(program, f, path, args, value, grads)
        if problem:
            outcome.kind, outcome.reason = problem
    checks = getattr(program, 'checks', 'reverse') if modes else 'reverse'
    if outcome.kind == 'ok' and value_and_grad is tf.value_and_grad and checks != 'reverse':
        problem = mode_problem(outcome, 'forward', forward_check, program, f, path, args, plain)
        if not problem and checks == 'second':
            problem = mode_problem(outcome, 'second', second_check, program, f, path, args, plain)
        if problem:
            outcome.kind, outcome.reason = problem
    if outcome.kind == 'wrong':
        outcome.numeric_grads = tuple(numeric_gradient(f, args, i) for i in program.wrt)
    return outcome


def arguments_problem(outcome, ours, plain_args):
    """The arguments after the transform against the plain call's (the contract:
    a transform leaves them as `f(*args)` leaves them)."""
    if outcome.like_plain:
        return None
    return 'wrong', (f'arguments: value_and_grad left them {ours!r}; the plain call '
                     f'leaves {plain_args!r}')


def checkpoint_problem(program, f, path, args, value, grads):
    """With checkpointed loops (`checkpoint=True`, and 2 snapshots), the plain tape's value
    and gradients to rounding, or a located refusal."""
    if 'for ' not in program.source and 'while ' not in program.source:
        return None
    for policy in (True, 2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                ck_value, ck_grads = tf.value_and_grad(f, argnums=program.wrt, checkpoint=policy)(
                    *copy.deepcopy(args))
        except tf.UnsupportedError as error:
            if refusal(program, path, error, None).kind != 'refused':
                return 'crash', f'checkpoint={policy}: refusal not located: {error}'
            continue
        except Exception as error:  # noqa: BLE001 -- every other exception is a crash, reported
            return 'crash', f'checkpoint={policy}: {summary(error)}'
        same = np.allclose(float(ck_value), float(value), rtol=1e-12, atol=0) and all(
            np.allclose(np.asarray(a, dtype=complex), np.asarray(b, dtype=complex), rtol=1e-9,
                        atol=1e-12) for a, b in zip(_flat(ck_grads), _flat(grads)))
        if not same:
            return 'wrong', (f'checkpoint={policy}: ({ck_value!r}, {ck_grads!r}) differs from '
                             f'the plain tape\'s ({value!r}, {grads!r})')
    return None


def mode_problem(outcome, mode, run, program, f, path, args, plain):
    """Run one more check (`forward_check`, `second_check`); note its outcome in
    `outcome.modes`; ('wrong' or 'crash', reason) if it found one, else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            kind, reason = run(outcome, program, f, args, plain)
    except tf.UnsupportedError as error:
        located = refusal(program, path, error, plain)
        kind, reason = located.kind, located.reason
    except Exception as error:  # noqa: BLE001 -- every other exception is a crash, reported
        kind, reason = 'crash', summary(error)
    outcome.modes[mode] = (kind, reason)
    return (kind, f'{mode}: {reason}') if kind in ('wrong', 'crash') else None


def tangents_for(args, wrt, directions):
    """A tangent for every argument: the direction at the positions in `wrt`, zeros elsewhere."""
    tangents = [zero_tangent(a) for a in args]
    for i, d in zip(wrt, directions):
        tangents[i] = d
    return tuple(tangents)


def zero_tangent(value):
    if isinstance(value, list):
        return [zero_tangent(v) for v in value]
    return 0.0 if isinstance(value, float) else np.zeros(np.shape(value))


def forward_check(outcome, program, f, args, plain):
    """`tf.jvp` along the first direction checked: the plain value, and the tangent that
    central differences gave along that direction."""
    direction, numeric = outcome.directions[0], outcome.comparisons[0][1]
    value, tangent = tf.jvp(f, copy.deepcopy(tuple(args)), tangents_for(args, program.wrt, direction))
    problem = value_problem(value, plain)
    if problem:
        return problem
    try:
        tangent = float(tangent)
    except (TypeError, ValueError):
        return 'wrong', f'tangent {tangent!r} is not a scalar'
    if not np.isfinite(tangent) or not close(tangent, numeric, ATOL * max(1.0, abs(plain))):
        return 'wrong', (f'jvp tangent {tangent!r} along direction 0, central differences give '
                         f'{numeric!r} (the reverse gradient: {outcome.comparisons[0][0]!r})')
    return 'ok', ''


def second_check(outcome, program, f, args, plain):
    """`tf.jvp(tf.grad(f))`, the Hessian along the first direction `v`, read along the
    second direction `u`, against central differences of the reverse gradient along `v`."""
    v, u = outcome.directions[0], outcome.directions[-1]
    grad = tf.grad(f, argnums=program.wrt)
    _, hv = tf.jvp(grad, copy.deepcopy(tuple(args)), tangents_for(args, program.wrt, v))
    if len(program.wrt) == 1 and not (isinstance(hv, tuple) and len(hv) == 1):
        hv = (hv,)          # (jvp of grad(f, argnums=(0,)) gives the bare tangent: reported)
    if not isinstance(hv, (tuple, list)) or len(hv) != len(program.wrt):
        return 'wrong', f'the Hessian along a direction has the structure {hv!r}'
    analytic = sum(inner(h, d) for h, d in zip(hv, u))
    numeric = [gradient_difference(f, args, program.wrt, v, u, h) for h in SECOND_STEPS]
    atol = ATOL * max(1.0, abs(plain))
    if any(n is None for n in numeric) or not close(numeric[0], numeric[1], 100 * atol):
        return 'discarded', f'gradient not smooth here: central differences {numeric}'
    if not np.isfinite(analytic) or not close(analytic, numeric[1], 100 * atol):
        return 'wrong', (f'u.H.v {analytic!r}, central differences of the gradient give {numeric[1]!r} '
                         f'(h={SECOND_STEPS[1]}), {numeric[0]!r} (h={SECOND_STEPS[0]})')
    return batched_problem(program, f, args, v[0]) or ('ok', '')


def batched_problem(program, f, args, v):
    """`tf.hessian` (every direction at once: batched tangents) against `tf.jvp(tf.grad(f))`
    along `v` (one direction), in the first argument differentiated where it is an array
    or a number; ('wrong', reason) where they differ."""
    at = program.wrt[0]
    if not isinstance(args[at], (float, np.ndarray)):
        return None
    hessian = tf.hessian(f, argnums=at)(*copy.deepcopy(args))
    _, hv = tf.jvp(tf.grad(f, argnums=at), copy.deepcopy(tuple(args)),
                   tangents_for(args, (at,), (v,)))
    batched = np.tensordot(np.asarray(hessian), np.asarray(v), axes=np.ndim(v))
    if np.allclose(batched, np.asarray(hv), rtol=1e-7, atol=1e-9 * max(1.0, np.abs(hv).max())):
        return None
    return 'wrong', (f'tf.hessian (batched tangents) along direction 0 gives {batched!r}, '
                     f'tf.jvp(tf.grad(f)) along it {hv!r}')


def gradient_difference(f, args, wrt, v, u, h):
    """u . (grad f(x + h v) - grad f(x - h v)) / 2h, the gradients by tapeflow's reverse mode."""
    grads = []
    for sign in (1, -1):
        moved = list(copy.deepcopy(args))
        for i, d in zip(wrt, v):
            moved[i] = perturb(args[i], d, sign * h)
        try:
            with np.errstate(divide='raise', over='raise', invalid='raise'):
                grads.append(tf.grad(f, argnums=wrt)(*moved))
        except (FloatingPointError, tf.UnsupportedError):
            return None
    return sum(inner(a, d) - inner(b, d) for a, b, d in zip(grads[0], grads[1], u)) / (2 * h)


def _flat(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _flat(item)]
    return [tree]


def plain_value(f, args):
    """f(*args) as a float, or a string saying why the program is discarded."""
    try:
        with np.errstate(divide='raise', over='raise', invalid='raise'):
            value = f(*args)
    except Exception as error:  # noqa: BLE001 -- a program that does not run is discarded
        return f'plain call raised {summary(error)}'
    if not isinstance(value, (int, float, np.number, np.ndarray)) or np.ndim(value) != 0 \
            or not np.isfinite(value) or abs(float(value)) > 1e8:
        return f'plain value {value!r} is not a finite scalar of moderate size'
    return float(value)


def refusal(program, path, error, plain) -> Outcome:
    lines = program.source.splitlines()
    lineno, offset = getattr(error, 'lineno', None), getattr(error, 'offset', None)
    located = (os.path.realpath(str(getattr(error, 'filename', ''))) == os.path.realpath(path)
               and isinstance(lineno, int) and 1 <= lineno <= len(lines) and lines[lineno - 1].strip()
               and program.tags[lineno - 1] != 'module'
               and isinstance(offset, int) and 1 <= offset <= len(lines[lineno - 1]) + 1)
    if not located:
        return Outcome('crash', f'refusal not located in the program: {error} '
                       f'(filename={getattr(error, "filename", None)!r}, lineno={lineno}, offset={offset})',
                       plain=plain)
    return Outcome('refused', getattr(error, 'reason', str(error)),
                   construct=program.tags[lineno - 1], plain=plain)


def value_problem(value, plain):
    try:
        ours = float(value)
    except (TypeError, ValueError):
        return 'wrong', f'value {value!r} is not a scalar'
    if not np.isclose(ours, plain, rtol=VALUE_RTOL, atol=VALUE_RTOL * max(1.0, abs(plain))):
        return 'wrong', f'value {ours!r} differs from the plain call\'s {plain!r}'
    return None


def structure_problem(grads, args, wrt):
    if not isinstance(grads, tuple) or len(grads) != len(wrt):
        return 'wrong', f'expected a tuple of {len(wrt)} gradients, got {type(grads).__name__}'
    for g, i in zip(grads, wrt):
        why = structure_mismatch(g, args[i])
        if why:
            return 'wrong', f'gradient of argument {i}: {why}'
    return None


def structure_mismatch(g, arg):
    """Why `g` cannot be the gradient of `arg` (structure, shape, finiteness), or ''."""
    if isinstance(arg, list):
        if not isinstance(g, (list, tuple)) or len(g) != len(arg):
            return f'expected a list of {len(arg)}, got {g!r}'
        return next((why for gi, ai in zip(g, arg) if (why := structure_mismatch(gi, ai))), '')
    if np.shape(g) != np.shape(arg):
        return f'shape {np.shape(g)} for an argument of shape {np.shape(arg)}'
    if not np.all(np.isfinite(np.asarray(g, dtype=float))):
        return f'not finite: {g!r}'
    return ''


def derivative_problem(outcome, f, args, program, grads, plain):
    rng = np.random.default_rng(program.value_seed + 1)
    atol = ATOL * max(1.0, abs(plain))
    for k in range(DIRECTIONS):
        directions = [random_direction(args[i], rng) for i in program.wrt]
        analytic = sum(inner(g, d) for g, d in zip(grads, directions))
        numeric = [numeric_central(f, args, program.wrt, directions, h) for h in STEPS]
        outcome.comparisons.append((analytic, *numeric))
        outcome.directions.append(directions)
        if any(v is None for v in numeric) or not close(numeric[0], numeric[1], atol):
            return 'discarded', f'not smooth here: central differences {numeric} along direction {k}'
        if not close(analytic, numeric[0], atol):
            unverifiable = beyond_differences(f, args, program.wrt, directions, analytic,
                                              numeric[0], atol, plain)
            if unverifiable:
                return 'discarded', unverifiable
            return 'wrong', (f'directional derivative {analytic!r} along direction {k}, '
                             f'central differences give {numeric[0]!r}')
    return None


FINE_STEPS = (1e-9, 1e-11)    # where the two steps agree by chance: smaller ones, again
ASTRONOMICAL = 1e30            # a derivative past this, 1e12 times the value: rounding's
ABSORBING = 1e9                # an intermediate past this rounds a step of 1e-5 by 1e-2 of it


def beyond_differences(f, args, wrt, directions, analytic, numeric, atol, plain):
    """Why central differences cannot check `analytic` here, or '': smaller steps come to
    it (the function turns faster than the steps see: `sin` of 1e8, where steps 1e-5 and
    1e-6 agreed by chance), or it is astronomical, 1e12 times the value (terms of 1e174
    cancelling to 0.0: the value is rounding, constant under any step). Found by seed
    5090 index 3971, where tapeflow's derivative was the limit of ever smaller steps. A
    wrong derivative stays wrong: smaller steps stay with the larger ones, away from it
    (discarded only where they come ten times nearer to it than to the larger steps')."""
    if abs(analytic) > max(ASTRONOMICAL, 1e12 * abs(plain)):
        return f'not checkable here: a derivative {analytic!r} for the value {plain!r}'
    largest = largest_intermediate(f, args)
    if largest > ABSORBING:
        return (f'not checkable here: an intermediate of {largest:.3g} rounds away the '
                f'steps added to it (central differences {numeric!r})')
    fine = [numeric_central(f, args, wrt, directions, h) for h in FINE_STEPS]
    if any(v is not None and abs(v - analytic) <= 1e-2 * abs(analytic) + atol and
           10.0 * abs(v - analytic) < abs(v - numeric) for v in fine):
        return (f'not smooth at the steps: central differences {numeric!r}, then {fine!r} '
                f'at steps {FINE_STEPS}, come to {analytic!r}')
    return ''


def largest_intermediate(f, args) -> float:
    """The largest finite magnitude a local of `f`'s file holds while the plain call runs
    (0.0 where none is numeric). Past `ABSORBING`, `u + s` rounds away a step of `s`: seed
    5131 index 1048, `sin(u + s)` with `u` of 1e39, where central differences see no `s`."""
    source = getattr(getattr(f, '__code__', None), 'co_filename', None)
    largest = 0.0

    def magnitude(value):
        if isinstance(value, (list, tuple)):
            return max((magnitude(v) for v in value), default=0.0)
        if isinstance(value, (float, np.floating, np.ndarray)) and np.size(value):
            finite = np.abs(np.asarray(value, dtype=float))
            finite = finite[np.isfinite(finite)]
            return float(finite.max()) if finite.size else 0.0
        return 0.0

    def watch(frame, event, arg):
        nonlocal largest
        if frame.f_code.co_filename != source:
            return None
        with contextlib.suppress(Exception):
            largest = max([largest, *(magnitude(v) for v in frame.f_locals.values())])
            if event == 'return':
                largest = max(largest, magnitude(arg))
        return watch

    if source is None:
        return 0.0
    previous = sys.gettrace()
    sys.settrace(watch)
    try:
        with np.errstate(all='ignore'):
            f(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 -- the plain call ran before; what it held is all we ask
        pass
    finally:
        sys.settrace(previous)
    return largest


def numeric_central(f, args, wrt, directions, h):
    try:
        with np.errstate(divide='raise', over='raise', invalid='raise'):
            return numeric_directional(lambda *a: f(*copy.deepcopy(a)), args, wrt, directions, h)
    except Exception:  # noqa: BLE001 -- a perturbed call failing: treated as not smooth
        return None


def numeric_gradient(f, args, i, h=STEPS[0]):
    """The gradient in argument `i` by central differences along each coordinate, shaped like it."""
    return coordinatewise(args[i], lambda direction: numeric_central(f, args, (i,), [direction], h))


def coordinatewise(value, along):
    """`along(unit direction)` for each coordinate of `value`, in `value`'s structure."""
    if isinstance(value, list):
        zero = [zero_like(v) for v in value]
        return [coordinatewise(v, lambda d, k=k: along(zero[:k] + [d] + zero[k + 1:]))
                for k, v in enumerate(value)]
    if np.ndim(value) == 0:
        return along(1.0)
    grad = np.zeros(np.shape(value))
    for index in np.ndindex(grad.shape):
        unit = np.zeros(grad.shape)
        unit[index] = 1.0
        grad[index] = along(unit)
    return grad


def zero_like(value):
    return [zero_like(v) for v in value] if isinstance(value, list) else 0.0 * np.asarray(value) + 0.0


def close(a, b, atol) -> bool:
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + atol


def same_values(a, b) -> bool:
    """Whether `a` and `b` hold the same numbers (NaN as NaN), in the same structure."""
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(same_values(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and \
            all(same_values(a[k], b[k]) for k in a)
    if hasattr(a, '__dict__') and not isinstance(a, np.ndarray):
        return type(a) is type(b) and same_values(vars(a), vars(b))
    try:
        return np.shape(a) == np.shape(b) and bool(np.array_equal(
            np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind in 'fc'))
    except (TypeError, ValueError):
        return a == b


def summary(error) -> str:
    """`Type: message` and the innermost frame, on one line."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f' (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})' if frames else ''
    return f'{type(error).__name__}: {error}{where}'.replace('\n', ' ')
