"""Eager values: `Tensor` (immutable) and `Variable` (mutable, trainable).

A Tensor wraps one NumPy value (an ndarray, or a NumPy scalar for 0-d
values) and never changes it. This module is the value and its conversions;
the operations on it — operators, NumPy functions (`__array_ufunc__` /
`__array_function__`) and array methods — are given to the class by
:mod:`tapeflow.runtime.dispatch` (imported with `tapeflow.runtime`): each
computes on the wrapped values, returns a Tensor, and is offered to the
active tapes by :mod:`tapeflow.runtime.recording`, which sits above this
module and looks the operation up in the rule table.

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
from tapeflow.runtime.recorders import is_tracked, state

__all__ = ['Tensor', 'Variable', 'Reference', 'constant', 'convert_to_tensor', 'as_value',
           'to_numpy_value', 'wrap']

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


def wrap(raw):
    """A Tensor for a NumPy array or scalar (0-d arrays become scalars), not copied."""
    t = _new(Tensor)
    t._value = raw[()] if raw.__class__ is np.ndarray and not raw.shape else raw
    return t


def _numpy_text(value, is_repr):
    if np.ndim(value) == 0:
        return str(value)
    return repr(value) if is_repr else str(value)


class Tensor:
    """An immutable eager value. See the module docstring (its operations: `dispatch`)."""

    __slots__ = ('_value', '__weakref__')
    __tapeflow_tensor__ = True      # not an array library of its own (`rules.arrays`)
    _is_variable = False
    # ndarray's binary operators defer to us (we also define __array_ufunc__).
    __array_priority__ = 100

    def __init__(self, value, dtype=None):
        self._value = to_numpy_value(value, dtype, copy=True)

    # ------------------------------------------------------------ inspection

    def numpy(self):
        """A copy of the value as NumPy (a NumPy scalar for 0-d tensors), as in TF: a
        Tensor is immutable, so writing into what this returns never changes it."""
        value = self._value
        return value if isinstance(value, np.generic) else value.copy()

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
        if state.tapes and is_tracked(self):
            raise TypeError(_DROPPED_FROM_TAPE)
        value = np.asarray(self._value)
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        view = value.view()         # (read-only: np.asarray(t) must not write into t)
        view.flags.writeable = False
        return view

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


# NumPy converts each Tensor of `np.array([x, y])` or `np.asarray(x)` with
# `__array__`, which no dispatch can record: the array would silently carry
# no gradient.
_DROPPED_FROM_TAPE = (
    'converting a Tensor that a recording GradientTape tracks to a NumPy array '
    '(np.array([...]), np.asarray(...), a NumPy function given a list of Tensors) would '
    'drop it from the tape, and its gradient '
    'would be None: build the array with tf.stack([...]) or np.stack([...]), which are '
    'recorded, or take the value on purpose with .numpy()')
