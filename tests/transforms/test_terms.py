"""Cotangent sums in fewer operations (`transforms.terms`): like terms collected, names
bound to multiples read as such, a common factor taken out wherever it stands; the
sums equal the old ones to rounding, the values stay the user's."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tapeflow as tf
from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import terms
from tests.gradcheck import checked_against_plain

ARRAYS = ('x', 'a', 'b', 'c')


def _simplified(text, multiples=None, numeric=lambda node: True):
    value = nodes.parse_expression(text)
    return unparse(terms.simplified(value, numeric, multiples or {})).strip()


def test_like_terms_and_a_multiple_make_one_term():
    assert _simplified('m + x * -0.5', {'m': (-0.5, 'x')}) == '-x'
    assert _simplified('a * m + a * x * -0.5', {'m': (-0.5, 'x')}) == '-(a * x)'


def test_a_factor_is_taken_out_of_terms_that_are_not_side_by_side():
    assert _simplified('e * -x + t + x * (1.0 - t * t)') == 'x * (1.0 - t * t - e) + t'


def test_the_gaussian_of_the_elementwise_benchmark_becomes_the_hand_written_sum():
    out = _simplified('e * (m + x * -0.5) + t + x * (1.0 - t * t)', {'m': (-0.5, 'x')})
    assert out == 'x * (1.0 - t * t - e) + t'


@pytest.mark.parametrize('text', [
    'a * x - a * x',            # cancelling terms stay apart (inf - inf is nan, not 0)
    'a * x + b * c',            # nothing shared
    'a * x + b',
])
def test_what_gains_nothing_stays(text):
    assert _simplified(text) == text


def test_terms_not_surely_numbers_stay_but_sums_inside_them_are_simplified():
    numeric = lambda node: not (node.__class__.__name__ == 'Name' and node.id == 'k')
    assert _simplified('k * x + k * a', numeric=numeric) == 'k * x + k * a'
    out = _simplified('k * (m + x * -0.5)', {'m': (-0.5, 'x')}, numeric)
    assert out == 'k * -x'


def test_a_multiple_is_read_only_where_its_base_is_a_number():
    numeric = lambda node: not (node.__class__.__name__ == 'Name' and node.id == 'x')
    assert _simplified('m + a * x', {'m': (-0.5, 'x')}, numeric) == 'm + a * x'


def test_multiples_are_the_names_bound_once_to_a_number_times_a_name_bound_once():
    src = ('def f(x, y, bout):\n    m = -0.5 * x\n    n = y * 2\n    y = y + 1.0\n'
           '    p = m * 3.0\n    q = 2.0 * p\n    r = 2.0 * q\n    r = r + 1.0\n    return m\n')
    fdef = nodes.parse_gast(src).body[0]
    # y is rebound (so n is not a multiple of one value); q's base p is bound once above it
    assert terms.multiples(fdef) == {'m': (-0.5, 'x'), 'p': (3.0, 'm'), 'q': (2.0, 'p')}


# ------------------------------------------------------------------ random sums

_LEAF = st.sampled_from(ARRAYS + ('m',)) | st.sampled_from(['0.5', '2.0', '-1.5', '3'])


def _expressions():
    product = st.lists(_LEAF, min_size=1, max_size=3).map(lambda fs: ' * '.join(fs))
    inner = st.lists(product, min_size=1, max_size=3).map(lambda ts: '(' + ' + '.join(ts) + ')')
    factor = product | inner.map(lambda s: 'a * ' + s) | inner.map(lambda s: s + ' * x')
    signs = st.sampled_from([' + ', ' - '])
    return st.lists(st.tuples(signs, factor), min_size=2, max_size=5).map(
        lambda ts: ''.join(s + t for s, t in ts)[3:])


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_a_random_sum_keeps_its_value_to_rounding_in_no_more_operations(text):
    rng = np.random.default_rng(len(text))
    env = {n: rng.uniform(0.5, 2.0, 5) for n in ARRAYS}
    env['m'] = -0.5 * env['x']
    value = nodes.parse_expression(text)
    new = terms.simplified(value, lambda node: True, {'m': (-0.5, 'x')})
    assert terms._operations(new) <= terms._operations(value)
    before = eval(text, {}, dict(env))
    after = eval(unparse(new).strip(), {}, dict(env))
    # (terms of at most about 100 in size: what cancels leaves rounding of that size)
    np.testing.assert_allclose(after, before, rtol=1e-9, atol=1e-12 * 100)


# ------------------------------------------------------------------ gradients

def gaussian_mix(x):
    return np.sum(np.tanh(x) * x + np.exp(-0.5 * x * x))


def quadratic_forms(x, y):
    h = 2.0 * x
    g = y * -3.0
    return np.sum(h * x + g * y + h * y * g + np.sin(h) * x)


def written_after_its_multiple(x, z):
    y = x * 1.0
    m = -0.5 * y
    y[0] = 3.0               # m was computed from the old y: m != -0.5 * y now
    return np.sum(m * z + (-0.5 * y) * z + np.exp(m * y))


def rebound_base(x):
    m = 2.0 * x
    x = np.sin(x)
    return np.sum(m * x + x * x)


@pytest.mark.parametrize('fn, arity', [(gaussian_mix, 1), (quadratic_forms, 2),
                                       (written_after_its_multiple, 2), (rebound_base, 1)])
def test_gradients_against_finite_differences_and_the_plain_value(fn, arity):
    rng = np.random.default_rng(11)
    args = tuple(rng.standard_normal(6) for _ in range(arity))
    wrt = tuple(range(arity)) if arity > 1 else 0
    grads = checked_against_plain(fn, args, wrt, rng)
    pullback = tf.vjp(fn, *args)[1](1.0)
    for g, h in zip(grads if arity > 1 else (grads,), pullback):
        np.testing.assert_allclose(g, h, rtol=1e-13, atol=1e-15)


def test_the_specialised_gaussian_computes_what_the_hand_written_adjoint_does():
    x = np.linspace(-2.0, 2.0, 9)
    text = tf.source(gaussian_mix, args=(x,))
    assert '_exp = np.exp(-0.5 * x * x)' in text
    assert '* (x * (1.0 - _tanh * _tanh - _exp) + _tanh)' in text
    assert '_mul2' not in text


@pytest.mark.parametrize('line, writes', [
    ('y = np.exp(x) * 2.0', False),
    ('y = unbroadcast(x, x)', False),
    ('x[0] = 1.0', True),
    ('x.real = 1.0', True),
    ('y += x', True),
    ('y = g(x)', True),                   # a call of anything but pure helpers
    ('y = np.exp(x, out=x)', True),
    ('y = np.sum(x, 0, x)', True),        # `out` positionally
    ('y = [v for v in x]', False),
])
def test_only_a_function_that_surely_writes_no_array_reads_multiples(line, writes):
    from tapeflow.rules.numpy_reductions import grad_of_sum
    from tapeflow.rules.shapes import unbroadcast
    from tapeflow.transforms import purity
    src = f'def f(x, y):\n    m = -0.5 * x\n    {line}\n    return m\n'
    fdef = nodes.parse_gast(src).body[0]
    namespace = {'unbroadcast': unbroadcast, 'grad_of_sum': grad_of_sum}
    assert purity.writes_nothing(fdef, namespace=namespace) is not writes
