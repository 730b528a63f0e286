"""Which array library a value belongs to, read off the value itself.

tapeflow's rules and generated code are written with NumPy's names (`np.sin`,
`np.sum`, `np.zeros_like`). On a NumPy array they are NumPy; on an array of
another library they reach that library through NumPy's dispatch protocols
(NEP 13's `__array_ufunc__`, NEP 18's `__array_function__`): CuPy and Dask
implement both, so `np.sum(g, axis=0)` on a Dask array is a lazy Dask sum and
on a CuPy array a sum on its GPU. What the protocols cannot reach, constructors
that take a shape (`np.zeros(shape)`), tapeflow never calls on a foreign
value's behalf: it makes arrays `*_like` an operand (`np.zeros_like(x)`), which
dispatch. `docs/how-it-works.md` ("Arrays other than NumPy's") says why.

This module knows libraries only by their protocols and module names: it
imports none of them.
"""
from __future__ import annotations

import numpy as np

__all__ = ['is_foreign_array', 'is_array', 'library_of', 'is_lazy', 'same_library',
           'takes_numpy_operands', 'mixed_libraries', 'numpy_dtype', 'shares_views',
           'is_api_only', 'to_library', 'to_numpy_of', 'copy_of']

_SCALARS = (float, int, bool, complex)


def is_foreign_array(value) -> bool:
    """An array of a library other than NumPy that NumPy's functions dispatch to (not
    a tapeflow Tensor, which records them: its class sets `__tapeflow_tensor__`)."""
    cls = value.__class__
    if cls is np.ndarray or cls in _SCALARS or isinstance(value, (np.ndarray, np.generic)) \
            or getattr(cls, '__tapeflow_tensor__', False):
        return False
    return hasattr(cls, '__array_function__') and hasattr(cls, 'shape') or \
        hasattr(cls, '__array_namespace__') and hasattr(value, 'shape') and hasattr(value, 'dtype')


def is_array(value) -> bool:
    """A NumPy array or a foreign one (`is_foreign_array`)."""
    return isinstance(value, np.ndarray) or is_foreign_array(value)


def library_of(value) -> str:
    """The top-level module of the library a value's class comes from ('numpy' for
    NumPy arrays and scalars and for Python numbers)."""
    cls = value.__class__
    if cls is np.ndarray or cls in _SCALARS or isinstance(value, (np.ndarray, np.generic)):
        return 'numpy'
    return (cls.__module__ or '').partition('.')[0]


def is_lazy(value) -> bool:
    """A Dask array: its values exist once it is computed (`.compute()`)."""
    return library_of(value) == 'dask'


def same_library(a, b) -> bool:
    return library_of(a) == library_of(b)


def takes_numpy_operands(library: str) -> bool:
    """Whether arrays of `library` compute with NumPy arrays as operands (Dask wraps
    them; CuPy and the array API's strict namespace refuse them)."""
    return library in ('numpy', 'dask')


def mixed_libraries(named) -> str | None:
    """Why the arrays in `named` ((description, value) pairs: arguments, globals) cannot
    meet in one computation, or None: two foreign libraries, or a foreign library that
    takes no NumPy operands beside a NumPy array."""
    first = {}
    for what, value in named:
        if is_array(value) and np.ndim(value) > 0 or is_foreign_array(value):
            first.setdefault(library_of(value), what)
    foreign = [lib for lib in first if lib != 'numpy']
    if len(foreign) > 1:
        a, b = foreign[:2]
        return f'{first[a]} is a {a} array and {first[b]} a {b} array'
    if foreign and 'numpy' in first and not takes_numpy_operands(foreign[0]):
        lib = foreign[0]
        return (f'{first[lib]} is a {lib} array and {first["numpy"]} a NumPy array: {lib} '
                f'computes with {lib} arrays only -- make it one ({lib}.asarray(...)), or pass '
                f'it as an argument')
    return None


def numpy_dtype(value) -> np.dtype:
    """The NumPy dtype of the same name as an array's (an array API namespace's dtypes
    are its own objects: array_api_strict.float64 is not np.float64)."""
    dtype = value.dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(getattr(dtype, 'name', None) or str(dtype).rpartition('.')[2])


def shares_views(value) -> bool:
    """An array whose views share its memory, as NumPy's do (CuPy's), and which NumPy's
    `may_share_memory` reaches; not Dask's (a view is a new graph), not a library's that
    NumPy cannot reach (array_api_strict: `may_share_memory` would copy it)."""
    cls = value.__class__
    if cls is np.ndarray or isinstance(value, np.ndarray):
        return True
    return is_foreign_array(value) and hasattr(cls, '__array_function__') and not is_lazy(value)


def is_api_only(value) -> bool:
    """An array that names its array API namespace but which NumPy's functions cannot
    reach (no `__array_function__`): array_api_strict's. Its memory NumPy cannot inspect
    either; rules reach it through its namespace (`rules.array_api`)."""
    return is_foreign_array(value) and not hasattr(value.__class__, '__array_function__')


def to_library(value, like):
    """A NumPy value (an index, a constant of a rule) as an array of `like`'s library, on
    its device: NEP 35's `like=` (CuPy, Dask), or the namespace's `asarray`. For a NumPy
    `like`, a value of a library that takes no NumPy operands on the host (`to_numpy_of`:
    a CuPy number that `numpy_array.fill` reads)."""
    if not is_foreign_array(like):
        return to_numpy_of(value, like) if value.__class__ is not np.ndarray else value
    if is_foreign_array(value):
        return value
    if hasattr(like.__class__, '__array_function__'):
        return np.asarray(value, like=like)
    return like.__array_namespace__().asarray(value, device=like.device)


def to_numpy_of(g, like):
    """`g`, the cotangent of `like`, on the host where `like` is a NumPy value and `g`
    an array of a library that takes no NumPy operands: the way back of a NumPy value
    that met a CuPy array (written into one, or a NumPy scalar in its arithmetic).
    A 0-d result is a NumPy scalar, which CuPy takes as an operand. Else `g` itself."""
    if not isinstance(like, (np.ndarray, np.generic)) or not is_foreign_array(g) or \
            takes_numpy_operands(library_of(g)):
        return g
    get = getattr(g, 'get', None)              # CuPy's copy to the host
    host = get() if callable(get) else np.from_dlpack(g)
    return host[()] if host.ndim == 0 else host


def copy_of(value):
    """A copy of a foreign array (the array API has no `.copy()` method: `asarray(copy=True)`)."""
    if hasattr(value, 'copy'):
        return value.copy()
    return value.__array_namespace__().asarray(value, copy=True)
