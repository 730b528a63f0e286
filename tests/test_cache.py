"""The cache: compiled once per function and inputs; stale code is never reused."""
import types

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tapeflow.api import compile_adjoint
from tests.gradcheck import check_gradient, seed_of


def square(x):
    return x * x


def uses_helper(x):
    return helper(x) * 2.0


def helper(x):
    return x * x


def test_second_grad_reuses_compiled_code():
    first = compile_adjoint(square, (0,))
    second = compile_adjoint(square, (0,))
    assert first is second
    g1, g2 = tf.grad(square), tf.grad(square)
    assert g1(3.0) == g2(3.0) == 6.0


def test_argnums_and_options_are_part_of_the_key():
    assert compile_adjoint(square, (0,)) is not compile_adjoint(square, (0,), optimize=False)


def test_redefined_function_gets_fresh_code(tmp_path, monkeypatch):
    import importlib
    import linecache
    import sys
    module = tmp_path / 'redefined_mod.py'
    module.write_text('def f(x):\n    return x * x\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module('redefined_mod')
    assert tf.grad(mod.f)(3.0) == 6.0
    module.write_text('def f(x):\n    return x * x * x\n')
    linecache.checkcache(str(module))
    mod = importlib.reload(mod)
    assert tf.grad(mod.f)(3.0) == 27.0
    sys.modules.pop('redefined_mod', None)


def test_rebinding_a_global_function_recompiles():
    global helper
    assert tf.grad(uses_helper)(3.0) == 12.0          # 2 * 2x
    original = helper

    def cube(x):
        return x * x * x
    try:
        helper = cube
        assert tf.grad(uses_helper)(2.0) == 24.0       # 2 * 3x^2
    finally:
        helper = original
    assert tf.grad(uses_helper)(2.0) == 8.0


def test_cache_counts_hits():
    cache.clear()
    compile_adjoint(square, (0,))
    compile_adjoint(square, (0,))
    assert cache.stats == {'hits': 1, 'misses': 1, 'compiles': 1,
                           'disk_hits': 0, 'disk_misses': 0, 'disk_writes': 0}


def test_closure_value_change_recompiles():
    def make(k):
        def f(x):
            return k * x
        return f
    assert tf.grad(make(2.0))(1.0) == 2.0
    assert tf.grad(make(5.0))(1.0) == 5.0
    assert isinstance(make(1.0), types.FunctionType)


def _scaled(k):
    def scaled(x):
        return k * x * x
    return scaled


def test_forward_mode_of_closures_sharing_code_sees_each_closure():
    two, three = _scaled(2.0), _scaled(3.0)
    assert tf.jvp(two, (1.5,), (1.0,))[1] == 6.0
    assert tf.jvp(three, (1.5,), (1.0,))[1] == 9.0
    assert tf.grad(three)(1.5) == 9.0 and tf.grad(two)(1.5) == 6.0


_TWICE, _THRICE = _scaled(2.0), _scaled(3.0)


def _both_closures(x):
    return _TWICE(x) + _THRICE(x)


def _sin_times(k):
    return lambda x: np.sin(x) * k


_SIN2, _SIN3 = _sin_times(2.0), _sin_times(3.0)


def _both_lambdas(x):
    return _SIN2(x) - _SIN3(x) * x


def test_closures_of_one_def_called_in_one_function_are_each_themselves():
    # compiled together, the second closure once took the first's entry: a wrong value
    # and gradient (4 and 8x for 2x^2 + 3x^2)
    x = 1.5
    assert tf.value_and_grad(_both_closures)(x) == (5.0 * x * x, 10.0 * x)
    value, gradient = tf.value_and_grad(_both_lambdas)(x)
    assert value == pytest.approx(_both_lambdas(x))
    assert gradient == pytest.approx(2 * np.cos(x) - 3 * (np.cos(x) * x + np.sin(x)))
    assert tf.jvp(_both_closures, (x,), (1.0,))[1] == 10.0 * x


def test_derivatives_of_generated_code_see_a_rebound_global():
    global helper
    import numpy as np
    x = np.array([1.0, 2.0])
    second = tf.grad(tf.grad(uses_helper))
    assert second(1.5) == 4.0                           # 2 * 2
    np.testing.assert_allclose(tf.jacrev(uses_helper)(x), np.diag(4.0 * x))
    _, pullback = tf.vjp(uses_helper, 1.5)
    original = helper

    def cube(v):
        return v * v * v
    try:
        helper = cube
        assert second(1.5) == 18.0                      # 2 * 6x
        np.testing.assert_allclose(tf.jacrev(uses_helper)(x), np.diag(6.0 * x * x))
        np.testing.assert_allclose(tf.hessian(uses_helper)(x), np.zeros((2, 2)) + np.diag(12.0 * x))
    finally:
        helper = original
    assert second(1.5) == 4.0


# ------------------------------------------------------------------ bounded

def shaped(w):
    return np.sum(np.sin(w) * w) + np.sum(w) ** 2


def test_many_shapes_keep_at_most_the_bound_and_evicted_ones_recompile():
    old = cache.size()
    try:
        cache.clear()
        tf.set_cache_size(4)
        g = tf.grad(shaped)
        rng = np.random.default_rng(seed_of('bounded cache'))
        inputs = [rng.standard_normal(n) for n in range(1, 13)]
        for w in inputs:
            g(w)
            assert cache.count() <= 4
        assert cache.stats['misses'] == 12
        for w in inputs[:3]:                       # evicted long ago: compiled again, right
            grad = g(w)
            check_gradient(shaped, [grad], (w,), (0,), rng)
        assert cache.stats['misses'] == 15
        assert cache.count() <= 4
        tf.set_cache_size(2)                      # shrinking evicts at once
        assert cache.count() == 2
    finally:
        tf.set_cache_size(old)


def test_the_least_recently_used_entry_goes_first():
    old = cache.size()
    try:
        cache.clear()
        tf.set_cache_size(2)
        a = compile_adjoint(square, (0,), arg_shapes=((0, (1,)),))
        b = compile_adjoint(square, (0,), arg_shapes=((0, (2,)),))
        assert compile_adjoint(square, (0,), arg_shapes=((0, (1,)),)) is a     # a is now recent
        compile_adjoint(square, (0,), arg_shapes=((0, (3,)),))                  # evicts b
        assert compile_adjoint(square, (0,), arg_shapes=((0, (1,)),)) is a
        assert compile_adjoint(square, (0,), arg_shapes=((0, (2,)),)) is not b
    finally:
        tf.set_cache_size(old)


def test_cache_size_must_be_a_positive_int():
    for bad in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError, match='set_cache_size'):
            tf.set_cache_size(bad)


def test_per_shape_tables_beside_the_cache_keep_the_bound_too():
    old = cache.size()
    try:
        tf.set_cache_size(3)
        table = cache.Recent()
        for k in range(10):
            table[k] = k
        assert list(table) == [7, 8, 9]
        table[7] = 'again'                      # written again: now the newest
        table[10] = 10
        assert list(table) == [9, 7, 10]
    finally:
        tf.set_cache_size(old)


def test_compiling_leaves_the_garbage_collector_alone(monkeypatch):
    import gc
    calls = []
    monkeypatch.setattr(gc, 'disable', lambda: calls.append('disable'))
    monkeypatch.setattr(gc, 'enable', lambda: calls.append('enable'))
    cache.clear()

    def fresh(x):
        return x * x * 3.0
    assert tf.grad(fresh)(2.0) == 12.0
    assert calls == []
