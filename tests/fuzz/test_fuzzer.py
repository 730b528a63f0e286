"""The fuzzer itself: its programs run and reproduce, its oracle classifies as documented.

These hold whatever the compiler does (the oracle is checked with stand-ins for
`tf.value_and_grad`), unlike `test_mutation_fuzz.py`, which holds the compiler to it.
"""
import collections

import numpy as np
import pytest

import tapeflow as tf
from tests.fuzz import grammar, oracle
from tests.fuzz.choices import RandomChoices, ReplayChoices
from tests.fuzz.generator import MODULE_CONSTRUCTS, Program, generate, seeded
from tests.fuzz.run import main
from tests.fuzz.scope import Array, Float
from tests.fuzz.shrink import shrink

SOURCE = '''import numpy as np


def f(x, y):
    a = y[1:]
    a *= x
    return np.sum(y * y) + x
'''
TAGS = ('module', 'module', 'module', 'def f', 'view', 'augassign', 'return')


@pytest.fixture(scope='module')
def loader(tmp_path_factory):
    return oracle.Loader(str(tmp_path_factory.mktemp('fuzzer')))


def handwritten(source=SOURCE):
    return Program(source, (('x', Float()), ('y', Array((3,)))), (0, 1), 3, TAGS, collections.Counter())


def gradient(x, y):
    """The gradient of SOURCE's f, worked out by hand."""
    return 2 * x * (y[1] ** 2 + y[2] ** 2) + 1.0, np.array([2 * y[0], 2 * x * x * y[1], 2 * x * x * y[2]])


def exact(f, argnums):
    """A stand-in for value_and_grad that gets SOURCE right."""
    def run(x, y):
        grads = gradient(x, y)
        return f(x, y), grads
    return run


def changed(f, argnums, value=0.0, gx=0.0, gy=0.0, gy_shape=None):
    def run(x, y):
        v, (dx, dy) = exact(f, argnums)(x, y)
        return v + value, (dx + gx, np.zeros(gy_shape) if gy_shape else dy + gy)
    return run


def raising(error):
    def differentiate(f, argnums):
        def run(*args):
            raise error(f.__code__.co_filename) if callable(error) else error
        return run
    return differentiate


def classify(loader, differentiate, source=SOURCE):
    return oracle.check(handwritten(source), loader, differentiate)


def test_the_exact_gradient_is_ok(loader):
    outcome = classify(loader, exact)
    assert outcome.kind == 'ok', outcome.reason
    assert outcome.mutated_args and outcome.plain_mutates and outcome.like_plain


def on_a_copy(f, argnums):
    """A stand-in for value_and_grad that gets SOURCE's numbers right but leaves the
    caller's y as it was, where the plain call writes into it."""
    def run(x, y):
        return exact(f, argnums)(x, y.copy())
    return run


def test_arguments_left_otherwise_than_the_plain_call_leaves_them_are_wrong(loader):
    outcome = classify(loader, on_a_copy)
    assert outcome.kind == 'wrong' and outcome.reason.startswith('arguments:'), outcome.reason
    assert not outcome.like_plain


@pytest.mark.parametrize('change, why', [
    (dict(gx=1e-3), 'directional derivative'),
    (dict(gy=np.array([0.0, 0.0, 1e-3])), 'directional derivative'),
    (dict(value=1e-6), 'value'),
    (dict(gy_shape=(4,)), 'shape'),
])
def test_a_changed_result_is_wrong(loader, change, why):
    outcome = classify(loader, lambda f, argnums: changed(f, argnums, **change))
    assert outcome.kind == 'wrong' and why in outcome.reason, outcome.reason
    for numeric, expected in zip(outcome.numeric_grads, gradient(*handwritten().args())):
        np.testing.assert_allclose(numeric, expected, rtol=1e-6)


def test_a_located_refusal_is_a_refusal_of_the_construct_on_that_line(loader):
    refusal = lambda path: tf.UnsupportedError('writes through a view', path, 6, 4)
    outcome = classify(loader, raising(refusal))
    assert (outcome.kind, outcome.reason, outcome.construct) == ('refused', 'writes through a view', 'augassign')


@pytest.mark.parametrize('error', [
    lambda path: tf.UnsupportedError('elsewhere', 'other.py', 6, 4),
    lambda path: tf.UnsupportedError('past the end', path, 99, 0),
    lambda path: tf.UnsupportedError('on a blank line', path, 2, 0),
    lambda path: tf.UnsupportedError('on the import', path, 1, 0),
    lambda path: ValueError('shapes do not match'),
])
def test_other_errors_and_unlocated_refusals_are_crashes(loader, error):
    assert classify(loader, raising(error)).kind == 'crash'


def test_a_program_that_does_not_run_is_discarded(loader):
    source = SOURCE.replace('return np.sum(y * y) + x', 'return y[5]')
    outcome = classify(loader, exact, source)
    assert outcome.kind == 'discarded' and 'IndexError' in outcome.reason


def test_a_function_rough_at_the_steps_scale_is_discarded(loader):
    source = SOURCE.replace('return np.sum(y * y) + x', 'return np.sin(x * 1e6)')
    assert classify(loader, exact, source).kind == 'discarded'


def test_programs_reproduce_from_their_seed_and_from_their_record():
    first = seeded(0, 7)
    assert seeded(0, 7).source == first.source and seeded(0, 8).source != first.source
    assert generate(ReplayChoices(first.record)).source == first.source
    assert len(first.tags) == len(first.source.splitlines())


def test_every_construct_appears_and_programs_run(loader):
    used, discarded = collections.Counter(), 0
    for index in range(300):
        program = seeded(1, index)
        used.update(program.used)
        module, _ = loader.load(program)
        discarded += isinstance(oracle.plain_value(module.f, program.args()), str)
        loader.unload(module)
    assert set(used) == set(grammar.NAMES) | set(MODULE_CONSTRUCTS)
    assert discarded <= 6


def test_weights_steer_the_grammar():
    used = collections.Counter()
    for index in range(50):
        used.update(generate(RandomChoices(index), {'view': 0, 'closure': 20}).used)
    assert used['view'] == 0 and used['closure'] > 10
    with pytest.raises(ValueError, match='unknown constructs'):
        grammar.table({'no_such_construct': 1})


def test_shrink_finds_the_smallest_failing_record():
    def still_fails(record):
        return (record, []) if sum(record) >= 7 else None
    assert shrink([3, 9, 1, 4, 2], still_fails) == [7]


def test_the_command_line_prints_counts_per_class(tmp_path, capsys):
    status = main(['--seed', '0', '--count', '4', '--shrink', '0', '--out', str(tmp_path)])
    out = capsys.readouterr().out
    assert 'refusal rate' in out and 'discarded' in out
    assert status == (1 if list(tmp_path.iterdir()) else 0)


def test_a_derivative_central_differences_cannot_check_is_discarded_not_wrong():
    """Seed 5090 index 3971: sin of ~1e8 (steps 1e-5 and 1e-6 agreed by chance, far from
    the derivative that ever smaller steps come to), and terms of 1e174 cancelling to a
    value of 0.0. A wrong derivative stays wrong: smaller steps stay away from it."""
    x = np.array([0.37])
    direction = [np.array([1.0])]
    turning = lambda v: np.sin(1e8 * v[0])
    right = 1e8 * np.cos(1e8 * x[0])
    assert 'not smooth at the steps' in oracle.beyond_differences(
        turning, (x,), (0,), direction, right, 0.5 * right + 3.0, 1e-7, turning(x))
    assert 'not checkable' in oracle.beyond_differences(
        turning, (x,), (0,), direction, -2.3e93, 0.0, 1e-7, 0.0)
    square = lambda v: v[0] ** 2
    assert oracle.beyond_differences(square, (x,), (0,), direction, 3.0 * x[0], 2.0 * x[0],
                                     1e-7, square(x)) == ''
    assert oracle.beyond_differences(square, (x,), (0,), direction, 1e15, 2.0 * x[0],
                                     1e-7, square(x)) == ''


def absorbing(v):
    u = np.exp(90.0 + 0.0 * v[0])
    return np.sin(u + 3.0 * v[0]) + v[0]


def test_a_step_an_intermediate_rounds_away_is_discarded_not_wrong():
    """Seed 5131 index 1048: `sin(u + 3s)` with `u` of 1e39 is constant in `s` in floating
    point, so central differences see only the other terms; the derivative of the function
    as written has the cosine. Without such an intermediate a wrong derivative stays wrong."""
    x = np.array([0.37])
    direction = [np.array([1.0])]
    right = 3.0 * np.cos(np.exp(90.0) + 3.0 * x[0]) + 1.0
    numeric = oracle.numeric_central(absorbing, (x,), (0,), direction, 1e-5)
    assert abs(numeric - 1.0) < 1e-9 and abs(right - 1.0) > 1e-3
    assert oracle.largest_intermediate(absorbing, (x,)) == np.exp(90.0)
    assert 'rounds away the steps' in oracle.beyond_differences(
        absorbing, (x,), (0,), direction, right, numeric, 1e-7, absorbing(x))
    square = lambda v: v[0] ** 2
    assert oracle.largest_intermediate(square, (x,)) < 1.0
