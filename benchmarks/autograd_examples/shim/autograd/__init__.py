"""autograd's API over tapeflow, for the example programs (`benchmarks/autograd_examples`).

The examples' imports are the only thing swapped: `autograd.numpy` *is* NumPy,
`autograd.scipy` *is* SciPy (each submodule the examples import is the library's own
module object, registered under autograd's name), and the differential operators
below are tapeflow's. What autograd adds beyond NumPy/SciPy and tapeflow's names
(its optimizers, `flatten`, `fixed_point`, `convolve` with `dot_axes`) is written
in `misc/` and `scipy/` as plain code a tapeflow user would write for it.
"""
import builtins
import functools
import sys

import numpy
import numpy.linalg
import numpy.random
import scipy
import scipy.integrate
import scipy.special
import scipy.stats

import tapeflow as _tf

# The library's module objects under autograd's names: `import autograd.numpy.random
# as npr` is `import numpy.random as npr`.
for _name, _module in {'numpy': numpy, 'numpy.random': numpy.random,
                       'numpy.linalg': numpy.linalg, 'scipy.special': scipy.special,
                       'scipy.stats': scipy.stats, 'scipy.integrate': scipy.integrate}.items():
    sys.modules[f'{__name__}.{_name}'] = _module
for _name in ('norm', 't', 'multivariate_normal', 'gamma', 'beta', 'poisson', 'dirichlet'):
    sys.modules[f'{__name__}.scipy.stats.{_name}'] = getattr(scipy.stats, _name)
numpy_module = numpy
from autograd import scipy as scipy  # noqa: E402  (the package: its `signal` is autograd's)

tuple, list, dict, isinstance, type = (builtins.tuple, builtins.list, builtins.dict,
                                       builtins.isinstance, builtins.type)


def _scalar(fun):
    """autograd's `grad` takes any output of one element (a (1,) array too); tapeflow's, as
    JAX's, a scalar: the output of one element read as the scalar it holds."""
    @functools.wraps(fun)
    def scalar(*args):
        out = fun(*args)
        return numpy.reshape(out, ()) if numpy.ndim(out) else out
    del scalar.__wrapped__              # (it is read as written: it reshapes)
    return scalar


def grad(fun, argnum=0):
    return _tf.grad(_scalar(fun), argnums=argnum)


def value_and_grad(fun, argnum=0):
    return _tf.value_and_grad(_scalar(fun), argnums=argnum)


def elementwise_grad(fun, argnum=0):
    """autograd's: the vector-Jacobian product with a vector of ones, which is the
    gradient of the sum of the outputs."""
    def summed(*args):
        return numpy.sum(fun(*args))
    return _tf.grad(summed, argnums=argnum)


def hessian_vector_product(fun, argnum=0):
    """autograd's signature: `(*args, vector) -> H @ vector`."""
    def product(*args):
        args, vector = args[:-1], args[-1]
        gradient = _tf.grad(_scalar(fun), argnums=argnum)
        tangents = tuple(vector if i == argnum else numpy.zeros_like(a) for i, a in enumerate(args))
        return _tf.jvp(gradient, args, tangents)[1]
    return product


def hessian(fun, argnum=0):
    return _tf.hessian(fun, argnums=argnum)


def jacobian(fun, argnum=0):
    return _tf.jacobian(fun, argnums=argnum)


def primitive(fun):
    """`@primitive`: tapeflow reads a function's rule where it has one (`defvjp`)."""
    return fun
