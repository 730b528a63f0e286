"""Bad input: one line on stderr, exit status 2, nothing on stdout."""
import pytest

from tests.cli.helpers import fixture, line_of

FUNCTIONS = fixture('functions.py')


def error_of(run, *argv):
    status, out, err = run(*argv)
    assert status == 2 and out == ''
    assert err.count('\n') == 1, err
    assert err.startswith('tapeflow: error: ')
    return err[len('tapeflow: error: '):].rstrip('\n')


def test_missing_file(run):
    assert error_of(run, 'show', 'no/such/file.py:f') == 'no/such/file.py: no such file'


def test_missing_function_lists_the_functions_there(run):
    message = error_of(run, 'show', f'{FUNCTIONS}:nope')
    assert message == (f"{FUNCTIONS} has no function 'nope' (it defines: calls, divide, f, "
                       f"no_parameters, poly, square, weighted)")


def test_target_without_a_function_name(run):
    assert error_of(run, 'show', FUNCTIONS) == f'expected FILE.py:FUNC, got {FUNCTIONS!r}'


def test_syntax_error_names_file_line_and_column(run):
    path = fixture('syntax_error.py')
    assert error_of(run, 'show', f'{path}:f') == f'{path}:2:15: syntax error: invalid syntax'


def test_unsupported_construct_names_file_line_and_column(run):
    path = fixture('unsupported.py')
    line = line_of('unsupported.py', 'global COUNT')
    assert error_of(run, 'show', f'{path}:f') == \
        f'{path}:{line}:5: global statements (writes to module globals) are not supported'


def test_file_that_raises_when_run(run):
    path = fixture('fails_on_import.py')
    line = line_of('fails_on_import.py', 'raise RuntimeError')
    assert error_of(run, 'show', f'{path}:f') == \
        f'{path}:{line}: running the file raised RuntimeError: no import for you'


def test_wrt_that_is_not_a_parameter(run):
    assert error_of(run, 'show', f'{FUNCTIONS}:poly', '--wrt', 'z') == \
        "--wrt z: poly() has no parameter 'z' (its parameters: x, y)"


def test_wrt_named_twice(run):
    assert error_of(run, 'show', f'{FUNCTIONS}:poly', '--wrt', 'x', 'x') == '--wrt x: named twice'


def test_function_without_parameters(run):
    assert error_of(run, 'show', f'{FUNCTIONS}:no_parameters') == \
        'no_parameters() takes no parameters: there is nothing to differentiate'


@pytest.mark.parametrize('command', ['export', 'check'])
def test_every_subcommand_reports_bad_input_the_same_way(run, command):
    extra = ['--args', '1.0'] if command == 'check' else []
    assert error_of(run, command, 'missing.py:f', *extra) == 'missing.py: no such file'
    path = fixture('unsupported.py')
    assert error_of(run, command, f'{path}:f', *extra).endswith(
        'global statements (writes to module globals) are not supported')


def test_usage_errors_exit_2_with_argparse_usage(run):
    with pytest.raises(SystemExit) as exit_:
        run('show')
    assert exit_.value.code == 2
    with pytest.raises(SystemExit) as exit_:
        run('show', f'{FUNCTIONS}:f', '--mode', 'sideways')
    assert exit_.value.code == 2


def test_no_command_prints_help_and_exits_2(run):
    status, out, err = run()
    assert status == 2 and out == ''
    assert 'usage: tapeflow' in err and 'show' in err and 'export' in err and 'check' in err


def test_export_of_a_try_says_why(run):
    """Its guarded bodies run through tapeflow's dispatcher: `show` prints it, `export`
    refuses to write a module that would need tapeflow."""
    path = fixture('guarded.py')
    assert error_of(run, 'export', f'{path}:f') == (
        "cannot export the generated code of f(): its try and with statements run through "
        "tapeflow's dispatcher (tapeflow.calls), which an exported module cannot import; "
        "call tapeflow.grad where tapeflow is installed")
