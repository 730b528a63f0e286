"""np.einsum's rules to any order (`rules/multilinear.py`): every rule of a rule, to the
third, against central differences; through the compiler to second and third order;
the subscripts never differentiated."""
import zlib

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import registry
from tapeflow.rules.numpy_einsum import EINSUM
from tests.gradcheck import check_grads

# (subscripts or None for the sublist form, operand shapes)
CASES = [
    ('ij,jk->ik', [(2, 3), (3, 4)]),
    ('ii', [(3, 3)]),
    ('ij,jk,kl', [(2, 3), (3, 4), (4, 2)]),
    ('...ij,...jk->...ik', [(2, 2, 3), (1, 3, 4)]),
    ('i,i->', [(4,), (4,)]),
    ('ij,j->ij', [(2, 3), (1,)]),
    (None, [(2, 3), (3, 4)]),
]


def _arguments(spec, shapes, rng, complex_=False):
    def draw(shape):
        x = rng.standard_normal(shape)
        return x + 1j * rng.standard_normal(shape) if complex_ else x
    operands = [draw(s) for s in shapes]
    if spec is None:                       # A[0,1] B[1,2] -> [0,2]
        return [operands[0], [0, 1], operands[1], [1, 2], [0, 2]]
    return [spec] + operands


def _operand_positions(args):
    return [p for p in range(len(args)) if EINSUM.is_operand(args, p)]


def _inner(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _check_rules(rule, inputs, rng, depth, seen):
    """Each rule of `rule` (a Form) in each input that carries a derivative, against
    central differences: the JVP directly, the VJP through <h, J t> = <V h, t>; then the
    rules' own rules, to `depth` more orders."""
    entry = registry.RULES[rule]
    out = rule(*inputs)
    for i, x in enumerate(inputs):
        if i in entry.static_argnums or isinstance(x, (str, list)):
            continue
        jvp, vjp = entry.jvps.get(i), entry.vjps.get(i)
        assert (jvp is None) == (vjp is None)
        if jvp is None:
            continue
        t = rng.standard_normal(np.shape(x))
        plus, minus = list(inputs), list(inputs)
        plus[i], minus[i] = x + 1e-6 * t, x - 1e-6 * t
        numeric = (rule(*plus) - rule(*minus)) / 2e-6
        tangent = jvp(t, out, *inputs)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-6)
        h = rng.standard_normal(np.shape(out))
        cotangent = vjp(h, out, *inputs)
        assert np.shape(cotangent) == np.shape(x)
        assert np.isclose(_inner(cotangent, t), _inner(h, numeric), rtol=1e-5, atol=1e-6)
        seen.add((rule.kind, rule.base))
        if depth:
            _check_rules(jvp, (t, out) + tuple(inputs), rng, depth - 1, seen)
            _check_rules(vjp, (h, out) + tuple(inputs), rng, depth - 1, seen)


@pytest.mark.parametrize('spec, shapes', CASES, ids=[c[0] or 'sublists' for c in CASES])
def test_every_rule_of_a_rule_to_the_third_order(spec, shapes):
    rng = np.random.default_rng(zlib.crc32(str(spec).encode()))
    args = _arguments(spec, shapes, rng)
    ans = np.einsum(*args)
    seen = set()
    for p in _operand_positions(args):
        vjp, jvp = registry.RULES[np.einsum].vjps[p], registry.RULES[np.einsum].jvps[p]
        _check_rules(jvp, [rng.standard_normal(np.shape(args[p])), ans] + args, rng, 1, seen)
        _check_rules(vjp, [rng.standard_normal(np.shape(ans)), ans] + args, rng, 1, seen)
    assert seen >= {('J', 2), ('V', 2), ('J', 4), ('V', 4)}


def test_rules_are_made_once_and_named_for_their_order():
    vjp, jvp = EINSUM.first_order(1)
    assert EINSUM.first_order(1) == (vjp, jvp)
    assert registry.RULES[np.einsum].vjps[1] is vjp
    second = registry.RULES[vjp].vjps[4]    # (g, ans, spec, a, b): the VJP's VJP in b
    assert registry.RULES[vjp].vjps[4] is second
    assert (vjp.__name__, second.__name__) == ('_einsum_vjp1', '_einsum_vjp2_order2')
    assert {1, 3} <= registry.RULES[vjp].static_argnums      # the output, operand 1 itself


def test_the_subscripts_carry_no_derivative():
    a, b, g = np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 4))
    # in the sublist form, argument 1 is a list of subscripts: zero, never a number
    assert registry.RULES[np.einsum].vjps[1](g, None, a, [0, 1], b, [1, 2], [0, 2]) == 0.0
    with pytest.raises(NotImplementedError, match='no derivative in its argument 1'):
        registry.RULES[np.einsum].vjps[1](g, None, a, [0.5, 1.0], b, [1, 2], [0, 2])


def _user(spec):
    if spec == 'ij,jk->ik':
        return lambda p: np.sin(np.einsum('ij,jk->ik', p[0], p[1]))
    if spec == 'ii':
        return lambda p: np.einsum('ii', p) ** 2
    if spec == 'ij,jk,kl':
        return lambda p: np.einsum('ij,jk,kl', p[0], np.cos(p[1]), p[2])
    return lambda p: np.einsum(p[0], [0, 1], p[1], [1, 2], [0, 2], optimize=True)


@pytest.mark.parametrize('spec, order', [('ij,jk->ik', 3), ('ii', 3), ('ij,jk,kl', 2),
                                         ('sublists', 2)])
def test_through_the_compiler_to_higher_order(spec, order):
    rng = np.random.default_rng(zlib.crc32(spec.encode()))
    shapes = dict(CASES[:3] + [('sublists', CASES[-1][1])])[spec]
    x = tuple(rng.standard_normal(s) for s in shapes)
    check_grads(_user(spec), x[0] if len(x) == 1 else x, rng, order=order)


def test_complex_operands_to_second_order():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    w = rng.standard_normal((3, 2))
    check_grads(lambda p: np.sin(np.einsum('ij,jk->ik', p[0], p[1])), (z, w), rng, order=2)


def test_hessian_of_a_quadratic_form_is_its_symmetric_part():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    quadratic = tf.hessian(lambda x: np.einsum('i,ij,j', x, a, x))
    np.testing.assert_allclose(quadratic(np.array([0.3, -0.2])), a + a.T, rtol=1e-12)
