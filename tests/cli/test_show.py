"""`tapeflow show`: the generated code, against golden text; passes, lines, colour, modes."""
import re

import tapeflow
from tests.cli.helpers import assert_golden, fixture, line_of

FUNCTIONS = fixture('functions.py')


def test_show_prints_the_seed_function_gradient(run):
    status, out, err = run('show', f'{FUNCTIONS}:f')
    assert (status, err) == (0, '')
    assert_golden('show_f.txt', out)


def test_show_output_is_what_tapeflow_source_returns(run):
    import importlib.util
    spec = importlib.util.spec_from_file_location('cli_functions_for_source', FUNCTIONS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    status, out, _ = run('show', f'{FUNCTIONS}:poly', '--wrt', 'y')
    assert status == 0
    assert out == tapeflow.source(module.poly, argnums=1)


def test_show_several_wrt_returns_a_tuple_of_adjoints(run):
    status, out, _ = run('show', f'{FUNCTIONS}:poly', '--wrt', 'x', 'y')
    assert status == 0
    assert_golden('show_poly_wrt_x_y.txt', out)
    assert out.rstrip().endswith('return (_value, (bx, by))')


def test_show_includes_the_split_sweeps_of_called_user_functions(run):
    status, out, _ = run('show', f'{FUNCTIONS}:calls')
    assert status == 0
    assert_golden('show_calls.txt', out)
    assert 'def square_forward(_tape, x):' in out and 'def square_backward(' in out


def test_show_lines_ends_statements_with_the_users_line(run):
    status, out, _ = run('show', f'{FUNCTIONS}:f', '--lines')
    assert status == 0
    assert_golden('show_f_lines.txt', out)
    multiply = line_of('functions.py', 'out = out * x')
    assert re.search(rf'^ +out = out \* x +# functions\.py:{multiply}$', out, re.M)
    loop = line_of("functions.py", "for i in range(n):")
    assert re.search(rf"^    for i in _range: +# functions\.py:{loop}$", out, re.M)


def test_show_lines_without_the_comments_is_the_plain_output(run):
    _, plain, _ = run('show', f'{FUNCTIONS}:calls')
    _, annotated, _ = run('show', f'{FUNCTIONS}:calls', '--lines')
    stripped = re.sub(r' *# functions\.py:\d+$', '', annotated, flags=re.M)
    assert stripped == plain
    assert annotated.count('# functions.py:') >= 6


def test_show_passes_prints_each_pass_in_pipeline_order(run):
    status, out, _ = run('show', f'{FUNCTIONS}:f', '--passes')
    assert status == 0
    headers = re.findall(r'^# ---- \d+\. (\w+) -+$', out, re.M)
    assert headers[0] == 'parse' and headers[-1] == 'codegen'
    assert {'anf', 'reverse'} <= set(headers)
    _, final, _ = run('show', f'{FUNCTIONS}:f')
    assert out.split('. codegen ')[1].split('\n', 1)[1] == final
    parse_section = out.split('# ---- 2.')[0]
    assert 'def f(x, n):' in parse_section and 'if i > 1 and i < 5:' in parse_section


def test_show_no_optimize_keeps_what_the_optimizer_removes(run):
    _, optimized, _ = run('show', f'{FUNCTIONS}:f')
    status, raw, _ = run('show', f'{FUNCTIONS}:f', '--no-optimize')
    assert status == 0
    assert raw != optimized
    assert raw.count('_push(') > optimized.count('_push(')
    compile(raw, '<no-optimize>', 'exec')


def test_show_highlights_only_when_asked_or_on_a_terminal(run):
    _, plain, _ = run('show', f'{FUNCTIONS}:f')           # captured stdout: not a terminal
    assert '\x1b[' not in plain
    status, coloured, _ = run('show', f'{FUNCTIONS}:f', '--color', 'always')
    assert status == 0 and '\x1b[' in coloured
    assert re.sub(r'\x1b\[[0-9;]*m', '', coloured) == plain


def test_show_forward_mode_works_or_says_it_is_not_there(run):
    import importlib.util
    spec = importlib.util.spec_from_file_location('cli_functions_forward', FUNCTIONS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    status, out, err = run('show', f'{FUNCTIONS}:poly', '--mode', 'forward')
    try:
        expected = tapeflow.source(module.poly, mode='forward')
    except NotImplementedError:
        assert (status, out) == (2, '')
        assert err == ("tapeflow: error: forward mode is not available yet: "
                       "tapeflow.source(f, mode='forward') is not implemented\n")
    else:
        assert (status, out) == (0, expected)


def test_main_guard_of_the_file_does_not_run(run):
    status, _, err = run('show', f'{FUNCTIONS}:square')
    assert status == 0 and 'main guard' not in err


def test_show_forward_mode_lines_and_passes(run):
    status, plain, _ = run('show', f'{FUNCTIONS}:calls', '--mode', 'forward')
    if status == 2:                     # forward mode not there: the other test checks the message
        assert plain == ''
        return
    assert_golden('show_calls_forward.txt', plain)
    assert plain.startswith('def calls_jvp(x, dx):') and 'def square_jvp(x, dx):' in plain
    _, annotated, _ = run('show', f'{FUNCTIONS}:calls', '--mode', 'forward', '--lines')
    assert re.sub(r' *# functions\.py:\d+$', '', annotated, flags=re.M) == plain
    assert f'# functions.py:{line_of("functions.py", "return square(x) + SCALE * x")}' in annotated
    _, passes, _ = run('show', f'{FUNCTIONS}:calls', '--mode', 'forward', '--passes')
    headers = re.findall(r'^# ---- \d+\. (\w+) -+$', passes, re.M)
    assert headers[0] == 'parse' and 'anf' in headers
    assert 'def calls_jvp(x, dx):' in passes.split('# ---- 1.')[1]


def test_show_compile_numba_prints_the_function_numba_compiles(run):
    import pytest
    pytest.importorskip('numba', reason="--compile numba needs Numba (pip install "
                                        "'tapeflow[numba]'): not installed here")
    status, out, err = run('show', f'{FUNCTIONS}:f', '--compile', 'numba')
    assert (status, err) == (0, '')
    assert out.startswith('def df(x, n, bout=1.0):')
    assert '_out_tape = []' in out and '_push' not in out and '_pop' not in out
    status, _, err = run('show', f'{FUNCTIONS}:calls', '--compile', 'numba')
    # square() is put in line; the global SCALE is what Numba would freeze
    assert status != 0 and "the name 'SCALE', from outside the function" in err
    assert f'functions.py:{line_of("functions.py", "return square(x) + SCALE * x")}:' in err
