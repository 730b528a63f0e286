"""autograd's own test suite, run against tapeflow: a measurement, never part of `make test`.

    .venv/bin/python benchmarks/autograd_suite/run.py [--autograd PATH] [--json PATH] [-v]

HIPS/autograd's tests are read from PATH (a checkout, or a git directory whose
HEAD is read with `git show`), by default a clone of github.com/HIPS/autograd
at a fixed commit made under .cache/. Nothing of autograd's is copied into this
repository: its test files are written to a temporary directory, next to
`shim/` (autograd's API mapped onto tapeflow's: `autograd.numpy` is NumPy,
`check_grads` is autograd's check with tapeflow's `vjp`/`jvp`), and pytest runs
there. Every test ends in one of four kinds:

    passed   the test passed
    wrong    a derivative disagreed with finite differences (an AssertionError):
             a wrong number, the one outcome tapeflow must never have
    refused  tapeflow refused with a located error (UnsupportedError, or a rule's
             NotImplementedError for what it has no derivative of)
    nan      a forward-mode derivative is NaN, a rule's "no derivative here" where
             it cannot raise (the free phase of complex eigenvectors)
    crashed  anything else: an error of generated code or of a rule (a test that takes
             longer than --limit seconds, 600 by default, too: autograd's combination
             tests compile dozens of third derivatives)

and the counts are printed per file, with every test that did not pass and the
first line of its reason.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
URL = 'https://github.com/HIPS/autograd'
COMMIT = 'bff107b'              # the commit the figures in docs/numpy-support.md were taken at
FILES = ['test_numpy.py', 'test_linalg.py', 'test_scalar_ops.py', 'test_systematic.py',
         'test_binary_ops.py', 'test_fft.py']
SUPPORT = ['numpy_utils.py', 'conftest.py']

PLUGIN = '''
import json, os, signal, pytest
import tapeflow

_LIMIT = int(os.environ.get('TAPEFLOW_AUTOGRAD_LIMIT', '600'))

class TestTimedOut(Exception):
    pass

def _alarm(signum, frame):
    raise TestTimedOut(f'no result after {_LIMIT} s')

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)

_OUT = os.environ['TAPEFLOW_AUTOGRAD_RESULTS']

def _kind(excinfo):
    if excinfo is None:
        return 'passed'
    if excinfo.errisinstance((tapeflow.errors.UnsupportedError,
                              tapeflow.errors.SourceUnavailableError, NotImplementedError)):
        return 'refused'
    if excinfo.errisinstance(AssertionError):
        # NaN is how a forward rule says "no derivative here" (the phase of complex
        # eigenvectors and singular vectors): never a number to trust
        return 'nan' if 'nan' in str(excinfo.value) else 'wrong'
    return 'crashed'

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == 'call' or (report.when == 'setup' and report.failed):
        kind = _kind(call.excinfo)
        reason = ''
        if call.excinfo is not None:
            reason = f'{call.excinfo.typename}: {str(call.excinfo.value).strip()}'
            reason = reason.splitlines()[0] if reason else call.excinfo.typename
        with open(_OUT, 'a') as f:
            f.write(json.dumps({'id': item.nodeid, 'kind': kind, 'reason': reason[:300],
                                'seconds': round(call.duration, 1)}) + '\\n')
'''


def _read(source, name):
    if os.path.isdir(os.path.join(source, 'tests')):
        with open(os.path.join(source, 'tests', name)) as f:
            return f.read()
    return subprocess.run(['git', '--git-dir', source, 'show', f'HEAD:tests/{name}'],
                          check=True, capture_output=True, text=True).stdout


def _default_source():
    target = os.path.join(ROOT, '.cache', 'autograd')
    if not os.path.isdir(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        subprocess.run(['git', 'clone', '--quiet', URL, target], check=True)
        subprocess.run(['git', '-C', target, 'checkout', '--quiet', COMMIT], check=True)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--autograd', help='a checkout of HIPS/autograd, or its git directory')
    parser.add_argument('--json', help='write every outcome here')
    parser.add_argument('-k', help="pytest's -k, to run some tests")
    parser.add_argument('--limit', type=int, default=600,
                        help='seconds one test may take before it counts as crashed')
    parser.add_argument('--markdown', help='write the counts and every test that did not pass '
                                           'as a Markdown section (RESULTS.md)')
    parser.add_argument('-v', action='store_true', help='print every test that did not pass')
    options = parser.parse_args(argv)
    source = options.autograd or _default_source()

    work = tempfile.mkdtemp(prefix='tapeflow-autograd-suite-')
    try:
        for name in FILES + SUPPORT:
            with open(os.path.join(work, name), 'w') as f:
                f.write(_read(source, name))
        with open(os.path.join(work, '_tapeflow_outcomes.py'), 'w') as f:
            f.write(PLUGIN)
        results = os.path.join(work, 'results.jsonl')
        env = dict(os.environ, TAPEFLOW_AUTOGRAD_RESULTS=results,
                   TAPEFLOW_AUTOGRAD_LIMIT=str(options.limit),
                   PYTHONPATH=os.pathsep.join([work, os.path.join(HERE, 'shim'),
                                               os.path.join(ROOT, 'src')]))
        command = [sys.executable, '-m', 'pytest', '-q', '-p', '_tapeflow_outcomes',
                   '-p', 'no:cacheprovider', '-o', 'addopts=', '--rootdir', work] + FILES
        if options.k:
            command += ['-k', options.k]
        subprocess.run(command, cwd=work, env=env, stdout=subprocess.DEVNULL)
        with open(results) as f:
            outcomes = [json.loads(line) for line in f]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    kinds = ['passed', 'wrong', 'refused', 'nan', 'crashed']
    table = collections.defaultdict(collections.Counter)
    for o in outcomes:
        table[o['id'].split('::')[0]][o['kind']] += 1
    print(f'{"file":24}' + ''.join(f'{k:>9}' for k in kinds) + f'{"total":>9}')
    total = collections.Counter()
    for name in FILES:
        row = table.get(name, collections.Counter())
        total.update(row)
        print(f'{name:24}' + ''.join(f'{row[k]:9d}' for k in kinds) + f'{sum(row.values()):9d}')
    print(f'{"all":24}' + ''.join(f'{total[k]:9d}' for k in kinds) + f'{sum(total.values()):9d}')
    slowest = sorted(outcomes, key=lambda o: -o.get('seconds', 0))[:8]
    print('slowest: ' + ', '.join(f"{o['id'].split('::')[1]} {o.get('seconds', 0):.0f} s"
                                  for o in slowest))
    if options.v:
        for kind in kinds[1:]:
            for o in outcomes:
                if o['kind'] == kind:
                    print(f'{kind:8} {o["id"]}: {o["reason"]}')
    if options.markdown:
        with open(options.markdown, 'w') as f:
            f.write(_markdown(outcomes, table, kinds))
    if options.json:
        with open(options.json, 'w') as f:
            json.dump(outcomes, f, indent=1)
    return 1 if total['wrong'] else 0


def _markdown(outcomes, table, kinds):
    lines = ['## autograd\'s own tests', '',
             'HIPS/autograd\'s test files, run against tapeflow through '
             '`benchmarks/autograd_suite` (autograd\'s API mapped onto tapeflow\'s; '
             f'autograd commit `{COMMIT}`). `make autograd-suite` runs it again; '
             'this section is its `--markdown` output.', '',
             '| file | ' + ' | '.join(kinds) + ' | total |', '|---|' + '---|' * (len(kinds) + 1)]
    total = collections.Counter()
    for name in FILES:
        row = table.get(name, collections.Counter())
        total.update(row)
        lines.append(f'| `{name}` | ' + ' | '.join(str(row[k]) for k in kinds)
                     + f' | {sum(row.values())} |')
    lines.append('| all | ' + ' | '.join(str(total[k]) for k in kinds)
                 + f' | {sum(total.values())} |')
    lines += ['', 'A *refused* test stopped at a located error saying what is not differentiated; '
              'a *crashed* one raised anything else: a test of autograd\'s own boxes '
              '(`.shape` of a Python float) crashes here as it does in plain NumPy, and a '
              'test that expects autograd\'s `NotImplementedError` (an odd-length `rfftn`) '
              'fails because tapeflow differentiates it and its check passes. *wrong* (a '
              'derivative that disagrees with finite differences) must stay 0. autograd\'s '
              'additions to NumPy (`make_diagonal`, `linalg.T`, `linalg._dot`) are written '
              'as plain NumPy in the adapter.',
              '', 'Every test that did not pass, and why:', '']
    for kind in kinds[1:]:
        for o in outcomes:
            if o['kind'] == kind:
                reason = re.sub(r'\S*tapeflow-autograd-suite-[^/]*/', '', o['reason'])
                reason = reason.replace('|', '\\|')
                reason = reason.split(': ', 1)[-1] if reason.startswith(('Unsupported', 'NotImpl')) \
                    else reason
                where = reason.split(': ', 1)
                if len(where) == 2 and where[0].count(':') >= 2:     # drop the path:line:col
                    reason = where[1]
                lines.append(f'- {kind}: `{o["id"]}`: {reason}')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
