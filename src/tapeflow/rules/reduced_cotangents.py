"""Cotangents of sums and means kept small where generated code only broadcasts them
(`transforms.uniform`): a whole-array reduction's as one number (`uniform_sum`,
`uniform_mean`), one over an axis in its reduced shape (`kept_sum`, `kept_mean`).
Each gives the array `grad_of_sum` / `grad_of_mean` gives unless the dtypes make the
small value, broadcast, equal it element by element (float64 throughout); plain
Python, so generated code that calls them can be differentiated again.
"""
import numpy as np

from tapeflow.rules.numpy_reductions import grad_of_mean, grad_of_sum

__all__ = ['uniform_sum', 'uniform_mean', 'kept_sum', 'kept_mean']


def uniform_sum(g, x):
    """`grad_of_sum(g, x)` (whole-array), as the number `g` where generated code only
    combines it with arrays of x's shape (`transforms.uniform`) and float64 arithmetic
    on the number equals it on the array element by element."""
    if x.__class__ is np.ndarray and x.dtype == np.float64 and (
            g.__class__ is float or g.__class__ is np.float64):
        return g
    return grad_of_sum(g, x)


def uniform_mean(g, x):
    """`grad_of_mean(g, x)` (whole-array) as one number where it may be (`uniform_sum`)."""
    if x.__class__ is np.ndarray and x.dtype == np.float64 and (
            g.__class__ is float or g.__class__ is np.float64):
        return g / x.size
    return grad_of_mean(g, x)


def kept_sum(g, x, axis, keepdims=False):
    """`grad_of_sum(g, x, axis, keepdims)` (one axis, an int), as `g` with that axis
    kept (of size 1) where generated code only combines it with arrays of x's shape
    (`transforms.uniform`) and float64 arithmetic on it equals it on the array element
    by element; the array otherwise."""
    if x.__class__ is np.ndarray and x.dtype == np.float64:
        if g.__class__ is float or g.__class__ is np.float64:
            return g
        if g.__class__ is np.ndarray and g.dtype == np.float64 \
                and g.ndim == x.ndim - (not keepdims):
            return g if keepdims else np.expand_dims(g, axis)
    return grad_of_sum(g, x, axis, keepdims)


def kept_mean(g, x, axis, keepdims=False):
    """`grad_of_mean(g, x, axis, keepdims)` as `kept_sum` keeps `grad_of_sum`."""
    if x.__class__ is np.ndarray and x.dtype == np.float64 and (
            g.__class__ is float or g.__class__ is np.float64 or g.__class__ is np.ndarray
            and g.dtype == np.float64 and g.ndim == x.ndim - (not keepdims)):
        return kept_sum(g / x.shape[axis], x, axis, keepdims)
    return grad_of_mean(g, x, axis, keepdims)


# Pure: each computes a new value from its arguments and changes none of them
# (`transforms.fusion` may move a call of it to its one reader, as arithmetic).
for _helper in (uniform_sum, uniform_mean, kept_sum, kept_mean):
    _helper.__tapeflow_pure__ = True
