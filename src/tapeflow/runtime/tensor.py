"""Eager values: `Tensor` (immutable) and `Variable` (mutable, trainable).

A Tensor wraps one NumPy value (an ndarray, or a NumPy scalar for 0-d
values) and never changes it. Every operator, NumPy function
(`__array_ufunc__` / `__array_function__`) and array method applied to a
Tensor computes on the wrapped values, returns a Tensor, and is offered to
the active tapes by :mod:`tapeflow.runtime.recording`, which looks the
operation up in the rule table.

Conversion follows TensorFlow: Python floats (and lists of them) become
float32, Python ints int32; NumPy arrays and scalars keep their dtype.

A `Variable` is a Tensor whose value can be replaced by `assign`,
`assign_add`, `assign_sub` (not differentiated through, as in TF). Tapes key
what they record on object identity, so reads of a Variable are connected to
the Variable itself; `Variable + 1.0` is a plain Tensor.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from tapeflow.rules.arrays import is_foreign_array

__all__ = ['Tensor', 'Variable', 'constant', 'convert_to_tensor', 'as_value',
           'to_numpy_value']

_new = object.__new__
_INT32 = np.iinfo(np.int32)
_uids = itertools.count()   # Variables in order of construction


def to_numpy_value(value, dtype=None, copy=False):
    """The NumPy value a Tensor of `value` holds (TF's conversion rules).

    With `copy`, a NumPy array given by the caller is copied, so that changing
    it later does not change the Tensor.
    """
    if copy and value.__class__ is np.ndarray:
        value = value.copy()
    if isinstance(value, Tensor):
        value = value._value
    elif not isinstance(value, (np.ndarray, np.generic)):
        if is_foreign_array(value):     # CuPy, Dask...: held as given (`rules.arrays`)
            if copy:
                value = value.copy()
            if dtype is not None and np.dtype(dtype) != np.dtype(value.dtype):
                value = value.astype(dtype)
            return value
        value = np.asarray(value)
        if dtype is None:
            kind = value.dtype.kind
            if value.dtype == np.float64:
                value = value.astype(np.float32)
            elif kind == 'i' and value.dtype.itemsize == 8 and (
                    value.size == 0 or (_INT32.min <= value.min() and value.max() <= _INT32.max)):
                value = value.astype(np.int32)
            elif kind == 'O':
                raise TypeError(f'cannot convert {type(value).__name__} to a Tensor')
    if dtype is not None and np.dtype(dtype) != value.dtype:
        value = np.asarray(value).astype(dtype)
    if value.ndim == 0 and value.__class__ is np.ndarray:
        value = value[()]
    return value


def as_value(x):
    """The NumPy value of a Tensor, or `x` itself."""
    return x._value if isinstance(x, Tensor) else x


def _numpy_text(value, is_repr):
    if np.ndim(value) == 0:
        return str(value)
    return repr(value) if is_repr else str(value)


class Tensor:
    """An immutable eager value. See the module docstring."""

    __slots__ = ('_value', '__weakref__')
    __tapeflow_tensor__ = True      # not an array library of its own (`rules.arrays`)
    _is_variable = False
    # ndarray's binary operators defer to us (we also define __array_ufunc__).
    __array_priority__ = 100

    def __init__(self, value, dtype=None):
        self._value = to_numpy_value(value, dtype, copy=True)

    # ------------------------------------------------------------ inspection

    def numpy(self):
        """The value as NumPy (a NumPy scalar for 0-d tensors, as in TF)."""
        return self._value

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return self._value.size

    def get_shape(self):
        return self._value.shape

    def __len__(self):
        shape = self._value.shape
        if not shape:
            raise TypeError('Scalar tensor has no `len()`')
        return shape[0]

    def __iter__(self):
        shape = self._value.shape
        if not shape:
            raise TypeError('Cannot iterate over a scalar tensor.')
        for i in range(shape[0]):
            yield self[i]

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        return operator.index(self._value)

    def __complex__(self):
        return complex(self._value)

    def __format__(self, spec):
        return format(self._value, spec)

    def __array__(self, dtype=None, copy=None):
        if _state.tapes and is_tracked(self):
            raise TypeError(_DROPPED_FROM_TAPE)
        value = np.asarray(self._value)
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def tolist(self):
        return np.asarray(self._value).tolist()

    def item(self, *args):
        return self._value.item(*args)

    def __str__(self):
        text = _numpy_text(self._value, False)
        if '\n' in text:
            text = '\n' + text
        return f'tf.Tensor({text}, shape={self.shape}, dtype={self.dtype.name})'

    def __repr__(self):
        text = _numpy_text(self._value, True)
        if '\n' in text:
            text = '\n' + text
        return f'<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={text}>'

    # Elementwise `==` makes hashing meaningless (TF: use `.ref()`).
    __hash__ = None

    def ref(self):
        """A hashable reference to this object (TF's `Tensor.ref()`)."""
        return Reference(self)

    # ------------------------------------------------------------ NumPy protocol

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == '__call__' and not kwargs:
            return apply(ufunc, inputs, _NO_KWARGS)
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
        return apply(operator.getitem, (self, key), _NO_KWARGS)

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

    # ------------------------------------------------------------ operators
    # (filled in below by _install_operators)


class Variable(Tensor):
    """A mutable value, watched automatically by tapes when `trainable`."""

    __slots__ = ('_trainable', '_name', '_uid')
    _is_variable = True

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None, shape=None):
        if initial_value is None:
            raise ValueError('initial_value must be specified.')
        if callable(initial_value):
            initial_value = initial_value()
        self._value = to_numpy_value(initial_value, dtype, copy=True)
        self._trainable = bool(trainable)
        self._name = 'Variable' if name is None else str(name)
        self._uid = next(_uids)

    @property
    def trainable(self):
        return self._trainable

    @property
    def name(self):
        return f'{self._name}:0'

    def numpy(self):
        value = self._value
        return value.copy() if value.__class__ is np.ndarray else value

    def value(self):
        """The current value as a Tensor (a recorded read)."""
        return +self

    read_value = value

    def _new_value(self, value):
        new = to_numpy_value(value, self._value.dtype, copy=True)
        if new.shape != self._value.shape:
            raise ValueError(
                f"Cannot assign value to variable '{self.name}': Shape mismatch. The variable "
                f'shape {self.shape}, and the assigned value shape {new.shape} are incompatible.')
        return new

    def assign(self, value, use_locking=None, name=None, read_value=True):
        self._value = self._new_value(value)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        self._value = self._new_value(self._value + as_value(delta))
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        self._value = self._new_value(self._value - as_value(delta))
        return self if read_value else None

    def __repr__(self):
        text = _numpy_text(self._value, True)
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, numpy={text}>"

    __str__ = __repr__


class Reference:
    """Hashable by identity of the referenced Tensor (TF's `.ref()`)."""

    __slots__ = ('_obj',)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, Reference) and other._obj is self._obj


def constant(value, dtype=None, shape=None, name=None):
    """A new Tensor holding `value` (not connected to anything recorded)."""
    value = to_numpy_value(value, dtype, copy=True)
    if shape is not None:
        shape = tuple(int(n) for n in shape)
        if value.size == 1:
            value = np.full(shape, np.asarray(value).reshape(()), dtype=value.dtype)
        elif np.size(value) == int(np.prod(shape)):
            value = np.reshape(value, shape)
        else:
            raise TypeError(f'Eager execution of tf.constant with unsupported shape. Tensor '
                            f'{value} (converted from {value}) has {np.size(value)} elements, '
                            f'but got `shape` {shape} with {int(np.prod(shape))} elements).')
        if value.ndim == 0:
            value = value[()]
    t = _new(Tensor)
    t._value = value
    return t


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """`value` as a Tensor: a Tensor is returned as is; a Variable is read."""
    if isinstance(value, Tensor):
        if dtype is not None and np.dtype(dtype) != value.dtype:
            raise ValueError(f'Tensor conversion requested dtype {np.dtype(dtype).name} '
                             f'for Tensor with dtype {value.dtype.name}: {value!r}')
        return +value if value._is_variable else value
    if dtype is None and dtype_hint is not None and not isinstance(value, (np.ndarray, np.generic)):
        dtype = dtype_hint
    return constant(value, dtype)


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
        tapes = _state.tapes
        if tapes:
            record(tapes, op, (self, other), (a, b), _NO_KWARGS, out,
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
        tapes = _state.tapes
        if tapes:
            record(tapes, op, (other, self), (other, b), _NO_KWARGS, out, (self,))
        return out
    method.__name__ = f'__r{op.__name__.strip("_")}__'
    return method


def _unary(op):
    def method(self):
        out = _new(Tensor)
        out._value = op(self._value)
        tapes = _state.tapes
        if tapes:
            record(tapes, op, (self,), (self._value,), _NO_KWARGS, out, (self,))
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


_SEQUENCES = frozenset((list, tuple))   # `cls in` a set: no __eq__ calls

# NumPy converts each Tensor of `np.array([x, y])` or `np.asarray(x)` with
# `__array__`, which no dispatch can record: the array would silently carry
# no gradient.
_DROPPED_FROM_TAPE = (
    'converting a Tensor that a recording GradientTape tracks to a NumPy array '
    '(np.array([...]), np.asarray(...), a NumPy function given a list of Tensors) would '
    'drop it from the tape, and its gradient '
    'would be None: build the array with tf.stack([...]) or np.stack([...]), which are '
    'recorded, or take the value on purpose with .numpy()')

# The recording machinery needs Tensor; import it once Tensor exists.
from tapeflow.rules import ATTRIBUTES, METHODS  # noqa: E402
from tapeflow.runtime.recording import (  # noqa: E402
    _NO_KWARGS, _attribute, _method, _state, apply, is_tracked, record)

_install_operators()
