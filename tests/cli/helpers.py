"""Paths of the fixture files and golden texts of the CLI tests."""
import os
import pathlib

FIXTURES = pathlib.Path(__file__).parent / 'fixtures'
GOLDEN = pathlib.Path(__file__).parent / 'golden'


def fixture(name):
    return str(FIXTURES / name)


def line_of(name, text):
    """The 1-based line of `text` in fixture `name`."""
    for number, line in enumerate((FIXTURES / name).read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f'{text!r} is not in {name}')


def assert_golden(name, text):
    """`text` equals tests/cli/golden/<name>; TAPEFLOW_UPDATE_GOLDEN=1 rewrites the file."""
    path = GOLDEN / name
    if os.environ.get('TAPEFLOW_UPDATE_GOLDEN'):
        path.write_text(text)
    assert path.exists(), f'no golden file {path}: run with TAPEFLOW_UPDATE_GOLDEN=1 and review it'
    assert text == path.read_text(), (
        f'the generated code differs from {path}; if the change is intended, rerun with '
        f'TAPEFLOW_UPDATE_GOLDEN=1 and review the diff')
