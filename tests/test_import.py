"""`import tapeflow` works on every supported NumPy, and reads no name NumPy
deprecates: a deprecated name warns on access before NumPy removes it, and a
removed one must not break the import (np.row_stack on NumPy 2.5)."""
import os
import pathlib
import subprocess
import sys
import types
import warnings

from tapeflow.rules.registry import available

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src'


def test_import_reads_no_deprecated_numpy_name():
    env = dict(os.environ, PYTHONPATH=str(SRC))
    result = subprocess.run([sys.executable, '-W', 'error::DeprecationWarning', '-c', 'import tapeflow'],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


def test_available_skips_names_a_module_deprecates_or_lacks():
    module = types.ModuleType('numpy_like')
    module.kept = len

    def __getattr__(name):  # how NumPy deprecates a name before removing it
        if name == 'deprecated':
            warnings.warn('np.deprecated is deprecated', DeprecationWarning)
            return abs
        raise AttributeError(name)
    module.__getattr__ = __getattr__
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert available(module, ['kept', 'deprecated', 'removed']) == [len]


def _run(code):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)


def test_import_leaves_scipy_alone_until_its_functions_are_differentiated():
    # SciPy takes longer to import than tapeflow: its rules are registered when first needed
    result = _run('import sys, tapeflow\n'
                  'print("scipy" in sys.modules)\n'
                  'import numpy as np\n'
                  'print(round(float(tapeflow.grad(np.i0)(0.5)), 12))\n'
                  'print("scipy.special" in sys.modules)\n'
                  'from scipy.special import expit\n'
                  'print(round(float(tapeflow.grad(expit)(0.0)), 12))\n')
    assert result.returncode == 0, result.stderr
    from scipy.special import i1
    assert result.stdout.split() == ['False', str(round(float(i1(0.5)), 12)), 'True', '0.25']


def test_the_eager_tape_meets_scipy_functions_first():
    result = _run('import tapeflow as tf\n'
                  'from scipy.special import expit\n'
                  'x = tf.Variable(0.0, dtype="float64")\n'
                  'with tf.GradientTape() as tape:\n'
                  '    y = expit(x)\n'
                  'print(float(tape.gradient(y, x)))\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ['0.25']
