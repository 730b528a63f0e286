"""The disk cache: a second process loads what the first compiled, and never a doubtful entry.

Processes are real (`subprocess`) where the point is another process; the
rest runs here, with the in-memory cache cleared so that the next request
goes to the disk, as a new process's would.
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache, disk_cache, disk_key
from tests.gradcheck import check_gradient
from tests.user_module import write_module

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src'

MODEL = '''\
import numpy as np

SCALE = 2.0


def helper(v):
    return np.sin(v) * SCALE


def f(x, w):
    y = helper(x) * w
    return np.sum(y * y) + np.sum(x * x)


def bad(x):
    y = np.log(x)
    return y[7]
'''

SCRIPT = '''\
import json, os, sys, time
import numpy as np
import tapeflow as tf
import model
barrier = os.environ.get('BARRIER')
while barrier and not os.path.exists(barrier):
    time.sleep(0.005)
x = np.linspace(0.1, 1.0, 5)
w = np.arange(5.0)
g = tf.grad(model.f)(x, w)
try:
    tf.grad(model.bad)(x)
    error = None
except IndexError as e:
    error = str(e)
print(json.dumps({'grad': g.tolist(), 'error': error, 'stats': tf.cache.stats,
                  'dir': tf.disk_cache.cache_dir()}))
'''

X, W = np.linspace(0.1, 1.0, 5), np.arange(5.0)
SINES = 'import numpy as np\n\n\ndef f(x):\n    return np.sum(np.sin(x))\n'


def _env(folder, cache_dir=None, **extra):
    env = {k: v for k, v in os.environ.items() if k != 'TAPEFLOW_CACHE_DIR'}
    env['PYTHONPATH'] = os.pathsep.join([str(SRC), str(folder)])
    env['PYTHONDONTWRITEBYTECODE'] = '1'          # nothing but the cache writes files
    if cache_dir is not None:
        env['TAPEFLOW_CACHE_DIR'] = str(cache_dir)
    env.update(extra)
    return env


def _start(folder, cache_dir=None, **extra):
    return subprocess.Popen([sys.executable, '-c', SCRIPT], cwd=folder,
                            env=_env(folder, cache_dir, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process):
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _check(f, grad, *args):
    """`grad` (of `f`'s first argument) agrees with central differences along random directions."""
    check_gradient(f, [np.asarray(grad)], args, (0,), np.random.default_rng(0))


@pytest.fixture
def disk(tmp_path):
    """The disk cache on, in a folder of this test's; off again afterwards."""
    before = disk_cache.cache_dir()
    folder = tmp_path / 'cache'
    tf.set_cache_dir(folder)
    cache.clear()
    yield folder
    tf.set_cache_dir(before)
    cache.clear()


def _counts(call):
    """(disk hits, compilations) of `call()` after the in-memory cache is cleared."""
    cache.clear()
    call()
    return cache.stats['disk_hits'], cache.stats['compiles']


# ------------------------------------------------------------------ other processes

def test_a_second_process_loads_what_the_first_compiled_and_compiles_nothing(tmp_path):
    (tmp_path / 'model.py').write_text(MODEL)
    first = _result(_start(tmp_path, tmp_path / 'cache'))
    second = _result(_start(tmp_path, tmp_path / 'cache'))
    assert first['stats']['compiles'] >= 2 and first['stats']['disk_writes'] >= 2
    assert second['stats']['compiles'] == 0 and second['stats']['disk_hits'] >= 2
    assert second['grad'] == first['grad']
    model = write_module(tmp_path, 'model_here', MODEL)
    _check(model.f, second['grad'], X, W)
    # errors of loaded code name the user's line, as those of fresh code do
    assert second['error'] == first['error'] and 'model.py:17:12:' in second['error']
    assert second['dir'] == str(tmp_path / 'cache')


def test_off_by_default_nothing_is_written(tmp_path):
    (tmp_path / 'model.py').write_text(MODEL)
    before = set(os.listdir(tmp_path))
    result = _result(_start(tmp_path))
    assert result['dir'] is None and result['stats']['disk_writes'] == 0
    assert result['stats']['disk_hits'] == result['stats']['disk_misses'] == 0
    assert set(os.listdir(tmp_path)) == before


def test_two_processes_racing_on_one_entry_both_get_the_right_gradient(tmp_path):
    (tmp_path / 'model.py').write_text(MODEL)
    barrier = tmp_path / 'go'
    racers = [_start(tmp_path, tmp_path / 'cache', BARRIER=str(barrier)) for _ in range(2)]
    time.sleep(0.5)                   # both imported tapeflow and wait
    barrier.write_text('')
    results = [_result(p) for p in racers]
    model = write_module(tmp_path, 'model_race', MODEL)
    for result in results:
        _check(model.f, result['grad'], X, W)
    assert results[0]['grad'] == results[1]['grad']
    # what is left on disk is whole: a third reader loads it
    third = _result(_start(tmp_path, tmp_path / 'cache'))
    assert third['stats']['compiles'] == 0 and third['grad'] == results[0]['grad']
    assert not [n for n in os.listdir(tmp_path / 'cache') if n.endswith('.tmp')]


# ------------------------------------------------------------------ what makes a new key

def test_an_entry_written_is_read_back(disk, tmp_path):
    model = write_module(tmp_path, 'dc_same', MODEL)
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (0, 2)      # f and helper compiled
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (2, 0)      # both read
    _check(model.f, tf.grad(model.f)(X, W), X, W)
    assert _counts(lambda: tf.jvp(model.f, (X, W), (np.ones(5), np.zeros(5)))) == (0, 2)
    assert _counts(lambda: tf.jvp(model.f, (X, W), (np.ones(5), np.zeros(5)))) == (2, 0)


def test_a_changed_source_misses(disk, tmp_path):
    model = write_module(tmp_path, 'dc_source', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    edited = write_module(tmp_path, 'dc_source', MODEL.replace('np.sum(x * x)', 'np.sum(x * x * x)'))
    hits, compiles = _counts(lambda: tf.grad(edited.f)(X, W))
    assert (hits, compiles) == (1, 1)                       # helper read, f compiled
    _check(edited.f, tf.grad(edited.f)(X, W), X, W)


def test_a_changed_callee_source_misses(disk, tmp_path):
    model = write_module(tmp_path, 'dc_callee', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    edited = write_module(tmp_path, 'dc_callee', MODEL.replace('np.sin(v) * SCALE', 'np.cos(v) * SCALE'))
    assert _counts(lambda: tf.grad(edited.f)(X, W)) == (0, 2)
    _check(edited.f, tf.grad(edited.f)(X, W), X, W)


def test_a_rebound_global_misses_and_its_old_value_hits_again(disk, tmp_path):
    model = write_module(tmp_path, 'dc_global', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    model.SCALE = 3.0
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (0, 2)      # f's key describes helper's globals
    _check(model.f, tf.grad(model.f)(X, W), X, W)
    model.SCALE = 2.0
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (2, 0)


def test_a_global_rebound_to_another_function_misses(disk, tmp_path):
    model = write_module(tmp_path, 'dc_function', MODEL + '\n\ndef other(v):\n    return np.tanh(v)\n')
    _counts(lambda: tf.grad(model.f)(X, W))
    model.helper = model.other
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (0, 2)
    _check(model.f, tf.grad(model.f)(X, W), X, W)


def test_a_loaded_entry_goes_stale_like_a_compiled_one(disk, tmp_path):
    model = write_module(tmp_path, 'dc_stale', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    grad = tf.grad(model.f)
    assert _counts(lambda: grad(X, W)) == (2, 0)
    model.SCALE = 5.0                    # the in-memory entries read from disk are stale now
    _check(model.f, grad(X, W), X, W)


def test_a_changed_shape_misses(disk, tmp_path):
    model = write_module(tmp_path, 'dc_shape', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    x, w = np.linspace(0.1, 1.0, 7), np.arange(7.0)
    assert _counts(lambda: tf.grad(model.f)(x, w))[0] < 2
    _check(model.f, tf.grad(model.f)(x, w), x, w)


def test_a_changed_closure_value_misses(disk, tmp_path):
    model = write_module(tmp_path, 'dc_closure', textwrap.dedent('''\
        import numpy as np

        def make(k):
            def f(x):
                return np.sum(np.sin(x) * k)
            return f
        '''))
    _counts(lambda: tf.grad(model.make(2.0))(X))
    assert _counts(lambda: tf.grad(model.make(3.0))(X)) == (0, 1)
    np.testing.assert_allclose(tf.grad(model.make(3.0))(X), 3.0 * np.cos(X))
    assert _counts(lambda: tf.grad(model.make(2.0))(X)) == (1, 0)      # a new closure, the same value


def test_a_new_tapeflow_version_misses(disk, tmp_path, monkeypatch):
    model = write_module(tmp_path, 'dc_version', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    monkeypatch.setattr(disk_key, '_ENVIRONMENT', [])        # computed again, with:
    monkeypatch.setattr(tf, '__version__', '999.0.0')
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (0, 2)


def test_a_users_rule_is_part_of_the_key(disk, tmp_path):
    model = write_module(tmp_path, 'dc_rules', MODEL)
    _counts(lambda: tf.grad(model.f)(X, W))
    tf.defvjp(model.helper, lambda g, ans, v: g * np.cos(v) * model.SCALE)
    assert _counts(lambda: tf.grad(model.f)(X, W)) == (0, 1)       # helper is a primitive now
    _check(model.f, tf.grad(model.f)(X, W), X, W)


# ------------------------------------------------------------------ files, and what is not cached

def _only_entry(folder):
    (path,) = [folder / n for n in os.listdir(folder) if n.endswith('.tapeflow')]
    return path


@pytest.mark.parametrize('damage', ['truncate', 'flip', 'empty', 'foreign'])
def test_a_damaged_or_foreign_file_is_a_miss(disk, tmp_path, damage):
    model = write_module(tmp_path, f'dc_damage_{damage}', SINES)
    _counts(lambda: tf.grad(model.f)(X))
    path = _only_entry(disk)
    data = path.read_bytes()
    if damage == 'truncate':
        path.write_bytes(data[:len(data) // 2])
    elif damage == 'flip':
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 1]) + data[-9:])
    elif damage == 'empty':
        path.write_bytes(b'')
    else:                                   # a whole file, written for another key
        other = write_module(tmp_path, f'dc_other_{damage}', SINES.replace('sin', 'cos'))
        _counts(lambda: tf.grad(other.f)(X))
        (other_path,) = [p for p in disk.iterdir() if p.suffix == '.tapeflow' and p != path]
        path.write_bytes(other_path.read_bytes())
    assert _counts(lambda: tf.grad(model.f)(X)) == (0, 1)
    np.testing.assert_allclose(tf.grad(model.f)(X), np.cos(X))
    assert _counts(lambda: tf.grad(model.f)(X)) == (1, 0)          # written again, whole


def test_what_cannot_be_described_is_compiled_as_without_the_cache(disk, tmp_path):
    model = write_module(tmp_path, 'dc_opaque', textwrap.dedent('''\
        import numpy as np

        BIG = np.ones(200_000)                # 1.6 MB: not hashed on every lookup

        class Box:
            def __init__(self, k):
                self.k = k

        BOX = Box(2.0)

        def big(x):
            return np.sum(x * x) * BIG[0]

        def boxed(x):
            return np.sum(x * x) * BOX.k
        '''))
    for fn in (model.big, model.boxed):
        assert _counts(lambda: tf.grad(fn)(X)) == (0, 1)
    np.testing.assert_allclose(tf.grad(model.boxed)(X), 4.0 * X)
    assert cache.stats['disk_writes'] == 0 and not list(disk.glob('*.tapeflow'))


def test_a_name_read_only_as_an_attribute_needs_no_description(disk, tmp_path):
    model = write_module(tmp_path, 'dc_attribute', textwrap.dedent('''\
        import typing

        import numpy as np

        T = typing.TypeVar('T')              # no description: a function reading it is not cached


        def transposed(x):
            return np.sum(x.T * x.T)         # `.T`, an attribute: not the global


        def reads_t(x):
            return np.sum(x * x) if T is not None else 0.0
        '''))
    x = np.arange(6.0).reshape(2, 3)
    assert _counts(lambda: tf.grad(model.transposed)(x)) == (0, 1)
    assert _counts(lambda: tf.grad(model.transposed)(x)) == (1, 0)
    assert _counts(lambda: tf.grad(model.reads_t)(x)) == (0, 1)
    assert _counts(lambda: tf.grad(model.reads_t)(x)) == (0, 1)
    np.testing.assert_allclose(tf.grad(model.transposed)(x), 2 * x)


def test_set_cache_dir_none_turns_it_off(disk, tmp_path):
    model = write_module(tmp_path, 'dc_off', SINES)
    tf.set_cache_dir(None)
    assert disk_cache.cache_dir() is None
    _counts(lambda: tf.grad(model.f)(X))
    assert not disk.exists() and cache.stats['disk_misses'] == 0
    with pytest.raises(TypeError):
        tf.set_cache_dir(3)


def test_lambdas_sharing_a_line_and_recursion_are_read_back_as_themselves(disk, tmp_path):
    model = write_module(tmp_path, 'dc_lambdas', textwrap.dedent('''\
        square = lambda x: x * x; cube = lambda x: x * x * x  # noqa: E702,E731


        def power(x, n):
            if n == 0:
                return 1.0
            return x * power(x, n - 1)
        '''))
    for _ in range(2):
        cache.clear()
        assert tf.grad(model.square)(3.0) == 6.0 and tf.grad(model.cube)(2.0) == 12.0
        assert tf.grad(model.power)(2.0, 3) == 12.0
    assert cache.stats['compiles'] == 0 and cache.stats['disk_hits'] >= 3
