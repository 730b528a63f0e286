"""W1: a scalar loop on a Python float (100 iterations of sin(x)*x + 0.5*x).

Pure interpreter overhead: every derivative path pays per-operation costs that
NumPy cannot amortise. The eager tape cannot see `math.sin` on a Tensor (it
would convert to float and leave the tape), so its variant uses `np.sin`.
"""
import math

import numpy as np

from harness import Workload


def scalar_loop(x):
    for i in range(100):
        x = math.sin(x) * x + 0.5 * x
    return x


def scalar_loop_np(x):
    for i in range(100):
        x = np.sin(x) * x + 0.5 * x
    return x


def scalar_loop_adjoint(x):
    """Hand-written value and gradient: store the iterates, sweep back."""
    xs = [0.0] * 100
    ss = [0.0] * 100
    for i in range(100):
        s = math.sin(x)
        xs[i] = x
        ss[i] = s
        x = s * x + 0.5 * x
    bx = 1.0
    for i in range(99, -1, -1):
        xi = xs[i]
        bx = bx * (math.cos(xi) * xi + ss[i] + 0.5)
    return x, (bx,)


def workloads(settings):
    return [Workload('W1', 'scalar loop, 100 x (sin(x)*x + 0.5*x), Python float',
                     scalar_loop, (0.7,), (0,), scalar_loop_adjoint, eager_fn=scalar_loop_np)]
