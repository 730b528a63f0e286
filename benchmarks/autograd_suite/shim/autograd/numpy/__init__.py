"""`autograd.numpy` is NumPy, with the few names autograd adds to it.

NumPy's own functions are NumPy's objects here (tapeflow differentiates plain
NumPy calls by their rules). autograd's additions are written below as the
plain NumPy code a tapeflow user would write for them; tapeflow differentiates
them by reading their source, like any user function.
"""
import sys
import types

import numpy


def _extended(name, base, **extra):
    module = types.ModuleType(name)
    module.__dict__.update({k: v for k, v in vars(base).items()
                            if not k.startswith('__') or k in ('__version__', '__getattr__')})
    module.__dict__.update(extra)
    return module


def make_diagonal(D, offset=0, axis1=-1, axis2=-2):
    """autograd's `make_diagonal` on the last two axes (what autograd supports): a matrix
    with the last axis of `D` on its diagonal."""
    return D[..., None] * numpy.eye(D.shape[-1])


def T(A):
    """autograd.numpy.linalg.T: the transpose of the last two axes."""
    return numpy.swapaxes(A, -1, -2)


def _dot(A, B):
    """autograd.numpy.linalg._dot: matrix products over the leading axes."""
    return numpy.matmul(A, B)


linalg = _extended(__name__ + '.linalg', numpy.linalg, T=T, _dot=_dot)
module = _extended(__name__, numpy, make_diagonal=make_diagonal, linalg=linalg)
sys.modules[__name__] = module
sys.modules[__name__ + '.random'] = numpy.random
sys.modules[__name__ + '.linalg'] = linalg
sys.modules[__name__ + '.fft'] = numpy.fft
