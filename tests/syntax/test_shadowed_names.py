"""A user's global named like a name of the generated module (`range`, `len`, `np`, a
runtime helper) keeps its meaning in the user's code, and the generated code's own name
keeps the builtin's (before: the user's `range` ran the generated loops, a wrong number)."""
import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_gradient
from tests.user_module import write_module

MODULE = '''\
import math

import numpy
import math as np


def range(n):
    """Trips in an order of the user's own."""
    return [2, 0, 1, 3][:n]


def len(v):
    return 3


def unbroadcast(v, w):
    return v * w


def reordered(x):
    for i in range(3):
        x = math.sin(x) * x * (i + 1)
    return x


def counted(x):
    total = 0.0
    for k in range(len(x)):
        total = total + numpy.sum(numpy.sin(x[k:]) * x[k])
    return total


def helper_named(x):
    return unbroadcast(x, x) + np.sin(x)
'''


@pytest.fixture(scope='module')
def user(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp('shadow'), 'shadowing_user', MODULE)


@pytest.mark.parametrize('name, args', [('reordered', (0.7,)),
                                        ('counted', (np.linspace(0.2, 1.0, 5),)),
                                        ('helper_named', (0.4,))])
def test_the_users_name_means_the_users_object(user, name, args):
    fn = getattr(user, name)
    value, grad = tf.value_and_grad(fn)(*args)
    assert value == fn(*args)
    check_gradient(fn, (grad,), args, (0,), np.random.default_rng(4))


def test_the_generated_code_calls_the_users_object_by_another_name(user):
    text = tf.source(user.reordered, args=(0.7,))
    assert '_seq = range_(3)' in text and '_range = range(len(_seq))' in text
    text = tf.source(user.helper_named, args=(0.4,))
    assert 'unbroadcast_forward(_tape, x, x)' in text and 'np_.sin(x)' in text


NESTED = '''\
import builtins


def range(*bounds):
    return builtins.range(*bounds)[::-1]


def outer(x):
    def inner(p):
        total = 0.0
        for i in range(3):
            total = total + p * (i + 1.0) * p
        return total
    y = x
    for k in range(2):
        y = inner(y) * 0.1 + y * (k + 1.0)
    return y
'''


def test_a_nested_def_reading_the_users_name_is_compiled_with_it(tmp_path):
    fn = write_module(tmp_path, 'shadowing_nested', NESTED).outer
    value, grad = tf.value_and_grad(fn)(0.3)
    assert value == fn(0.3)
    check_gradient(fn, (grad,), (0.3,), (0,), np.random.default_rng(6))
