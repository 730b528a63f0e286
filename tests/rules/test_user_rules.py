"""Users register rules for their own functions (tapeflow.rules.user)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import RULES, user
from tapeflow.rules.registry import MissingRule


def softclip(x, limit):
    return limit * np.tanh(x / limit)


def weighted(a, b):
    return a * np.exp(b)


user.defvjp(softclip, lambda g, ans, x, limit: g * (1 - (ans / limit) ** 2),
            jvp_rule=lambda t, ans, x, limit: t * (1 - (ans / limit) ** 2))


@user.defvjp(weighted)
def weighted_vjp_a(g, ans, a, b):
    return g * np.exp(b)


@user.defvjp(weighted, argnum=1)
def weighted_vjp_b(g, ans, a, b):
    return g * ans


def loss(x):
    return np.sum(softclip(x, 2.0) * weighted(x, 0.5 * x))


def test_registered_rules_are_in_the_table():
    entry = RULES[softclip]
    assert set(entry.vjps) == {0} and set(entry.jvps) == {0}
    assert set(RULES[weighted].vjps) == {0, 1}
    with pytest.raises(MissingRule, match='forward-mode rule for argument 0 of'):
        RULES[weighted].jvp(0)


def test_the_compiler_uses_user_rules():
    x = np.array([0.3, -1.2, 2.5])
    grad = tf.grad(loss)(x)
    v = np.array([0.7, -0.1, 0.4])
    h = 1e-6
    fd = (loss(x + h * v) - loss(x - h * v)) / (2 * h)
    np.testing.assert_allclose(np.sum(grad * v), fd, rtol=1e-6)


def test_a_rule_list_registers_several_arguments_and_rejects_non_callables():
    def twice(a, b):
        return 2 * a + b
    user.defvjp(twice, [lambda g, ans, a, b: 2 * g, None])
    assert set(RULES[twice].vjps) == {0}
    with pytest.raises(TypeError):
        user.defvjp(twice, ['not a rule'])
    user.defjvp(twice, [lambda t, ans, a, b: 2 * t, lambda t, ans, a, b: t])
    assert set(RULES[twice].jvps) == {0, 1}
