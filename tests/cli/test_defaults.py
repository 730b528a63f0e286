"""Functions with default arguments through the paths that write generated code out:
`tapeflow export` (a module that imports, with `grad_<f>` taking the defaults too),
`tf.source` (a literal default shows as itself), `tapeflow check --wrt` on a parameter
`--args` leaves out (its default), and `compile='numba'`/'auto' (issue 30: each was a
`NameError: _default` or an IndexError before)."""
import importlib.util
import json
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tests.cli.helpers import fixture
from tests.cli.test_export import run_exported

DEFAULTS = fixture('defaults.py')


def _module():
    spec = importlib.util.spec_from_file_location('cli_defaults', DEFAULTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exported_module_with_defaults_imports_and_uses_them(run, tmp_path):
    for name in ('scaled', 'weighted'):
        status, _, err = run('export', f'{DEFAULTS}:{name}', '-o', tmp_path / f'g_{name}.py')
        assert (status, err) == (0, '')
    text = (tmp_path / 'g_weighted.py').read_text()
    assert 'def grad_weighted(x, w=_default, s=2.0):' in text
    assert '_default = np.array([1.0, 2.0], dtype=np.float64)' in text
    assert 'def grad_scaled(x, k=3.0):' in (tmp_path / 'g_scaled.py').read_text()
    result = run_exported(tmp_path, 'g_weighted', [['grad_weighted', [[1.0, 1.0]]],
                                                   ['grad_weighted', [[1.0, 1.0], [3.0, 0.5], 1.0]]])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[2.0, 4.0], [3.0, 0.5]]
    result = run_exported(tmp_path, 'g_scaled', [['dscaled', [2.0]], ['grad_scaled', [2.0, 5.0]]])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[6.0, 3.0], 5.0]


def test_source_shows_a_literal_default_as_itself():
    module = _module()
    assert 'def dscaled(x, k=3.0, bout=1.0):' in tf.source(module.scaled)
    assert 'def dcounted(x, n=2, bout=1.0):' in tf.source(module.counted)


def test_check_wrt_a_defaulted_parameter_left_out_of_args(run):
    status, out, err = run('check', f'{DEFAULTS}:scaled', '--args', '2.0', '--wrt', 'k')
    assert (status, err) == (0, '')
    assert out.splitlines()[0] == 'scaled(2.0, 3.0) = 6.0'
    assert 'dscaled/dk  tapeflow: 2.0' in out
    assert out.splitlines()[-1].startswith('ok: ')


def test_check_wrt_an_integer_default_is_a_usage_error(run):
    status, _, err = run('check', f'{DEFAULTS}:counted', '--args', '2.0', '--wrt', 'n')
    assert status == 2
    assert err.startswith('tapeflow: error: --args: n is int 2; check differentiates')


@pytest.mark.parametrize('target', ['numba', 'auto'])
def test_native_paths_with_defaults(target):
    pytest.importorskip('numba')
    module = _module()
    with warnings.catch_warnings():
        warnings.simplefilter('error')          # 'auto' must not fall back
        assert tf.grad(module.scaled, compile=target)(2.0) == 3.0
        np.testing.assert_array_equal(
            tf.grad(module.weighted, compile=target)(np.array([1.0, 1.0])), [2.0, 4.0])
        assert tf.grad(module.scaled, argnums=1, compile=target)(2.0, 5.0) == 2.0
    assert tf.value_and_grad(module.weighted, argnums=2, compile=target)(
        np.array([1.0, 1.0])) == (6.0, 3.0)
