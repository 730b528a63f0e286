"""Run one of autograd's example programs, recording what its gradient functions return.

    python driver.py --mode {autograd,tapeflow} --work DIR --example NAME.py --out OUT.json

`autograd` runs the example as written, on autograd; `tapeflow` runs it with its
imports swapped (`shim/`: `autograd.numpy` is NumPy, `autograd.grad` is tapeflow's).
Every gradient function the example makes (`grad`, `value_and_grad`, `elementwise_grad`,
`hessian_vector_product`, ...) is wrapped: each call made by the example itself (not
one made inside another derivative) records its result, flattened to float64 arrays.
After `--calls` records the run stops: the first calls are what is compared, and the
rest would be the same training loop again.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import signal
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPERATORS = ('grad', 'value_and_grad', 'elementwise_grad', 'hessian_vector_product',
             'hessian', 'jacobian')


class Enough(BaseException):
    """Raised when --calls results are recorded (a BaseException: examples catch Exception)."""


class TimedOut(BaseException):
    pass


def leaves(value, out):
    import numpy as np
    if isinstance(value, (list, tuple)):
        for item in value:
            leaves(item, out)
    elif isinstance(value, dict):
        for key in sorted(value):
            leaves(value[key], out)
    else:
        out.append(np.asarray(value, dtype=np.float64).ravel().tolist())
    return out


def recorder(records, calls, nested):
    depth = [0]
    def wrap_operator(make):
        def operator(*args, **kwargs):
            made = make(*args, **kwargs)

            def recorded(*call_args, **call_kwargs):
                depth[0] += 1
                try:
                    out = made(*call_args, **call_kwargs)
                finally:
                    depth[0] -= 1
                if not depth[0] and not nested(call_args):    # not inside another one
                    records.append(leaves(out, []))
                    if len(records) >= calls:
                        raise Enough
                return out
            for name in ('__tapeflow_transform__', '__name__', '__doc__'):
                if hasattr(made, name):
                    setattr(recorded, name, getattr(made, name))
            return recorded
        return operator
    return wrap_operator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--mode', choices=('autograd', 'tapeflow'), required=True)
    parser.add_argument('--work', required=True)
    parser.add_argument('--example', required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--calls', type=int, default=3)
    parser.add_argument('--limit', type=int, default=300)
    parser.add_argument('--autograd', help="the directory holding autograd's package (--mode autograd)")
    options = parser.parse_args()

    paths = [os.path.join(HERE, 'stubs'), options.work]
    if options.mode == 'autograd':
        paths.append(options.autograd)
    else:
        paths = [os.path.join(HERE, 'shim'), os.path.join(ROOT, 'src')] + paths
    sys.path[:0] = paths
    os.chdir(os.path.dirname(os.path.join(options.work, options.example)))

    import numpy
    numpy.random.seed(0)            # examples that draw without seeding draw the same in both runs

    class Seeded(numpy.random.RandomState):
        """`RandomState()` without a seed (convnet.py's) seeded all the same."""

        def __init__(self, seed=None):
            super().__init__(0 if seed is None else seed)
    numpy.random.RandomState = Seeded

    import autograd
    records = []
    if options.mode == 'autograd':
        from autograd.tracer import Box

        def nested(args):
            return any(isinstance(leaf, Box) for leaf in _all(args))
    else:
        def nested(args):
            return False
    wrap = recorder(records, options.calls, nested)
    for name in OPERATORS:
        if hasattr(autograd, name):
            setattr(autograd, name, wrap(getattr(autograd, name)))


    def alarm(signum, frame):
        raise TimedOut(f'no result after {options.limit} s')
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(options.limit)
    outcome, message, kind = 'finished', '', ''
    try:
        runpy.run_path(os.path.join(options.work, options.example), run_name='__main__')
    except Enough:
        outcome = 'stopped'
    except TimedOut as error:
        outcome, message = 'timed out', str(error)
    except BaseException as error:                 # noqa: BLE001 (an example's SystemExit too)
        outcome, kind = 'error', type(error).__name__
        message = (str(error).strip().splitlines() or [''])[0]
        if options.mode == 'tapeflow':
            import tapeflow
            if isinstance(error, tapeflow.UnsupportedError):
                kind = 'refused'
        message += '\n' + ''.join(traceback.format_exception(error)[-6:])
    finally:
        signal.alarm(0)
    with open(options.out, 'w') as f:
        json.dump({'outcome': outcome, 'kind': kind, 'message': message, 'records': records}, f)


def _all(args):
    out = []

    def walk(value):
        if isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        else:
            out.append(value)
    walk(args)
    return out


if __name__ == '__main__':
    main()
