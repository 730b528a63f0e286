"""Rules for code written against the array API standard: `xp = array_namespace(x)`,
then `xp.exp(z)`, `xp.sum(y, axis=0)`.

`xp` is a value known only when the code runs (NumPy's namespace for NumPy arrays,
CuPy's, `array_api_strict`...). The desugar pass (`transforms/namespaces.py`)
rewrites each `xp.NAME(args)` into a call of the function of that name here,
`NAME(xp, args)`: it calls `xp.NAME(args)`, so the primal computes in the user's
namespace, and its rules are written with the same functions, so the derivative
does too. The namespace is argument 0 of every function here, static (never
differentiated). Nothing in these rules is NumPy's: `array_api_strict` (the
standard's reference namespace, which refuses anything else) runs them in the
test suite.

Only the standard's functions are here, and of those the differentiable ones and
the creation, comparison and logical ones (whose outputs carry no derivative). A
function of the namespace not listed is a located error naming it.
"""
from __future__ import annotations

import math

from tapeflow.rules.registry import defjvp, defvjp, describe, nondifferentiable, static

__all__ = ['FUNCTIONS', 'namespace_of', 'spread', 'matmul_grad_a', 'matmul_grad_b',
           'unbroadcast_api', 'zeros_api']

FUNCTIONS: dict = {}    # the standard's name -> the function of it here


def _make(name, doc=None):
    def fn(xp, *args, **kwargs):
        return getattr(xp, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f'`xp.{name}(...)` (the array API standard).'
    FUNCTIONS[name] = fn
    static(fn, 0)
    return fn


def namespace_of(*arrays):
    """The array API namespace of `arrays` (what `array_namespace` returns): the
    namespace of the first array that names one, NumPy's for NumPy arrays and numbers."""
    for a in arrays:
        get = getattr(a, '__array_namespace__', None)
        if get is not None:
            return get()
    import numpy
    return numpy


nondifferentiable(namespace_of)


def _scalar(x):
    return x.__class__ in (float, int, complex, bool)


def zeros_api(like, shape=None):
    """Zeros in the namespace, dtype and device of `like`."""
    xp = like.__array_namespace__()
    if shape is None or tuple(shape) == tuple(like.shape):
        return xp.zeros_like(like)
    return xp.zeros(shape, dtype=like.dtype, device=like.device)


def _reduced(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def spread(xp, g, x, axis=None, keepdims=False):
    """`g`, the cotangent of a reduction of `x` over `axis`, over the shape of `x`."""
    if _scalar(g):
        return xp.full_like(x, g)
    if not keepdims:
        kept = list(x.shape)
        for a in _reduced(x.ndim, axis):
            kept[a] = 1
        g = xp.reshape(g, tuple(kept))
    return xp.broadcast_to(g, x.shape)


def unbroadcast_api(xp, g, shape):
    """Sum `g` (an array of the namespace `xp`) down to `shape` (of an operand it broadcast)."""
    if _scalar(g) or tuple(g.shape) == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    if lead:
        g = xp.sum(g, axis=tuple(range(lead)))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if ones:
        g = xp.sum(g, axis=ones, keepdims=True)
    return g


def _count(x, axis):
    return math.prod(x.shape[a] for a in _reduced(x.ndim, axis))


# ---------------------------------------------------------------- elementwise

for _name in ('abs', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'cos', 'cosh', 'exp',
              'expm1', 'log', 'log1p', 'log2', 'log10', 'negative', 'positive', 'sin', 'sinh',
              'sqrt', 'square', 'tan', 'tanh', 'reciprocal', 'add', 'subtract', 'multiply',
              'divide', 'pow', 'maximum', 'minimum', 'atan2', 'hypot', 'logaddexp', 'sum', 'mean',
              'prod', 'max', 'min', 'matmul', 'matrix_transpose', 'permute_dims', 'reshape',
              'expand_dims', 'squeeze', 'broadcast_to', 'flip', 'concat', 'stack', 'where', 'clip',
              'asarray', 'astype', 'full', 'full_like', 'real', 'imag', 'conj', 'sign', 'vecdot'):
    _make(_name)

# creation, comparison, logical, integer-valued: outputs that carry no derivative
for _name in ('zeros', 'ones', 'empty', 'zeros_like', 'ones_like', 'empty_like', 'eye',
              'equal', 'not_equal', 'less', 'less_equal', 'greater',
              'greater_equal', 'logical_and', 'logical_or', 'logical_not', 'logical_xor', 'isnan',
              'isinf', 'isfinite', 'floor', 'ceil', 'round', 'trunc', 'argmax', 'argmin',
              'argsort', 'nonzero', 'any', 'all', 'count_nonzero',
              'result_type', 'finfo', 'iinfo', 'isdtype', 'broadcast_shapes', 'signbit'):
    nondifferentiable(_make(_name))
# values that move with a float argument: a located 'no rule' error, never a silent zero
for _name in ('arange', 'linspace', 'meshgrid', 'unique_values', 'sort'):   # (sort: rules below)
    _make(_name)

globals().update(FUNCTIONS)     # sin, cos... by name: the rules below call them


def _unary(fn, slope):
    """`fn(xp, x)` with derivative `slope(xp, ans, x)`."""
    defvjp(fn, None, lambda g, ans, xp, x: g * slope(xp, ans, x))
    defjvp(fn, None, lambda t, ans, xp, x: t * slope(xp, ans, x))


_unary(sin, lambda xp, ans, x: cos(xp, x))
_unary(cos, lambda xp, ans, x: -sin(xp, x))
_unary(tan, lambda xp, ans, x: 1.0 + ans * ans)
_unary(asin, lambda xp, ans, x: 1.0 / sqrt(xp, 1.0 - x * x))
_unary(acos, lambda xp, ans, x: -1.0 / sqrt(xp, 1.0 - x * x))
_unary(atan, lambda xp, ans, x: 1.0 / (1.0 + x * x))
_unary(sinh, lambda xp, ans, x: cosh(xp, x))
_unary(cosh, lambda xp, ans, x: sinh(xp, x))
_unary(tanh, lambda xp, ans, x: 1.0 - ans * ans)
_unary(asinh, lambda xp, ans, x: 1.0 / sqrt(xp, x * x + 1.0))
_unary(acosh, lambda xp, ans, x: 1.0 / sqrt(xp, x * x - 1.0))
_unary(atanh, lambda xp, ans, x: 1.0 / (1.0 - x * x))
_unary(exp, lambda xp, ans, x: ans)
_unary(expm1, lambda xp, ans, x: ans + 1.0)
_unary(log, lambda xp, ans, x: 1.0 / x)
_unary(log1p, lambda xp, ans, x: 1.0 / (x + 1.0))
_unary(log2, lambda xp, ans, x: 1.0 / (x * math.log(2.0)))
_unary(log10, lambda xp, ans, x: 1.0 / (x * math.log(10.0)))
_unary(sqrt, lambda xp, ans, x: 0.5 / ans)
_unary(square, lambda xp, ans, x: 2.0 * x)
_unary(reciprocal, lambda xp, ans, x: -(ans * ans))
defvjp(negative, None, lambda g, ans, xp, x: -g)
defjvp(negative, None, lambda t, ans, xp, x: -t)
defvjp(positive, None, lambda g, ans, xp, x: g)
defjvp(positive, None, lambda t, ans, xp, x: t)


def _binary(fn, da, db):
    """`fn(xp, a, b)` (broadcasting) with partial derivatives `da`, `db` (xp, ans, a, b)."""
    defvjp(fn, None,
           lambda g, ans, xp, a, b: _unbroadcast_like(xp, g * da(xp, ans, a, b), a),
           lambda g, ans, xp, a, b: _unbroadcast_like(xp, g * db(xp, ans, a, b), b))
    defjvp(fn, None,
           lambda t, ans, xp, a, b: _to_output(xp, t * da(xp, ans, a, b), ans),
           lambda t, ans, xp, a, b: _to_output(xp, t * db(xp, ans, a, b), ans))


def _unbroadcast_like(xp, g, x):
    """`g` summed to the shape of the operand `x` (all of it for a Python number)."""
    if _scalar(x):
        return g if _scalar(g) else xp.sum(g)
    return unbroadcast_api(xp, g, x.shape)


def _to_output(xp, t, ans):
    """A tangent `t` of an operand in the shape of the output `ans` it broadcast to."""
    if _scalar(ans) or (not _scalar(t) and tuple(t.shape) == tuple(ans.shape)):
        return t
    if _scalar(t):
        return xp.full_like(ans, t)
    return xp.broadcast_to(t, ans.shape)


def _where_a(xp, ans, a, b):
    return xp.astype(a >= b, ans.dtype) if hasattr(ans, 'dtype') else float(a >= b)


_binary(add, lambda xp, ans, a, b: 1.0, lambda xp, ans, a, b: 1.0)
_binary(subtract, lambda xp, ans, a, b: 1.0, lambda xp, ans, a, b: -1.0)
_binary(multiply, lambda xp, ans, a, b: b, lambda xp, ans, a, b: a)
_binary(divide, lambda xp, ans, a, b: 1.0 / b, lambda xp, ans, a, b: -ans / b)
_binary(pow, lambda xp, ans, a, b: b * pow(xp, a, b - 1.0),
        lambda xp, ans, a, b: ans * log(xp, a))
_binary(maximum, _where_a, lambda xp, ans, a, b: 1.0 - _where_a(xp, ans, a, b))
_binary(minimum, lambda xp, ans, a, b: 1.0 - _where_a(xp, ans, a, b), _where_a)
_binary(atan2, lambda xp, ans, a, b: b / (a * a + b * b), lambda xp, ans, a, b: -a / (a * a + b * b))
_binary(hypot, lambda xp, ans, a, b: a / ans, lambda xp, ans, a, b: b / ans)
_binary(logaddexp, lambda xp, ans, a, b: exp(xp, a - ans), lambda xp, ans, a, b: exp(xp, b - ans))


# ---------------------------------------------------------------- reductions

def _sum_vjp(g, ans, xp, x, axis=None, keepdims=False, dtype=None):
    return spread(xp, g, x, axis, keepdims)


def _sum_jvp(t, ans, xp, x, axis=None, keepdims=False, dtype=None):
    return xp.sum(t, axis=axis, keepdims=keepdims)


def _mean_vjp(g, ans, xp, x, axis=None, keepdims=False):
    return spread(xp, g, x, axis, keepdims) / _count(x, axis)


def _mean_jvp(t, ans, xp, x, axis=None, keepdims=False):
    return xp.mean(t, axis=axis, keepdims=keepdims)


def _prod_vjp(g, ans, xp, x, axis=None, keepdims=False, dtype=None):
    # ans / x where no element is zero; one zero: the product of the others
    return spread(xp, g, x, axis, keepdims) * _others(xp, x, axis)


def _prod_jvp(t, ans, xp, x, axis=None, keepdims=False, dtype=None):
    return xp.sum(t * _others(xp, x, axis), axis=axis, keepdims=keepdims)


def _others(xp, x, axis):
    """The product of the other elements of each reduction, for every element."""
    axes = _reduced(x.ndim, axis)
    moved = xp.permute_dims(x, tuple(a for a in range(x.ndim) if a not in axes) + axes)
    rest = moved.shape[:x.ndim - len(axes)]
    flat = xp.reshape(moved, rest + (-1,))
    n = flat.shape[-1]
    ones = xp.ones_like(flat[..., :1])
    left = xp.cumulative_prod(xp.concat([ones, flat[..., :n - 1]], axis=-1), axis=-1)
    right = xp.flip(xp.cumulative_prod(xp.flip(xp.concat([flat[..., 1:], ones], axis=-1), axis=-1),
                                       axis=-1), axis=-1)
    out = xp.reshape(left * right, moved.shape)
    order = tuple(a for a in range(x.ndim) if a not in axes) + axes
    inverse = tuple(order.index(a) for a in range(x.ndim))
    return xp.permute_dims(out, inverse)


def _extremum_vjp(g, ans, xp, x, axis=None, keepdims=False):
    hit = xp.astype(x == spread(xp, ans, x, axis, keepdims), x.dtype)
    count = xp.sum(hit, axis=axis, keepdims=True)
    return spread(xp, g, x, axis, keepdims) * hit / spread(xp, count, x, axis, True)


def _extremum_jvp(t, ans, xp, x, axis=None, keepdims=False):
    hit = xp.astype(x == spread(xp, ans, x, axis, keepdims), x.dtype)
    return xp.sum(t * hit, axis=axis, keepdims=keepdims) / xp.sum(hit, axis=axis, keepdims=keepdims)


defvjp(sum, None, _sum_vjp)
defjvp(sum, None, _sum_jvp)
defvjp(mean, None, _mean_vjp)
defjvp(mean, None, _mean_jvp)
defvjp(prod, None, _prod_vjp)
defjvp(prod, None, _prod_jvp)
for _fn in (max, min):
    defvjp(_fn, None, _extremum_vjp)
    defjvp(_fn, None, _extremum_jvp)


# ---------------------------------------------------------------- products

def _as_matrices(a, b):
    return (a.ndim == 1, b.ndim == 1)


def matmul_grad_a(xp, g, a, b):
    """The cotangent of `a` in `a @ b`, in the namespace `xp` of the operands."""
    if _scalar(g) and g == 0.0:
        return 0.0                  # the symbolic zero
    a_vec, b_vec = _as_matrices(a, b)
    if a_vec and b_vec:
        return g * b
    if b_vec:
        return unbroadcast_api(xp, xp.expand_dims(g, axis=-1) * b, a.shape)
    if a_vec:
        return unbroadcast_api(xp, xp.expand_dims(g, axis=-2) @ xp.matrix_transpose(b), (1,) + a.shape)[..., 0, :] \
            if g.ndim > 1 else xp.matmul(b, g)
    return unbroadcast_api(xp, g @ xp.matrix_transpose(b), a.shape)


def matmul_grad_b(xp, g, a, b):
    """The cotangent of `b` in `a @ b`, in the namespace `xp` of the operands."""
    if _scalar(g) and g == 0.0:
        return 0.0                  # the symbolic zero
    a_vec, b_vec = _as_matrices(a, b)
    if a_vec and b_vec:
        return g * a
    if a_vec:
        return unbroadcast_api(xp, xp.expand_dims(a, axis=-1) * xp.expand_dims(g, axis=-2), b.shape)
    if b_vec:
        return xp.sum(unbroadcast_api(xp, xp.matrix_transpose(a) @ xp.expand_dims(g, axis=-1),
                                      b.shape + (1,)), axis=-1)
    return unbroadcast_api(xp, xp.matrix_transpose(a) @ g, b.shape)


defvjp(matmul, None, lambda g, ans, xp, a, b: matmul_grad_a(xp, g, a, b),
       lambda g, ans, xp, a, b: matmul_grad_b(xp, g, a, b))
defjvp(matmul, None, lambda t, ans, xp, a, b: xp.matmul(t, b),
       lambda t, ans, xp, a, b: xp.matmul(a, t))


# ---------------------------------------------------------------- shapes

def _inverse(order):
    return tuple(order.index(i) for i in range(len(order)))


defvjp(matrix_transpose, None, lambda g, ans, xp, x: xp.matrix_transpose(g))
defjvp(matrix_transpose, None, lambda t, ans, xp, x: xp.matrix_transpose(t))
defvjp(permute_dims, None, lambda g, ans, xp, x, axes: xp.permute_dims(g, _inverse(tuple(axes))))
defjvp(permute_dims, None, lambda t, ans, xp, x, axes: xp.permute_dims(t, axes))
static(permute_dims, 2)
defvjp(reshape, None, lambda g, ans, xp, x, shape, **kw: xp.reshape(g, x.shape))
defjvp(reshape, None, lambda t, ans, xp, x, shape, **kw: xp.reshape(t, shape))
static(reshape, 2)
defvjp(expand_dims, None, lambda g, ans, xp, x, axis=0: xp.reshape(g, x.shape))
defjvp(expand_dims, None, lambda t, ans, xp, x, axis=0: xp.expand_dims(t, axis=axis))
defvjp(squeeze, None, lambda g, ans, xp, x, axis: xp.reshape(g, x.shape))
defjvp(squeeze, None, lambda t, ans, xp, x, axis: xp.squeeze(t, axis=axis))
defvjp(broadcast_to, None, lambda g, ans, xp, x, shape: unbroadcast_api(xp, g, x.shape))
defjvp(broadcast_to, None, lambda t, ans, xp, x, shape: xp.broadcast_to(t, shape))
static(broadcast_to, 2)
defvjp(flip, None, lambda g, ans, xp, x, axis=None: xp.flip(g, axis=axis))
defjvp(flip, None, lambda t, ans, xp, x, axis=None: xp.flip(t, axis=axis))


def _sort_order(xp, x, axis, descending, stable):
    """Where each element of `xp.sort(x, ...)` came from (NumPy's argsort: no `descending`)."""
    more = {'descending': True} if descending else {}
    return xp.argsort(x, axis=axis, stable=stable, **more)


def _sort_vjp(g, ans, xp, x, axis=-1, descending=False, stable=True):
    back = xp.argsort(_sort_order(xp, x, axis, descending, stable), axis=axis, stable=True)
    return xp.take_along_axis(xp.full_like(ans, g) if _scalar(g) else g, back, axis=axis)


def _sort_jvp(t, ans, xp, x, axis=-1, descending=False, stable=True):
    order = _sort_order(xp, x, axis, descending, stable)
    return xp.full_like(ans, t) if _scalar(t) else xp.take_along_axis(t, order, axis=axis)


defvjp(sort, None, _sort_vjp)
defjvp(sort, None, _sort_jvp)


def _concat_vjp(g, ans, xp, arrays, axis=0):
    if axis is None:
        raise NotImplementedError('xp.concat(..., axis=None): give the axis')
    out, start = [], 0
    for a in arrays:
        index = (slice(None),) * (axis % ans.ndim) + (slice(start, start + a.shape[axis]),)
        out.append(g[index])
        start += a.shape[axis]
    return type(arrays)(out) if isinstance(arrays, (list, tuple)) else out


def _stack_vjp(g, ans, xp, arrays, axis=0):
    axis = axis % ans.ndim
    out = [g[(slice(None),) * axis + (i,)] for i in range(len(arrays))]
    return type(arrays)(out) if isinstance(arrays, (list, tuple)) else out


defvjp(concat, None, _concat_vjp)
defjvp(concat, None, lambda t, ans, xp, arrays, axis=0: xp.concat(
    [zeros_api(a) if _scalar(ti) else ti for ti, a in zip(t, arrays)], axis=axis))
defvjp(stack, None, _stack_vjp)
defjvp(stack, None, lambda t, ans, xp, arrays, axis=0: xp.stack(
    [zeros_api(a) if _scalar(ti) else ti for ti, a in zip(t, arrays)], axis=axis))


# ---------------------------------------------------------------- selection, conversion

defvjp(where, None, None,
       lambda g, ans, xp, c, a, b: _unbroadcast_like(xp, xp.where(c, g, 0.0), a),
       lambda g, ans, xp, c, a, b: _unbroadcast_like(xp, xp.where(c, 0.0, g), b))
defjvp(where, None, None,
       lambda t, ans, xp, c, a, b: _to_output(xp, xp.where(c, t, 0.0), ans),
       lambda t, ans, xp, c, a, b: _to_output(xp, xp.where(c, 0.0, t), ans))


def _inside(xp, ans, x, lo, hi):
    keep = xp.ones_like(ans)
    if lo is not None:
        keep = keep * xp.astype(x >= lo, keep.dtype)
    if hi is not None:
        keep = keep * xp.astype(x <= hi, keep.dtype)
    return keep


defvjp(clip, None, lambda g, ans, xp, x, min=None, max=None: g * _inside(xp, ans, x, min, max))
defjvp(clip, None, lambda t, ans, xp, x, min=None, max=None: t * _inside(xp, ans, x, min, max))


def _asarray_vjp(g, ans, xp, obj, dtype=None, device=None, copy=None):
    if isinstance(obj, (list, tuple)):
        raise NotImplementedError('xp.asarray of a list holding differentiated values: build it '
                                  'with xp.stack([...]) instead')
    return g if _scalar(obj) else xp.astype(g, obj.dtype) if g.dtype != obj.dtype else g


def _asarray_jvp(t, ans, xp, obj, dtype=None, device=None, copy=None):
    if isinstance(obj, (list, tuple)):
        raise NotImplementedError('xp.asarray of a list holding differentiated values: build it '
                                  'with xp.stack([...]) instead')
    if _scalar(t):
        return xp.full_like(ans, t)
    return t if t.dtype == ans.dtype else xp.astype(t, ans.dtype)


defvjp(asarray, None, _asarray_vjp)
defjvp(asarray, None, _asarray_jvp)
defvjp(astype, None, lambda g, ans, xp, x, dtype, **kw: xp.astype(g, x.dtype))
defjvp(astype, None, lambda t, ans, xp, x, dtype, **kw: xp.astype(t, dtype))
static(astype, 2)
defvjp(full, None, None, lambda g, ans, xp, shape, fill_value, **kw: xp.sum(g))
defjvp(full, None, None, lambda t, ans, xp, shape, fill_value, **kw: xp.full_like(ans, t))
static(full, 1)
defvjp(full_like, None, None, lambda g, ans, xp, x, fill_value, **kw: xp.sum(g))
defjvp(full_like, None, None, lambda t, ans, xp, x, fill_value, **kw: xp.full_like(ans, t))
# abs, sign, real, imag, conj and vecdot: rules/array_api_complex.py (their complex forms)

describe('the array API standard\'s signatures, `xp` from `array_namespace(...)`',
         *FUNCTIONS.values())
