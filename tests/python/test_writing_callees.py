"""A helper that writes into an array it was given and returns from inside a handler or a
`match` case (transforms/variants.py): each of its returns gives back what it wrote (a
return there crashed, `'float' object is not subscriptable`). Value against the plain
call, gradient against central differences, forward mode and Hessian, on inputs taking
each return."""
from __future__ import annotations

import numpy as np
import pytest

from tests.gradcheck import exact_to_second_order


def fill_guarded(y, v):
    y[0] = v * 2.0
    try:
        if v > 0.5:
            raise ValueError('big')
        y[1] = v * v
    except ValueError:
        y[1] = -v
        return 1.0 + v
    return 2.0


def written_by_a_guarded_helper(x):
    y = np.zeros(3)
    r = fill_guarded(y, x[0] * 1.0)
    return np.sum(y * x) * r


def fill_matched(y, v, k):
    y[0] = v * 2.0
    match k:
        case 1:
            y[1] = v * v
            return 3.0 * v
        case _:
            y[2] = v
    return 2.0


def written_by_a_matching_helper(x):
    y = np.zeros(3)
    r = fill_matched(y, x[0] * 1.0, 1) + fill_matched(y, x[1], 2)
    return np.sum(y * x) * r


@pytest.mark.parametrize('first', [0.7, 0.3])
@pytest.mark.parametrize('f', [written_by_a_guarded_helper, written_by_a_matching_helper])
def test_a_writing_helper_returning_from_a_handler_or_case(f, first):
    exact_to_second_order(f, np.array([first, 0.2, -0.3]))
