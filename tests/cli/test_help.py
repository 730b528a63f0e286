"""`--help` everywhere, and the two ways to start the command."""
import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize('argv, words', [
    ([], ['show', 'export', 'check', 'Exit status']),
    (['show'], ['--wrt', '--mode', '--no-optimize', '--passes', '--lines']),
    (['export'], ['-o', '--wrt', 'NumPy alone']),
    (['check'], ['--args', '--eps', '--rtol', 'finite differences']),
])
def test_help_of_each_command(run, capsys, argv, words):
    with pytest.raises(SystemExit) as exit_:
        run(*argv, '--help')
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith('usage: tapeflow')
    for word in words:
        assert word in out


def test_python_dash_m_tapeflow(tmp_path):
    src = os.path.join(os.path.dirname(__file__), '..', '..', 'src')
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    result = subprocess.run([sys.executable, '-m', 'tapeflow', 'show', '--help'],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith('usage: tapeflow show')


def test_console_script_is_declared():
    import pathlib
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    pyproject = pathlib.Path(__file__).parents[2] / 'pyproject.toml'
    scripts = tomllib.loads(pyproject.read_text())['project']['scripts']
    assert scripts['tapeflow'] == 'tapeflow.cli:main'
    from tapeflow.cli import main
    assert callable(main)
