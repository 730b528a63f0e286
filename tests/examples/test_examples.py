"""Each example runs as a script (its main guard) and prints what it promises."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / 'examples'


def run_example(name):
    env = dict(os.environ, PYTHONPATH=str(ROOT / 'src'))
    result = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
    return result.stdout


def losses(out):
    return [float(v) for v in re.findall(r'^step +\d+ +loss ([0-9.]+)$', out, re.M)]


def test_every_example_is_tested():
    tested = {'seed_gradient_tape.py', 'seed_compiled.py', 'logistic_regression.py', 'mlp.py',
              'rnn.py', 'projectile.py', 'custom_gradient.py', 'demo.py', 'scaling_out.py'}
    assert {p.name for p in EXAMPLES.glob('*.py')} == tested


def test_seed_gradient_tape():
    assert run_example('seed_gradient_tape.py') == (
        'd(sum(x)^2)/dx        = [[8.0, 8.0], [8.0, 8.0]]\n'
        'd(y^2)/dy, y = sum(x) = 8.0\n'
        'persistent tape       = 108.0 6.0\n'
        'loop and branch       = [12.0, 12.0, 4.0]\n'
        'x^3 at 1: first, second derivative = 3.0 6.0\n')


def test_seed_compiled():
    out = run_example('seed_compiled.py')
    assert out.startswith(
        'f(2.0, 6) =   8.0   df/dx = 12.0\n'
        'f(2.0, 5) =   8.0   df/dx = 12.0\n'
        'f(2.0, 4) =   4.0   df/dx = 4.0\n'
        'on a GradientTape: 12.0\n'
        '\n'
        'The generated code:\n'
        'def df(x, n, bout=1.0):\n')
    assert '    for i in reversed(_range):\n        _cond = i > 1 and i < 5\n        if _cond:\n' in out


def test_the_demo_fits_the_pendulum_checks_and_times_its_gradient():
    makefile = (ROOT / 'Makefile').read_text()
    assert re.search(r'^demo:.*\n\t\$\(PY\) examples/demo\.py$', makefile, re.M)
    out = run_example('demo.py')
    differences = [float(d) for d in re.findall(r'relative difference ([0-9.e+-]+)$', out, re.M)]
    assert len(differences) == 2 and max(differences) < 1e-6
    found = re.search(r'recovered omega2 = ([0-9.]+) \(true ([0-9.]+)\), '
                      r'friction = ([0-9.]+) \(true ([0-9.]+)\)', out)
    omega2, true_omega2, friction, true_friction = map(float, found.groups())
    assert abs(omega2 - true_omega2) < 0.05 and abs(friction - true_friction) < 0.02
    assert re.search(r'^  tapeflow +[0-9.]+ ms$', out, re.M)
    for other in ('autograd', 'JAX'):     # timed, or skipped with a line saying so
        line = re.search(rf'^  {other}.*$', out, re.M).group(0)
        assert 'same gradient: yes' in line or 'not installed: skipped' in line, line
    assert 'def dloss(omega2, friction, measured, ' in out
    assert out.rstrip().endswith('return (_value, (bomega2, bfriction))')


def test_logistic_regression_loss_goes_down():
    out = run_example('logistic_regression.py')
    values = losses(out)
    assert len(values) == 11 and values[0] == pytest.approx(0.6931, abs=1e-4)
    assert all(b < a for a, b in zip(values, values[1:]))
    assert values[-1] < 0.25
    accuracy = float(re.search(r'^accuracy ([0-9.]+)%', out, re.M).group(1))
    assert accuracy >= 85.0
    assert 'def dloss(w, b, X, y, ' in out
    assert out.rstrip().endswith('return (_value, (bw, bb))')


def test_mlp_fits_the_sine():
    out = run_example('mlp.py')
    values = losses(out)
    assert len(values) == 11
    assert values[-1] < values[0] / 100 and values[-1] < 0.02
    assert all(b < a for a, b in zip(values[1:], values[2:]))


def test_rnn_learns_over_50_steps():
    out = run_example('rnn.py')
    values = losses(out)
    assert len(values) == 9
    assert all(b < a for a, b in zip(values, values[1:]))
    assert values[-1] < values[0] / 10


def test_projectile_angle_by_gradient_matches_grid_search():
    out = run_example('projectile.py')
    match = re.search(r'best angle: ([0-9.]+) deg by gradient ascent, ([0-9.]+) deg by grid', out)
    by_gradient, by_grid = float(match.group(1)), float(match.group(2))
    assert abs(by_gradient - by_grid) <= 0.1
    assert 35.0 < by_gradient < 44.0            # drag lowers the best angle below 45 degrees
    slopes = [float(s) for s in re.findall(r'd\(distance\)/d\(angle\) +(-?[0-9.]+)', out)]
    assert abs(slopes[-1]) < 0.01 < abs(slopes[0])


def test_custom_gradient():
    out = run_example('custom_gradient.py')
    assert re.search(r'with clipping: +\[ +2\. +10\. -10\.\]', out)
    assert re.search(r'custom_gradient: +1\.0$', out, re.M)
    assert re.search(r'automatic: +nan$', out, re.M)
    assert 'np.clip(' in out.split('The generated gradient calls the rule:')[1]


def test_scaling_out():
    out = run_example('scaling_out.py')
    lines = out.splitlines()
    assert lines[0] == 'gradient: a lazy dask array of 1 chunk(s) over 4 chunks of data'
    assert lines[1] == 'computing on a local cluster of 2 workers'
    steps = losses(out)
    assert len(steps) == 5 and steps[0] == round(np.log(2.0), 6)
    assert all(b < a for a, b in zip(steps, steps[1:]))       # gradient descent descends
    difference = float(re.search(r'in-memory gradient: (\S+)$', out, re.M).group(1))
    assert difference < 1e-12
