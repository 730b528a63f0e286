"""A stand-in for CuPy where no GPU is: an array library that NumPy dispatches to and
that, like CuPy, refuses NumPy arrays as operands and refuses to become one.

`DuckArray` holds a NumPy array and implements NEP 13 (`__array_ufunc__`) and NEP 18
(`__array_function__`) by computing on what it holds and wrapping the result. A
NumPy array among the operands is a TypeError, as CuPy's 'Unsupported type
<class 'numpy.ndarray'>'; `np.asarray(duck)` is a TypeError, as CuPy's 'Implicit
conversion to a NumPy array is not allowed'. Generated code that makes a seed, a
zero or a constant as a NumPy array fails on it exactly where it fails on CuPy.
NumPy scalars and Python numbers are accepted, as CuPy accepts them, and so are the
NumPy arrays that CuPy copies to its device: the value written by `x[i] = v` and
`np.put`'s values.
"""
from __future__ import annotations

import numbers

import numpy as np


class DuckArray(np.lib.mixins.NDArrayOperatorsMixin):
    __slots__ = ('_a',)

    def __init__(self, a):
        if isinstance(a, DuckArray):
            a = a._a
        self._a = np.array(a, copy=True) if not isinstance(a, np.ndarray) else a

    # ---------------------------------------------------------------- protocols
    def __array__(self, dtype=None, copy=None):
        raise TypeError('Implicit conversion to a NumPy array is not allowed. '
                        'Please use `.get()` to construct a NumPy array explicitly.')

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = _unwrap(inputs)
        if 'out' in kwargs:
            kwargs['out'] = _unwrap(kwargs['out'])
        elif method == '__call__' and not all(a.flags.f_contiguous and not a.flags.c_contiguous
                                              for a in inputs if isinstance(a, np.ndarray) and a.ndim > 1):
            kwargs['order'] = 'C'           # as CuPy: C order unless every operand is Fortran's alone
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        if not all(issubclass(t, (DuckArray, np.ndarray)) for t in types):
            return NotImplemented
        if func in _CREATION:               # NEP 35: np.asarray(host_value, like=duck)
            return DuckArray(np.asarray(func(*args, **kwargs)))
        if (func.__module__ or '').startswith('tapeflow'):
            return NotImplemented           # as CuPy: it knows only its own functions
        if func is np.put:                  # as CuPy, NumPy values are copied in
            args, kwargs = _put_values_in(*args, **kwargs)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # ---------------------------------------------------------------- the array
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: DuckArray(self._a.T))
    real = property(lambda self: DuckArray(self._a.real))
    imag = property(lambda self: DuckArray(self._a.imag))

    def get(self):
        """The NumPy array (CuPy's name for the copy to the host)."""
        return self._a.copy()

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (DuckArray(row) for row in self._a)

    def __getitem__(self, index):
        index = _index(index)
        value = self._a[index]
        if isinstance(value, np.generic):       # as CuPy: an element is a 0-d view, not a copy
            return DuckArray(self._a[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)])
        return _wrap(value)

    def __setitem__(self, index, value):          # as CuPy, a NumPy value is copied in
        self._a[_index(index)] = value if isinstance(value, np.ndarray) else _unwrap((value,))[0]

    def __float__(self):
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __int__(self):
        return int(self._a)

    def __index__(self):
        return self._a.__index__()

    def __bool__(self):
        return bool(self._a)

    def __repr__(self):
        return f'DuckArray({self._a!r})'

    def __getattr__(self, name):            # methods: x.sum(axis=0), x.reshape(...), x.copy()
        if name.startswith('__'):           # not NumPy's protocols (__array_interface__...)
            raise AttributeError(name)
        method = getattr(self._a, name)
        if not callable(method):
            return _wrap(method)
        return lambda *args, **kwargs: _wrap(method(*_unwrap(args), **_unwrap(kwargs)))


DuckArray.__module__ = 'duckgpu'    # its library, as `rules.arrays.library_of` reads it
_CREATION = {np.asarray, np.array, np.arange, np.zeros, np.ones, np.empty, np.full}


def _unwrap(value):
    if isinstance(value, DuckArray):
        return value._a
    if isinstance(value, np.ndarray):
        raise TypeError(f'Unsupported type {np.ndarray}')
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _put_values_in(a, ind, v, mode='raise'):
    return (a, ind, DuckArray(v) if isinstance(v, np.ndarray) else v), {'mode': mode}


def _index(index):
    """An index: NumPy integer and boolean arrays are taken, as CuPy takes them."""
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    if isinstance(index, np.ndarray) and index.dtype.kind in 'iub':
        return index
    return _unwrap(index)


def _wrap(value):
    if isinstance(value, np.ndarray):
        return DuckArray(value)
    if isinstance(value, np.generic) and not isinstance(value, (np.bool_, numbers.Integral)):
        return DuckArray(np.asarray(value))      # CuPy's reductions give 0-d arrays
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def asarray(value):
    return DuckArray(np.asarray(value))
