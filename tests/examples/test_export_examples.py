"""The examples' gradients, exported, run in an interpreter where tapeflow cannot be imported."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

import tapeflow
from tapeflow import export

ROOT = pathlib.Path(__file__).resolve().parents[2]

RUNNER = '''
import json, sys
sys.modules['tapeflow'] = None
sys.path.insert(0, sys.argv[1])
import numpy as np
out = []
for module, function, args in json.loads(sys.argv[2]):
    args = [np.array(a) if isinstance(a, list) else a for a in args]
    value, grad = getattr(__import__(module), function)(*args)
    out.append([float(value), [np.asarray(g).tolist() for g in (grad if isinstance(grad, tuple) else (grad,))]])
print(json.dumps(out))
'''


def example(name):
    """The module examples/<name>.py, run afresh (it may register rules: see conftest)."""
    spec = importlib.util.spec_from_file_location(f'example_{name}', ROOT / 'examples' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exported_example_gradients_match_tapeflow(tmp_path):
    logistic_regression, mlp = example('logistic_regression'), example('mlp')
    projectile, custom_gradient = example('projectile'), example('custom_gradient')
    X, y = logistic_regression.make_data(20)
    Xm, ym = mlp.make_data(8)
    W1, b1, W2, b2 = mlp.init(4)
    cases = [
        ('g_logistic', logistic_regression.loss, (0, 1), [np.array([0.3, -0.2]), 0.1, X, y]),
        ('g_mlp', mlp.loss, (0, 2), [W1, b1, W2, b2, Xm, ym]),
        ('g_projectile', projectile.distance, 0, [0.6, 40.0, 0.01, 0.02]),
        ('g_custom', custom_gradient.loss, 0, [np.array([0.01, 0.5, -2.0])]),
    ]
    calls, expected = [], []
    for module, fn, argnums, args in cases:
        text = export.export_source(fn, argnums)
        assert 'tapeflow' not in ''.join(l for l in text.splitlines() if l.startswith(('import', 'from')))
        (tmp_path / f'{module}.py').write_text(text)
        calls.append([module, f'd{fn.__name__}', [a.tolist() if isinstance(a, np.ndarray) else a
                                                  for a in args]])
        value, grads = tapeflow.value_and_grad(fn, argnums)(*args)
        expected.append((value, grads if isinstance(grads, tuple) else (grads,)))
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    result = subprocess.run([sys.executable, '-c', RUNNER, str(tmp_path), json.dumps(calls)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    for (value, grads), (got_value, got_grads) in zip(expected, json.loads(result.stdout)):
        np.testing.assert_allclose(got_value, value, rtol=1e-12)
        assert len(got_grads) == len(grads)
        for g, got in zip(grads, got_grads):
            np.testing.assert_allclose(got, g, rtol=1e-10, atol=1e-14)
