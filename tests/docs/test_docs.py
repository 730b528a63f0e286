"""Every code block of docs/*.md runs, and the output the docs show is the output produced.

Conventions of the Markdown (fenced blocks, by their info string):

    ```python            executed; the blocks of one document share a namespace
    ```python raises     executed; must raise an exception
    ```output            the exact stdout of the python block just above it
    ```console           `$ tapeflow ...` commands and their exact output
                         (stdout then stderr), run in a scratch directory where
                         `examples/` and `docs/` are the project's

In expected output a line `...` stands for any number of lines. Any other
fence (```sh, ```text) is prose and is not run.

Each document's code is compiled as if it were written at its place in the
.md file, so `inspect.getsource` (and tapeflow) can read functions defined in
the docs, and errors name `docs/<file>.md:<line>`.
"""
import contextlib
import io
import linecache
import os
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / 'docs').glob('*.md'))
FENCE = re.compile(r'^```(\S*)(?:[ \t]+(\S.*?))?[ \t]*\n(.*?)^```[ \t]*$', re.M | re.S)


def blocks(path):
    """(kind, option, code, first line of the code) for each fenced block of `path`."""
    text = path.read_text()
    for match in FENCE.finditer(text):
        first_line = text.count('\n', 0, match.start(3)) + 1
        yield match.group(1), match.group(2) or '', match.group(3), first_line


def test_every_document_has_runnable_code():
    names = {p.name for p in DOCS}
    for required in ('getting-started.md', 'how-it-works.md', 'python-subset.md', 'eager-tape.md',
                     'custom-rules.md', 'cli.md', 'comparison.md'):
        assert required in names
    for path in DOCS:
        if path.name in ('comparison.md', 'numpy-support.md'):
            continue
        assert any(kind in ('python', 'console') for kind, *_ in blocks(path)), path.name


def matches(expected, actual):
    """`actual` lines equal `expected` lines, where an expected `...` line matches any lines."""
    if not expected:
        return not actual
    if expected[0] == '...':
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def normalise(text):
    return [line.rstrip() for line in text.replace(str(ROOT) + os.sep, '').rstrip('\n').split('\n')]


# Documents whose code needs an optional package: skipped, and said so, without it.
NEEDS = {'native.md': 'numba'}


@pytest.mark.parametrize('path', DOCS, ids=[p.name for p in DOCS])
def test_code_blocks_run_and_print_what_the_docs_show(path, tmp_path, monkeypatch):
    if path.name in NEEDS:
        pytest.importorskip(NEEDS[path.name], reason=f'{path.name} needs {NEEDS[path.name]} '
                                                     f'(pip install tapeflow[{NEEDS[path.name]}])')
    # The whole document, with every line that is not executed code blanked,
    # serves as the source of the functions the docs define.
    text_lines = path.read_text().split('\n')
    code_view = [''] * len(text_lines)
    for kind, option, code, first in blocks(path):
        if kind == 'python':
            for i, line in enumerate(code.rstrip('\n').split('\n')):
                code_view[first - 1 + i] = line
    filename = str(path)
    source = '\n'.join(code_view) + '\n'
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'examples').symlink_to(ROOT / 'examples')
    (tmp_path / 'docs').symlink_to(ROOT / 'docs')
    namespace = {'__name__': f'docs_{path.stem.replace("-", "_")}'}
    last_output = None
    try:
        for kind, option, code, first in blocks(path):
            where = f'{path.name}:{first}'
            if kind == 'python':
                last_output = run_python(code, first, filename, namespace, option, where)
            elif kind == 'output':
                assert last_output is not None, f'{where}: an output block without code above it'
                expected, actual = normalise(code), normalise(last_output)
                assert matches(expected, actual), (
                    f'{where}: the docs show\n{code}\nbut the code printed\n{last_output}')
                last_output = None
            elif kind == 'console':
                run_console(code, where)
    finally:
        linecache.cache.pop(filename, None)


def run_python(code, first, filename, namespace, option, where):
    compiled = compile('\n' * (first - 1) + code, filename, 'exec')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if option.startswith('raises'):
            with pytest.raises(Exception):
                exec(compiled, namespace)
        else:
            assert option == '', f'{where}: unknown option {option!r} (only "raises")'
            exec(compiled, namespace)
    return out.getvalue()


def run_console(code, where):
    from tapeflow import cli
    commands, current = [], None
    for line in code.rstrip('\n').split('\n'):
        if line.startswith('$ '):
            current = [line[2:], []]
            commands.append(current)
        else:
            assert current is not None, f'{where}: output before any `$ ` command'
            current[1].append(line)
    for command, expected in commands:
        argv = shlex.split(command)
        assert argv[0] == 'tapeflow', f'{where}: only tapeflow commands run here: {command}'
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main(argv[1:])
            except SystemExit:                 # --help, argparse errors
                pass
        actual = out.getvalue() + err.getvalue()
        assert matches(normalise('\n'.join(expected)), normalise(actual)), (
            f'{where}: `{command}` should print\n' + '\n'.join(expected) + f'\nbut printed\n{actual}')
