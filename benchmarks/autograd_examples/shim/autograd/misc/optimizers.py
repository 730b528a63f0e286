"""Gradient-descent optimizers with autograd's signatures, over flattened parameters:
`opt(grad, x0, callback=None, num_iters=..., step_size=..., ...)`, `grad(x, i)`."""
import functools

import numpy as np

from autograd.misc.flatten import flatten


def _on_vectors(optimize):
    @functools.wraps(optimize)
    def run(grad, x0, callback=None, *args, **kwargs):
        start, unflatten = flatten(x0)

        def flat_grad(x, i):
            return flatten(grad(unflatten(x), i))[0]
        flat_callback = None
        if callback:
            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        return unflatten(optimize(flat_grad, start, flat_callback, *args, **kwargs))
    return run


@_on_vectors
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@_on_vectors
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=1e-8):
    mean_square = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        mean_square = gamma * mean_square + (1 - gamma) * g ** 2
        x = x - step_size * g / (np.sqrt(mean_square) + eps)
    return x


@_on_vectors
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=1e-8):
    first, second = np.zeros(len(x)), np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        first = (1 - b1) * g + b1 * first
        second = (1 - b2) * g ** 2 + b2 * second
        unbiased_first = first / (1 - b1 ** (i + 1))
        unbiased_second = second / (1 - b2 ** (i + 1))
        x = x - step_size * unbiased_first / (np.sqrt(unbiased_second) + eps)
    return x
