"""`compile='numba'` (`transforms.native`): the same numbers as the NumPy path, or a
located error before anything runs; `compile='auto'` falls back with one warning."""
import copy
import math
import warnings

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.compilation as compilation
from tapeflow.errors import NativeFallbackWarning, UnsupportedError
from tests.corpus import CASES
from tests.gradcheck import check_gradient, seed_of

numba = pytest.importorskip('numba', reason="the native path needs Numba (pip install "
                                            "'tapeflow[numba]'): not installed here")

COMPILED = []          # names of the corpus cases Numba compiled


def scalar_loop(x):
    for i in range(100):
        x = math.sin(x) * x + 0.5 * x
    return x


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def branchy(x, y):
    for i in range(7):
        if x > y:
            x = x * 0.9 - y
        else:
            x = math.exp(-x) + y * x
    return x * y


def matmul_sum(a, b):
    return np.sum(np.tanh(a @ b) * (a @ b))


def matrix_vector(W, x, v):
    return np.sum(np.tanh(W @ x) * v) + np.sum((v @ W) * x) + np.tanh(x @ x)


def bias_and_column(x, b, c):
    return np.sum(np.tanh(x + b) * x) + np.sum(np.sin(x * c))


def scaled(x, s):
    return np.sum(np.exp(x * s)) / 7.0


def mean_then_square(x):
    m = np.mean(np.sin(x) * x)
    return m * m


def symbolic_zero_in_a_loop(x, w):
    for i in range(3):
        x = np.tanh(x * w) + x
    return np.sum(x)


def implicit_euler(y, k):
    """A Newton solve to a tolerance in every step: a `while` inside a `for`."""
    t, h = 0.0, 0.05
    for n in range(10):
        z = y
        r = z - y - h * (k * math.sin(t + h) - z * z * z)
        while abs(r) > 1e-12:
            z = z - r / (1.0 + 3.0 * h * z * z)
            r = z - y - h * (k * math.sin(t + h) - z * z * z)
        y = z
        t = t + h
    return y


def gravity(pos, vel, m):
    """Arrays of (bodies, 3): pairwise differences by None-indexing, sums along an
    axis, sqrt and a power; the adjoint of `vel` starts as the symbolic zero 0.0."""
    for step in range(4):
        d = pos[None, :, :] - pos[:, None, :]
        r = np.sqrt(np.sum(d * d, axis=2) + 0.01)
        vel = vel + 0.01 * np.sum(d * (m / r ** 3)[:, :, None], axis=1)
        pos = pos + 0.01 * vel
    return np.sum(pos * pos)


def piecewise(x, y):
    """np.where with both branches arrays, and with a row broadcast against a number."""
    return np.sum(np.where(x > 0.5, x * x, np.sin(x))) + np.sum(np.where(x < y, y, 0.25) * x)


def neighbours(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + x[i] * x[i + 1]
    return s


SCALE = 2.0


def reads_global(x):
    return x * SCALE


def unknown_to_numba(x):
    return math.fmod(x, 0.3) * x


def with_dict(x):
    d = {'a': x}
    return d['a'] * x


def power(x, n):
    """Recursive: put in line once, its call of itself stays (and is refused)."""
    return x if n <= 1 else x * power(x, n - 1)


def calls_user(x):
    return power(x, 3) + x


@pytest.mark.parametrize('fn, args, wrt', [
    (scalar_loop, (0.7,), 0), (newton_sqrt, (2.0,), 0), (branchy, (0.3, 0.4), (0, 1)),
    (matmul_sum, (np.arange(6.0).reshape(2, 3) / 7, np.arange(12.0).reshape(3, 4) / 5), (0, 1)),
    (matrix_vector, (np.arange(12.0).reshape(3, 4) / 7, np.arange(4.0) / 5, np.arange(3.0) / 4),
     (0, 1, 2)),           # one-axis operands: outer(g, b), g @ a, b @ g, g * b
    (bias_and_column, (np.arange(12.0).reshape(4, 3) / 9, np.arange(3.0) / 4,
                       np.arange(4.0).reshape(4, 1) / 5), (0, 1, 2)),
    (bias_and_column, (np.arange(12.0).reshape(4, 3) / 9, np.ones((1, 3)), np.ones((1, 1))),
     (0, 1, 2)),
    (scaled, (np.arange(6.0) / 5, 0.3), (0, 1)),
    (mean_then_square, (np.arange(6.0).reshape(2, 3) / 5,), 0),
    (implicit_euler, (0.5, 2.0), (0, 1)),
    (neighbours, (np.arange(6.0) / 5,), 0),
    (piecewise, (np.arange(12.0).reshape(4, 3) / 11, np.array([0.2, 0.5, 0.9])), (0, 1)),
    (symbolic_zero_in_a_loop, (np.arange(3.0) / 4, np.arange(3.0) / 5), (0, 1)),
    (gravity, (np.sin(np.arange(15.0)).reshape(5, 3), np.cos(np.arange(15.0)).reshape(5, 3) / 9,
               np.arange(1.0, 6.0)), (0, 1, 2))])
def test_same_numbers_as_the_numpy_path(fn, args, wrt):
    value, grads = tf.value_and_grad(fn, wrt, compile='numba')(*args)
    expected_value, expected = tf.value_and_grad(fn, wrt)(*args)
    assert value == pytest.approx(expected_value, rel=1e-13)
    for g, e in zip(grads if isinstance(wrt, tuple) else (grads,),
                    expected if isinstance(wrt, tuple) else (expected,)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
    check_gradient(fn, grads if isinstance(wrt, tuple) else (grads,), args,
                   wrt if isinstance(wrt, tuple) else (wrt,), np.random.default_rng(0))


def test_scalar_loop_tape_is_a_preallocated_array_while_loop_a_list():
    spec = compilation.Spec('reverse', (0,), scalar_args=(0,), compile='numba')
    text = compilation.compile(scalar_loop, spec).native_source
    assert '_x_tape = np.empty(len(_range))' in text and '_x_tape[_x_tape_top] = x' in text
    assert '_tape = []' not in text and '_push' not in text and '_pop' not in text
    assert '_trip_count = len(_range)' in text and 'for _ in range(_trip_count):' in text
    # sin is taped, not computed again (the NumPy path recomputes it): a float64 store
    # costs less natively; its placeholder before the first binding is NaN (never read)
    assert '_sin = math.nan' in text and '_sin_tape[_sin_tape_top] = _sin' in text
    assert text.count('math.sin(') == 1 and '_sin = _sin_tape[_sin_tape_top]' in text
    # a number taped before its first binding gets a float64 array only where every
    # binding is a float by construction (W1's `_sin = math.sin(x)`): an int
    # (`_add = i + 1`) keeps a list (in an array of float64 the index would be a float)
    text = compilation.compile(neighbours, compilation.Spec(
        'reverse', (0,), arg_shapes=((0, (6,)),), compile='numba')).native_source
    assert '_add_tape = []' in text and '_add = None' in text
    branches = compilation.Spec('reverse', (0, 1), scalar_args=(0, 1), compile='numba')
    text = compilation.compile(branchy, branches).native_source
    assert '_x_tape = np.empty(len(_range))' in text and '_x_tape = []' not in text
    text = compilation.compile(newton_sqrt, spec).native_source
    assert '_x_tape = []' in text and '_x_tape.append(x)' in text and 'x = _x_tape.pop()' in text


@pytest.mark.parametrize('fn, line, what', [
    (reads_global, 'return x * SCALE', "the name 'SCALE', from outside the function"),
    (unknown_to_numba, 'return math.fmod', "Unknown attribute 'fmod'"),
    (with_dict, "d = {'a': x}", 'a dict'),
    (calls_user, 'return x if n <= 1 else x * power(x, n - 1)',
     'a call of the user function power()'),
])
def test_what_numba_cannot_compile_is_located_and_nothing_runs(fn, line, what):
    args = (0.7,)
    with pytest.raises(UnsupportedError) as raised:
        tf.grad(fn, tuple(range(len(args))), compile='numba')(*args)
    error = raised.value
    assert error.filename == __file__ and what in str(error)
    assert open(__file__).read().splitlines()[error.lineno - 1].strip().startswith(line)


@pytest.mark.parametrize('fn', [reads_global, unknown_to_numba, with_dict, calls_user])
def test_auto_falls_back_with_one_warning_naming_the_line(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        g = tf.grad(fn, compile='auto')
        first, second = g(0.7), g(0.7)
    assert first == second == tf.grad(fn)(0.7)
    native = [w for w in caught if issubclass(w.category, NativeFallbackWarning)]
    assert len(native) == 1 and f'{__file__}:' in str(native[0].message)


def test_the_native_pass_runs_last_and_only_where_asked():
    from tapeflow.runtime import support
    from tapeflow.transforms import pipeline
    names = [p.name for p in pipeline.PASSES if p.name not in ('defer', 'slots')]   # (recording;
    # the native path keeps its own tapes)
    compiled = pipeline.compile_reverse(scalar_loop, (0,), record_passes=True, target='numba',
                                        runtime_names=support.generated_namespace())
    assert [name for name, _ in compiled.passes] == names and names[-1] == 'native'
    assert compiled.passes[-1][1] == compiled.native_source


def test_the_option_is_checked_and_keyed():
    with pytest.raises(ValueError, match="'python', 'numba', 'auto'"):
        tf.grad(scalar_loop, compile='jit')
    with pytest.raises(ValueError, match="'python', 'numba', 'auto'"):
        compilation.Spec(compile='cuda')
    plain = compilation.Spec('reverse', (0,), scalar_args=(0,))
    native = compilation.Spec('reverse', (0,), scalar_args=(0,), compile='numba')
    assert plain.key() != native.key()
    assert compilation.compile(scalar_loop, plain) is not compilation.compile(scalar_loop, native)
    assert compilation.compile(scalar_loop, native) is compilation.compile(scalar_loop, native)
    assert compilation.compile(scalar_loop, plain).native_source == ''


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_corpus_compiles_to_the_same_gradients_or_is_refused_at_its_line(case):
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    try:
        value, grads = tf.value_and_grad(case.fn, case.wrt, compile='numba')(*copy.deepcopy(args))
    except UnsupportedError as error:
        assert error.filename.endswith('corpus.py') and error.lineno > 0, error
        assert "compile='numba'" in str(error)
        return
    COMPILED.append(case.name)
    expected_value, expected = tf.value_and_grad(case.fn, case.wrt)(*copy.deepcopy(args))
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-14)
    check_gradient(case.fn, grads, args, case.wrt, rng)


def test_import_tapeflow_imports_no_numba():
    import subprocess
    import sys
    code = 'import sys, tapeflow; print("numba" in sys.modules)'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == 'False'


def test_corpus_compiles_in_part():
    """What of the corpus Numba compiles in this slice (scalar code, loops, branches)."""
    for case in CASES:
        if case.name not in COMPILED:
            test_corpus_compiles_to_the_same_gradients_or_is_refused_at_its_line(case)
    assert len(COMPILED) >= 20, COMPILED


CACHED = """
import sys, tapeflow as tf
sys.path.insert(0, {here!r})
from tests.transforms.test_native import scalar_loop
g = tf.value_and_grad(scalar_loop, compile='numba')
print(repr(g(0.7)))
from tapeflow.arguments import argument_kinds
from tapeflow.compilation import Spec, compile
spec = Spec('reverse', (0,), scalar_args=(0,), kinds=argument_kinds((0.7,)), compile='numba')
print(sum(compile(scalar_loop, spec).combined.dispatcher.stats.cache_hits.values()))
"""


def test_numba_keeps_the_machine_code_in_the_disk_cache_folder(tmp_path):
    import os
    import subprocess
    import sys
    env = dict(os.environ, TAPEFLOW_CACHE_DIR=str(tmp_path))
    code = CACHED.format(here=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    runs = [subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                           text=True, check=True).stdout.split('\n') for _ in range(2)]
    expected = repr(tf.value_and_grad(scalar_loop)(0.7))
    assert runs[0][0] == runs[1][0] == expected
    assert (runs[0][1], runs[1][1]) == ('0', '1')          # compiled, then loaded
    assert len(list((tmp_path / 'native').glob('tapeflow_native_*.py'))) == 1


def test_errors_are_located_from_a_module_file_too(tmp_path):
    tf.set_cache_dir(str(tmp_path))
    try:
        with pytest.raises(UnsupportedError) as raised:
            tf.grad(unknown_to_numba, compile='numba')(0.7)
    finally:
        tf.set_cache_dir(None)
    assert raised.value.lineno == unknown_to_numba.__code__.co_firstlineno + 1


@pytest.mark.parametrize('args', [(np.arange(6.0, dtype=np.float32), 0.3),
                                  (np.arange(6.0), np.float32(0.3))])
def test_float32_is_refused_not_computed_in_float64(args):
    g = tf.value_and_grad(scaled, (0, 1), compile='numba')
    g(np.arange(6.0), 0.3)                          # compiled for float64 first
    with pytest.raises(UnsupportedError, match='is (an array of )?float32'):
        g(*args)
    import tapeflow.cache
    tapeflow.cache.clear()                          # an 'auto' compilation that has not fallen back
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        value, _ = tf.value_and_grad(scaled, (0, 1), compile='auto')(*args)
    expected = tf.value_and_grad(scaled, (0, 1))(*args)[0]
    assert value == expected and value.dtype == expected.dtype and len(caught) == 1


@pytest.mark.parametrize('fn, args', [
    (scalar_loop, (0.7,)), (newton_sqrt, (2.0,)), (branchy, (0.3, 0.4)),
    (implicit_euler, (0.5, 2.0))])
def test_jvp_and_vjp_compile_natively_to_the_same_numbers(fn, args):
    tangents = tuple(0.5 + i for i in range(len(args)))
    value, tangent = tf.jvp(fn, args, tangents, compile='numba')
    expected_value, expected_tangent = tf.jvp(fn, args, tangents)
    assert value == expected_value and tangent == pytest.approx(expected_tangent, rel=1e-12)
    out, pullback = tf.vjp(fn, *args, compile='numba')
    expected_out, expected_pullback = tf.vjp(fn, *args)
    assert out == expected_out
    for cotangent in (1.5, -0.25):          # each pullback runs the native function again
        np.testing.assert_allclose(pullback(cotangent), expected_pullback(cotangent),
                                   rtol=1e-12, atol=1e-300)
    spec = compilation.Spec('forward', (0,), compile='numba')   # x's tangent broadcast
    assert compilation.compile(fn, spec).native_source.startswith(f'def {fn.__name__}_jvp(')


def test_vjp_of_arrays_natively():
    args = (np.arange(6.0).reshape(2, 3) / 7, np.arange(12.0).reshape(3, 4) / 5)
    out, pullback = tf.vjp(matmul_sum, *args, compile='numba')
    expected_out, expected_pullback = tf.vjp(matmul_sum, *args)
    assert out == expected_out
    for g, e in zip(pullback(2.0), expected_pullback(2.0)):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_jvp_refuses_what_has_no_twin_at_its_line():
    args = (np.ones((2, 3)), np.ones((3, 4)))
    with pytest.raises(UnsupportedError) as raised:
        tf.jvp(matmul_sum, args, args, compile='numba')
    assert raised.value.lineno == matmul_sum.__code__.co_firstlineno + 1
    assert 'the tangent of this line calls' in str(raised.value)


def test_hessian_says_it_does_not_compile_natively():
    with pytest.raises(tf.TapeflowError, match="does not take compile='numba' yet"):
        tf.hessian(scalar_loop, compile='numba')
    with pytest.warns(NativeFallbackWarning):
        assert tf.hessian(scalar_loop, compile='auto')(0.7) == tf.hessian(scalar_loop)(0.7)
    with pytest.raises(ValueError, match='compile= takes one of'):
        tf.hessian(scalar_loop, compile='jit')


W = tf.Variable(np.arange(3.0) / 5)


def reads_variable(x):
    return np.sum(np.tanh(x * W)) + np.sum(x * x)


@pytest.mark.parametrize('fn, make', [
    (branchy, lambda: (tf.Variable(np.float64(0.3)), tf.Variable(np.float64(0.4)))),
    (matmul_sum, lambda: (tf.Variable(np.arange(6.0).reshape(2, 3) / 7),
                          tf.Variable(np.arange(12.0).reshape(3, 4) / 5))),
    (reads_variable, lambda: (tf.Variable(np.arange(3.0) / 4),))])
def test_function_under_a_tape_runs_its_backward_natively(fn, make):
    results = []
    for target in ('numba', 'python'):
        compiled = tf.function(fn, compile=target)
        variables = make()
        with tf.GradientTape() as tape:
            out = compiled(*variables)
        sources = list(variables) + ([W] if fn is reads_variable else [])
        results.append((out.numpy(), [g.numpy() for g in tape.gradient(out, sources)]))
        spec_key = [k for k in compiled._compiled_for]
        assert len(spec_key) == 1
        made = compiled._compiled_for[spec_key[0]][0]
        assert bool(made.native_source) == (target == 'numba')
        if target == 'numba':           # the backward ran the native function
            assert made.combined.jitted.signatures
    (out, grads), (expected_out, expected) = results
    assert out == expected_out
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-300)
    with pytest.raises(ValueError, match='compile= takes one of'):
        tf.function(fn, compile='jit')
