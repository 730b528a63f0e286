"""An alias that one branch keeps surely and another only if an in-place write kept it.

Found by the fuzzer (seed 80808, program 1316; there before): after `y = a`, an
`if` whose else branch writes `y /= 2.0` leaves `y` an alias of `a` on both paths,
surely on the first, and on the second where `/=` wrote in place (decided at run
time, by a flag set after that write). The join kept the run-time form, whose flag
is False where the write never ran: the later `y *= 2.0` was not seen as changing
`a` (a gradient of half its value). A path that decides the alias otherwise now
sets the flag before the join (`memory.fixes`).
"""
import numpy as np
import pytest

from tapeflow.analysis import aliasing
from tests.gradcheck import checked_against_plain
from tests.transforms.passes import front


def scale(v, c):
    v *= c


def written_in_one_branch(x):
    a = np.array(x)
    y = a
    if a[2, 1] < 2.0:
        c = 1.0
    else:
        y /= 2.0
    y *= 2.0
    return np.sum(a * a)


def written_through_a_call(x):
    a = np.array(x)
    x = a
    if a[2, 1] < 2.0:
        c = 1.0
    else:
        x /= 2.0
    scale(x, 2.0)
    return np.sum(a * a)


def written_in_a_nested_branch(x):
    a = np.array(x)
    y = a
    if a[0, 0] > 0.0:
        if a[0, 1] > 0.0:
            y /= 2.0
    else:
        z = 1.0
    y *= 2.0
    return np.sum(a * a)


def fuzz_80808_1316(x):
    a = np.array(x)
    b = (np.ones((3, 3)) * np.mean(x)) + a.T
    x = a
    if a[:, 1][2] < 2.0:
        b[1:] *= (np.ones((2, 3)) * np.mean(a.T)) / (1.0 + np.mean(x[:, -2]) ** 2)
    else:
        x /= (1.0 + a ** 2)
    scale(x, 2.0)
    return np.sum(x * x) + np.sum(b * b) + np.sum(a * a)


@pytest.mark.parametrize('fn', [written_in_one_branch, written_through_a_call,
                                written_in_a_nested_branch, fuzz_80808_1316])
@pytest.mark.parametrize('sign', [1.0, -1.0], ids=['first-branch', 'other-branch'])
def test_gradients_through_an_alias_joined_from_two_branches(fn, sign):
    rng = np.random.default_rng(7)
    x = sign * (rng.random((3, 3)) + 0.5)
    if fn is not written_in_a_nested_branch:
        x = x + (sign < 0) * 3.0               # a[2, 1] >= 2: the else branch
    checked_against_plain(fn, (x,), 0, rng)


def test_the_branch_that_keeps_the_alias_surely_is_told_to_set_the_flag():
    node = front(written_in_one_branch)
    facts = aliasing.Aliasing(node, {}, None)
    branch = next(s for s in node.body if s.__class__.__name__ == 'If')
    (joined, path), = facts.fixes[(id(branch), 'body')]
    assert (joined.derived, joined.source, joined.maybe, path) == ('y', 'a', True, None)
    assert (id(branch), 'orelse') not in facts.fixes
