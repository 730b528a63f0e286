"""Checkpointed loops (`grad(f, checkpoint=...)`): the plain tape's gradients, bounded memory.

Every checkpointed gradient is compared with the plain tape's (to rounding) and with
central finite differences; loops the rewrite cannot snapshot are refused where they
are written.
"""
import math
import re
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.runtime.checkpoint import ADVANCE, LOAD, SAVE, TAPE, Checkpoints
from tests.corpus import CASES
from tests.gradcheck import check_gradient, seed_of

POLICIES = (True, 1, 2, 3)


# ------------------------------------------------------------------ the schedule alone

def _run_schedule(n, policy, counted):
    """Follow `Checkpoints` with the trip index as the loop's state; returns (most
    snapshots held, longest taped segment, trips run per trip)."""
    ck = Checkpoints(None if counted else n, policy)
    state, held, runs = 0, 0, 0
    if counted:
        due = ck.save(0, 0)
        for trip in range(1, n + 1):
            state, runs = trip, runs + 1
            if trip == due and trip < n:
                due = ck.save(trip, trip)
            held = max(held, len(ck.snapshots))
        ck.finish(n)
    else:
        for a, b in ck.forward():
            assert state == a
            ck.save(a, state)
            state, runs = b, runs + b - a
            held = max(held, len(ck.snapshots))
    assert state == n
    reversed_trips, longest = [], 0
    for act, a, b in ck.backward():
        if act == LOAD:
            state = ck.load(a)
            assert state == a
        elif act == ADVANCE:
            assert state == a
            state, runs = b, runs + b - a
        elif act == SAVE:
            assert state == a
            ck.save(a, state)
        else:
            assert act == TAPE and state == a
            reversed_trips += range(b - 1, a - 1, -1)
            longest, runs, state = max(longest, b - a), runs + b - a, None
        held = max(held, len(ck.snapshots))
    assert reversed_trips == list(range(n - 1, -1, -1))   # every trip once, last first
    assert ck.load(0) == 0                                # the loop's entry state stays
    return held, longest, runs / max(n, 1)


@pytest.mark.parametrize('n', [1, 2, 3, 7, 10, 99, 100, 101, 1000, 4097])
@pytest.mark.parametrize('policy', [True, 1, 2, 3, 5, 50])
@pytest.mark.parametrize('counted', [False, True], ids=['range', 'while'])
def test_schedule_reverses_every_trip_once(n, policy, counted):
    held, longest, _ = _run_schedule(n, policy, counted)
    if policy is not True:
        assert held <= policy + 1 + counted
    if policy is True:
        assert held <= 2 * math.isqrt(n) + 2 and longest <= 2 * math.isqrt(n) + 2


def test_schedule_costs():
    """One rerun per trip with a snapshot per chunk; binomial with 10 snapshots reverses
    a million trips in 11 snapshots and chunks of 1000 trips, each trip run under 6 times."""
    assert _run_schedule(10 ** 6, True, False) == (1000, 1000, 2.0)
    held, longest, runs = _run_schedule(10 ** 6, 10, False)
    assert held == 11 and longest == 1000 and runs < 6


def test_policy_is_checked():
    with pytest.raises(ValueError, match='checkpoint= takes True'):
        tf.grad(lambda x: x, checkpoint=0)
    with pytest.raises(ValueError, match='checkpoint= takes True'):
        tf.grad(lambda x: x, checkpoint='sqrt')


# ------------------------------------------------------------------ gradients

def scalar_loop(x, n):
    s = 0.0
    for i in range(n):
        x = math.sin(x) * x + 0.5 * x
        s = s + x * i
    k = 0
    while k < 9 and x > -10.0:
        x = x * 0.9 + 0.01 * x * x
        k += 1
    return s + x


def cell(h, x, W):
    return np.tanh(h @ W + x)


def rnn(W, b, xs, h):
    for t in range(xs.shape[0]):
        h = cell(h, xs[t], W) + b
        if t % 3 == 0:
            h = h * 0.5
        for j in range(2):
            h = h + 0.1 * np.sin(h)
    return np.sum(h * h)


@pytest.mark.parametrize('policy', POLICIES)
@pytest.mark.parametrize('n', [0, 1, 2, 5, 17, 64])
def test_scalar_loops_equal_the_plain_tape(policy, n):
    plain = tf.value_and_grad(scalar_loop)(0.7, n)
    checkpointed = tf.value_and_grad(scalar_loop, checkpoint=policy)(0.7, n)
    np.testing.assert_allclose(checkpointed, plain, rtol=1e-13, atol=0)
    check_gradient(scalar_loop, [checkpointed[1]], (0.7, n), (0,), np.random.default_rng(n))


@pytest.mark.parametrize('policy', POLICIES)
def test_loops_with_calls_branches_and_inner_loops(policy):
    rng = np.random.default_rng(1)
    W, b = 0.4 * rng.standard_normal((4, 4)), 0.1 * rng.standard_normal(4)
    args = (W, b, rng.standard_normal((23, 3, 4)), rng.standard_normal((3, 4)))
    plain = tf.value_and_grad(rnn, argnums=(0, 1, 3))(*args)
    value, grads = tf.value_and_grad(rnn, argnums=(0, 1, 3), checkpoint=policy)(*args)
    np.testing.assert_allclose(value, plain[0], rtol=1e-13)
    for g, p in zip(grads, plain[1]):
        np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-15)
    check_gradient(rnn, list(grads), args, (0, 1, 3), rng)


def _checkpointed_source(fn, args, policy=True):
    from tapeflow import api
    return api.compile_adjoint(fn, (0,), scalar_args=api.scalar_positions(args),
                               arg_shapes=api.array_shapes(args),
                               kinds=api.argument_kinds(args), checkpoint=policy).source


def test_generated_code_keeps_snapshots_not_trips():
    text = _checkpointed_source(scalar_loop, (0.7, 5))
    assert '_ck = checkpoints(len(_range), True)' in text
    assert '_ck2 = checkpoints(None, True)' in text
    assert 'for _a, _b in _ck.forward():' in text
    assert 'for _act, _a, _b in _ck.backward():' in text
    assert 'len(_range))' not in text.replace('checkpoints(len(_range)', '')   # no trip pushes
    forward = text.split('_value = ')[0]
    assert forward.count('_push(') == 0                # the forward sweep keeps no tape


@pytest.mark.parametrize('case', [c for c in CASES], ids=lambda c: c.name)
def test_corpus_loops_equal_the_plain_tape(case):
    """Every corpus function: checkpointed, the plain tape's gradient to rounding, or
    refused where its loop is written (in-place writes, early exits, other iterables)."""
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    plain = tf.grad(case.fn, argnums=case.wrt)(*args)
    for policy in (True, 2):
        try:
            grads = tf.grad(case.fn, argnums=case.wrt, checkpoint=policy)(*args)
        except tf.UnsupportedError as error:
            assert 'cannot checkpoint this loop' in str(error)
            assert str(error).startswith(case.fn.__code__.co_filename + ':')
            continue
        for g, p in zip(grads, plain):
            np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-14)


def test_corpus_has_checkpointed_loops():
    """The test above is not vacuous: most corpus loops are checkpointed."""
    rng = np.random.default_rng(0)
    checkpointed = 0
    for case in CASES:
        try:
            text = _checkpointed_source(case.fn, case.args(rng))
        except tf.UnsupportedError:
            continue
        checkpointed += 'checkpoints(' in text
    assert checkpointed >= 10


# ------------------------------------------------------------------ refusals

def appends(x):
    ys = [x]
    for i in range(5):
        ys.append(ys[-1] * x + i)
    zs = [v * v for v in ys]
    return ys[0] + ys[2] + zs[4]


@pytest.mark.parametrize('policy', POLICIES)
def test_loops_appending_to_lists(policy):
    """A snapshot keeps the length of the lists the loop appends to (comprehensions too)."""
    text = _checkpointed_source(appends, (0.5,), policy)
    assert text.count('checkpoints(') == 2 and '_ck.trim(_a, (ys,))' in text
    g = tf.grad(appends, checkpoint=policy)(0.5)
    assert g == pytest.approx(tf.grad(appends)(0.5), rel=1e-13)
    check_gradient(appends, [g], (0.5,), (0,), np.random.default_rng(3))


def pops(x):
    ys = [x, 2.0 * x, 3.0 * x]
    s = 0.0
    for i in range(2):
        s = s + ys.pop()
    return s


def writes(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = x * i
    return np.sum(y)


def breaks(x):
    for i in range(10):
        x = x * 1.1
        if x > 2.0:
            break
    return x


def over_a_list(x):
    for v in [1.0, 2.0]:
        x = x * v
    n = 0.0
    for i in range(4):                  # no derivative flows: no tape, left as it is
        n = n + i
    return x * n


def test_loops_over_lists_and_loops_without_tape():
    assert tf.grad(over_a_list, checkpoint=True)(0.5) == tf.grad(over_a_list)(0.5) == 12.0
    text = _checkpointed_source(over_a_list, (0.5,))
    assert text.count('checkpoints(') == 1 and 'for i in _range2:' in text


def _scale(v, c):
    v *= c


def calls_a_writer(x):
    for i in range(2):
        _scale(x, np.sum(x))               # found by the fuzzer: a variant inside the loop
    return np.sum(x * x)


def written_after_the_loop(x, y):
    """Found by the fuzzer: `x[0] = 2.0` after the loop changes what a rerun of the loop
    reads, and the plain reverse sweep, which never rereads `x`, restores nothing."""
    rows = []
    for i in range(2):
        rows.append(x / (1.0 + y ** 2))
    x[0] = 2.0
    return np.sum(x * x) + np.sum(rows[0] * rows[-1])


def test_memory_written_after_the_loop_is_refused():
    x = np.array([1.13, 0.77, 0.54])
    line = written_after_the_loop.__code__.co_firstlineno + 6           # `x[0] = 2.0`
    with pytest.raises(tf.UnsupportedError, match=f'line {line} writes into memory after it'):
        tf.grad(written_after_the_loop, argnums=(0, 1), checkpoint=True)(x.copy(), 0.5)


def appends_through_an_alias(xs):
    """Found by the fuzzer (seed 90909, program 412): the snapshot kept the length of the
    list `ys` held before the loop, not of `xs`, which the loop grows through `ys`."""
    for i in range(1):
        ys = xs
        ys.append(2.0)
    return sum(ys)


def appends_to_a_fresh_row(x):
    total = 0.0
    for i in range(3):
        row = []
        row.append(x * i)
        row.append(row[0] * x)
        total = total + row[-1]
    return total


@pytest.mark.parametrize('policy', POLICIES)
def test_a_list_made_in_the_loop_may_grow_there(policy):
    g = tf.grad(appends_to_a_fresh_row, checkpoint=policy)(0.7)
    assert g == pytest.approx(tf.grad(appends_to_a_fresh_row)(0.7), rel=1e-13)
    check_gradient(appends_to_a_fresh_row, [g], (0.7,), (0,), np.random.default_rng(4))


@pytest.mark.parametrize('fn, why', [
    (appends_through_an_alias, 'it appends to ys, which it rebinds here to a list made before it'),
    (calls_a_writer, 'the function it calls writes into its arguments'),
    (pops, '.pop() changes its object in place'),
    (writes, 'writes into memory in place'),
    (breaks, 'it may exit early'),
])
def test_refused_where_written(fn, why):
    with pytest.raises(tf.UnsupportedError, match=re.escape(why)) as info:
        tf.grad(fn, checkpoint=True)(np.ones(3) if fn is calls_a_writer else
                                     [1.0, 2.0, 3.0] if fn is appends_through_an_alias else 0.5)
    assert str(info.value).startswith(f'{__file__}:')


# ------------------------------------------------------------------ memory

def long_loop(x, n):
    for i in range(n):
        x = math.sin(x) * x + 0.5 * x
    return x


def _peak(fn, *args):
    tracemalloc.start()
    try:
        result = fn(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_bounded():
    """100 000 trips: the plain tape holds every trip, the checkpointed one ~2 sqrt(n)."""
    def compiled(policy):
        g = tf.value_and_grad(long_loop, checkpoint=policy)
        g(0.3, 3)                       # compiling is not the loop's memory
        return g
    plain, plain_peak = _peak(compiled(None), 0.3, 100_000)
    for policy in (True, 8):
        checkpointed, peak = _peak(compiled(policy), 0.3, 100_000)
        assert checkpointed == plain
        assert peak < 0.05 * plain_peak, (peak, plain_peak)


# ------------------------------------------------------------------ tf.checkpoint on a function

def _step(h, x, W):
    a = h @ W + x
    return np.tanh(a) * 0.9 + 0.1 * np.sin(a)


step = tf.checkpoint(_step)


def rnn_checkpointed_steps(W, xs, h):
    for t in range(xs.shape[0]):
        h = step(h, xs[t], W)
    return np.sum(h * h)


def rnn_taped_steps(W, xs, h):
    for t in range(xs.shape[0]):
        h = _step(h, xs[t], W)
    return np.sum(h * h)


@pytest.mark.parametrize('policy', [None, True, 2])
def test_checkpointed_function_equals_the_taped_one(policy):
    rng = np.random.default_rng(4)
    args = (0.5 * rng.standard_normal((4, 4)), rng.standard_normal((6, 3, 4)),
            rng.standard_normal((3, 4)))
    value, grads = tf.value_and_grad(rnn_checkpointed_steps, argnums=(0, 2), checkpoint=policy)(*args)
    plain = tf.value_and_grad(rnn_taped_steps, argnums=(0, 2))(*args)
    assert value == plain[0]
    for g, p in zip(grads, plain[1]):
        np.testing.assert_array_equal(g, p)
    check_gradient(rnn_checkpointed_steps, list(grads), args, (0, 2), rng)


def test_checkpointed_function_is_recomputed_in_the_reverse_sweep():
    rng = np.random.default_rng(5)
    args = (np.eye(4), rng.standard_normal((2, 3, 4)), np.zeros((3, 4)))
    text = tf.source(rnn_checkpointed_steps, argnums=(0, 2), args=args).split('\n\n')[0]
    forward, reverse = text.split('_value = ')
    assert 'h = step(h, _item2, W)' in forward and '_forward' not in forward
    assert '_h = _step_forward(_tape, h, _item2, W)' in reverse
    assert reverse.index('h = _hs[') < reverse.index('_step_forward') < reverse.index('_step_backward')


def test_checkpoint_outside_a_gradient_is_the_function():
    x, W = np.ones((3, 4)), np.eye(4)
    np.testing.assert_array_equal(step(x, x, W), _step(x, x, W))
    assert step.__name__ == '_step' and step is not _step
    with pytest.raises(TypeError, match='tf.checkpoint takes a Python function'):
        tf.checkpoint(np.sin)


@tf.checkpoint
def _scaled_sum(v, c):
    v *= c
    return np.sum(v)


def calls_a_checkpointed_writer(x):
    return _scaled_sum(x, 2.0) * np.sum(x)


def test_checkpointed_function_writing_into_its_arguments_is_refused():
    with pytest.raises(tf.UnsupportedError, match=re.escape(
            '_scaled_sum() is checkpointed (tf.checkpoint) and writes into its arguments')) as info:
        tf.grad(calls_a_checkpointed_writer)(np.ones(3))
    assert str(info.value).startswith(f'{__file__}:')


def rebinds_an_input_after_the_loop(x):
    """Found by the fuzzer: `s` is only read in the loop and rebound after it; the plain
    reverse sweep never needs its old value (no tape entry), the rerun of the loop does."""
    a = np.sin(x)
    s = np.sum(x) + 2.0
    for i in range(3):
        ys = []
        for j in range(2):
            ys.append(np.tanh(s) * j)
    s = 2.0
    return s + sum(ys) + np.sum(a * a)


@pytest.mark.parametrize('policy', POLICIES)
def test_inputs_of_the_loop_are_in_its_snapshots(policy):
    x = np.array([1.13, 0.77, 0.54])
    plain = tf.grad(rebinds_an_input_after_the_loop)(x)
    np.testing.assert_array_equal(tf.grad(rebinds_an_input_after_the_loop, checkpoint=policy)(x), plain)
    check_gradient(rebinds_an_input_after_the_loop, [plain], (x,), (0,), np.random.default_rng(2))


# ------------------------------------------------------------------ the loop marker

def marked_loop(x, n):
    s = 0.0
    for j in range(3):
        s = s + x * j
    for i in tf.checkpoint(range(n)):
        x = math.sin(x) * x + 0.5 * x
    return x + s


def marked_loop_over_a_list(x):
    for v in tf.checkpoint(range(4)):
        x = x * (1.0 + 0.1 * v)
    return x


def test_marked_loop_alone_is_checkpointed():
    text = tf.source(marked_loop, args=(0.7, 10))
    assert text.count('checkpoints(') == 1 and '_ck = checkpoints(len(_range2), True)' in text
    assert 'for j in _range:' in text                      # the unmarked loop keeps its tape
    g = tf.grad(marked_loop)(0.7, 10)
    assert g == tf.grad(marked_loop, checkpoint=True)(0.7, 10)
    check_gradient(marked_loop, [g], (0.7, 10), (0,), np.random.default_rng(8))
    assert tf.grad(marked_loop_over_a_list)(0.5) == pytest.approx(np.prod(1.0 + 0.1 * np.arange(4)))


def test_marker_outside_a_gradient_is_the_range():
    assert tf.checkpoint(range(3)) == range(3)
    assert marked_loop(0.7, 10) == tf.value_and_grad(marked_loop)(0.7, 10)[0]


def marked_loop_that_breaks(x):
    for i in tf.checkpoint(range(10)):
        x = x * 1.1
        if x > 2.0:
            break
    return x


def test_marked_loop_that_cannot_be_checkpointed_is_refused():
    with pytest.raises(tf.UnsupportedError, match='it may exit early') as info:
        tf.grad(marked_loop_that_breaks)(0.5)
    assert str(info.value).startswith(f'{__file__}:')
