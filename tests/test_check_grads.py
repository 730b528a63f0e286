"""`tf.check_grads` on pytrees of arguments: it passes correct derivatives and catches wrong ones."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.checking import structure_mismatch


def product(xs):
    return xs[0] * xs[1] * xs[2] + xs[0] ** 3


def weighted(scale, params):
    return scale * params['w'] * params['b'] * params['n'] + np.sum(np.sin(params['v']) ** 2) \
        if params['kind'] == 'sin' else 0.0


def nested(p, y):
    return p[0] * np.sum(p[1] ** 2) * y + p[2][0] * p[2][1]


def sum_max(xs):
    return sum(xs) + max(xs)


def test_list_and_tuple_arguments_pass():
    tf.check_grads(product, ([1.0, 3.0, 2.0],))
    tf.check_grads(product, ((1.0, 3.0, 2.0),))


def test_dict_argument_with_an_int_and_a_string_left_alone():
    # `n` multiplies: if the check moved it (or gave it a tangent of 3), the
    # numbers would disagree
    params = {'w': 1.5, 'b': -0.5, 'n': 3, 'v': np.array([1.0, 2.0]), 'kind': 'sin'}
    tf.check_grads(weighted, (0.7, params))


def test_nested_structure_and_a_float_beside_it():
    tf.check_grads(nested, ([2.0, np.array([1.0, 2.0, 3.0]), (1.5, 0.5)], 0.7))


def test_the_verdict_on_a_list_gradient_agrees_with_the_closed_form():
    # d(sum(xs) + max(xs)) = 1 everywhere, plus 1 at the largest element
    # (order 1: the rules of the builtins max and sum are lambdas, not differentiated again)
    xs = [1.0, 3.0, 2.0]
    np.testing.assert_allclose(tf.grad(sum_max)(xs), [1.0, 2.0, 1.0])
    tf.check_grads(sum_max, (xs,), order=1)


def pair_sum(xs):
    return xs[0] + xs[1]


tf.defvjp(pair_sum, lambda g, ans, xs: [g, 2.0 * g])       # deliberately wrong: [g, g]


def uses_pair_sum(xs):
    return pair_sum(xs) * 3.0


def test_a_wrong_gradient_for_a_list_argument_is_caught():
    assert tf.grad(uses_pair_sum)([1.0, 2.0]) == [3.0, 6.0]       # the wrong rule is used
    with pytest.raises(AssertionError, match='first derivative of uses_pair_sum wrt argument 0'):
        tf.check_grads(uses_pair_sum, ([1.0, 2.0],), order=1)
    with pytest.raises(AssertionError, match='first derivative'):
        tf.check_grads(uses_pair_sum, ((1.0, 2.0),))


def square_wrong_jvp(x):
    return x * x


tf.defvjp(square_wrong_jvp, lambda g, ans, x: g * 2.0 * x,
          lambda t, ans, x: t * 5.0 * x)                    # deliberately wrong: 2x


def pair_cube(xs):
    return xs[0] ** 3 + xs[1]


def pair_cube_vjp(g, ans, xs):
    return [3.0 * g * square_wrong_jvp(xs[0]), g]


def pair_cube_jvp(t, ans, xs):
    return 3.0 * xs[0] ** 2 * t[0] + t[1]


tf.defvjp(pair_cube, pair_cube_vjp, pair_cube_jvp)


def uses_pair_cube(xs):
    return pair_cube(xs) * 2.0


def test_a_wrong_second_derivative_for_a_list_argument_is_caught():
    tf.check_grads(uses_pair_cube, ([1.5, 2.0],), order=1)      # the gradient is right
    _, hv = tf.jvp(tf.grad(uses_pair_cube), ([1.5, 2.0],), ([1.0, 0.0],))
    assert hv == [45.0, 0.0]                                       # 27 is right: the wrong rule
    with pytest.raises(AssertionError, match=r'second derivative of uses_pair_cube wrt argument 0 '
                                             r'at \[0\]'):
        tf.check_grads(uses_pair_cube, ([1.5, 2.0],))


def pair_mean(xs):
    return (xs[0] + xs[1]) / 2.0


tf.defvjp(pair_mean, lambda g, ans, xs: [g / 2.0, g / 2.0])   # right, but no forward rule


def uses_pair_mean(xs):
    return pair_mean(xs) ** 2


def test_second_order_unavailable_is_an_error_not_a_skip():
    tf.check_grads(uses_pair_mean, ([1.0, 2.0],), order=1)
    with pytest.raises(NotImplementedError, match=r'second derivative of uses_pair_mean wrt '
                                                  r'argument 0 \(a list of 2\) needs forward over '
                                                  r'reverse .* no forward-mode rule .* order=1'):
        tf.check_grads(uses_pair_mean, ([1.0, 2.0],))


def test_arguments_without_a_float_order_and_complex_are_refused():
    with pytest.raises(TypeError, match=r'no argument of product\(\) holds a float'):
        tf.check_grads(product, ([1, 3, 2],))
    with pytest.raises(TypeError, match='real-valued arguments'):
        tf.check_grads(product, ([1.0, 3j, 2.0],))
    with pytest.raises(ValueError, match='order 1 or 2, not 3'):
        tf.check_grads(product, ([1.0, 3.0, 2.0],), order=3)


def test_structure_mismatch_names_where():
    arg = {'w': [1.0, np.ones(2)], 'n': 3}
    assert structure_mismatch(arg, {'w': [0.5, np.ones(2)], 'n': 0.0}) is None
    assert structure_mismatch(arg, {'w': (0.5, np.ones(2)), 'n': 0.0}) == \
        (('w',), 'a list of 2', 'a tuple of 2')
    assert structure_mismatch(arg, {'w': [0.5, np.ones(3)], 'n': 0.0}) == \
        (('w', 1), 'an array of shape (2,)', 'an array of shape (3,)')
    assert structure_mismatch(arg, {'w': [0.5, np.ones(2)]}) == ((), 'a dict of 2', 'a dict of 1')


def test_jvp_takes_ragged_structures_and_names_a_wrong_tangent():
    primal = [2.0, np.array([1.0, 2.0, 3.0]), (1.5, 0.5)]
    _, hv = tf.jvp(tf.grad(nested), (primal, 0.7), ([0.0, np.ones(3), (0.0, 0.0)], 0.0))
    np.testing.assert_allclose(hv[1], 2 * 2.0 * 0.7 * np.ones(3))
    with pytest.raises(ValueError, match=r'tangent of argument 0\[1\] has shape \(2,\)'):
        tf.jvp(tf.grad(nested), (primal, 0.7), ([0.0, np.ones(2), (0.0, 0.0)], 0.0))
