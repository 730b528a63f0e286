"""`import` statements inside a differentiated function: the names they bind resolved
while compiling, as the module scope's are; what cannot be resolved once refused, located."""
from __future__ import annotations


import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import exact_to_second_order, line_of


def imports_inside(x):
    import math
    import numpy as np                      # (the module's own `np` too: a local here)
    from scipy.special import logsumexp
    return logsumexp(np.sin(x)) + math.pi * np.tanh(x[0])


def imports_in_branches(x):
    if x[0] > 0:
        from numpy import tanh as squash
    else:
        from numpy import tanh as squash    # the same object on every path
    return np.sum(squash(x) * x)


def imports_a_submodule(x):
    import numpy.linalg
    return numpy.linalg.norm(x) ** 2


def nested_defs_read_it(x):
    from numpy import cos

    def inner(v):
        from numpy import exp
        return cos(v) * exp(v)
    return np.sum(inner(x)) + np.sum(list(map(lambda v: cos(v) ** 2, x)))


@pytest.mark.parametrize('f', [imports_inside, imports_in_branches, imports_a_submodule,
                               nested_defs_read_it], ids=lambda f: f.__name__)
def test_imports_inside_are_exact(f):
    exact_to_second_order(f, np.array([0.3, -0.4, 0.8]))


def test_closed_form():
    from scipy.special import softmax
    x = np.array([0.3, -0.4, 0.8])
    expected = softmax(np.sin(x)) * np.cos(x)
    expected[0] += np.pi * (1 - np.tanh(x[0]) ** 2)
    np.testing.assert_allclose(tf.grad(imports_inside)(x), expected, rtol=1e-12)


def binds_it_again(x):
    import math
    math = 2.0
    return x * math


def imports_two_objects(x):
    if x > 0:
        from numpy import sin as f
    else:
        from numpy import cos as f
    return f(x)


def imports_what_is_not_there(x):
    import no_such_module_here
    return x



@pytest.mark.parametrize('f, text, message', [
    (binds_it_again, 'math = 2.0', 'math is bound by an import in this function and here too'),
    (imports_two_objects, 'from numpy import cos', 'f is imported twice here, as two different'),
    (imports_what_is_not_there, 'import no_such', "this import fails while compiling: No module "
                                                  "named 'no_such_module_here'"),
])
def test_what_cannot_be_resolved_once_is_refused_located(f, text, message):
    with pytest.raises(tf.UnsupportedError, match=message) as error:
        tf.grad(f)(0.5)
    assert error.value.lineno == line_of(f, text)
    assert error.value.filename.endswith('test_imports_inside.py')
