"""Unsupported constructs are rejected before transformation, located in the user's file."""
import inspect

import numpy as np
import pytest

import tapeflow as tf


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(text)


def f_global(x):
    global SOMETHING
    SOMETHING = x
    return x


def _made_with_nonlocal():
    x0 = 1.0

    def f_nonlocal(x):          # (a nested def's nonlocal is supported: test_nonlocal.py)
        nonlocal x0
        x0 = x
        return x * x0
    return f_nonlocal


f_nonlocal = _made_with_nonlocal()


def f_lambda(x):
    g = lambda v: v * 2.0
    return g(x)


def f_yield(x):
    yield x


def f_class(x):
    scale = 2.0

    class Local:                # (one reading no local is made once: test_classes_inside.py)
        def apply(self, v):
            return v * scale
    return Local().apply(x)


def f_eval(x):
    return eval('x * 2')


def f_exec(x):
    exec('y = 1')
    return x


def f_star_call(x):
    args = (x,)
    return np.sum(*args)


def f_attribute_store(x):
    x.attr = 1.0
    return x


REJECTED = [
    (f_global, 'global SOMETHING', 'global statements'),
    (f_nonlocal, 'nonlocal x0', 'nonlocal'),
    (f_yield, 'yield x', 'yield'),
    (f_class, 'return v * scale', 'the class Local, made in this function, reads scale'),
    (f_eval, "eval('x", 'eval()'),
    (f_exec, "exec('y", 'exec()'),
    (f_attribute_store, 'x.attr', 'attribute'),
]


@pytest.mark.parametrize('fn, marker, reason', REJECTED, ids=lambda v: getattr(v, '__name__', ''))
def test_rejected_with_file_line_and_reason(fn, marker, reason):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(fn)(1.0)
    err = info.value
    assert err.filename == __file__
    assert err.lineno == _line_of(fn, marker)
    assert reason in str(err)
    assert str(err).startswith(f'{__file__}:{err.lineno}:')


def test_keyword_star_args_in_signature():
    def f(x, *rest, **options):            # (*rest alone is made for its arguments)
        return x
    assert tf.grad(f)(1.0) == 1.0          # (`variants.keyword_variant`)

    def passes_them_on(x, **options):
        return f(x, **options) * options.get('k', 1.0)
    assert tf.grad(passes_them_on)(1.0) == 1.0
    assert tf.grad(passes_them_on)(1.0, k=3.0) == 3.0

    def rebinds_them(x, *rest, **options):
        options = {'k': x * sum(rest)}
        rest = rest + (x,)
        return f(x, *rest, **options) * options['k'] * rest[-1]
    assert tf.grad(rebinds_them)(1.5, 2.0, k=3.0) == pytest.approx(3 * 1.5 ** 2 * 2.0)


def never_differentiated(x):
    return x


def f_unknown_callable(x):
    return np.sum(np.frompyfunc(never_differentiated, 1, 1)(x))


def f_missing_rule(x):
    return np.busday_count(x, x)


def test_missing_rule_names_function_and_argument():
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f_missing_rule)(1.0)
    assert 'busday_count' in str(info.value) and 'argument 0' in str(info.value)
    assert info.value.lineno == _line_of(f_missing_rule, 'busday_count')


def test_call_of_runtime_value_is_rejected():
    with pytest.raises(tf.UnsupportedError, match='no derivative rule and no Python source'):
        tf.grad(f_unknown_callable)(np.ones(2))


def test_a_lambda_and_a_star_call_are_differentiated():
    assert tf.grad(f_lambda)(1.5) == 2.0
    assert tf.grad(f_star_call)(1.5) == 1.0


def vector_out(x):
    return x * 2.0


def test_non_scalar_output_is_a_type_error():
    with pytest.raises(TypeError, match=r'scalar-output functions.*shape: \(3,\)'):
        tf.grad(vector_out)(np.ones(3))


def test_integer_argument_is_a_type_error():
    with pytest.raises(TypeError, match='real- or complex-valued inputs.*int'):
        tf.grad(vector_out)(3)
    with pytest.raises(TypeError, match='int32'):
        tf.grad(lambda_free_sum)(np.arange(3, dtype=np.int32))


def lambda_free_sum(x):
    return np.sum(x)


def test_lambda_itself_is_read():
    assert tf.grad(lambda x: x * x)(1.5) == 3.0


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match='argnums=3 requires at least 4 positional arguments'):
        tf.grad(vector_out, argnums=3)(1.0)
