"""One entry per function (rules/entries.py): the formula a helper is given is inlined
into generated code, in both modes; math's twins of NumPy's rules are written with
math's functions and give math's numbers; what the inliner cannot spell is called,
never guessed."""
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import registry
from tapeflow.rules.entries import (MATH_FOR_NUMPY, def_elementwise, def_linear, elementwise,
                                    inlinable, scalar_twin)
from tapeflow.transforms import inline
from tapeflow.transforms.inline import _rule_template


def uses_sin(x):
    return np.sin(x) * 2.0


def uses_math_sin(x):
    return math.sin(x) * 2.0


def uses_math_acos(x):
    return math.acos(x) * 2.0


def test_an_elementwise_entry_is_inlined_in_both_modes():
    assert 'bx = unbroadcast(bout * 2.0, _sin) * np.cos(x)' in tf.source(uses_sin)
    assert 'dx * np.cos(x)' in tf.source(uses_sin, mode='forward')


def test_the_math_twin_is_written_with_math():
    assert 'bx = unbroadcast(bout * 2.0, math.sin(x)) * math.cos(x)' in tf.source(uses_math_sin)
    assert 'dx * math.cos(x)' in tf.source(uses_math_sin, mode='forward')
    assert 'bx = -unbroadcast(bout * 2.0, math.acos(x)) / math.sqrt(1.0 - x * x)' in \
        tf.source(uses_math_acos)


# math.f -> what its rule must compute, written out with math's functions (the rules
# math_rules held before they derived from NumPy's entries)
EXPECTED = {
    math.sin: lambda g, ans, x: g * math.cos(x),
    math.cos: lambda g, ans, x: -g * math.sin(x),
    math.asin: lambda g, ans, x: g / math.sqrt(1.0 - x * x),
    math.acos: lambda g, ans, x: -g / math.sqrt(1.0 - x * x),
    math.sinh: lambda g, ans, x: g * math.cosh(x),
    math.cosh: lambda g, ans, x: g * math.sinh(x),
    math.asinh: lambda g, ans, x: g / math.sqrt(x * x + 1.0),
    math.acosh: lambda g, ans, x: g / math.sqrt(x * x - 1.0),
    math.sqrt: lambda g, ans, x: g / (2.0 * ans),
    math.log10: lambda g, ans, x: g / (x * math.log(10.0)),
    math.log1p: lambda g, ans, x: g / (1.0 + x),
}


@pytest.mark.parametrize('fn', list(EXPECTED), ids=lambda fn: fn.__name__)
def test_the_math_twin_gives_maths_numbers_bit_for_bit(fn):
    entry = registry.RULES[fn]
    assert entry.vjps[0].__globals__['np'] is MATH_FOR_NUMPY
    x = 1.7 if fn is math.acosh else 0.3
    ans = fn(x)
    for rule in (entry.vjps[0], entry.jvps[0]):
        got = rule(0.7, ans, x)
        assert got.__class__ is float
        assert got == EXPECTED[fn](0.7, ans, x)
    for x in (-0.6, 0.25):
        if fn in (math.acosh, math.sqrt, math.log10):
            continue
        assert tf.grad(fn)(x) == EXPECTED[fn](1.0, fn(x), x)


def test_the_math_twin_keeps_maths_domain():
    with pytest.raises(ValueError):
        tf.grad(math.sqrt)(-1.0)              # math.sqrt of a negative raises, as before
    with pytest.raises(ZeroDivisionError):
        registry.RULES[math.sqrt].vjps[0](1.0, 0.0, 0.0)


def test_what_a_stand_in_cannot_spell_is_called_not_guessed():
    rule = inlinable(lambda g, ans, x: g * np.tan(x))
    twin = scalar_twin(rule)
    assert _rule_template(rule) is not inline._NOT_INLINABLE
    assert _rule_template(twin) is inline._NOT_INLINABLE
    with pytest.raises(AttributeError):
        twin(1.0, 0.0, 0.5)                   # math's stand-in has no tan: never np's


def softplus(x):
    return np.log1p(np.exp(x))


def flipped(a, axis=None):
    return np.flip(a, axis)


def halved(x):
    return x * 0.5


def test_the_one_word_helpers_are_inlined():
    before = dict(registry.RULES)
    try:
        def_elementwise(softplus, lambda ans, x: 1.0 / (1.0 + np.exp(-x)))
        def_linear(flipped, transpose=lambda g, ans, a, axis=None: np.flip(g, axis))

        def loss(x):
            return np.sum(softplus(x) * flipped(x, 0))
        text = tf.source(loss)
        assert 'bsoftplus * (1.0 / (1.0 + np.exp(-x)))' in text
        assert 'np.flip(bflipped, 0)' in text
        assert 'dflipped = flipped(dense(dx, x), 0)' in tf.source(loss, mode='forward')
        x = np.array([0.3, -1.2, 2.0])
        expected = np.flip(x) / (1.0 + np.exp(-x)) + np.flip(softplus(x))
        assert np.allclose(tf.grad(loss)(x), expected)
        assert np.allclose(tf.jvp(loss, (x,), (np.ones(3),))[1], np.sum(expected))
    finally:
        for fn in [fn for fn in registry.RULES if fn not in before]:
            del registry.RULES[fn]


def test_an_entry_from_outside_tapeflow_is_a_user_primitive():
    before = dict(registry.RULES)
    try:
        elementwise(halved, lambda g, ans, x: g * 0.5, forms='any shape')
        assert halved in registry.user_primitives()       # the disk cache keys on it
        assert registry.FORMS[halved] == 'any shape'
        assert 'bx = unbroadcast(bout, _halved) * 0.5' in tf.source(lambda x: halved(x) + 1.0)
    finally:
        for fn in [fn for fn in registry.RULES if fn not in before]:
            del registry.RULES[fn]
        registry.FORMS.pop(halved, None)


def test_a_plain_lambda_given_to_defvjp_is_called():
    rule = lambda g, ans, x: g * 3.0     # noqa: E731
    assert _rule_template(rule) is _rule_template(lambda: None)      # both not inlinable


def test_every_formula_an_entry_was_given_is_inlinable_and_reads_module_names():
    import builtins
    seen = 0
    for entry in list(registry.RULES.values()):
        for rule in list(entry.vjps.values()) + list(entry.jvps.values()):
            if not getattr(rule, '__tapeflow_inline__', False) or isinstance(
                    rule.__tapeflow_inline__, tuple):
                continue
            seen += 1
            template = _rule_template(rule)
            assert template is not inline._NOT_INLINABLE, rule
            for name in template.free:
                assert name in template.fixed or name in rule.__globals__ \
                    or hasattr(builtins, name), f'{rule.__module__}: {name}'
    assert seen >= 60


def uses_logaddexp(x, y):
    return np.sum(np.logaddexp(x, y))


def test_a_binary_entry_is_fitted_in_reverse_and_broadcast_in_forward():
    text = tf.source(uses_logaddexp, argnums=(0, 1))
    assert 'fit(blogaddexp * np.exp(x - _logaddexp), x)' in text
    assert 'fit(blogaddexp * np.exp(y - _logaddexp), y)' in text
    forward = tf.source(uses_logaddexp, argnums=(0, 1), mode='forward')
    assert 'dx * np.exp(x - _logaddexp)' in forward
    x, y = np.array([0.3, -0.4]), np.array([[0.1], [0.9]])
    gx, gy = tf.grad(uses_logaddexp, argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape
    assert np.isclose(np.sum(gx) + np.sum(gy), 4.0)      # each pair's weights sum to 1


def doubled(x):
    return x * 2.0


def tripled(x):
    return x * 3.0


def test_two_formulas_on_one_line_are_told_apart_and_one_without_source_is_called():
    before = dict(registry.RULES)
    try:
        elementwise(doubled, lambda g, ans, x: g * 2.0, forms='-'); elementwise(tripled, lambda g, ans, x: g * 3.0, forms='-')  # noqa: E702,E501
        text = tf.source(lambda x: doubled(x) + tripled(x))
        assert 'bx = unbroadcast(bout, _tripled) * 3.0 + unbroadcast(bout, _doubled) * 2.0' in text
        unreadable = inlinable(eval('lambda g, ans, x: g * 4.0'))     # no file to read
        assert _rule_template(unreadable) is inline._NOT_INLINABLE
    finally:
        for fn in [fn for fn in registry.RULES if fn not in before]:
            del registry.RULES[fn]
        for fn in (doubled, tripled):
            registry.FORMS.pop(fn, None)


@pytest.fixture
def registry_restored():
    before = dict(registry.RULES)
    yield
    for fn in [fn for fn in registry.RULES if fn not in before]:
        del registry.RULES[fn]
        registry.FORMS.pop(fn, None)


def _scaled(x, k, axis=None):
    return np.sum(x * k, axis=axis)


def _scaled_too(x, k, axis=None):
    return np.sum(x * k, axis=axis)


def _scaled_vjp_x(g, ans, x, k, axis=None):
    return g * k


def _scaled_vjp_k(g, ans, x, k, axis=None):
    return np.sum(g * x)


def _scaled_jvp_x(t, ans, x, k, axis=None):
    return np.sum(t * k, axis=axis)


def _scaled_batched_x(t, ans, x, k, axis=None):
    return np.sum(t * k, axis=-1)


def test_one_entry_registers_every_rule_of_a_function_and_its_docs_line(registry_restored):
    from tapeflow.rules.entries import entry
    made = entry(_scaled, (_scaled_vjp_x, _scaled_vjp_k), (_scaled_jvp_x, None),
                 batched=_scaled_batched_x, static=(2,), also=(_scaled_too,),
                 forms='x any shape, k scalar', name='scaled')
    for fn in (_scaled, _scaled_too):
        table = registry.RULES[fn]
        assert table.vjps == {0: _scaled_vjp_x, 1: _scaled_vjp_k}
        assert table.jvps == {0: _scaled_jvp_x}
        assert table.batched_jvps == {0: _scaled_batched_x}
        assert table.static_argnums == frozenset({2})
        assert registry.FORMS[fn] == 'x any shape, k scalar'
        assert not hasattr(_scaled_vjp_x, '__tapeflow_inline__')   # called, as given
    assert made is registry.RULES[_scaled] and made.name == 'scaled'
    assert registry.RULES[_scaled_too].name.endswith('_scaled_too')
    with pytest.raises(registry.MissingRule, match='forward-mode rule for argument 1 of scaled'):
        made.jvp(1)


def test_an_entry_without_forms_is_left_out_of_the_docs(registry_restored):
    from tapeflow.rules.entries import entry

    def helper(x):
        return x
    entry(helper, lambda g, ans, x: g, lambda t, ans, x: t, forms=None)
    assert helper in registry.RULES and helper not in registry.FORMS
