"""The pass list is what compiles, and the modes are fields, never read off names."""
import pathlib
import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.runtime import support
from tapeflow.transforms import pipeline
from tests.transforms.test_generated import seed_loop as poly

ROOT = pathlib.Path(__file__).resolve().parents[2]


def negated(x):
    y = np.sin(x) * x
    return -y


def plain(x):
    y = np.sin(x) * x
    return y


def test_every_pass_of_the_list_runs_in_its_order():
    reverse = pipeline.compile_reverse(poly, (0,), runtime_names=support.generated_namespace(),
                                       record_passes=True)
    assert [name for name, _ in reverse.passes] == [
        p.name for p in pipeline.PASSES
        if p.name not in ('native', 'native_calls', 'defer')]   # compile='numba'; not recorded
    forward = pipeline.compile_forward(poly, (0,), runtime_names=support.generated_namespace(),
                                       record_passes=True)
    assert [name for name, _ in forward.passes] == [p.name for p in pipeline.FORWARD_PASSES
                                                     if p.name not in ('native', 'native_calls')]
    assert pipeline.PASSES[:len(pipeline.FRONT)] == pipeline.FORWARD_PASSES[:len(pipeline.FRONT)]
    assert reverse.passes[-1][1] == reverse.source      # codegen: what users are shown


def test_the_docs_list_the_passes_of_the_code():
    text = (ROOT / 'docs' / 'how-it-works.md').read_text()
    table = text[text.index('| pass | what it does'):]
    table = table[:table.index('\n\n')]
    rows = re.findall(r'^\| (\w+) \|', table, re.M)[1:]
    assert rows == [p.name for p in pipeline.PASSES]


def test_the_seed_is_named_after_the_returned_name_else_bout():
    assert tf.source(plain).startswith('def dplain(x, by=1.0):')
    assert tf.source(negated).startswith('def dnegated(x, bout=1.0):')
    assert 'bneg' not in tf.source(negated)


# ---------------------------------------------------------------- names that look generated

def ordinary(x, y):
    t = x * y
    ts = [np.sin(t)]
    ts.append(t * x)
    s = ts.pop()
    return (ts[0] + s) * s


def tape_like(x, y):
    # compiled on main before issue 16: "no derivative rule for the method .pop()",
    # the names taken for generated code's tape
    _tape_x = x * y
    _tape = [np.sin(_tape_x)]
    _tape.append(_tape_x * x)
    __seed__ = _tape.pop()
    return (_tape[0] + __seed__) * __seed__


def tape_like_tuple(x, y):
    _tape_x = x * y
    _tape = np.sin(_tape_x)
    __seed__ = _tape_x + _tape
    return __seed__, _tape


def _numeric_grad(f, args, eps=1e-6):
    out = []
    for i in range(len(args)):
        plus, minus = list(args), list(args)
        plus[i] += eps
        minus[i] -= eps
        out.append((f(*plus) - f(*minus)) / (2 * eps))
    return tuple(out)


@pytest.mark.parametrize('fn', [ordinary, tape_like])
def test_user_names_like_the_compilers_differentiate_as_ordinary_ones(fn):
    args = (0.7, 1.3)
    value, grads = tf.value_and_grad(fn, argnums=(0, 1))(*args)
    assert value == ordinary(*args)
    np.testing.assert_allclose(grads, _numeric_grad(fn, args), rtol=1e-6)
    np.testing.assert_array_equal(grads, tf.grad(ordinary, argnums=(0, 1))(*args))
    second = tf.grad(tf.grad(fn))
    assert second(*args) == tf.grad(tf.grad(ordinary))(*args)
    np.testing.assert_allclose(second(*args), _numeric_grad(tf.grad(fn), args)[0], rtol=1e-5)


def test_a_tuple_output_holding_names_like_the_seed():
    args = (0.7, 1.3)
    value, pullback = tf.vjp(tape_like_tuple, *args)
    grads = pullback((1.0, 0.5))
    numeric = _numeric_grad(lambda x, y: np.dot(tape_like_tuple(x, y), (1.0, 0.5)), args)
    np.testing.assert_allclose(grads, numeric, rtol=1e-6)


# ---------------------------------------------------------------- the adjoint stack

def test_the_tape_carries_its_adjoint_stacks():
    tape = support.new_tape()
    first = support.adjoint_stack(tape, 1)
    assert support.adjoint_stack(tape, 1) is first
    assert support.adjoint_stack(tape, 2) is not first
    assert support.adjoint_stack(first, 2) is not support.adjoint_stack(tape, 2)
    assert not hasattr(support, '_ADJOINT_STACKS')
    with pytest.raises(TypeError, match='not a list'):
        support.adjoint_stack([], 1)


def test_generated_functions_say_their_modes():
    compiled = pipeline.compile_reverse(plain, (0,), runtime_names=support.generated_namespace())
    assert compiled.combined.__tapeflow_order__ == 1
    assert compiled.combined.__tapeflow_tapes__ == ('_tape',)
    third = tf.grad(tf.grad(tf.grad(plain)))(0.4)
    x = 0.4
    assert np.isclose(third, -3 * np.sin(x) - x * np.cos(x))
