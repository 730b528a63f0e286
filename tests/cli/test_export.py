"""`tapeflow export`: a module that runs with NumPy alone, checked in a fresh interpreter."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tapeflow
from tests.cli.helpers import FIXTURES, fixture, line_of

FUNCTIONS = fixture('functions.py')

# Runs in a fresh interpreter: tapeflow cannot be imported there at all.
RUNNER = '''
import json, sys
sys.modules['tapeflow'] = None            # any `import tapeflow` now fails
sys.path.insert(0, sys.argv[1])
import numpy as np
module = __import__(sys.argv[2])
calls = json.loads(sys.argv[3])
results = []
for name, args in calls:
    args = [np.array(a) if isinstance(a, list) else a for a in args]
    value = getattr(module, name)(*args)
    results.append(np.asarray(value, dtype=object).tolist() if isinstance(value, tuple) else
                   np.asarray(value).tolist())
print(json.dumps(results))
'''


def run_exported(directory, module, calls):
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    result = subprocess.run([sys.executable, '-c', RUNNER, str(directory), module, json.dumps(calls)],
                            capture_output=True, text=True, env=env, cwd=directory)
    return result


def load_functions():
    import importlib.util
    spec = importlib.util.spec_from_file_location('cli_export_functions', FUNCTIONS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_writes_a_module_that_needs_no_tapeflow(run, tmp_path):
    out = tmp_path / 'grad_f.py'
    status, stdout, err = run('export', f'{FUNCTIONS}:f', '-o', out)
    assert (status, err) == (0, '')
    assert stdout == f'wrote {out}: df(...) returns (value, gradient), grad_f(...) the gradient\n'
    text = out.read_text()
    assert 'import tapeflow' not in text and 'from tapeflow' not in text
    assert 'def unbroadcast(g, x):' in text          # the helper is copied in
    result = run_exported(tmp_path, 'grad_f', [['df', [2.0, 6]], ['grad_f', [2.0, 4]]])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[8.0, 12.0], 4.0]


def test_exported_gradient_agrees_with_tapeflow_grad(run, tmp_path):
    status, _, _ = run('export', f'{FUNCTIONS}:poly', '--wrt', 'x', 'y', '-o', tmp_path / 'gp.py')
    assert status == 0
    result = run_exported(tmp_path, 'gp', [['grad_poly', [1.5, -2.0]], ['grad_poly', [0.25, 3.0]]])
    assert result.returncode == 0, result.stderr
    poly = load_functions().poly
    expected = [list(tapeflow.grad(poly, argnums=(0, 1))(1.5, -2.0)),
                list(tapeflow.grad(poly, argnums=(0, 1))(0.25, 3.0))]
    np.testing.assert_allclose(json.loads(result.stdout), expected, rtol=1e-12)


def test_export_carries_called_user_functions_and_globals(run, tmp_path):
    status, _, _ = run('export', f'{FUNCTIONS}:calls', '-o', tmp_path / 'grad_calls.py')
    assert status == 0
    text = (tmp_path / 'grad_calls.py').read_text()
    assert 'SCALE = 3.0' in text
    assert 'def square_forward(_tape, x):' in text and 'def square_backward(' in text
    result = run_exported(tmp_path, 'grad_calls', [['dcalls', [2.0]]])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[4.0 + 6.0, 2 * 2.0 + 3.0]]


def test_export_writes_global_arrays_as_literals(run, tmp_path):
    status, _, err = run('export', f'{FUNCTIONS}:weighted', '-o', tmp_path / 'gw.py')
    assert (status, err) == (0, '')
    text = (tmp_path / 'gw.py').read_text()
    assert 'WEIGHTS = np.array([1.0, 2.0, 0.5], dtype=np.float64)' in text
    v = [1.0, -2.0, 4.0]
    result = run_exported(tmp_path, 'gw', [['grad_weighted', [v]]])
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(json.loads(result.stdout)[0], [2.0, -8.0, 4.0])


def test_traceback_from_an_exported_module_names_the_users_line(run, tmp_path):
    status, _, _ = run('export', f'{FUNCTIONS}:divide', '-o', tmp_path / 'gd.py')
    assert status == 0
    result = run_exported(tmp_path, 'gd', [['ddivide', [0.0]]])
    assert result.returncode == 1
    line = line_of('functions.py', 'y = 1.0 / x')
    assert 'ZeroDivisionError' in result.stderr
    assert f'y = 1.0 / x' in result.stderr and f'# functions.py:{line}' in result.stderr


def test_export_to_stdout(run):
    status, out, _ = run('export', f'{FUNCTIONS}:square', '-o', '-')
    assert status == 0
    assert out.startswith('"""Value and gradient of square() from functions.py')
    namespace = {}
    exec(compile(out, 'exported', 'exec'), namespace)
    assert namespace['dsquare'](3.0) == (9.0, 6.0)
    assert namespace['grad_square'](-1.5) == -3.0


def test_export_default_output_name(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, _ = run('export', f'{FUNCTIONS}:square')
    assert status == 0 and (tmp_path / 'grad_square.py').exists()


def test_export_to_a_directory_that_does_not_exist(run, tmp_path):
    status, out, err = run('export', f'{FUNCTIONS}:square', '-o', tmp_path / 'no' / 'g.py')
    assert (status, out) == (2, '')
    assert err.startswith(f'tapeflow: error: cannot write {tmp_path / "no" / "g.py"}: ')


def test_export_refuses_values_it_cannot_write(tmp_path):
    from tapeflow import export
    source = tmp_path / 'opaque.py'
    source.write_text('import threading\n'
                      'LOCK = threading.Lock()\n\n'
                      'def g(x):\n'
                      '    return x * helper(x)\n\n'
                      'def helper(x):\n'
                      '    with_lock = LOCK\n'
                      '    return x\n')
    import importlib.util
    spec = importlib.util.spec_from_file_location('opaque_export', source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(export.ExportError, match="cannot export 'LOCK'"):
        export.export_source(module.g)


def test_export_recursion_nested_defs_lists_and_array_writes(run, tmp_path):
    path = fixture('exportable.py')
    calls = []
    for name, args in [('power', [2.0, 3]), ('outer', [3.0]), ('lists', [3.0]), ('idx', [3.0])]:
        status, _, err = run('export', f'{path}:{name}', '-o', tmp_path / f'grad_{name}.py')
        assert (status, err) == (0, '')
        calls.append((name, args))
    results = []
    for name, args in calls:
        result = run_exported(tmp_path, f'grad_{name}', [[f'd{name}', args]])
        assert result.returncode == 0, result.stderr
        results.append(json.loads(result.stdout)[0])
    # power: x^3 and 3x^2; outer: x*x + 2x; lists: 0 + x + 2x; idx: x^2 + 2 (2x)^2
    assert results == [[8.0, 12.0], [15.0, 8.0], [9.0, 3.0], [81.0, 54.0]]
