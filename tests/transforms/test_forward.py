"""Forward mode on the whole corpus: finite differences, and agreement with reverse mode."""
import numpy as np
import pytest

import tapeflow as tf
from tests.corpus import CASES
from tests.gradcheck import inner, numeric_directional, random_direction, seed_of


def _tangents(case, args, rng):
    directions = {i: random_direction(args[i], rng) for i in case.wrt}
    tangents = []
    for i, a in enumerate(args):
        if i in directions:
            tangents.append(directions[i])
        elif isinstance(a, (float, np.ndarray)):
            tangents.append(np.zeros_like(a) if isinstance(a, np.ndarray) else 0.0)
        else:
            tangents.append(a * 0 if isinstance(a, (int, bool)) else None)
    return directions, tangents


def _wrt_only(case, args):
    """jvp differentiates every float argument: zero tangents for the others."""
    return case


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_jvp_matches_finite_differences(case):
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    directions, tangents = _tangents(case, args, rng)
    value, tangent = tf.jvp(case.fn, args, tangents)
    np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12)
    numeric = numeric_directional(case.fn, args, list(directions), list(directions.values()))
    assert np.isclose(float(np.sum(tangent)), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_jvp_and_vjp_are_transposes(case):
    rng = np.random.default_rng(3)
    args = case.args(rng)
    directions, tangents = _tangents(case, args, rng)
    _, tangent = tf.jvp(case.fn, args, tangents)
    grads = tf.grad(case.fn, argnums=case.wrt)(*args)
    u = 1.7                                   # a cotangent of the scalar output
    lhs = u * sum(inner(g, directions[i]) for g, i in zip(grads, case.wrt))
    assert np.isclose(lhs, u * float(tangent), rtol=1e-9, atol=1e-12)


def quadratic_with_loop(x, a):
    s = 0.0
    for i in range(3):
        s = s + x * a[i]
    return s * x


EXPECTED_FORWARD = '''\
def quadratic_with_loop_jvp(x, a, dx):
    s = 0.0
    ds = 0.0
    for i in range(3):
        _item = a[i]
        _mul = x * _item
        dmul = broadcast_tangent(dx * _item, _mul)
        _s = s + _mul
        ds = broadcast_tangent(ds, _s) + broadcast_tangent(dmul, _s)
        s = _s
    _mul2 = s * x
    dmul2 = broadcast_tangent(ds * x, _mul2) + broadcast_tangent(s * dx, _mul2)
    return (_mul2, dmul2)
'''


def test_generated_forward_code():
    assert tf.source(quadratic_with_loop, mode='forward') == EXPECTED_FORWARD


def branchy(x):
    if x > 0:
        y = x * x
    else:
        y = -x
    return y


EXPECTED_BRANCHY = '''\
def branchy_jvp(x, dx):
    _cond = x > 0
    if _cond:
        y = x * x
        dy = broadcast_tangent(dx * x, y) + broadcast_tangent(x * dx, y)
    else:
        y = -x
        dy = -dx
    return (y, dy)
'''


def test_generated_forward_code_through_a_branch():
    assert tf.source(branchy, mode='forward') == EXPECTED_BRANCHY
