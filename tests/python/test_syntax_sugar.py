"""Python breadth (transforms/sugar/walrus.py, loop_else.py, match.py): `:=`, loop
`else` blocks, `match` statements and keyword parameters were refused by the fence; they
are now lowered to the constructs tapeflow differentiates. Values against the plain call,
gradients against central differences along random directions, forward mode too; the
forms still refused, against their message and their line."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, checked_against_plain, seed_of


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _exact(f, args, wrt=0):
    """Reverse mode against the plain call and central differences; forward mode
    (and reverse again) through `check_grads` in the first argument."""
    rng = np.random.default_rng(seed_of(f.__name__ + repr(args)[:40]))
    grads = checked_against_plain(f, args, wrt, rng)
    rest = args[1:]
    check_grads(lambda x: f(x, *rest), args[0], rng, order=1, what=f.__name__)
    return grads


def _refused(f, args, marker, reason):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(*args)
    error = info.value
    assert error.filename == __file__
    assert error.lineno == _line_of(f, marker), (error.lineno, str(error))
    assert reason in str(error), str(error)
    return error


# ------------------------------------------------------------------ 3. for ... else, while ... else

def for_else_found(x, xs):
    for v in xs:
        if v > 2.0:
            x = x * v
            break
        x = x * np.sin(v)
    else:
        x = x + 100.0 * x
    return x


def for_else_without_break(x, n):
    for i in range(n):
        x = x * 1.1
    else:
        x = x * x
    return x


def while_else(x, n):
    i = 0
    while i < n:
        i += 1
        if i > 4:
            break
        x = x * 1.5
    else:
        x = x * x
    return x


def nested_loop_else_breaks_outer(x, rows):
    for row in rows:
        for v in row:
            if v < 0.0:
                break
            x = x * v
        else:
            continue
        break                          # a row had a negative: stop
    else:
        x = -x
    return x


def for_else_with_return(x, xs):
    for v in xs:
        if v > 5.0:
            return x * v
        if v < 0.0:
            break
    else:
        return x * x
    return x + 1.0


def for_else_with_continue(x, xs):
    for v in xs:
        if v < 1.0:
            continue
        x = x * v
        if x > 50.0:
            break
    else:
        x = x - 1.0
    return x


@pytest.mark.parametrize('f, args', [
    (for_else_found, (1.2, [1.0, 3.0, 4.0])), (for_else_found, (1.2, [1.0, 0.5])),
    (for_else_without_break, (1.2, 3)),
    (while_else, (1.2, 3)), (while_else, (1.2, 9)),
    (nested_loop_else_breaks_outer, (1.2, [[1.0, 2.0], [3.0, -1.0], [5.0]])),
    (nested_loop_else_breaks_outer, (1.2, [[1.0, 2.0], [3.0]])),
    (for_else_with_return, (1.2, [1.0, 6.0])), (for_else_with_return, (1.2, [1.0, -1.0])),
    (for_else_with_return, (1.2, [1.0, 2.0])),
    (for_else_with_continue, (1.2, [0.5, 2.0, 3.0])),
    (for_else_with_continue, (1.2, [9.0, 8.0, 7.0])),
], ids=lambda v: getattr(v, '__name__', None))
def test_loop_else_is_exact(f, args):
    _exact(f, args)
