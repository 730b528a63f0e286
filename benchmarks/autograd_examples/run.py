"""autograd's example programs, run on tapeflow with their imports swapped: a
measurement, never part of `make test`.

    .venv/bin/python benchmarks/autograd_examples/run.py [--autograd PATH] [-k NAME] [-v]

HIPS/autograd's `examples/` and its `autograd/` package are read from PATH (a
checkout, or a git directory whose HEAD is read), by default the clone
`make autograd-suite` makes under .cache/; nothing of them is copied into this
repository. Each example runs twice, in a process of its own (`driver.py`): on
autograd as written, and on tapeflow with only its imports swapped (`shim/`).
Both record what the example's gradient functions return on their first `--calls`
calls, and the records are compared. Plotting draws nothing and MNIST is a fixed
pseudo-random set of its shape (`stubs/`), in both runs alike.

Every example ends as one of

    right      tapeflow's records equal autograd's (to 1e-6 relative)
    wrong      a record differs: a wrong number, which tapeflow must never give
    refused    tapeflow stopped at a located error (UnsupportedError)
    crashed    anything else
    internals  the example imports autograd's tracer or boxes (its own machinery,
               which no other tool has)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks', 'autograd_suite'))
from run import _default_source  # noqa: E402  (the clone autograd-suite makes)

INTERNALS = ('autograd.tracer', 'autograd.extend import Box', 'autograd.util')


def _extract(source, target):
    """`examples/` and `autograd/` of `source` (a checkout or a git directory) in `target`."""
    if os.path.isdir(os.path.join(source, 'examples')):
        for name in ('examples', 'autograd'):
            shutil.copytree(os.path.join(source, name), os.path.join(target, name))
    else:
        archive = subprocess.run(['git', '--git-dir', source, 'archive', 'HEAD', 'examples', 'autograd'],
                                 check=True, capture_output=True).stdout
        subprocess.run(['tar', 'x', '-C', target], input=archive, check=True)
    os.remove(os.path.join(target, 'examples', 'data_mnist.py'))     # stubs/ has its own
    package = os.path.join(target, 'package')
    os.makedirs(package)
    shutil.move(os.path.join(target, 'autograd'), os.path.join(package, 'autograd'))
    return os.path.join(target, 'examples'), package


def _examples(work):
    names = sorted(n for n in os.listdir(work) if n.endswith('.py')
                   and n not in ('__init__.py', 'data.py'))
    names += ['fluidsim/' + n for n in sorted(os.listdir(os.path.join(work, 'fluidsim')))
              if n.endswith('.py')]
    return names


def _run(mode, work, package, example, calls, limit):
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as out:
        path = out.name
    command = [sys.executable, os.path.join(HERE, 'driver.py'), '--mode', mode, '--work', work,
               '--example', example, '--out', path, '--calls', str(calls), '--limit', str(limit),
               '--autograd', package]
    env = dict(os.environ, MPLBACKEND='Agg', PYTHONHASHSEED='0')
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {'outcome': 'error', 'kind': 'driver', 'message': done.stderr[-2000:], 'records': []}
    finally:
        os.remove(path)


def _difference(a, b):
    """Why two records differ (None: they agree to 1e-6 relative, leaf by leaf)."""
    if len(a) != len(b):
        return f'{len(b)} leaves for {len(a)}'
    # (a leaf of rounding noise, 1e-21 where others are 1e-4, at the record's scale)
    whole = max((np.max(np.abs(np.asarray(x)), initial=0.0) for x in a), default=0.0)
    for k, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f'leaf {k}: shape {y.shape} for {x.shape}'
        scale = max(np.max(np.abs(x), initial=0.0), 1e-300)
        if not np.allclose(x, y, rtol=1e-6, atol=1e-9 * max(scale, whole), equal_nan=True):
            worst = np.max(np.abs(x - y))
            return f'leaf {k} of {len(a)}: off by {worst:.3g} where it reaches {scale:.3g}'
    return None


def verdict(reference, result, text):
    if any(marker in text for marker in INTERNALS):
        return 'internals', 'imports autograd\'s own tracer or boxes'
    if result['outcome'] == 'error':
        kind = 'refused' if result['kind'] == 'refused' else 'crashed'
        return kind, f"{result['kind']}: {result['message'].splitlines()[0]}"
    if result['outcome'] == 'timed out':
        return 'crashed', result['message']
    if not reference['records']:
        return 'no gradient', f"autograd's run recorded nothing ({reference['outcome']})"
    compared = min(len(reference['records']), len(result['records']))
    for i in range(compared):
        why = _difference(reference['records'][i], result['records'][i])
        if why is not None:
            return 'wrong', f'call {i + 1}: {why}'
    if len(result['records']) != len(reference['records']):
        return 'wrong', (f"{len(result['records'])} gradient calls recorded, autograd's run "
                         f"{len(reference['records'])}")
    return 'right', f'{compared} gradient calls equal autograd\'s'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--autograd', help='a checkout of HIPS/autograd, or its git directory')
    parser.add_argument('-k', action='append', help='run the examples whose name holds this')
    parser.add_argument('--calls', type=int, default=3, help='gradient calls compared per example')
    parser.add_argument('--limit', type=int, default=300, help='seconds per example and mode')
    parser.add_argument('-v', action='store_true', help='print the reasons in full')
    parser.add_argument('--json', help='write every outcome here')
    options = parser.parse_args(argv)
    source = options.autograd or _default_source()
    scratch = tempfile.mkdtemp(prefix='tapeflow-autograd-examples-')
    outcomes = {}
    try:
        work, package = _extract(source, scratch)
        names = [n for n in _examples(work) if not options.k or any(k in n for k in options.k)]
        for name in names:
            with open(os.path.join(work, name)) as f:
                text = f.read()
            reference = _run('autograd', work, package, name, options.calls, options.limit)
            result = _run('tapeflow', work, package, name, options.calls, options.limit)
            kind, reason = verdict(reference, result, text)
            outcomes[name] = {'kind': kind, 'reason': reason, 'tapeflow': result['message'],
                              'autograd': reference['outcome']}
            print(f'{name:38} {kind:10} {reason[:150]}', flush=True)
            if options.v and result['message']:
                print(result['message'])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = {}
    for o in outcomes.values():
        counts[o['kind']] = counts.get(o['kind'], 0) + 1
    print(', '.join(f'{k}: {v}' for k, v in sorted(counts.items())))
    if options.json:
        with open(options.json, 'w') as f:
            json.dump(outcomes, f, indent=1)
    return 1 if counts.get('wrong') else 0


if __name__ == '__main__':
    sys.exit(main())
