"""Fusing single-use temporaries and uniform cotangents: leaner code, the same numbers bit for bit."""
import math

import gast
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import fusion, pipeline, uniform
from tests.corpus import CASES


def _gradients(case, rng_seed=3):
    args = case.args(np.random.default_rng(rng_seed))
    return args, tf.value_and_grad(case.fn, argnums=case.wrt)(*args)


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True) and \
        np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_fused_code_computes_the_same_bits(case, monkeypatch):
    """Every corpus function: value and gradients with both passes equal those without
    (factoring, which rounds otherwise, off in both: `test_factor`)."""
    monkeypatch.setattr(pipeline.factor, 'transform', lambda *args: None)
    cache.clear()
    _, fused = _gradients(case)
    cache.clear()
    monkeypatch.setattr(pipeline.fusion, 'transform', lambda fdef, **kw: fdef)
    monkeypatch.setattr(pipeline.uniform, 'transform', lambda *a, **kw: None)
    _, plain = _gradients(case)
    cache.clear()
    assert _same(fused, plain)


def scalar_loop(x):
    for i in range(100):
        x = math.sin(x) * x + 0.5 * x
    return x


def logistic(w, X, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z)


def test_scalar_loop_reads_like_the_hand_written_adjoint():
    text = tf.source(scalar_loop, args=(0.7,))
    assert '        x = math.sin(x) * x + 0.5 * x\n' in text
    assert '        bx = bx * (0.5 + math.sin(x) + x * math.cos(x))\n' in text
    assert '_value = x' in text                 # the value keeps its name


def test_uniform_mean_cotangent():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(5), rng.standard_normal((7, 5)), rng.standard_normal(7))
    text = tf.source(logistic, args=args)
    assert 'bsub = uniform_mean(bout, _sub)' in text      # the seed: `return np.mean(...)`
    assert 'bw = grad_of_matmul_b(-bsub * y + bsub / _add * _exp, X, w)' in text
    generic = tf.source(logistic)                # no shapes: the array stays
    assert 'grad_of_mean(bout, _sub)' in generic


def test_uniform_helpers_keep_arrays_where_numbers_would_round_differently():
    from tapeflow.rules.numpy_reductions import grad_of_mean
    from tapeflow.rules.reduced_cotangents import uniform_mean, uniform_sum
    x64, x32 = np.ones(4), np.ones(4, np.float32)
    assert uniform_sum(2.0, x64) == 2.0 and uniform_mean(2.0, x64) == 0.5
    assert uniform_sum(np.float64(2.0), x64) == 2.0
    for g, x in ((2.0, x32), (np.float32(2.0), x64), (np.array(2.0), x64)):
        np.testing.assert_array_equal(uniform_mean(g, x), grad_of_mean(g, x))
        assert uniform_mean(g, x).shape == x.shape


def _fused(src, **kw):
    fdef = nodes.parse_gast(src).body[0]
    return unparse(fusion.transform(fdef, **kw)).strip()


def test_tape_bindings_stay_named():
    """Regression: `_pop = _tape.pop` fused into its one use hid the pop from
    generated code differentiated again (a wrong Jacobian)."""
    src = 'def f(_tape, b):\n    _pop = _tape.pop\n    v = _pop()[0]\n    return b * v\n'
    assert '_pop = _tape.pop' in _fused(src, pop={'_pop'})


def test_no_fusion_across_writes_or_calls():
    writes = 'def f(a, v):\n    t = a * 2.0\n    a[0] = v\n    y = t + 1.0\n    return y\n'
    assert 't = a * 2.0' in _fused(writes)
    calls = 'def f(a, g):\n    t = a * 2.0\n    g(a)\n    y = t + 1.0\n    return y\n'
    assert 't = a * 2.0' in _fused(calls)
    rebinds = 'def f(a, b):\n    t = a * 2.0\n    a = b\n    y = t + 1.0\n    return y\n'
    assert 't = a * 2.0' in _fused(rebinds)
    twice = 'def f(a):\n    t = a * 2.0\n    y = t + t\n    return y\n'
    assert 't = a * 2.0' in _fused(twice)
    fused = 'def f(a, b):\n    t = a * 2.0\n    _push(b)\n    y = t + 1.0\n    return y\n'
    assert 'y = a * 2.0 + 1.0' in _fused(fused, push={'_push'})


def test_uniform_needs_every_read_to_meet_an_array():
    src = ('def f(bs, x, y):\n    b = grad_of_sum(bs, x)\n    c = b * y\n    d = b\n'
           '    return c, d\n')
    fdef = nodes.parse_gast(src).body[0]
    helpers = {'grad_of_sum': object()}
    uniform.transform(fdef, {'x': (3,), 'y': (3,)}, dict(helpers), helpers)
    assert 'grad_of_sum(bs, x)' in unparse(fdef)        # `d = b` would keep a number
    fdef = nodes.parse_gast(src.replace('    d = b\n', '    d = -b / y\n')).body[0]
    uniform.transform(fdef, {'x': (3,), 'y': (3,)}, dict(helpers), helpers)
    assert 'uniform_sum(bs, x)' in unparse(fdef)


def _pure(*names):
    def helper():
        pass
    helper.__tapeflow_pure__ = True
    return {name: helper for name in names}


def test_pure_helpers_and_reductions_fuse_like_arithmetic():
    src = ('def f(g, x, y, m):\n    bm = unbroadcast(-g, m)\n    s = np.sum(x, axis=1)\n'
           '    b = y + grad_of_max(bm, x, m, 1) * s\n    return b\n')
    assert _fused(src) == src.strip()                       # without the namespace: calls
    assert _fused(src, namespace=_pure('unbroadcast', 'grad_of_max')) == (
        'def f(g, x, y, m):\n    b = y + grad_of_max(unbroadcast(-g, m), x, m, 1) * '
        'np.sum(x, axis=1)\n    return b')


@pytest.mark.parametrize('value', [
    'np.sum(x, axis=1, out=o)', 'np.sum(x, 1, None, o)', 'np.sum(x, where=x > 0)',
    'np.sum(x, axis=k)', 'np.add(x, 1.0, out=o)', 'helper(x)', 'unbroadcast(x, y=x)'])
def test_what_could_write_or_read_otherwise_is_not_fused(value):
    src = f'def f(x, o, k):\n    t = {value}\n    y = t + 1.0\n    return y\n'
    assert f'    t = {value}\n' in _fused(src, namespace=_pure('unbroadcast')) + '\n'


def test_a_helper_the_function_rebinds_is_not_the_helper():
    src = ('def f(g, m, unbroadcast):\n    bm = unbroadcast(-g, m)\n    y = bm * 2.0\n'
           '    return y\n')
    assert 'bm = unbroadcast(-g, m)' in _fused(src, namespace=_pure('unbroadcast'))


def test_fused_helpers_stay_about_one_line_deep_and_wide():
    chain = ('def f(g, a, b, c):\n    t1 = u(g, a)\n    t2 = u(t1, b)\n    t3 = u(t2, c)\n'
             '    return t3\n')
    text = _fused(chain, namespace=_pure('u'))
    assert 'u(u(g, a), b)' in text and 't3 = u(t2, c)' in text      # two deep, not three
    wide = ('def f(g, first_operand, second_operand):\n'
            '    t = unbroadcast(g * first_operand * second_operand, first_operand)\n'
            '    y = unbroadcast(t * second_operand * first_operand, second_operand)\n'
            '    return y\n')
    assert '    t = unbroadcast(' in _fused(wide, namespace=_pure('unbroadcast'))


def test_a_name_assigned_twice_fuses_where_each_value_is_read_once_right_after():
    """`_sin` computed in the forward sweep and again in the reverse one: each value has
    one reader, the next statement to mention it, so each fuses."""
    src = ('def f(x, bx):\n    _sin = math.sin(x)\n    y = _sin * x\n    _sin = math.sin(y)\n'
           '    bx = bx * _sin\n    return y, bx\n')
    assert _fused(src) == ('def f(x, bx):\n    y = math.sin(x) * x\n    bx = bx * math.sin(y)\n'
                           '    return (y, bx)')


@pytest.mark.parametrize('src', [
    # a value read twice, another not at all
    'def f(x):\n    t = x * 2.0\n    a = t + 1.0\n    b = t + 2.0\n    t = x * 3.0\n    return a, b\n',
    # read in the next trip of the loop, before it is assigned again
    'def f(x):\n    t = x\n    for i in range(3):\n        y = t * 2.0\n        t = y + 1.0\n'
    '    return y\n',
    # read in a nested block
    'def f(x, c):\n    t = x * 2.0\n    if c:\n        y = t + 1.0\n    else:\n        y = t\n'
    '    t = x * 3.0\n    z = t + y\n    return z\n',
])
def test_values_read_elsewhere_than_right_after_stay(src):
    out = _fused(src)
    assert 't = x' in out
