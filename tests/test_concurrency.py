"""Compiling from many threads at once: every thread gets finished, right code.

Each round clears the cache, then eight threads, started together by a
barrier, differentiate the same fifty not-yet-compiled functions (loops,
branches, helper calls, recursion, arrays); every gradient is checked against
central differences.
"""
import importlib
import sys
import threading
import types

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tests.gradcheck import check_gradient, seed_of

THREADS = 8
ROUNDS = 3

# Five shapes of function, ten variants of each (the constant `c` differs), so
# that fifty distinct functions compile: scalar loops with branches, helper
# calls (shared by many), self-recursion, mutual recursion, array code.
TEMPLATES = [
    '''
def scalar_{i}(x):
    s = 0.0
    for k in range(4):
        if x * k > {c}:
            s = s + x * x * {c}
        else:
            s = s - x * k
    return s
''',
    '''
def calls_{i}(x):
    return helper_square(x * {c}) + helper_twice(x) * helper_square(x)
''',
    '''
def recursive_{i}(x, n):
    if n == 0:
        return x * {c}
    return x * recursive_{i}(x, n - 1) + 1.0
''',
    '''
def even_{i}(x, n):
    if n == 0:
        return x
    return odd_{i}(x * {c}, n - 1)


def odd_{i}(x, n):
    if n == 0:
        return x * x
    return even_{i}(x + 0.5 * x * x, n - 1)
''',
    '''
def arrays_{i}(w):
    h = np.tanh(w * {c})
    total = 0.0
    for row in range(w.shape[0]):
        total = total + np.sum(h[row] * h[row])
    return total + np.sum(np.exp(-w * w)) + helper_square(np.sum(w))
''',
]

PRELUDE = '''
import numpy as np


def helper_square(x):
    return x * x


def helper_twice(x):
    return helper_square(x) + 2.0 * x
'''


@pytest.fixture(scope='module')
def generated(tmp_path_factory):
    """The module of fifty functions, and (name, function, args) for each."""
    folder = tmp_path_factory.mktemp('concurrency')
    parts = [PRELUDE]
    for i in range(10):
        c = 0.5 + 0.17 * i
        parts.extend(t.format(i=i, c=c) for t in TEMPLATES)
    (folder / 'many_functions.py').write_text(''.join(parts))
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module('many_functions')
    finally:
        sys.path.remove(str(folder))
    rng = np.random.default_rng(seed_of('concurrency'))
    cases = []
    for i in range(10):
        x = float(rng.uniform(0.2, 0.9))
        cases.append((f'scalar_{i}', (x,)))
        cases.append((f'calls_{i}', (x,)))
        cases.append((f'recursive_{i}', (x, 3)))
        cases.append((f'even_{i}', (x, 4)))
        cases.append((f'arrays_{i}', (rng.standard_normal((3, 4)),)))
    yield module, [(name, getattr(module, name), args) for name, args in cases]
    sys.modules.pop('many_functions', None)


def _race(work, count=THREADS, timeout=240):
    """Run `work(k)` in `count` threads started together; the errors they raised."""
    barrier = threading.Barrier(count)
    errors = []

    def run(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as e:        # noqa: BLE001 (reported below)
            errors.append(f'{type(e).__name__}: {e}')

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), 'a thread is stuck (deadlock?)'
    return errors


def test_eight_threads_compile_fifty_functions_at_once(generated):
    module, cases = generated
    for round_ in range(ROUNDS):
        cache.clear()
        results = [dict() for _ in range(THREADS)]

        def work(k):
            # half the threads in the same order (they want the same function at
            # the same moment), half each in an order of its own
            order = range(len(cases)) if k % 2 == 0 else \
                np.random.default_rng(round_ * THREADS + k).permutation(len(cases))
            for j in order:
                name, fn, args = cases[j]
                results[k][name] = tf.grad(fn)(*args)

        errors = _race(work)
        assert errors == []
        for name, fn, args in cases:
            grads = [results[k][name] for k in range(THREADS)]
            for g in grads[1:]:
                assert np.array_equal(g, grads[0]), name
            rng = np.random.default_rng(seed_of(name))
            check_gradient(fn, [grads[0]], args, (0,), rng, rtol=1e-5, atol=1e-7)
            assert tf.value_and_grad(fn)(*args)[0] == pytest.approx(fn(*args))


def test_mutual_recursion_begun_from_both_ends_at_once(generated):
    """One thread compiles even_i (which needs odd_i), another odd_i (which needs even_i)."""
    module, _ = generated
    for round_ in range(ROUNDS):
        cache.clear()
        got = {}

        def work(k):
            i, which = divmod(k, 2)
            fn = getattr(module, ('even_' if which == 0 else 'odd_') + str(i))
            got[k] = tf.grad(fn)(0.4, 5)

        assert _race(work) == []
        for k, g in got.items():
            i, which = divmod(k, 2)
            fn = getattr(module, ('even_' if which == 0 else 'odd_') + str(i))
            check_gradient(fn, [g], (0.4, 5), (0,), np.random.default_rng(k))


# ------------------------------------------------------- the cache on its own

def _fake_fn(name):
    """A distinct function object (its own __code__) to key the cache on."""
    namespace = {}
    exec(compile(f'def {name}():\n    pass\n', f'<{name}>', 'exec'), namespace)
    return namespace[name]


def _entry(fn):
    return types.SimpleNamespace(fn=fn, bindings=None, callees=[], finished=False)


def test_a_cycle_between_two_threads_does_not_deadlock():
    """Thread A builds f and then needs g; thread B builds g and then needs f. The
    second to ask closes a cycle and builds a private copy instead of waiting."""
    f, g = _fake_fn('cycle_f'), _fake_fn('cycle_g')
    both_started = threading.Barrier(2)
    results, builds = {}, []

    def builder(fn, other):
        def build(cell):
            cell.compiled = entry = _entry(fn)
            builds.append(fn.__name__)
            if len(builds) <= 2:          # the two first builds; not the private copy
                both_started.wait()
            entry.callee = cache.get_or_compile(other, 'k', builder(other, fn))
            entry.finished = True
            return entry
        return build

    def work(k):
        fn, other = (f, g) if k == 0 else (g, f)
        results[k] = cache.get_or_compile(fn, 'k', builder(fn, other))

    cache.clear()
    assert _race(work, count=2, timeout=30) == []
    assert results[0].finished and results[1].finished
    assert results[0].callee.finished and results[1].callee.finished
    assert results[0].fn is f and results[1].fn is g
    assert sorted(builds[:2]) == ['cycle_f', 'cycle_g'] and len(builds) == 3   # one private copy


def test_other_threads_wait_for_the_entry_being_compiled():
    fn = _fake_fn('waited_for')
    started, release = threading.Event(), threading.Event()
    builds, seen = [], []

    def build(cell):
        cell.compiled = entry = _entry(fn)
        builds.append(1)
        started.set()
        release.wait(10)
        entry.finished = True
        return entry

    cache.clear()
    first = threading.Thread(target=lambda: seen.append(cache.get_or_compile(fn, 'k', build)))
    first.start()
    started.wait(10)
    others = [threading.Thread(target=lambda: seen.append(cache.get_or_compile(fn, 'k', build)))
              for _ in range(4)]
    for t in others:
        t.start()
    assert cache.lookup(fn, 'k') is None           # not finished: not shown to anyone
    release.set()
    for t in [first] + others:
        t.join(10)
    assert builds == [1]
    assert len(seen) == 5 and all(e is seen[0] and e.finished for e in seen)


def test_a_failed_compilation_wakes_the_waiters_and_leaves_nothing():
    fn = _fake_fn('fails_once')
    started, release = threading.Event(), threading.Event()
    attempts, seen, errors = [], [], []

    def build(cell):
        cell.compiled = entry = _entry(fn)
        attempts.append(1)
        if len(attempts) == 1:
            started.set()
            release.wait(10)
            raise ValueError('first attempt fails')
        entry.finished = True
        return entry

    def call():
        try:
            seen.append(cache.get_or_compile(fn, 'k', build))
        except ValueError as e:
            errors.append(str(e))

    cache.clear()
    first = threading.Thread(target=call)
    first.start()
    started.wait(10)
    second = threading.Thread(target=call)
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert errors == ['first attempt fails']
    assert len(attempts) == 2 and len(seen) == 1 and seen[0].finished
    assert cache.lookup(fn, 'k') is seen[0]
