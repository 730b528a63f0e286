"""W6: an elementwise chain over 10**6 float64 values, summed.

f(x) = sum(tanh(x) * x + exp(-0.5 * x * x)); gradient with respect to x.
Memory-bound NumPy work: every path makes a few passes over 8 MB arrays, so
the figure is what a gradient spends beyond the passes it needs (extra
temporaries, extra passes); per-call Python overhead is negligible at this size.
"""
import numpy as np

from harness import Workload

SIZE = 10 ** 6


def elementwise_sum(x):
    return np.sum(np.tanh(x) * x + np.exp(-0.5 * x * x))


def elementwise_adjoint(x):
    """d/dx: (1 - t^2) x + t - x e, with t = tanh(x), e = exp(-x^2 / 2)."""
    t = np.tanh(x)
    e = np.exp(-0.5 * x * x)
    value = np.sum(t * x + e)
    return value, (t + x * (1.0 - t * t - e),)


def workloads(settings):
    x = np.random.default_rng(9).standard_normal(SIZE)
    return [Workload('W6', 'elementwise sum(tanh(x)*x + exp(-x*x/2)), 10**6 float64, d/dx',
                     elementwise_sum, (x,), (0,), elementwise_adjoint)]
