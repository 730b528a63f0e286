"""ndarray attributes and methods, mapped to the primitives that have rules.

`x.T` is `np.transpose(x)`, `x.sum(axis=0)` is `np.sum(x, axis=0)`,
`x.reshape(2, 3)` is `np.reshape(x, (2, 3))`. Methods whose argument order
differs from their NumPy function (compress, item) get a small function of
their own with rules. In-place methods (sort, partition, fill, put) are not
mapped: they return None and mutate.
"""
import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.indexing import def_gather, untake
from tapeflow.rules.numpy_shape import astype, flatten
from tapeflow.rules.registry import (linear_pair, nondifferentiable, register_attribute,
                                     register_method)

__all__ = ['compress', 'item', 'dtype_of', 'itemsize_of', 'nbytes_of', 'strides_of']


def compress(a, condition, axis=None):
    """`a.compress(condition, axis)`."""
    return np.compress(condition, a, axis)


def item(a, *args):
    """`a.item(*args)`: one element as a Python scalar."""
    return a.item(*args)


def _item_index(a, args):
    shape = np.shape(a)
    if not args:
        return (0,) * len(shape)
    if len(args) == 1 and not isinstance(args[0], tuple):
        return np.unravel_index(args[0], shape)
    return args[0] if len(args) == 1 else tuple(args)


def item_vjp(g, ans, a, *args): return untake(g, a, tuple(int(i) for i in _item_index(a, args)))
def item_jvp(t, ans, a, *args): return t[tuple(int(i) for i in _item_index(a, args))]
def item_jvp_batched(t, ans, a, *args):
    return t[(slice(None),) + tuple(int(i) for i in _item_index(a, args))]


def dtype_of(x):
    return x.dtype


def itemsize_of(x):
    return x.itemsize


def nbytes_of(x):
    return x.nbytes


def strides_of(x):
    return x.strides


def_gather(compress, forms='condition: bool sequence; axis None/int')
entry(item, item_vjp, item_jvp, batched=item_jvp_batched,
      forms='no index, a flat index, or one index per axis')
linear_pair(item_vjp, item_jvp)
nondifferentiable(dtype_of, itemsize_of, nbytes_of, strides_of)

_ATTRIBUTES = {
    'T': np.transpose, 'mT': np.matrix_transpose, 'real': np.real, 'imag': np.imag,
    'shape': np.shape, 'ndim': np.ndim, 'size': np.size, 'dtype': dtype_of,
    'itemsize': itemsize_of, 'nbytes': nbytes_of, 'strides': strides_of,
}

_METHODS = {
    'sum': np.sum, 'mean': np.mean, 'prod': np.prod, 'max': np.max, 'min': np.min,
    'std': np.std, 'var': np.var, 'cumsum': np.cumsum, 'cumprod': np.cumprod,
    'dot': np.dot, 'ravel': np.ravel, 'flatten': flatten, 'squeeze': np.squeeze,
    'swapaxes': np.swapaxes, 'clip': np.clip, 'trace': np.trace, 'diagonal': np.diagonal,
    'round': np.round, 'astype': astype, 'copy': np.copy, 'conj': np.conjugate,
    'conjugate': np.conjugate, 'repeat': np.repeat, 'take': np.take, 'compress': compress,
    'item': item, 'all': np.all, 'any': np.any, 'argmax': np.argmax, 'argmin': np.argmin,
    'argsort': np.argsort, 'argpartition': np.argpartition, 'nonzero': np.nonzero,
    'searchsorted': np.searchsorted,
}

for _name, _fn in _ATTRIBUTES.items():
    register_attribute(_name, _fn)
for _name, _fn in _METHODS.items():
    register_method(_name, _fn)
register_method('reshape', np.reshape, varargs=True)
register_method('transpose', np.transpose, varargs=True)
