"""Common factors out of cotangent sums: `bx * 0.5 + bx * _sin` -> `bx * (0.5 + _sin)`,
only where the cofactors surely add as numbers; the value stays the user's, bit for bit."""
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import factor, pipeline
from tests.corpus import CASES
from tests.gradcheck import checked_against_plain


def _factored(src, cotangents=('bx',), inexact=('x',)):
    fdef = nodes.parse_gast(src).body[0]
    out = factor.transform(fdef, set(cotangents), set(inexact), {'_pop'})
    return None if out is None else unparse(out).strip()


def test_the_scalar_loops_step_takes_one_product():
    src = ('def f(x, bx):\n    _sin = math.sin(x)\n'
           '    bx = bx * 0.5 + bx * _sin + bx * x * math.cos(x)\n    return bx\n')
    assert 'bx = bx * (0.5 + _sin + x * math.cos(x))' in _factored(src)


def test_signs_and_groups_of_adjacent_terms():
    src = ('def f(x, a, c, bx):\n    bx = c - a * x * 2.0 + a * np.exp(x) - a * 3.0 + c * x\n'
           '    return bx\n')
    assert 'bx = c - a * (x * 2.0 - np.exp(x) + 3.0) + c * x' in _factored(src)


@pytest.mark.parametrize('sum_', [
    'a * (x > 0) + a * (x > 1)',           # booleans: `+` is `or`
    'a * m + a * x',                       # `m`, a parameter not differentiated: any dtype
    'a * k + a * x',                       # `k = m * 2`: integers may wrap
    'a * x + b * x',                       # no common leading factor
    'a * x + a',                           # nothing left beside `a`
    'a * np.add(m, m) + a * x',            # np.add keeps integers (and booleans)
    'a * math.floor(x) + a * x + c',       # floor returns an int: only its group stays...
])
def test_what_may_not_add_as_numbers_stays(sum_):
    src = f'def f(x, m, a, b, c, bx):\n    k = m * 2\n    bx = {sum_}\n    return bx\n'
    out = _factored(src)
    assert out is None or f'bx = {sum_}' in out


def test_only_cotangents_are_rewritten_the_value_stays_the_users():
    src = 'def f(x, a):\n    y = a * x + a * 2.0\n    bx = a * x + a * 2.0\n    return y, bx\n'
    out = _factored(src)
    assert 'y = a * x + a * 2.0' in out and 'bx = a * (x + 2.0)' in out


def test_restored_values_keep_their_type_and_tuples_do_not():
    src = ('def f(x, bx):\n    x = _pop()\n    bx = bx * x + bx * 2.0\n    (u, w) = g()\n'
           '    bx = bx * u + bx * 2.0\n    return bx\n')
    out = _factored(src)
    assert 'bx = bx * (x + 2.0)' in out and 'bx = bx * u + bx * 2.0' in out


def relu_sums(x):
    return np.sum(x * (x > 0) + x * (x > 0.5)) + np.sum(np.sin(x) * x + 0.5 * x)


def scalar_loop(x):
    for i in range(20):
        x = math.sin(x) * x + 0.5 * x
    return x


def test_factored_gradients_against_finite_differences():
    rng = np.random.default_rng(5)
    checked_against_plain(relu_sums, (rng.standard_normal(7),), 0, rng)
    checked_against_plain(scalar_loop, (0.7,), 0, rng)
    assert 'bx = bx * (0.5 + math.sin(x) + x * math.cos(x))' in tf.source(scalar_loop, args=(0.7,))


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_factoring_changes_gradients_only_by_rounding_and_values_not_at_all(case, monkeypatch):
    args = case.args(np.random.default_rng(3))
    cache.clear()
    value, grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    cache.clear()
    monkeypatch.setattr(pipeline.factor, 'transform', lambda *a: None)
    plain_value, plain_grads = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    cache.clear()
    np.testing.assert_array_equal(value, plain_value)
    for g, h in zip(np.atleast_1d(np.asarray(grads, dtype=object)),
                    np.atleast_1d(np.asarray(plain_grads, dtype=object))):
        np.testing.assert_allclose(np.asarray(g, dtype=complex), np.asarray(h, dtype=complex),
                                   rtol=1e-12, atol=1e-300)
        assert np.asarray(g).dtype == np.asarray(h).dtype


def test_a_backward_takes_out_factors_of_what_the_combined_function_shows_inexact():
    src = ('def f_backward(_tape, bout):\n    (x, u) = _pop()\n    bx = bout * x + bout * 2.0\n'
           '    bu = bout * u + bout * 2.0\n    return bx, bu\n')
    fdef = nodes.parse_gast(src).body[0]
    out = unparse(factor.transform(fdef, {'bx', 'bu'}, (), {'_pop'}, restored={'x'}))
    assert 'bx = bout * (x + 2.0)' in out and 'bu = bout * u + bout * 2.0' in out
    assert factor.transform(fdef, {'bx', 'bu'}, (), {'_pop'}, restored=set()) is None


def elementwise(x):
    return np.sum(np.tanh(x) * x + np.exp(-0.5 * x * x))


def test_the_split_pair_is_factored_as_the_combined_function():
    from tapeflow import compilation
    from tapeflow.arguments import argument_kinds, array_shapes, scalar_positions
    x = np.linspace(-1.0, 1.2, 6)
    compiled = compilation.compile(elementwise, compilation.Spec(
        'reverse', (0,), scalar_args=scalar_positions((x,)), arg_shapes=array_shapes((x,)),
        kinds=argument_kinds((x,))))
    combined = compiled.source
    backward = compiled.split_source[compiled.split_source.index('def elementwise_backward'):]
    factored = combined[combined.index('bx = '):].splitlines()[0].strip()
    # `_mul2 = -0.5 * x` read as such: `_mul2 + x * -0.5` is `-x`, and `x` taken out
    assert factored.endswith('* (x * (1.0 - _tanh * _tanh - _exp) + _tanh)')
    assert factored in backward
    # `_mul2` then read by nothing: not pushed (`witness.unread`), fused into its reader
    assert '_mul2' not in compiled.split_source
    assert '_exp = np.exp(-0.5 * x * x)' in compiled.split_source
    value, pullback = tf.vjp(elementwise, x)
    grads = tf.grad(elementwise)(x)
    np.testing.assert_allclose(pullback(1.0)[0], grads, rtol=1e-13)
    variable = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.function(elementwise)(variable)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, variable)), grads, rtol=1e-13)
    checked_against_plain(elementwise, (x,), 0, np.random.default_rng(8))
