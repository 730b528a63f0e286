"""`tapeflow check`: the gradient against central finite differences."""
from tests.cli.helpers import fixture, line_of

FUNCTIONS = fixture('functions.py')


def test_check_passes_for_the_seed_function(run):
    status, out, err = run('check', f'{FUNCTIONS}:f', '--args', '2.0, 6')
    assert (status, err) == (0, '')
    lines = out.splitlines()
    assert lines[0] == 'f(2.0, 6) = 8.0'
    assert lines[1] == 'df/dx  tapeflow: 12.0'
    assert lines[2].startswith('       numeric:  12.0') or lines[2].startswith('       numeric:  11.99999')
    assert lines[3].startswith('       relative error: ')
    assert float(lines[3].split(': ')[1]) < 1e-8
    assert lines[4].startswith('ok: relative error ') and lines[4].endswith(' <= 1e-05')


def test_check_several_parameters(run):
    status, out, _ = run('check', f'{FUNCTIONS}:poly', '--wrt', 'x', 'y', '--args', '1.5, -2.0')
    assert status == 0
    assert 'dpoly/dx  tapeflow: -6.0' in out      # 2xy
    assert 'dpoly/dy  tapeflow: 4.25' in out      # x^2 + 2
    assert out.splitlines()[-1].startswith('ok: ')


def test_check_array_arguments_evaluated_with_numpy(run):
    status, out, _ = run('check', f'{FUNCTIONS}:weighted', '--args', 'np.array([1.0, -2.0, 4.0])')
    assert status == 0
    assert 'dweighted/dv  tapeflow: [ 2., -8.,  4.]' in out
    assert out.splitlines()[-1].startswith('ok: ')


def test_check_catches_a_wrong_derivative_rule(run):
    status, out, _ = run('check', f'{fixture("wrong_rule.py")}:h', '--args', '1.0')
    assert status == 1
    assert 'dh/dx  tapeflow: 4.0' in out                # 3x + 1 with the wrong rule
    assert 'numeric:  3.0' in out or 'numeric:  2.99999' in out
    assert out.splitlines()[-1].startswith('FAILED: relative error 2.5e-01 > 1e-05')


def test_check_rtol_decides(run):
    status, out, _ = run('check', f'{fixture("wrong_rule.py")}:h', '--args', '1.0', '--rtol', '0.5')
    assert status == 0 and out.splitlines()[-1] == 'ok: relative error 2.5e-01 <= 0.5'


def test_check_error_inside_generated_code_names_the_users_line(run):
    status, out, err = run('check', f'{FUNCTIONS}:divide', '--args', '0.0')
    line = line_of('functions.py', 'y = 1.0 / x')
    assert (status, out) == (1, '')
    assert err == ('tapeflow: error: ZeroDivisionError: float division by zero\n'
                   f'  at {FUNCTIONS}:{line}: y = 1.0 / x\n')


def test_check_refuses_an_integer_where_it_differentiates(run):
    status, _, err = run('check', f'{FUNCTIONS}:f', '--args', '2, 6')
    assert status == 2
    assert err == ('tapeflow: error: --args: x is int 2; check differentiates with respect to '
                   'floats and float arrays, and lists, tuples and dicts of them '
                   '(write 2.0, not 2)\n')


def test_check_wrong_number_of_arguments(run):
    status, _, err = run('check', f'{FUNCTIONS}:f', '--args', '2.0')
    assert status == 2
    assert err == 'tapeflow: error: --args: f(x, n) takes 2 arguments, got 1\n'


def test_check_arguments_that_do_not_evaluate(run):
    status, _, err = run('check', f'{FUNCTIONS}:f', '--args', '2.0,,')
    assert status == 2 and err.startswith("tapeflow: error: --args '2.0,,': syntax error")
    status, _, err = run('check', f'{FUNCTIONS}:f', '--args', 'undefined_name, 3')
    assert status == 2
    assert err == ("tapeflow: error: --args 'undefined_name, 3': NameError: "
                   "name 'undefined_name' is not defined\n")


# ------------------------------------------------------------------ list, tuple and dict arguments

STRUCTURES = fixture('structures.py')


def _relative_errors(out):
    return [float(line.split(': ')[1]) for line in out.splitlines() if 'relative error: ' in line]


def test_check_list_argument(run):
    status, out, err = run('check', f'{STRUCTURES}:product', '--args', '[1.0, 3.0, 2.0]')
    assert (status, err) == (0, '')
    lines = out.splitlines()
    assert lines[0] == 'product([1.0, 3.0, 2.0]) = 6.0'
    assert lines[1] == 'dproduct/dxs  tapeflow: [6.0, 2.0, 3.0]'
    assert lines[2].startswith('              numeric:  [')
    assert all(e < 1e-8 for e in _relative_errors(out))
    assert lines[-1].startswith('ok: ')


def test_check_tuple_argument_keeps_its_tuple(run):
    status, out, _ = run('check', f'{STRUCTURES}:product', '--args', '(1.0, 3.0, 2.0)')
    assert status == 0
    assert 'dproduct/dxs  tapeflow: (6.0, 2.0, 3.0)' in out
    assert out.splitlines()[-1].startswith('ok: ')


def test_check_dict_argument_leaves_its_int_alone(run):
    status, out, _ = run('check', f'{STRUCTURES}:model', '--wrt', 'params', 'x', '--args',
                         "{'w': np.array([0.5, -1.0]), 'scale': 2.0, 'n': 3}, 0.3")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == ("model({'w': array([ 0.5, -1. ]), 'scale': 2.0, 'n': 3}, 0.3) "
                        "= -0.854565473")
    assert lines[1].startswith("dmodel/dparams  tapeflow: {'w': array([1.76009984, 1.64724653]), "
                               "'scale': -0.42728273")
    assert lines[2].startswith("                numeric:  {'w': array([1.76009984, 1.64724653]), "
                               "'scale': -0.42728273")
    assert lines[2].endswith("'n': None}")                # an int is not differentiated
    assert lines[4].startswith('dmodel/dx  tapeflow: ')
    assert all(e < 1e-8 for e in _relative_errors(out))
    assert lines[-1].startswith('ok: ')


def test_check_nested_structure(run):
    status, out, _ = run('check', f'{STRUCTURES}:nested', '--args',
                         '[2.0, np.array([1.0, 2.0, 3.0]), (1.5, 0.5)], 0.7')
    assert status == 0
    assert 'dnested/dp  tapeflow: [9.8, array([2.8, 5.6, 8.4]), (0.5, 1.5)]' in out
    assert out.splitlines()[-1].startswith('ok: ')


def test_check_catches_a_wrong_rule_for_a_list(run):
    status, out, _ = run('check', f'{STRUCTURES}:uses_pair_sum', '--args', '[1.0, 2.0]')
    assert status == 1
    assert 'duses_pair_sum/dxs  tapeflow: [3.0, 6.0]' in out
    assert out.splitlines()[-1].startswith('FAILED: relative error ')


def test_check_verdict_on_a_list_gradient_agrees_with_the_closed_form(run):
    import tapeflow as tf
    from tapeflow.cli import _load_function
    xs = [1.0, 3.0, 2.0]
    correct = tf.grad(_load_function(f'{STRUCTURES}:sum_max'))(xs) == [1.0, 2.0, 1.0]
    status, out, _ = run('check', f'{STRUCTURES}:sum_max', '--args', '[1.0, 3.0, 2.0]')
    assert 'numeric:  [1.0000000' in out
    assert status == (0 if correct else 1)
    assert out.splitlines()[-1].startswith('ok: ' if correct else 'FAILED: ')


def test_check_refuses_a_list_without_a_float(run):
    status, _, err = run('check', f'{STRUCTURES}:product', '--args', '[1, 3, 2]')
    assert status == 2
    assert err == ('tapeflow: error: --args: xs is list [1, 3, 2]; check differentiates with '
                   'respect to floats and float arrays, and lists, tuples and dicts of them '
                   '(write 2.0, not 2)\n')
