"""A user function writing into the arrays its list argument holds, and into the list.

Found by the fuzzer (seed 23232, program 866; there before this session): `h(rows)`
scales `rows[0]` (the caller's `x`) in place, then replaces that slot. Whether `rows`
held `x` was asked after the call, when the slot no longer held it: `x` was taken to be
untouched, and its gradient missed the scaling (-57.2 for -703.1). What runs before a
write (is `x` held there? is it apart?) now runs before the call making it; where the
slot no longer holds `x` after the call, what `x` became is not known: refused where
the call is, asking for a copy.
"""
import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import checked_against_plain


def scale_then_replace(p):
    c = p[0]
    c *= p[0].sum()
    p[0] = 2.0


def scale_in_place(p):
    c = p[-1]
    c[:, 0] *= 3.0


def fuzz_23232_866(x):
    rows = [x]
    scale_then_replace(rows)
    return np.sum(x * x)


def scaled_through_the_list(x):
    rows = [x]
    scale_in_place(rows)
    return np.sum(rows[0] * x) + np.sum(x * x)


def test_a_slot_replaced_after_its_array_was_written_is_refused_at_the_call():
    x = np.random.default_rng(1).random((2, 3)) + 0.5
    line = fuzz_23232_866.__code__.co_firstlineno + 2
    with pytest.raises(tf.UnsupportedError, match='no slot of rows holds x after this write') \
            as info:
        tf.grad(fuzz_23232_866)(x)
    assert f'{__file__}:{line}:' in str(info.value)


def test_an_array_written_through_the_list_holding_it():
    rng = np.random.default_rng(2)
    checked_against_plain(scaled_through_the_list, (rng.random((2, 3)) + 0.5,), 0, rng)


def sum_of_a_list_a_closure_appends_to(x):
    s = (np.sum(x) + 2.0) + (x[0] + 2.0)
    ys = [2.0, 2.0, 2.0, s]

    def record(p):
        ys.append(p)
        p *= p                  # a float: bound again, not written

    record(2.0 / (1.0 + 0.5 ** 2))
    record(ys[-1])
    return sum(ys) + s + np.sum(x * x)


def a_view_and_a_list_written_in_one_try(x):
    x = x * 1.0
    a = x[:2]
    ys = [x[0]]
    try:
        a *= 2.0
        ys.append(ys[-1] * 3.0)
    except ValueError:
        pass
    return np.sum(x * x) + ys[0] * ys[-1]


@pytest.mark.parametrize('f', [sum_of_a_list_a_closure_appends_to,
                               a_view_and_a_list_written_in_one_try],
                         ids=lambda f: f.__name__)
def test_a_call_writing_two_names_binds_both_before_either_is_brought_up_to_date(f):
    """Fuzzer, seed 5071 index 1234: forward mode crashed (IndexError) where a call wrote
    into a list and into a value the list holds: the list was brought up to date with
    the tangent it had before the call (one slot short). Every name a call writes is
    bound again first, then the other readers are brought up to date."""
    x = np.array([1.1, 0.7, 0.5])
    checked_against_plain(f, [x.copy()], 0, np.random.default_rng(3))
    direction = np.array([0.3, -0.2, 0.5])
    eps = 1e-6
    numeric = (f(x + eps * direction) - f(x - eps * direction)) / (2 * eps)
    value, tangent = tf.jvp(f, (x.copy(),), (direction,))
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    grad = tf.grad(f)
    numeric2 = np.array([(grad(x + 1e-5 * e) - grad(x - 1e-5 * e)) / 2e-5 for e in np.eye(3)])
    np.testing.assert_allclose(tf.hessian(f)(x.copy()), numeric2, rtol=1e-4, atol=1e-6)
