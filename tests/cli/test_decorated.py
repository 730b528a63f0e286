"""The command line reads a decorated function as `tapeflow.grad` does: as called."""
import numpy as np

from tests.cli.helpers import fixture, line_of

DECORATED = fixture('decorated.py')


def _gradient_line(out, label):
    line = next(line for line in out.splitlines() if line.startswith(f'{label}  tapeflow: '))
    return float(line.split(': ')[1])


def test_check_differentiates_the_wrapper(run):
    status, out, _ = run('check', f'{DECORATED}:square', '--args', '2.0')
    assert status == 0
    assert _gradient_line(out, 'dsquare/dx') == 0.0          # the clip saturates
    status, out, _ = run('check', f'{DECORATED}:square', '--args', '0.5')
    assert status == 0
    assert _gradient_line(out, 'dsquare/dx') == 1.0
    assert out.splitlines()[-1].startswith('ok: ')


def test_show_has_the_wrappers_code(run):
    status, out, _ = run('show', f'{DECORATED}:square', '--color', 'never')
    assert status == 0
    assert 'np.clip(x, 0.0, 1.0)' in out


def test_a_pass_through_wrapper_reads_as_its_function(run):
    status, out, _ = run('check', f'{DECORATED}:product', '--wrt', 'x', 'y', '--args', '1.5, 2.0')
    assert status == 0
    assert _gradient_line(out, 'dproduct/dx') == 6.0
    assert _gradient_line(out, 'dproduct/dy') == 2.25


def test_a_wrapper_the_compiler_cannot_read_is_a_located_error(run):
    line = line_of('decorated.py', "print('calling', fn.__name__)") - 1
    for argv in (['show'], ['check', '--args', '2.0']):
        status, out, err = run(argv[0], f'{DECORATED}:logged_square', *argv[1:])
        assert (status, out) == (2, '')
        assert err == (f'tapeflow: error: {DECORATED}:{line}:5: star-arguments (*args/**kwargs) '
                       f'in the signature of wrapper() are not supported: name each parameter '
                       f'(def wrapper(a, b)), or take one tuple or dict parameter and pass the '
                       f'values in it\n')


def test_a_gradient_function_is_differentiated_again(run):
    status, out, _ = run('check', f'{DECORATED}:dsin_times', '--args', '0.7')
    assert status == 0
    second = 2 * np.cos(0.7) - 0.7 * np.sin(0.7)
    assert abs(_gradient_line(out, 'dsin_times/dx') - second) < 1e-9
    assert out.splitlines()[-1].startswith('ok: ')
