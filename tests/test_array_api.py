"""Code written against the array API standard, differentiated on NumPy and on
`array_api_strict`, the standard's reference namespace, which refuses anything
NumPy-specific (a NumPy array, a NumPy scalar, a NumPy function) at once.

Gradients on NumPy are checked against central differences along random
directions; gradients on array_api_strict must equal them and be its arrays.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient

xs = pytest.importorskip('array_api_strict', reason='array-api-strict comes with the dev extras')
from array_api_compat import array_namespace  # noqa: E402  (comes with the dev extras)
from tests.array_api_corpus import CASES  # noqa: E402


def strict(args):
    return tuple(xs.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def as_numpy(value):
    return np.asarray(value) if isinstance(value, xs._array_object.Array) else value


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_gradient_on_numpy_matches_finite_differences(case):
    rng = np.random.default_rng(7)
    args = case.args(rng)
    value, grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    assert np.isclose(value, case.fn(*args), rtol=1e-13)
    check_gradient(case.fn, grads if isinstance(grads, tuple) else (grads,), args, case.wrt, rng)


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_gradient_on_array_api_strict_equals_numpy(case):
    args = case.args(np.random.default_rng(7))
    value0, grads0 = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    value, grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*strict(args))
    np.testing.assert_allclose(as_numpy(value), value0, rtol=1e-12)
    grads = grads if isinstance(grads, tuple) else (grads,)
    grads0 = grads0 if isinstance(grads0, tuple) else (grads0,)
    for g, g0 in zip(grads, grads0):
        assert isinstance(g, xs._array_object.Array), type(g)
        assert g.shape == g0.shape and g.dtype == xs.float64
        np.testing.assert_allclose(as_numpy(g), g0, rtol=1e-11, atol=1e-13)


def test_the_workloads_and_twenty_more():
    names = [c.name for c in CASES]
    assert {'w3_logistic', 'w4_mlp', 'w5_rnn', 'w6_sine_decay'} <= set(names)
    assert len(names) - 4 >= 20


def test_generated_code_calls_the_namespace():
    source = tf.source(CASES[0].fn)
    assert 'xp = array_namespace(w, X, y)' in source
    assert ' = _xp_exp(xp, ' in source and ' = _xp_mean(xp, ' in source
    assert 'np.' not in source


def uses_an_unknown_function(x):
    xp = array_namespace(x)
    return xp.sum(xp.cumulative_sum(x))


def test_a_function_without_a_rule_is_a_located_error():
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(uses_an_unknown_function)(np.ones(3))
    line = uses_an_unknown_function.__code__.co_firstlineno + 2
    assert str(info.value).startswith(f'{__file__}:{line}:')
    assert "xp.cumulative_sum: tapeflow has no rule for the array API function 'cumulative_sum'" \
        in str(info.value)


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_gradient_on_dask_through_its_namespace(case):
    da = pytest.importorskip('dask.array', reason='dask[array] comes with the dev extras')
    args = case.args(np.random.default_rng(7))
    value0, grads0 = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    lazy = tuple(da.from_array(a) if isinstance(a, np.ndarray) else a for a in args)
    value, grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*lazy)
    np.testing.assert_allclose(np.asarray(value), value0, rtol=1e-12)
    for g, g0 in zip(grads if isinstance(grads, tuple) else (grads,),
                     grads0 if isinstance(grads0, tuple) else (grads0,)):
        assert isinstance(g, da.Array), type(g)
        np.testing.assert_allclose(g.compute(), g0, rtol=1e-11, atol=1e-13)
