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
