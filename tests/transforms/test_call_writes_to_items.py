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
