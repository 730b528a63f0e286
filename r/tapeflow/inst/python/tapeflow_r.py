"""Helpers of the tapeflow R package: values between R and tapeflow.

reticulate converts R arrays to NumPy arrays and back through NumPy's C API,
which reticulate releases before 1.36 (Debian bookworm ships 1.28) cannot use
with NumPy 2. These helpers move values as flat Python lists in R's
column-major order plus a shape, which works with every NumPy and reticulate.
"""
import numpy as np

_INT32 = np.iinfo(np.int32)


def to_r(value):
    """`(shape, kind, values)`: a tensor's (or array's) value for R.

    `values` is a flat list in column-major (R) order whose items reticulate
    turns into one R vector: floats, ints (int32 range only, else floats),
    bools, complex numbers or strings.
    """
    if hasattr(value, 'numpy'):
        value = value.numpy()
    a = np.asarray(value)
    kind = a.dtype.kind
    flat = a.ravel(order='F')
    if kind in 'iu':
        if flat.size and (flat.min() < _INT32.min or flat.max() > _INT32.max):
            flat = flat.astype(np.float64)
            kind = 'f'
    elif kind == 'f':
        flat = flat.astype(np.float64)
    elif kind not in 'bcUS':
        raise TypeError(f'cannot convert a tensor of dtype {a.dtype} to R')
    return list(a.shape), kind, flat.tolist()


def from_r(values, dims, kind, dtype=None):
    """A NumPy array from R: `values` flat in column-major order, `dims` its dim.

    `kind` is R's storage mode: doubles become float64, integers int32 and
    logicals bool (as reticulate's own conversion does), unless `dtype` says
    otherwise.
    """
    base = {'double': np.float64, 'integer': np.int32, 'logical': np.bool_}.get(kind)
    a = np.asarray(values, dtype=base)
    a = a.reshape(tuple(int(d) for d in dims), order='F')
    if dtype is not None:
        a = a.astype(dtype)
    return a
