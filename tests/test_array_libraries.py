"""Gradients on arrays other than NumPy's: Dask (lazy, on a cluster) and a CuPy stand-in.

`tests/duck_gpu.py`'s DuckArray refuses NumPy operands as CuPy does, so every
seed, zero or constant that generated code or a rule made as a NumPy array
fails here as it fails on a GPU. The tests with CuPy itself are marked `gpu`
(tests/test_cupy.py). Each gradient is compared with the NumPy path's on the
same values, which the rest of the suite checks against finite differences.
"""
from __future__ import annotations

import copy
import os
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tests.corpus import CASES
from tests.duck_gpu import DuckArray
from tests.gradcheck import check_gradient

dask = pytest.importorskip('dask', reason='dask[array] comes with the dev extras (make install)')
da = pytest.importorskip('dask.array')

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'benchmarks')


class Computed(Exception):
    """A Dask graph was computed where it should have stayed lazy."""


def _refuse(*args, **kwargs):
    raise Computed('a Dask graph was computed')


def lazy_only():
    """Within it, computing any Dask graph raises `Computed`."""
    return dask.config.set(scheduler=_refuse)


def sine_decay(x):
    """W6 of the benchmarks (an elementwise reduction)."""
    return np.sum(np.sin(x) ** 2 * np.exp(-x))


def workloads():
    """W3 logistic regression, W4 MLP, W5 RNN (smaller than the benchmarks'), W6."""
    sys.path.insert(0, BENCHMARKS)
    try:
        from w3_logistic import logistic_loss
        from w4_mlp import mlp_loss
        from w5_rnn import rnn_loss
    finally:
        sys.path.remove(BENCHMARKS)
    rng = np.random.default_rng(3)
    n = rng.standard_normal
    return [
        ('W3', logistic_loss, (0.1 * n(10), n((40, 10)), (rng.random(40) < 0.5) * 1.0), (0,)),
        ('W4', mlp_loss, (0.3 * n((6, 8)), 0.1 * n(8), 0.3 * n((8, 3)), 0.1 * n(3), n((20, 6)),
                          n((20, 3))), (0, 1, 2, 3)),
        ('W5', rnn_loss, (0.3 * n((4, 5)), 0.3 * n((5, 5)), 0.1 * n(5), n((6, 3, 4)),
                          np.zeros((3, 5))), (0, 1, 2)),
        ('W6', sine_decay, (rng.uniform(-1, 1, 1000),), (0,)),
    ]


WORKLOADS = workloads()


def corpus_cases():
    """Corpus functions with an array argument."""
    return [c for c in CASES if any(isinstance(a, np.ndarray) for a in c.args(np.random.default_rng(0)))]


def convert(args, to):
    return tuple(to(a) if isinstance(a, np.ndarray) and a.dtype.kind in 'fc' else a for a in args)


def to_dask(a):
    return da.from_array(a, chunks=tuple(max(1, s // 2) for s in a.shape))


def host(value):
    if isinstance(value, DuckArray):
        return value.get()
    if hasattr(value, 'compute'):
        return value.compute()
    return value


def assert_same_gradient(result, expected, library):
    (value, grads), (value0, grads0) = result, expected
    np.testing.assert_allclose(host(value), value0, rtol=1e-12, atol=1e-12)
    grads = grads if isinstance(grads, tuple) else (grads,)
    grads0 = grads0 if isinstance(grads0, tuple) else (grads0,)
    assert len(grads) == len(grads0)
    for g, g0 in zip(grads, grads0):
        if isinstance(g0, np.ndarray):
            assert library(g), f'a gradient came back as {type(g).__name__}'
            assert g.shape == g0.shape and np.dtype(g.dtype) == g0.dtype
        np.testing.assert_allclose(host(g), g0, rtol=1e-10, atol=1e-12)


def is_dask(value):
    return isinstance(value, da.Array)


def is_duck(value):
    return isinstance(value, DuckArray)


def plain_runs(fn, args):
    """Whether the plain function runs on these arrays at all (Dask's reshape and CuPy's
    refusal of NumPy operands are the user's code's business, not tapeflow's)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            fn(*args)
    except Exception:       # noqa: BLE001
        return False
    return True


def plain_is_lazy(fn, args):
    try:
        with lazy_only(), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            fn(*args)
    except Exception:       # noqa: BLE001 -- Computed, or what NumPy made of it
        return False
    return True


# ---------------------------------------------------------------- a CuPy stand-in

@pytest.mark.parametrize('case', corpus_cases(), ids=lambda c: c.name)
def test_corpus_on_a_library_that_refuses_numpy_operands(case):
    args = case.args(np.random.default_rng(0))
    if not plain_runs(case.fn, convert(case.args(np.random.default_rng(0)), DuckArray)):
        # the user's own code makes a NumPy array (np.zeros(4)) and writes duck values in
        with pytest.raises(TypeError, match='Unsupported type|Implicit conversion'):
            tf.value_and_grad(case.fn, argnums=case.wrt)(*convert(args, DuckArray))
        return
    expected = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    result = tf.value_and_grad(case.fn, argnums=case.wrt)(*convert(args, DuckArray))
    assert_same_gradient(result, expected, is_duck)


def test_most_of_the_corpus_runs_on_the_stand_in():
    runs = [c for c in corpus_cases()
            if plain_runs(c.fn, convert(c.args(np.random.default_rng(0)), DuckArray))]
    assert len(runs) >= 30, [c.name for c in runs]


@pytest.mark.parametrize('name, fn, args, wrt', WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_workloads_on_the_stand_in(name, fn, args, wrt):
    expected = tf.value_and_grad(fn, argnums=wrt)(*args)
    result = tf.value_and_grad(fn, argnums=wrt)(*convert(args, DuckArray))
    assert_same_gradient(result, expected, is_duck)


def test_vjp_and_jvp_on_the_stand_in():
    x = np.linspace(-1.0, 1.0, 7)
    v = np.cos(3 * x)
    out0, pullback0 = tf.vjp(sine_decay, x)
    out, pullback = tf.vjp(sine_decay, DuckArray(x))
    np.testing.assert_allclose(host(out), out0)
    (g,), (g0,) = pullback(1.0), pullback0(1.0)
    assert is_duck(g)
    np.testing.assert_allclose(host(g), g0)
    primal, tangent = tf.jvp(sine_decay, (DuckArray(x),), (DuckArray(v),))
    primal0, tangent0 = tf.jvp(sine_decay, (x,), (v,))
    np.testing.assert_allclose(host(primal), primal0)
    np.testing.assert_allclose(host(tangent), tangent0)


def test_eager_tape_records_stand_in_arrays():
    x = np.linspace(0.1, 1.0, 6)
    grads = []
    for value in (x, DuckArray(x)):
        v = tf.Variable(value)
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.sin(v) * v) + tf.reduce_sum(v * v)
        grads.append(tape.gradient(y, v))
    assert is_duck(grads[1]._value)
    np.testing.assert_allclose(grads[1]._value.get(), grads[0].numpy())
    np.testing.assert_allclose(grads[0].numpy(), np.sin(x) + x * np.cos(x) + 2 * x)


WEIGHTS = np.linspace(0.5, 1.5, 4)      # a NumPy global, read beside a stand-in argument


def reads_a_numpy_global(x):
    return np.sum(x * WEIGHTS)


def two_arrays(x, y):
    return np.sum(x * y)


def test_mixing_libraries_is_a_clear_error():
    with pytest.raises(TypeError) as info:
        tf.grad(reads_a_numpy_global)(DuckArray(np.ones(4)))
    message = str(info.value)
    assert message.startswith(f'{__file__}:{reads_a_numpy_global.__code__.co_firstlineno}:1: ')
    assert "argument 'x' is a duckgpu array and the global 'WEIGHTS' a NumPy array" in message
    with pytest.raises(TypeError, match="argument 'x' is a duckgpu array and argument 'y' a "
                                        "NumPy array"):
        tf.grad(two_arrays)(DuckArray(np.ones(4)), np.ones(4))
    with pytest.raises(TypeError, match="argument 'x' is a duckgpu array and argument 'y' a "
                                        "dask array"):
        tf.grad(two_arrays)(DuckArray(np.ones(4)), da.ones(4))
    # Dask computes with NumPy operands: no error, and the NumPy gradient
    g = tf.grad(reads_a_numpy_global)(da.from_array(np.ones(4), chunks=2))
    np.testing.assert_allclose(g.compute(), WEIGHTS)


def writes_numpy_values(x, y):
    """NumPy values written into a CuPy array: CuPy copies them to its device."""
    y[np.array([True, False, True, False])] = (np.ones((2,)) * x) / (1.0 + x ** 2)
    return np.sum(y * y) + x


def puts_numpy_values(x, y):
    np.put(y, [3, 1], np.exp(-(np.ones((2,)) * x) ** 2))
    return np.sum(np.sin(y) * y)


def numpy_scalar_meets_a_gpu_sum(y, z):
    """A NumPy scalar read from a NumPy array, divided by a CuPy array's sum."""
    rows = [z - np.ones((2,)) * y]
    return (rows[0][-1] / (1.0 + np.sum(X_ON_DEVICE[0] ** 2))) ** 2 + y * z


def max_of_numpy_and_gpu_scalars(y, z):
    """Python's max over a NumPy scalar and a CuPy one (the CuPy one is chosen)."""
    return max([np.cos(y) * z, np.sum(X_ON_DEVICE[0]) * y + z]) * z


X_ON_DEVICE = [None]        # the CuPy array the functions above read, set by the test
NUMPY_VALUES_MEET_ARRAYS = [
    ('written', writes_numpy_values, (0.7, np.linspace(0.3, 1.2, 4)), (0, 1)),
    ('put', puts_numpy_values, (0.6, np.linspace(0.3, 1.2, 4)), (0, 1)),
    ('scalar', numpy_scalar_meets_a_gpu_sum, (0.8, 1.3), (0, 1)),
    ('max', max_of_numpy_and_gpu_scalars, (0.8, 1.3), (0, 1)),
]


def numpy_values_meet(name, fn, args, wrt, to_device, rng):
    """The gradient of a function in which NumPy values meet device arrays where the
    library takes them, on the device: NumPy's gradient, with each NumPy value's
    cotangent back on the host (checked against central differences on NumPy first)."""
    X_ON_DEVICE[0] = np.linspace(0.1, 0.4, 3)
    expected = tf.value_and_grad(fn, argnums=wrt)(*copy.deepcopy(args))
    check_gradient(fn, expected[1], copy.deepcopy(args), wrt, rng)
    X_ON_DEVICE[0] = to_device(X_ON_DEVICE[0])
    try:
        return tf.value_and_grad(fn, argnums=wrt)(*convert(copy.deepcopy(args), to_device)), expected
    finally:
        X_ON_DEVICE[0] = None


@pytest.mark.parametrize('name, fn, args, wrt', NUMPY_VALUES_MEET_ARRAYS,
                         ids=[c[0] for c in NUMPY_VALUES_MEET_ARRAYS])
def test_numpy_values_that_meet_a_gpu_array_get_their_cotangent_on_the_host(name, fn, args, wrt):
    result, expected = numpy_values_meet(name, fn, args, wrt, DuckArray, np.random.default_rng(3))
    assert_same_gradient(result, expected, lambda g: True)
    assert not any(is_duck(g) for g in result[1] if not isinstance(g, float) and g.ndim == 0)


def element_then_write(x):
    """On CuPy `x[1]` is a 0-d view, which the write changes; on NumPy a number."""
    e = x[1]
    x[1] = 5.0 * x[0]
    return e * x[2] + np.sum(x * x)


def sum_then_in_place(x):
    """On CuPy a sum is a 0-d array, which `t *= 2.0` writes in place (so `s` changes)."""
    s = np.sum(x)
    t = s
    t *= 2.0
    return s * x[0] + t


CUPY_MEANS_ANOTHER_VALUE = [('element', element_then_write), ('sum', sum_then_in_place)]


def another_value_and_its_gradient(fn, to_device, get):
    """Where CuPy's 0-d arrays mean another value than NumPy's numbers: tapeflow's value is
    the plain call's on the device, and its gradient agrees with central differences of
    the plain function there (not with NumPy's gradient)."""
    x = np.array([0.3, 0.7, 1.1])
    plain = float(get(fn(to_device(x.copy()))))
    assert not np.isclose(plain, fn(x.copy()))                  # another value indeed
    value, grad = tf.value_and_grad(fn)(to_device(x.copy()))
    assert float(get(value)) == pytest.approx(plain, rel=1e-13)
    h, grad = 1e-6, get(grad)
    for i in range(3):
        step = h * np.eye(3)[i]
        numeric = (float(get(fn(to_device(x + step)))) - float(get(fn(to_device(x - step))))) / (2 * h)
        assert grad[i] == pytest.approx(numeric, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize('name, fn', CUPY_MEANS_ANOTHER_VALUE, ids=[c[0] for c in CUPY_MEANS_ANOTHER_VALUE])
def test_zero_d_arrays_mean_what_they_mean_on_the_stand_in(name, fn):
    another_value_and_its_gradient(fn, DuckArray, host)


def fills_a_numpy_array_with_a_gpu_number(x, z):
    """`numpy_array.fill` reads a CuPy number as a number (a write `b[...] = v` would not)."""
    b = np.ones((3,))
    b.fill(np.sum(x * x) * z)
    return np.sum(b * np.arange(3.0)) * z + np.sum(x)


def test_a_numpy_array_filled_with_a_gpu_number():
    x, z = np.linspace(0.2, 0.8, 4), 0.7
    expected = tf.value_and_grad(fills_a_numpy_array_with_a_gpu_number, argnums=(0, 1))(x, z)
    check_gradient(fills_a_numpy_array_with_a_gpu_number, expected[1], [x, z], (0, 1),
                   np.random.default_rng(6))
    result = tf.value_and_grad(fills_a_numpy_array_with_a_gpu_number, argnums=(0, 1))(DuckArray(x), z)
    assert_same_gradient(result, expected, is_duck)
    tangent = tf.jvp(fills_a_numpy_array_with_a_gpu_number, (DuckArray(x), z), (DuckArray(np.ones(4)), 1.0))
    expected_tangent = tf.jvp(fills_a_numpy_array_with_a_gpu_number, (x, z), (np.ones(4), 1.0))
    np.testing.assert_allclose(host(tangent[1]), expected_tangent[1], rtol=1e-12)


def transposed_write_then_reshape(y, c):
    """A write into a Fortran-ordered view, then a reshape: a copy on NumPy and CuPy alike
    (the write keeps the view's order), which a later write into the view leaves alone."""
    d = y.T
    d *= c
    h = d.reshape(-1)
    d[0] /= 2.0
    return np.sum(h * h) + np.sum(np.sin(d))


def test_a_write_in_place_keeps_its_layout_on_a_gpu_array():
    """CuPy's arithmetic writes C order where NumPy keeps a Fortran-ordered operand's: the
    value `d *= c` leaves is laid out as `d` (`like_layout`), on CuPy too. Before, the
    reshape made a view there, and the value was another number (CuPy fuzzer, seed 72727)."""
    y, c = np.arange(1.0, 10.0).reshape(3, 3) / 7, np.linspace(0.5, 1.5, 9).reshape(3, 3)
    expected = tf.value_and_grad(transposed_write_then_reshape, argnums=(0, 1))(y.copy(), c)
    check_gradient(transposed_write_then_reshape, expected[1], [y.copy(), c], (0, 1),
                   np.random.default_rng(4))
    plain = transposed_write_then_reshape(DuckArray(y.copy()), DuckArray(c))
    result = tf.value_and_grad(transposed_write_then_reshape, argnums=(0, 1))(
        DuckArray(y.copy()), DuckArray(c))
    np.testing.assert_allclose(host(plain), expected[0], rtol=1e-12)
    assert_same_gradient(result, expected, is_duck)


# ---------------------------------------------------------------- Dask

@pytest.mark.parametrize('case', corpus_cases(), ids=lambda c: c.name)
def test_corpus_on_dask_stays_lazy(case):
    args = case.args(np.random.default_rng(0))
    dargs = convert(args, to_dask)
    if not plain_runs(case.fn, dargs):
        return      # Dask's own limits (an uneven reshape), met by the plain call too
    expected = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    if plain_is_lazy(case.fn, dargs):
        with lazy_only(), warnings.catch_warnings():
            warnings.simplefilter('error')      # no fallback of Dask's to NumPy either
            result = tf.value_and_grad(case.fn, argnums=case.wrt)(*dargs)
    else:   # the function itself computes (a branch on a value): so may its gradient
        result = tf.value_and_grad(case.fn, argnums=case.wrt)(*dargs)
    assert_same_gradient(result, expected, is_dask)


def test_most_of_the_corpus_is_lazy_on_dask():
    lazy = [c for c in corpus_cases() if plain_runs(c.fn, convert(c.args(np.random.default_rng(0)), to_dask))
            and plain_is_lazy(c.fn, convert(c.args(np.random.default_rng(0)), to_dask))]
    assert len(lazy) >= 25, [c.name for c in lazy]


@pytest.mark.parametrize('name, fn, args, wrt', WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_workloads_on_dask_stay_lazy(name, fn, args, wrt):
    expected = tf.value_and_grad(fn, argnums=wrt)(*args)
    with lazy_only():
        result = tf.value_and_grad(fn, argnums=wrt)(*convert(args, to_dask))
    assert_same_gradient(result, expected, is_dask)


def masked_write(x):
    x[x > 0.9] = 1.5 + x[1][2]
    return np.sum(np.tanh(x) * x)


def masked_where(x):
    x = np.where(x > 0.9, 1.5 + x[1][2], x)
    return np.sum(np.tanh(x) * x)


def test_a_masked_write_into_a_dask_array_is_refused_and_where_is_differentiated():
    """What a write through a mask overwrites has a length Dask knows only once it
    computes: tapeflow cannot keep it to undo the write. Before, Dask's own ValueError
    ("cannot broadcast shape (nan,)"); now a located refusal that says what to write."""
    x = np.array([[1.15, 1.03, 0.87], [1.14, 0.61, 0.93]])
    with pytest.raises(tf.UnsupportedError) as raised:
        tf.grad(masked_write)(to_dask(x.copy()))
    assert raised.value.lineno == masked_write.__code__.co_firstlineno + 1
    assert 'write x = np.where(mask, value, x) instead' in str(raised.value)
    expected = tf.value_and_grad(masked_where)(x.copy())
    check_gradient(masked_where, (expected[1],), [x.copy()], (0,), np.random.default_rng(8))
    np.testing.assert_allclose(tf.grad(masked_write)(x.copy()), expected[1], rtol=1e-12)
    assert_same_gradient(tf.value_and_grad(masked_where)(to_dask(x.copy())), expected, is_dask)


def test_eager_tape_records_dask_arrays_lazily():
    x = np.linspace(0.1, 1.0, 6)
    with lazy_only():
        v = tf.Variable(da.from_array(x, chunks=3))
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.sin(v) * v)
        g = tape.gradient(y, v)
    assert is_dask(g._value)
    np.testing.assert_allclose(g._value.compute(), np.sin(x) + x * np.cos(x))


def writes_through_a_view(x):
    y = x * 1.0
    v = y[1:]
    v[0] = 5.0          # NumPy: writes y[1]; Dask: only v
    return np.sum(y * y)


def test_a_write_through_a_view_of_a_dask_array_is_refused():
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(writes_through_a_view)(da.ones(4, chunks=2))
    line = writes_through_a_view.__code__.co_firstlineno + 3
    assert str(info.value).startswith(f'{__file__}:{line}:5: writing into v here changes')
    assert 'not on Dask, whose views are copies' in str(info.value)
    np.testing.assert_allclose(tf.grad(writes_through_a_view)(np.ones(4)), [2.0, 0.0, 2.0, 2.0])


def ravels(x, y):
    c = x.ravel()
    f = y.flatten()
    return np.sum(np.tanh(c) * c) + np.sum(f * f)


def test_ravel_and_flatten_on_dask():
    """A crash before (the library fuzzer on Dask, seed 23232, program 387): the
    gradients of ravel and flatten reshaped with `order=`, which Dask's reshape refuses."""
    x, y = np.array([[0.85, 1.37, 0.55], [1.46, 1.02, 1.34]]), np.array([1.05, 1.04, 1.47])
    grads = tf.grad(ravels, argnums=(0, 1))(da.from_array(x, chunks=2), da.from_array(y, chunks=2))
    expected = tf.grad(ravels, argnums=(0, 1))(x, y)
    assert all(isinstance(g, da.Array) for g in grads)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.compute(), e, rtol=1e-13)
    jvp_value, tangent = tf.jvp(ravels, (da.from_array(x, chunks=2), da.from_array(y, chunks=2)),
                                (da.ones((2, 3), chunks=2), da.ones(3, chunks=2)))
    expected_tangent = sum(np.sum(g * np.ones_like(g)) for g in expected)
    np.testing.assert_allclose(np.asarray(tangent), expected_tangent, rtol=1e-12)


def test_dask_gradient_on_a_two_worker_local_cluster():
    distributed = pytest.importorskip('distributed', reason='distributed comes with the dev extras')
    rng = np.random.default_rng(5)
    X, y, w = rng.standard_normal((400, 8)), (rng.random(400) < 0.5) * 1.0, 0.1 * rng.standard_normal(8)
    loss = WORKLOADS[0][1]
    expected = tf.grad(loss)(w, X, y)
    with lazy_only():
        g = tf.grad(loss)(w, da.from_array(X, chunks=(100, 8)), da.from_array(y, chunks=100))
    assert is_dask(g) and g.npartitions >= 1
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()['workers']) == 2
        computed = g.compute()
    np.testing.assert_allclose(computed, expected, rtol=1e-12)


@tf.function
def fused_loss(w, X):
    return tf.reduce_sum(tf.sin(X @ w) ** 2)


def plain_loss(w, X):
    return np.sum(np.sin(X @ w) ** 2)


@pytest.mark.parametrize('library', ['dask', 'duck'])
def test_a_compiled_function_under_the_tape_is_one_node_on_other_arrays(library):
    rng = np.random.default_rng(2)
    w0, X0 = rng.normal(size=3), rng.normal(size=(5, 3))
    to, is_library = (to_dask, is_dask) if library == 'dask' else (DuckArray, is_duck)
    with lazy_only():
        w = tf.Variable(to(w0))
        with tf.GradientTape() as tape:
            y = fused_loss(w, to(X0))
        g = tape.gradient(y, w)
    assert is_library(g._value)
    np.testing.assert_allclose(host(g._value), tf.grad(plain_loss)(w0, X0), rtol=1e-12)


def _over(v, c):
    if np.sum(v) > c:
        raise ValueError('over')


def written_then_raised_in_place(x):
    y = x * 1.0
    try:
        y[1] = y[1] * 3.0              # written in place, then the body raises
        _over(y, 1.0)
    except ValueError:
        pass
    return np.sum(y * y)


def test_a_guarded_body_writing_a_stand_in_array_then_raising():
    """The library fuzzer's duck program 102 (seed 0): value 3244902 for 3244923 once a body
    that wrote in place and raised was run again to its raise, the stand-in's array not
    given back first (its snapshot took NumPy arrays only; before that, such a partial
    write went unnoticed, its derivative lost). Both libraries, the same numbers."""
    x = np.array([0.3, 0.5, 0.4])
    value, grads = tf.value_and_grad(written_then_raised_in_place)(x.copy())
    duck_value, duck_grads = tf.value_and_grad(written_then_raised_in_place)(DuckArray(x))
    duck_value = duck_value._a if isinstance(duck_value, DuckArray) else duck_value
    assert value == written_then_raised_in_place(x.copy()) == duck_value
    np.testing.assert_allclose(grads, 2 * x * np.array([1.0, 9.0, 1.0]), rtol=1e-12)
    np.testing.assert_allclose(duck_grads._a, grads, rtol=1e-12)
