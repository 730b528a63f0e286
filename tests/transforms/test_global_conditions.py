"""A branch on a global or a closure value (`if FLAG:`) reads that value.

The reverse sweep pushes the branch's test; a pushed name not bound on every
path gets `name = None` first. A global is no local: it was shadowed by
None, the branch never taken, and value and gradient were those of the other
branch (a wrong number).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain, seed_of

FLAG = True
SCALE = 3.0
X = np.array([1.0, -2.0, 0.5])


def global_branch(x):
    if FLAG:
        return np.sum(np.sin(x) * SCALE)
    return np.sum(x)


def closure_branch(flag):
    def f(x):
        y = x * 2.0
        if flag:
            y = np.exp(y)
        return np.sum(y)
    return f


def test_a_branch_on_a_global_is_taken():
    grads = checked_against_plain(global_branch, [X], 0, np.random.default_rng(seed_of('g')))
    np.testing.assert_allclose(grads, SCALE * np.cos(X))


@pytest.mark.parametrize('flag', [False, True])
def test_a_branch_on_a_closure_value_is_taken(flag):
    f = closure_branch(flag)
    grads = checked_against_plain(f, [X], 0, np.random.default_rng(seed_of(str(flag))))
    np.testing.assert_allclose(grads, 2 * np.exp(2 * X) if flag else 2 * np.ones(3))


def test_a_branch_on_a_global_in_forward_mode():
    v = np.array([0.3, 0.1, -0.7])
    value, tangent = tf.jvp(global_branch, (X,), (v,))
    np.testing.assert_allclose(value, global_branch(X))
    np.testing.assert_allclose(tangent, np.sum(SCALE * np.cos(X) * v))


def test_a_global_that_changes_between_calls_is_read_again(monkeypatch):
    before = tf.grad(global_branch)(X)
    monkeypatch.setattr(sys.modules[__name__], 'FLAG', False)
    np.testing.assert_allclose(tf.grad(global_branch)(X), np.ones(3))
    np.testing.assert_allclose(before, SCALE * np.cos(X))
