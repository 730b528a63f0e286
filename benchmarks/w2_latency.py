"""W2: per-call latency of the gradient of `x*x` on a Python float, in microseconds.

Goals: under 2 us per call of tapeflow.grad(f), under 15 us per gradient
through the eager GradientTape. Only the gradient is timed (not the value), as `grad(f)(x)`.
"""
from harness import Workload


def square(x):
    return x * x


def square_adjoint(x):
    return x * x, (2.0 * x,)


def workloads(settings):
    return [Workload('W2', 'x*x gradient latency (us per call)', square, (3.0,), (0,),
                     square_adjoint, unit='us', grad_only=True)]
