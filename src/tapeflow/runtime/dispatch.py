"""Tensor's operations: operators, the NumPy protocol, array methods.

Each computes on the wrapped NumPy values and returns a new Tensor, offering
the operation to the active recorders: operators call `recording.record`
directly (the hot path), NumPy functions and array methods go through
`recording.apply`, which also converts arguments and wraps results. Array
methods and attributes are looked up in the rule table's METHODS and
ATTRIBUTES, so that `x.sum()` records the same rule as `np.sum(x)`.

The methods are written on `_Operations` and copied onto `Tensor` when this
module is imported (`tapeflow.runtime` does): Tensor's class sits below
recording, which needs it, and this module above both.
"""
from __future__ import annotations

import operator

import numpy as np

from tapeflow.rules import ATTRIBUTES, METHODS
from tapeflow.runtime.recorders import state
from tapeflow.runtime.recording import NO_KWARGS, apply, record
from tapeflow.runtime.tensor import Tensor, to_numpy_value

__all__ = []

_new = object.__new__
_SEQUENCES = frozenset((list, tuple))   # `cls in` a set: no __eq__ calls


class _Operations:
    """Tensor's NumPy protocol and array methods (see the module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == '__call__' and not kwargs:
            return apply(ufunc, inputs, NO_KWARGS)
        if kwargs.get('out') is not None:
            outs = kwargs['out']
            if any(isinstance(o, Tensor) for o in (outs if isinstance(outs, tuple) else (outs,))):
                raise TypeError('Tensors are immutable: a NumPy `out=` argument cannot be a Tensor')
        if method == 'at':
            raise TypeError(f'Tensors are immutable: numpy.{ufunc.__name__}.at cannot '
                            'modify one in place')
        fn = ufunc if method == '__call__' else getattr(ufunc, method)
        return apply(fn, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return apply(func, args, kwargs)

    # ------------------------------------------------------------ array methods

    def reshape(self, *shape, **kwargs):
        return _method(self, 'reshape', shape, kwargs, np.reshape, True)

    def transpose(self, *axes):
        return _method(self, 'transpose', axes, {}, np.transpose, True)

    def sum(self, *args, **kwargs):
        return _method(self, 'sum', args, kwargs, np.sum)

    def mean(self, *args, **kwargs):
        return _method(self, 'mean', args, kwargs, np.mean)

    def prod(self, *args, **kwargs):
        return _method(self, 'prod', args, kwargs, np.prod)

    def max(self, *args, **kwargs):
        return _method(self, 'max', args, kwargs, np.max)

    def min(self, *args, **kwargs):
        return _method(self, 'min', args, kwargs, np.min)

    def std(self, *args, **kwargs):
        return _method(self, 'std', args, kwargs, np.std)

    def var(self, *args, **kwargs):
        return _method(self, 'var', args, kwargs, np.var)

    def cumsum(self, *args, **kwargs):
        return _method(self, 'cumsum', args, kwargs, np.cumsum)

    def cumprod(self, *args, **kwargs):
        return _method(self, 'cumprod', args, kwargs, np.cumprod)

    def ravel(self, *args, **kwargs):
        return _method(self, 'ravel', args, kwargs, np.ravel)

    def flatten(self, *args, **kwargs):
        return _method(self, 'flatten', args, kwargs, _flatten)

    def squeeze(self, *args, **kwargs):
        return _method(self, 'squeeze', args, kwargs, np.squeeze)

    def swapaxes(self, *args, **kwargs):
        return _method(self, 'swapaxes', args, kwargs, np.swapaxes)

    def clip(self, *args, **kwargs):
        return _method(self, 'clip', args, kwargs, np.clip)

    def dot(self, *args, **kwargs):
        return _method(self, 'dot', args, kwargs, np.dot)

    def trace(self, *args, **kwargs):
        return _method(self, 'trace', args, kwargs, np.trace)

    def diagonal(self, *args, **kwargs):
        return _method(self, 'diagonal', args, kwargs, np.diagonal)

    def repeat(self, *args, **kwargs):
        return _method(self, 'repeat', args, kwargs, np.repeat)

    def take(self, *args, **kwargs):
        return _method(self, 'take', args, kwargs, np.take)

    def round(self, *args, **kwargs):
        return _method(self, 'round', args, kwargs, np.round)

    def conj(self):
        return _method(self, 'conj', (), {}, np.conj)

    def copy(self, *args, **kwargs):
        return _method(self, 'copy', args, kwargs, np.copy)

    def astype(self, dtype, *args, **kwargs):
        return _method(self, 'astype', (dtype,) + args, kwargs, _astype)

    def argmax(self, *args, **kwargs):
        return _method(self, 'argmax', args, kwargs, np.argmax)

    def argmin(self, *args, **kwargs):
        return _method(self, 'argmin', args, kwargs, np.argmin)

    def all(self, *args, **kwargs):
        return _method(self, 'all', args, kwargs, np.all)

    def any(self, *args, **kwargs):
        return _method(self, 'any', args, kwargs, np.any)

    @property
    def T(self):
        return _attribute(self, 'T', np.transpose)

    @property
    def real(self):
        return _attribute(self, 'real', np.real)

    @property
    def imag(self):
        return _attribute(self, 'imag', np.imag)

    def __getitem__(self, key):
        return apply(operator.getitem, (self, key), NO_KWARGS)

    def __getattr__(self, name):
        # Only reached for names not defined above: the rule table's other
        # array methods (`x.argsort()`) and attributes (`x.mT`).
        if name in METHODS:
            def method(*args, **kwargs):
                return _method(self, name, args, kwargs, None)
            method.__name__ = name
            return method
        if name in ATTRIBUTES:
            return _attribute(self, name, None)
        raise AttributeError(f'{type(self).__name__!r} object has no attribute {name!r}')


def _method(tensor, name, args, kwargs, fallback, varargs=False):
    """`tensor.<name>(*args, **kwargs)` through the rule table's METHODS."""
    entry = METHODS.get(name)
    if entry is not None:
        fn, packs = entry
        if packs and len(args) > 1:
            args = (args,)
        return apply(fn, (tensor,) + args, kwargs)
    if varargs and len(args) > 1:
        args = (args,)
    return apply(fallback, (tensor,) + args, kwargs)


def _attribute(tensor, name, fallback):
    return apply(ATTRIBUTES.get(name, fallback), (tensor,), NO_KWARGS)


def _flatten(x, order='C'):
    return np.ravel(x, order=order).copy()


def _astype(x, dtype, *args, **kwargs):
    return x.astype(dtype, *args, **kwargs)


# Named as what it is, for the error when a rule for it is missing.
_astype.__module__, _astype.__qualname__ = 'numpy', 'ndarray.astype'
_flatten.__module__, _flatten.__qualname__ = 'numpy', 'ndarray.flatten'


# ---------------------------------------------------------------- operators

def _binary(op):
    """`self <op> other` computed on the values, offered to the active tapes."""
    def method(self, other):
        a = self._value
        if isinstance(other, Tensor):
            b = other._value
        elif other.__class__ in _SEQUENCES:
            other = b = _like(other, a)
        else:
            b = other
        out = _new(Tensor)
        out._value = op(a, b)
        tapes = state.tapes
        if tapes:
            record(tapes, op, (self, other), (a, b), NO_KWARGS, out,
                   (self,) if b is other or other is self else (self, other))
        return out
    method.__name__ = f'__{op.__name__.strip("_")}__'
    return method


def _reflected(op):
    """`other <op> self`, for when `other` does not know Tensors."""
    def method(self, other):
        b = self._value
        if other.__class__ in _SEQUENCES:
            other = _like(other, b)
        out = _new(Tensor)
        out._value = op(other, b)
        tapes = state.tapes
        if tapes:
            record(tapes, op, (other, self), (other, b), NO_KWARGS, out, (self,))
        return out
    method.__name__ = f'__r{op.__name__.strip("_")}__'
    return method


def _unary(op):
    def method(self):
        out = _new(Tensor)
        out._value = op(self._value)
        tapes = state.tapes
        if tapes:
            record(tapes, op, (self,), (self._value,), NO_KWARGS, out, (self,))
        return out
    return method


def _like(seq, value):
    """A Python list operand, converted as TF does (to the tensor's float dtype)."""
    dtype = value.dtype if value.dtype.kind in 'fc' else None
    return to_numpy_value(seq, dtype)


def _abs(x):
    return np.absolute(x)


def _install_operators():
    for name, op in [('add', operator.add), ('sub', operator.sub), ('mul', operator.mul),
                     ('truediv', operator.truediv), ('floordiv', operator.floordiv),
                     ('mod', operator.mod), ('pow', operator.pow), ('matmul', operator.matmul),
                     ('and', operator.and_), ('or', operator.or_), ('xor', operator.xor)]:
        setattr(Tensor, f'__{name}__', _binary(op))
        setattr(Tensor, f'__r{name}__', _reflected(op))
    for name, op in [('lt', operator.lt), ('le', operator.le), ('gt', operator.gt),
                     ('ge', operator.ge), ('eq', operator.eq), ('ne', operator.ne)]:
        setattr(Tensor, f'__{name}__', _binary(op))
    for name, op in [('neg', operator.neg), ('pos', operator.pos),
                     ('invert', operator.invert), ('abs', np.absolute)]:
        setattr(Tensor, f'__{name}__', _unary(op))


def _install():
    for name, member in vars(_Operations).items():
        if callable(member) or isinstance(member, property):
            if callable(member):
                member.__qualname__ = f'Tensor.{name}'
            setattr(Tensor, name, member)
    _install_operators()


_install()
