"""TensorFlow-style operation names, as thin functions over NumPy.

Each differentiable op calls the NumPy function (or operator) whose rule is
in the rule table, on Tensors, so it is recorded through that rule: one rule,
whichever spelling the user chose. Creation ops (`ones`, `zeros`, `range`...)
make unrecorded Tensors. Every op returns a Tensor, whatever it is given.
"""
from __future__ import annotations

import builtins
import types

import numpy as np

from tapeflow.runtime.tensor import Tensor, as_value, constant

__all__ = [
    'ones', 'zeros', 'ones_like', 'zeros_like', 'fill', 'range', 'shape', 'size', 'rank',
    'reduce_sum', 'reduce_mean', 'reduce_max', 'reduce_min', 'reduce_prod',
    'add', 'subtract', 'multiply', 'divide', 'truediv', 'negative', 'square', 'sqrt',
    'exp', 'log', 'sin', 'cos', 'tan', 'tanh', 'sigmoid', 'abs', 'pow', 'maximum',
    'minimum', 'matmul', 'reshape', 'transpose', 'concat', 'stack', 'where', 'cast',
    'identity', 'argmax', 'argmin', 'math', 'float16', 'float32', 'float64', 'int8',
    'int16', 'int32', 'int64', 'uint8', 'bool', 'complex64', 'complex128',
]


def _t(x):
    return x if isinstance(x, Tensor) else constant(x)


def _tensor(result):
    return result if isinstance(result, Tensor) else constant(result)


def _axis(axis):
    if axis is None:
        return None
    axis = as_value(axis)
    if isinstance(axis, (list, tuple, np.ndarray)):
        return tuple(int(a) for a in np.ravel(axis))
    return int(axis)


def _shape(shape):
    shape = as_value(shape)
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in np.ravel(shape))


def _dtype(dtype, default=None):
    return np.dtype(dtype) if dtype is not None else default


def _operands(x, y):
    """Convert as TF does: a Python operand takes the dtype of the Tensor one."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = constant(x)
    return x, y


# ---------------------------------------------------------------- creation

def ones(shape, dtype=np.float32, name=None):
    return constant(np.ones(_shape(shape), _dtype(dtype)))


def zeros(shape, dtype=np.float32, name=None):
    return constant(np.zeros(_shape(shape), _dtype(dtype)))


def ones_like(input, dtype=None, name=None):
    value = np.asarray(as_value(input)) if isinstance(input, Tensor) else constant(input)._value
    return constant(np.ones(np.shape(value), _dtype(dtype, value.dtype)))


def zeros_like(input, dtype=None, name=None):
    value = np.asarray(as_value(input)) if isinstance(input, Tensor) else constant(input)._value
    return constant(np.zeros(np.shape(value), _dtype(dtype, value.dtype)))


def fill(dims, value, name=None):
    if isinstance(value, Tensor):
        return np.broadcast_to(value, _shape(dims))
    value = constant(value)._value
    return constant(np.full(_shape(dims), value, value.dtype))


def range(start, limit=None, delta=1, dtype=None, name=None):
    if limit is None:
        start, limit = 0, start
    bounds = [as_value(v) for v in (start, limit, delta)]
    if dtype is None:
        floating = builtins.any(np.asarray(v).dtype.kind == 'f' for v in bounds)
        dtype = np.float32 if floating else np.int32
    return constant(np.arange(*bounds, dtype=dtype))


def shape(input, out_type=np.int32, name=None):
    return constant(np.array(np.shape(as_value(input)), dtype=out_type))


def size(input, out_type=np.int32, name=None):
    return constant(np.array(np.size(as_value(input)), dtype=out_type))


def rank(input, name=None):
    return constant(np.array(np.ndim(as_value(input)), dtype=np.int32))


# ---------------------------------------------------------------- reductions

def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    return _tensor(np.sum(_t(input_tensor), axis=_axis(axis), keepdims=keepdims))


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    return _tensor(np.mean(_t(input_tensor), axis=_axis(axis), keepdims=keepdims))


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return _tensor(np.max(_t(input_tensor), axis=_axis(axis), keepdims=keepdims))


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return _tensor(np.min(_t(input_tensor), axis=_axis(axis), keepdims=keepdims))


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return _tensor(np.prod(_t(input_tensor), axis=_axis(axis), keepdims=keepdims))


def argmax(input, axis=None, output_type=np.int64, name=None):
    return constant(np.argmax(as_value(input), axis=0 if axis is None else _axis(axis))
                    .astype(output_type))


def argmin(input, axis=None, output_type=np.int64, name=None):
    return constant(np.argmin(as_value(input), axis=0 if axis is None else _axis(axis))
                    .astype(output_type))


# ---------------------------------------------------------------- elementwise

def add(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.add(x, y))


def subtract(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.subtract(x, y))


def multiply(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.multiply(x, y))


def divide(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.divide(x, y))


truediv = divide


def pow(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.power(x, y))


def maximum(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.maximum(x, y))


def minimum(x, y, name=None):
    x, y = _operands(x, y)
    return _tensor(np.minimum(x, y))


def negative(x, name=None):
    return -_t(x)


def abs(x, name=None):
    return _tensor(np.absolute(_t(x)))


def square(x, name=None):
    return _tensor(np.square(_t(x)))


def sqrt(x, name=None):
    return _tensor(np.sqrt(_t(x)))


def exp(x, name=None):
    return _tensor(np.exp(_t(x)))


def log(x, name=None):
    return _tensor(np.log(_t(x)))


def sin(x, name=None):
    return _tensor(np.sin(_t(x)))


def cos(x, name=None):
    return _tensor(np.cos(_t(x)))


def tan(x, name=None):
    return _tensor(np.tan(_t(x)))


def tanh(x, name=None):
    return _tensor(np.tanh(_t(x)))


def sigmoid(x, name=None):
    x = _t(x)
    with np.errstate(over='ignore'):
        return 1.0 / (1.0 + np.exp(-x))


def identity(input, name=None):
    return +_t(input)


def cast(x, dtype, name=None):
    x = _t(x)
    if x.dtype == np.dtype(dtype):
        return x if not x._is_variable else +x
    return x.astype(dtype)


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return constant(np.argwhere(as_value(condition)).astype(np.int64))
    if x is None or y is None:
        raise ValueError('x and y must both be non-None or both be None.')
    x, y = _operands(x, y)
    return _tensor(np.where(as_value(condition), x, y))


# ---------------------------------------------------------------- linear algebra, shape

def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    a, b = _operands(a, b)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return _tensor(np.matmul(a, b))


def reshape(tensor, shape, name=None):
    return _tensor(np.reshape(_t(tensor), _shape(shape)))


def transpose(a, perm=None, conjugate=False, name=None):
    result = np.transpose(_t(a), None if perm is None else _axis(perm))
    return _tensor(np.conj(result) if conjugate else result)


def concat(values, axis, name=None):
    return _tensor(np.concatenate(list(values), axis=_axis(axis)))


def stack(values, axis=0, name=None):
    return _tensor(np.stack(list(values), axis=_axis(axis)))


# ---------------------------------------------------------------- dtypes and namespaces

float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64, uint8 = np.int8, np.int16, np.int32, np.int64, np.uint8
complex64, complex128 = np.complex64, np.complex128
bool = np.bool_  # noqa: A001  (tf.bool)

math = types.SimpleNamespace(
    add=add, subtract=subtract, multiply=multiply, divide=divide, truediv=truediv,
    negative=negative, abs=abs, square=square, sqrt=sqrt, exp=exp, log=log, sin=sin,
    cos=cos, tan=tan, tanh=tanh, sigmoid=sigmoid, pow=pow, maximum=maximum,
    minimum=minimum, reduce_sum=reduce_sum, reduce_mean=reduce_mean, reduce_max=reduce_max,
    reduce_min=reduce_min, reduce_prod=reduce_prod, argmax=argmax, argmin=argmin)


# ---------------------------------------------------------------- in compiled code
# A compiled function runs on NumPy values: there each op above means its NumPy
# function. `__tapeflow_numpy__` tells the compiler which one, and how the
# op's parameters map onto it: (function, parameters passed by position,
# {parameter: NumPy keyword}, parameters that must keep their default).

def _lowers_to(numpy_fn, positional, keywords=None, fixed=()):
    def mark(op):
        op.__tapeflow_numpy__ = (numpy_fn, tuple(positional), dict(keywords or {}), tuple(fixed))
        return op
    return mark


for _op, _fn in [(add, np.add), (subtract, np.subtract), (multiply, np.multiply),
                 (divide, np.divide), (truediv, np.divide), (pow, np.power),
                 (maximum, np.maximum), (minimum, np.minimum)]:
    _lowers_to(_fn, ('x', 'y'))(_op)
for _op, _fn in [(square, np.square), (sqrt, np.sqrt), (exp, np.exp), (log, np.log),
                 (sin, np.sin), (cos, np.cos), (tan, np.tan), (tanh, np.tanh),
                 (abs, np.abs), (negative, np.negative)]:
    _lowers_to(_fn, ('x',))(_op)
for _op, _fn in [(reduce_sum, np.sum), (reduce_mean, np.mean), (reduce_max, np.max),
                 (reduce_min, np.min), (reduce_prod, np.prod)]:
    _lowers_to(_fn, ('input_tensor',), {'axis': 'axis', 'keepdims': 'keepdims'})(_op)
_lowers_to(np.matmul, ('a', 'b'), fixed=('transpose_a', 'transpose_b'))(matmul)
_lowers_to(np.reshape, ('tensor', 'shape'))(reshape)
_lowers_to(np.transpose, ('a',), {'perm': 'axes'}, fixed=('conjugate',))(transpose)
_lowers_to(np.where, ('condition', 'x', 'y'))(where)
