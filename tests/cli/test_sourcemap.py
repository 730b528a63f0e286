"""Source maps: every generated statement knows the user's line it comes from."""
import importlib.util
import re
import traceback

import pytest

import tapeflow
from tapeflow import export
from tests.cli.helpers import FIXTURES, fixture, line_of


def load(name):
    spec = importlib.util.spec_from_file_location(f'sourcemap_{name[:-3]}', FIXTURES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONTROL = load('control.py')
COMMENT = re.compile(r' *# control\.py:(\d+)$', re.M)


@pytest.mark.parametrize('name', ['branches', 'loop_with_break', 'while_loop', 'early_return'])
def test_annotated_source_is_the_source_with_line_comments(name):
    fn = getattr(CONTROL, name)
    annotated = export.annotated_source(fn)
    assert COMMENT.sub('', annotated) == tapeflow.source(fn)
    lines = {int(n) for n in COMMENT.findall(annotated)}
    first = fn.__code__.co_firstlineno
    body = set(range(first + 1, first + len(
        __import__('inspect').getsource(fn).rstrip().splitlines())))
    assert lines and lines <= body                 # every comment names a line of fn's body


def test_each_branch_maps_to_its_own_line():
    annotated = export.annotated_source(CONTROL.branches)
    for text in ('y = x * x', 'y = 3.0 * x'):
        line = line_of('control.py', text)
        assert f'# control.py:{line}' in annotated


def test_render_maps_lines_of_the_text_to_the_users_file():
    unit = export.generate(CONTROL.while_loop)
    tree = unit.trees['combined']
    text, line_map = export.render(tree, fixture('control.py'), annotate=False)
    assert text == tapeflow.source(CONTROL.while_loop)
    doubled = line_of('control.py', 'y = y * 2.0')
    generated = text.splitlines()
    for number, (filename, line) in line_map.items():
        assert filename == fixture('control.py')
        if generated[number - 1].strip() == 'y = y * 2.0':
            assert line == doubled
    assert any(line == doubled for _, line in line_map.values())


def test_user_line_of_finds_the_users_line_behind_a_generated_frame():
    functions = load('functions.py')
    with pytest.raises(ZeroDivisionError) as error:
        tapeflow.grad(functions.divide)(0.0)
    where = export.user_line_of(error.value.__traceback__, functions.divide)
    assert where == (fixture('functions.py'), line_of('functions.py', 'y = 1.0 / x'))


def test_traceback_of_tapeflow_grad_names_the_users_line():
    functions = load('functions.py')
    with pytest.raises(ZeroDivisionError) as error:
        tapeflow.grad(functions.divide)(0.0)
    text = ''.join(traceback.format_exception(error.value))
    assert f'functions.py:{line_of("functions.py", "y = 1.0 / x")}' in text
