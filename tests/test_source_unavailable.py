"""Functions whose source lives in linecache (IPython, Jupyter) are differentiated;
elsewhere (the plain prompt, exec, python -c, a deleted file) the error says
why there is no source and what to do instead."""
import importlib
import linecache
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import SourceUnavailableError, UnsupportedError
from tests.gradcheck import check_gradient, seed_of

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src'

CELL = '''\
import numpy as np


def cell_fn(x, w):
    total = 0.0
    for k in range(3):
        if k > 0:
            total = total + np.sum(np.sin(w * x) * k)
    return total * x
'''


def _run_cell(text, filename):
    """What IPython does with a cell: register its text in linecache, compile, run."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {}
    exec(compile(text, filename, 'exec'), namespace)
    return namespace


@pytest.mark.parametrize('filename', ['<ipython-input-3-abc123>',           # IPython
                                      '/tmp/ipykernel_4242/1234567890.py'])  # Jupyter, no such file
def test_a_notebook_cell_is_differentiated(filename):
    assert not os.path.exists(filename)
    try:
        f = _run_cell(CELL, filename)['cell_fn']
        rng = np.random.default_rng(seed_of(filename))
        x, w = 0.7, rng.standard_normal(5)
        value, (gx, gw) = tf.value_and_grad(f, argnums=(0, 1))(x, w)
        assert value == pytest.approx(f(x, w))
        check_gradient(f, [gx, gw], (x, w), (0, 1), rng)
        assert 'def dcell_fn' in tf.source(f)
    finally:
        linecache.cache.pop(filename, None)


def test_an_error_in_a_notebook_cell_points_at_the_cell():
    filename = '<ipython-input-7-def456>'
    text = 'def bad(x):\n    y = x\n    global z\n    return x\n'
    try:
        f = _run_cell(text, filename)['bad']
        with pytest.raises(UnsupportedError) as info:
            tf.grad(f)(1.0)
        assert str(info.value).startswith(f'{filename}:3:')
    finally:
        linecache.cache.pop(filename, None)


def _made(text, filename):
    namespace = {}
    exec(compile(text, filename, 'exec'), namespace)
    return namespace['f']


def test_exec_says_what_to_do():
    f = _made('def f(x):\n    return x * x\n', '<string>')
    with pytest.raises(SourceUnavailableError) as info:
        tf.grad(f)(1.0)
    message = str(info.value)
    assert message.startswith("<string>:1: cannot read the source of 'f'")
    assert 'exec() or python -c' in message
    assert 'define f in a file' in message and 'notebook' in message
    assert '\n' not in message


def test_the_plain_prompt_says_what_to_do():
    f = _made('def f(x):\n    return x * x\n', '<stdin>')      # what the plain prompt compiles
    with pytest.raises(SourceUnavailableError) as info:
        tf.grad(f)(1.0)
    message = str(info.value)
    assert message.startswith("<stdin>:1: cannot read the source of 'f'")
    assert 'typed at the plain Python prompt' in message
    assert 'define f in a file (and import it) or in a notebook or IPython cell' in message


def test_another_unregistered_name_says_what_to_do():
    f = _made('def f(x):\n    return x * x\n', '<my-generator>')
    with pytest.raises(SourceUnavailableError, match='linecache holds no source for <my-generator>; '
                                                     'define f in a file'):
        tf.grad(f)(1.0)


def test_python_dash_c_says_what_to_do():
    code = ('import tapeflow as tf\n'
            'def f(x):\n'
            '    return x * x\n'
            'print(tf.grad(f)(2.0))\n')
    env = dict(os.environ, PYTHONPATH=str(SRC))
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
    if sys.version_info >= (3, 13):     # Python 3.13 keeps the text of -c code in linecache
        assert (result.returncode, result.stdout.strip()) == (0, '4.0'), result.stderr
        return
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("tapeflow.errors.SourceUnavailableError: <string>:2: cannot read the source of 'f'")
    assert 'define f in a file' in last


def test_a_deleted_source_file_says_which(tmp_path, monkeypatch):
    module = tmp_path / 'gone_mod.py'
    module.write_text('def f(x):\n    return x * x\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    f = importlib.import_module('gone_mod').f
    try:
        module.unlink()
        linecache.checkcache(str(module))
        with pytest.raises(SourceUnavailableError) as info:
            tf.grad(f)(1.0)
        assert str(info.value).startswith(f"{module}:1: cannot read the source of 'f'")
        assert 'define f in a file' in str(info.value)
    finally:
        sys.modules.pop('gone_mod', None)
