"""A loop leaving a generator early (`break`, `return`): exact where running the generator
to its end changes nothing Python's run shows (`sugar.generators._finishes_quietly`);
refused, located, otherwise. Values against the plain call, gradients against central
differences and forward mode, Hessians against differences of the gradient."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order, line_of


def scaled(x, n):
    acc = x * 0.0
    for k in range(n):
        acc = acc + np.sin(x) * (k + 1.0)
        yield acc


def breaks_out(x):
    out = 0.0
    for i, v in enumerate(scaled(x, 5)):
        if i == 2:
            break
        out = out + np.sum(v * v)
    return out


def returns_from_inside(x):
    def rows(vs):
        for v in vs:
            yield np.tanh(v)
    for r in rows([x, x * 2, x * 3]):
        if np.sum(r) > 10.0:
            return np.sum(r)
        x = x + r
    return np.sum(x)


@pytest.mark.parametrize('f', [breaks_out, returns_from_inside], ids=lambda f: f.__name__)
def test_leaving_a_quiet_generator_early_is_exact(f):
    exact_to_second_order(f, np.array([0.3, -0.4, 0.8]))


def test_closed_form():
    x = np.array([0.3, -0.4, 0.8])      # breaks_out: sum(sin^2) + sum((3 sin)^2)
    np.testing.assert_allclose(tf.grad(breaks_out)(x), 20 * np.sin(x) * np.cos(x), rtol=1e-12)


def noisy(x):
    k = 0
    while True:                         # endless: run to its end, it never ends
        yield x * k
        k += 1


def takes_two_of_endless(x):
    out = 0.0
    for i, v in enumerate(noisy(x)):
        if i == 2:
            break
        out = out + np.sum(v)
    return out


def checks(x):
    for k in range(3):
        if k == 2:
            raise ValueError('the third')   # Python never gets here when the loop stops first
        yield x * k


def takes_two_of_checks(x):
    out = 0.0
    for i, v in enumerate(checks(x)):
        if i == 1:
            break
        out = out + np.sum(v)
    return out


@pytest.mark.parametrize('f', [takes_two_of_endless, takes_two_of_checks],
                         ids=lambda f: f.__name__)
def test_a_generator_that_may_not_end_quietly_is_refused_located(f):
    with pytest.raises(tf.UnsupportedError, match=r'this loop may stop before \w+\(\) has made '
                                                  r'its last item') as error:
        tf.grad(f)(np.array([0.3, 0.4]))
    assert error.value.lineno == line_of(f, 'for i, v in')


# ------------------------------------------------ read partly: next(gen(...)), zip(gen(...), ys)

def first_of(x):
    return np.sum(next(scaled(x, 3)) * x)


def first_or_default(x):
    return np.sum(next(scaled(x, 0), x * 2.0) * x) + np.sum(next(scaled(x, 2), x) ** 2)


def zipped_with_a_shorter_list(x):
    s = 0.0
    for v, w in zip(scaled(x, 5), [1.0, -2.0]):
        s = s + np.sum(v * w * x)
    return s


def zipped_after_a_list(x):
    return sum(np.sum(a * b) for a, b in zip([x, x * x, np.cos(x)], scaled(x, 2)))


def constant_generators(x):     # (no derivative flows through them: run as Python)
    t = next(scaled(np.ones(2), 2))
    s = 0.0
    for v, w in zip([x, x * 3.0], scaled(np.ones(2), 4)):
        s = s + np.sum(v * w)
    return s + np.sum(t * x)


@pytest.mark.parametrize('f', [first_of, first_or_default, zipped_with_a_shorter_list,
                               zipped_after_a_list, constant_generators],
                         ids=lambda f: f.__name__)
def test_a_generator_read_partly_where_the_rest_changes_nothing(f):
    exact_to_second_order(f, np.array([0.3, -1.2]))


def test_the_first_item_closed_form():
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(tf.grad(first_of)(x), np.cos(x) * x + np.sin(x), rtol=1e-12)


def checked_pieces(x, n):
    for k in range(n):
        if k == 2:
            raise ValueError('only two')
        yield x * k


def first_of_one_that_raises(x):
    return np.sum(next(checked_pieces(x, 4)))


def zipped_with_one_that_raises(x):
    s = 0.0
    for v, w in zip(checked_pieces(x, 4), [1.0, 2.0]):
        s = s + np.sum(v * w)
    return s


@pytest.mark.parametrize('f, what', [(first_of_one_that_raises, 'next() reads its first item'),
                                     (zipped_with_one_that_raises, 'zip() stops at its shortest')],
                         ids=lambda v: getattr(v, '__name__', ''))
def test_a_generator_read_partly_that_would_raise_is_refused(f, what):
    """Python stops before the item that raises; making every item would raise."""
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(np.array([0.3, -1.2]))
    assert info.value.lineno == line_of(f, 'checked_pieces(x, 4)')
    assert 'checked_pieces() (a generator) is read partly here' in str(info.value)
    assert what in str(info.value)


def writes_around_it_then_reads_partly(x):
    def record(p):
        x[1] *= p
        return next(checked_pieces(x, 4), x[0])     # (its third item raises: refused)
    record(0.5)
    record(1.5)
    return np.sum(x)


def writes_around_it_then_reads_quietly(x):
    def record(p):
        x[1] *= p
        return next(scaled(x, 3), x[0])
    record(0.5)
    record(1.5)
    return np.sum(x)


def test_a_nested_def_the_compiler_refuses_is_refused_not_run_unseen():
    """Fuzzer seed 5447 index 3311: WRONG, 1 for 0.75 (pre-existing): a nested def whose
    text the compiler refuses was taken for one writing nothing and run as plain Python,
    its writes into the function's array unseen. Its refusal is the function's now."""
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(writes_around_it_then_reads_partly)(np.array([0.3, -1.2, 0.5]))
    assert info.value.lineno == line_of(writes_around_it_then_reads_partly, 'next(')
    x = np.array([0.3, -1.2, 0.5])
    np.testing.assert_allclose(tf.grad(writes_around_it_then_reads_quietly)(x.copy()),
                               [1.0, 0.75, 1.0], rtol=1e-12)
    exact_to_second_order(writes_around_it_then_reads_quietly, x)
