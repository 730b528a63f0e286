"""Fresh Python processes, set up as a user's: for figures that a warm process hides.

`run_python(code, *argv)` runs `code` in a new interpreter (this one's
executable) and returns the JSON object it prints on its last line of output.
The environment is the one this process started with (captured when this
module is first imported: run.py imports it before it limits BLAS to one
thread, a limit users do not have) with two changes: PYTHONDONTWRITEBYTECODE
is removed (users' imports read compiled bytecode from __pycache__; the first
run writes it), and the directory tapeflow is imported from here goes first on
PYTHONPATH, so the child measures the same tapeflow as this process.
The child runs in a temporary directory, so nothing in the current directory
shadows a module.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

USER_ENVIRONMENT = dict(os.environ)


def tapeflow_location():
    """The directory that holds the tapeflow package this process imports."""
    spec = importlib.util.find_spec('tapeflow')
    if spec is None or spec.origin is None:
        raise ImportError('tapeflow is not importable')
    return os.path.dirname(os.path.dirname(spec.origin))


def user_environment():
    env = dict(USER_ENVIRONMENT)
    env.pop('PYTHONDONTWRITEBYTECODE', None)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (tapeflow_location(), env.get('PYTHONPATH')) if p)
    return env


def run_python(code, *argv, env=None, timeout=120):
    """Run `code` as `python -c` in a fresh process; its last stdout line, parsed as JSON."""
    with tempfile.TemporaryDirectory(prefix='tapeflow-bench-') as cwd:
        proc = subprocess.run([sys.executable, '-c', code, *map(str, argv)], cwd=cwd,
                              env=env or user_environment(), capture_output=True, text=True,
                              timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ['no output'])[-1]
        raise RuntimeError(f'fresh process failed (exit {proc.returncode}): {err}')
    return json.loads(lines[-1])
