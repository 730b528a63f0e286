"""Every corpus function's compiled gradient agrees with central finite differences."""
import numpy as np
import pytest

import tapeflow as tf
from tests.corpus import CASES
from tests.gradcheck import check_gradient, seed_of


def test_corpus_is_large():
    assert len(CASES) >= 60


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_compiled_gradient_matches_finite_differences(case):
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    grads = tf.grad(case.fn, argnums=case.wrt)(*args)
    for g, i in zip(grads, case.wrt):
        assert np.shape(g) == np.shape(args[i])
        assert type(g) is type(args[i])
    check_gradient(case.fn, grads, args, case.wrt, rng)


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_value_is_the_functions_value(case):
    rng = np.random.default_rng(7)
    args = case.args(rng)
    value, _ = tf.value_and_grad(case.fn, argnums=case.wrt)(*args)
    np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12)
