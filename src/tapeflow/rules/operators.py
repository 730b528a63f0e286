"""Rules for Python's arithmetic operators, and their NumPy ufunc twins.

`a + b` on arrays is `np.add(a, b)`: one rule serves both spellings. Every
binary rule unbroadcasts to its operand's shape (broadcasting is where
`/` and `**` go wrong most often). The rules are single-`return` functions so
the compiler can inline them. `**`'s rules are in `powers`.
"""
import operator

import numpy as np

from tapeflow.rules.batching import lift_tangent
from tapeflow.rules.entries import entry
from tapeflow.rules.array_api import matmul_grad_a, matmul_grad_b
from tapeflow.rules.arrays import is_api_only
from tapeflow.rules.registry import alias, describe, nondifferentiable
from tapeflow.rules.shapes import (broadcast_tangent, dense, is_symbolic_zero, unbroadcast,
                                   unbroadcast_batch)


# ---------------------------------------------------------------- add, sub, neg

def add_vjp_x(g, ans, x, y):
    return unbroadcast(g, x)


def add_vjp_y(g, ans, x, y):
    return unbroadcast(g, y)


def sub_vjp_y(g, ans, x, y):
    return unbroadcast(-g, y)


def neg_vjp(g, ans, x):
    return -g


def pos_vjp(g, ans, x):
    return g


def add_jvp(t, ans, x, y):
    return broadcast_tangent(t, ans)


def sub_jvp_y(t, ans, x, y):
    return broadcast_tangent(-t, ans)


def neg_jvp(t, ans, x):
    return -t


def pos_jvp(t, ans, x):
    return t


BROADCASTING = 'broadcasting operands (scalars, 0-d arrays, any shapes); Python floats'
UNARY = 'any shape, Python floats'
entry(operator.add, (add_vjp_x, add_vjp_y), (add_jvp, add_jvp), forms=BROADCASTING)
entry(operator.sub, (add_vjp_x, sub_vjp_y), (add_jvp, sub_jvp_y), forms=BROADCASTING)
entry(operator.neg, neg_vjp, neg_jvp, forms=UNARY)
entry(operator.pos, pos_vjp, pos_jvp, forms=UNARY)


# ---------------------------------------------------------------- mul, div

def mul_vjp_x(g, ans, x, y):
    return unbroadcast(g * y, x)


def mul_vjp_y(g, ans, x, y):
    return unbroadcast(g * x, y)


def div_vjp_x(g, ans, x, y):
    return unbroadcast(g / y, x)


def div_vjp_y(g, ans, x, y):
    return unbroadcast(-g * ans / y, y)


def mul_jvp_x(t, ans, x, y):
    return broadcast_tangent(t * y, ans)


def mul_jvp_y(t, ans, x, y):
    return broadcast_tangent(x * t, ans)


def div_jvp_x(t, ans, x, y):
    return broadcast_tangent(t / y, ans)


def div_jvp_y(t, ans, x, y):
    return broadcast_tangent(-t * ans / y, ans)


entry(operator.mul, (mul_vjp_x, mul_vjp_y), (mul_jvp_x, mul_jvp_y), forms=BROADCASTING)
entry(operator.truediv, (div_vjp_x, div_vjp_y), (div_jvp_x, div_jvp_y), forms=BROADCASTING)


# ---------------------------------------------------------------- matmul

def grad_of_matmul_a(g, a, b):
    """The cotangent of `a` in `a @ b`: `g @ b.T`, for every rank NumPy accepts.

    A symbolic zero (the float 0.0) for `g` or `b` gives the symbolic zero.
    """
    if g.__class__ is np.ndarray and a.__class__ is np.ndarray and b.__class__ is np.ndarray:
        if b.ndim == 2 and a.ndim == 2:
            return g @ b.T
        if b.ndim == 1 and a.ndim == 2:
            return g[:, None] * b                  # outer(g, b)
        if b.ndim == 2 and a.ndim == 1:
            return b @ g
    if is_symbolic_zero(g) or is_symbolic_zero(b):
        return 0.0
    if is_api_only(g) or is_api_only(a) or is_api_only(b):
        return matmul_grad_a(_namespace(g, a, b), g, a, b)
    if np.ndim(b) == 1:
        if np.ndim(a) == 1:
            return g * b
        return np.expand_dims(g, -1) * b
    if np.ndim(a) == 1:
        return unbroadcast_matmul(np.expand_dims(g, -2) @ np.swapaxes(b, -1, -2), a)
    return unbroadcast_matmul(g @ np.swapaxes(b, -1, -2), a)


def grad_of_matmul_b(g, a, b):
    """The cotangent of `b` in `a @ b`: `a.T @ g`, for every rank NumPy accepts.

    A symbolic zero (the float 0.0) for `g` or `a` gives the symbolic zero.
    """
    if g.__class__ is np.ndarray and a.__class__ is np.ndarray and b.__class__ is np.ndarray:
        if a.ndim == 2 and b.ndim == 2:
            return a.T @ g
        if a.ndim == 2 and b.ndim == 1:
            return g @ a                           # a.T @ g, without the copies
        if a.ndim == 1 and b.ndim == 2:
            return a[:, None] * g                  # outer(a, g)
    if is_symbolic_zero(g) or is_symbolic_zero(a):
        return 0.0
    if is_api_only(g) or is_api_only(a) or is_api_only(b):
        return matmul_grad_b(_namespace(g, a, b), g, a, b)
    if np.ndim(b) == 1 and np.ndim(a) == 2:
        return g @ a
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * a
        return unbroadcast_matmul(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast_matmul((np.swapaxes(a, -1, -2) @ np.expand_dims(g, -1))[..., 0], b)
    return unbroadcast_matmul(np.swapaxes(a, -1, -2) @ g, b)


grad_of_matmul_a.__tapeflow_pure__ = grad_of_matmul_b.__tapeflow_pure__ = True   # (`fusion`)


def _namespace(*values):
    return next(v for v in values if is_api_only(v)).__array_namespace__()


def unbroadcast_matmul(g, x):
    """Sum batch dimensions that `x` was broadcast along in a matmul."""
    shape = np.shape(x)
    if g.shape == shape:
        return g
    if len(shape) == 1 and g.ndim >= 1 and g.shape[-1] == shape[0]:
        return g.reshape(-1, shape[0]).sum(axis=0)
    return unbroadcast(g, x)


def matmul_vjp_a(g, ans, a, b):
    return grad_of_matmul_a(g, a, b)


def matmul_vjp_b(g, ans, a, b):
    return grad_of_matmul_b(g, a, b)


def matmul_jvp_a(t, ans, a, b):
    return t @ b


def matmul_jvp_b(t, ans, a, b):
    return a @ t


# Batched JVPs (rules/batching.py): `t` is `(B,) + shape` of the operand; the
# batch axis must not meet a broadcast batch axis of the other operand.

def matmul_jvp_a_batched(t, ans, a, b):
    if np.ndim(a) == 1 and np.ndim(b) > 1:       # each row a vector: (B, 1.., 1, k) @ b
        rows = np.reshape(t, t.shape[:1] + (1,) * (np.ndim(b) - 1) + t.shape[1:])
        return (rows @ b)[..., 0, :]
    return lift_tangent(t, a, ans) @ b


def matmul_jvp_b_batched(t, ans, a, b):
    if np.ndim(b) == 1:                          # a @ (k, B), the batch axis moved first
        return np.moveaxis(a @ np.transpose(t), -1, 0)
    return a @ lift_tangent(t, b, ans)


MATMUL = 'every rank NumPy accepts (1-D, batched, broadcast batches)'
entry(operator.matmul, (matmul_vjp_a, matmul_vjp_b), (matmul_jvp_a, matmul_jvp_b),
      batched=(matmul_jvp_a_batched, matmul_jvp_b_batched), forms=MATMUL)


# The two cotangents are themselves products, which generated code calls:
# differentiating it again (Hessians) needs their rules. `grad_of_matmul_a(g,
# a, b)` is bilinear in g and b (a gives only its shape); it is the transpose
# of `a -> a @ b`, so its own transpose in g is `h @ b`, and in b it is the
# cotangent of b in `h @ b` paired with g. Symmetrically for `grad_of_matmul_b`.

def _grad_a_vjp_g(h, ans, g, a, b):
    return dense(h, a) @ b


def _grad_a_vjp_b(h, ans, g, a, b):
    return grad_of_matmul_b(g, h, b)


def _grad_a_jvp_g(t, ans, g, a, b):
    return grad_of_matmul_a(t, a, b)


def _grad_a_jvp_b(t, ans, g, a, b):
    return grad_of_matmul_a(g, a, t)


def _grad_b_vjp_g(h, ans, g, a, b):
    return a @ dense(h, b)


def _grad_b_vjp_a(h, ans, g, a, b):
    return grad_of_matmul_a(g, a, h)


def _grad_b_jvp_g(t, ans, g, a, b):
    return grad_of_matmul_b(t, a, b)


def _grad_b_jvp_a(t, ans, g, a, b):
    return grad_of_matmul_b(g, t, b)


# Batched: `t` is `(B,) + shape` of g (or of a, b); each gives `(B,) + shape(ans)`.

def _sum_rows_to_vector(spread, x):
    """`(B, ..., k)` summed over its middle axes: `(B, k)` for the 1-D operand `x`."""
    return np.reshape(spread, spread.shape[:1] + (-1, np.shape(x)[0])).sum(axis=1)


def _grad_a_jvp_g_batched(t, ans, g, a, b):
    if is_symbolic_zero(b):
        return 0.0
    if np.ndim(b) == 1:
        return np.expand_dims(t, -1) * b
    if np.ndim(a) == 1:
        return _sum_rows_to_vector(np.expand_dims(t, -2) @ np.swapaxes(b, -1, -2), a)
    return unbroadcast_batch(t @ np.swapaxes(b, -1, -2), a)


def _grad_a_jvp_b_batched(t, ans, g, a, b):
    if is_symbolic_zero(g):
        return 0.0
    if np.ndim(b) == 1:
        rows = np.reshape(t, t.shape[:1] + (1,) * np.ndim(g) + t.shape[1:])
        return np.expand_dims(g, -1) * rows
    if np.ndim(a) == 1:
        return _sum_rows_to_vector(np.expand_dims(g, -2) @ np.swapaxes(t, -1, -2), a)
    return unbroadcast_batch(g @ np.swapaxes(_lift_to(t, b, np.ndim(g)), -1, -2), a)


def _grad_b_jvp_g_batched(t, ans, g, a, b):
    if is_symbolic_zero(a):
        return 0.0
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return np.expand_dims(t, -1) * a
        return unbroadcast_batch(np.expand_dims(a, -1) * np.expand_dims(t, -2), b)
    if np.ndim(b) == 1:
        return _sum_rows_to_vector((np.swapaxes(a, -1, -2) @ np.expand_dims(t, -1))[..., 0], b)
    return unbroadcast_batch(np.swapaxes(a, -1, -2) @ t, b)


def _grad_b_jvp_a_batched(t, ans, g, a, b):
    if is_symbolic_zero(g):
        return 0.0
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * t
        rows = np.reshape(t, t.shape[:1] + (1,) * (np.ndim(g) - 1) + t.shape[1:] + (1,))
        return unbroadcast_batch(rows * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return _sum_rows_to_vector((np.swapaxes(t, -1, -2) @ np.expand_dims(g, -1))[..., 0], b)
    return unbroadcast_batch(np.swapaxes(_lift_to(t, a, np.ndim(g)), -1, -2) @ g, b)


def _lift_to(t, x, ndim):
    """The batch `t` of tangents of `x` with 1s inserted after the batch axis: `1 + ndim` axes."""
    missing = ndim - np.ndim(x)
    return np.reshape(t, t.shape[:1] + (1,) * missing + t.shape[1:]) if missing > 0 else t


entry(grad_of_matmul_a, (_grad_a_vjp_g, None, _grad_a_vjp_b),
      (_grad_a_jvp_g, None, _grad_a_jvp_b),
      batched=(_grad_a_jvp_g_batched, None, _grad_a_jvp_b_batched), static=(1,), forms=None)
entry(grad_of_matmul_b, (_grad_b_vjp_g, _grad_b_vjp_a), (_grad_b_jvp_g, _grad_b_jvp_a),
      batched=(_grad_b_jvp_g_batched, _grad_b_jvp_a_batched), static=(2,), forms=None)


# ---------------------------------------------------------------- no derivative

nondifferentiable(
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
    operator.ne, operator.not_, operator.truth, operator.floordiv,
    operator.and_, operator.or_, operator.xor, operator.invert,
    operator.is_, operator.is_not, operator.contains,
    operator.lshift, operator.rshift,
)

# NumPy's ufuncs are the same operations on arrays: one rule, two spellings.
for _ufunc, _op in [(np.add, operator.add), (np.subtract, operator.sub),
                    (np.multiply, operator.mul), (np.divide, operator.truediv),
                    (np.true_divide, operator.truediv),
                    (np.negative, operator.neg), (np.positive, operator.pos),
                    (np.matmul, operator.matmul)]:
    alias(_ufunc, _op)


# ---------------------------------------------------------------- additions: %, abs, in-place

def mod_vjp_y(g, ans, x, y):
    return unbroadcast(-g * (x // y), y)


def conj_unit(x, ans):
    """d|x| per unit of dx, `ans` being |x|; 0 at 0.

    sign(x) for a real x: piecewise constant. conj(x) / |x| for a complex x: it
    moves with x, and the rules of the rules (second order) must see that, which
    they would not through np.sign (it has no derivative).
    """
    if x.__class__ is float or x.__class__ is int:
        return (x > 0) - (x < 0)
    if x.__class__ is complex:
        return np.conj(x) / ans if ans else 0.0
    if np.iscomplexobj(x):
        return np.conj(x) / np.where(ans == 0, 1.0, ans)
    return np.sign(x)


def abs_vjp(g, ans, x):
    # |x| is real: only the real part of its cotangent pairs with it (an imaginary part
    # a real value's cotangent may carry from complex arithmetic must not reach x)
    return np.real(g) * conj_unit(x, ans)


def abs_jvp(t, ans, x):
    return np.real(t * conj_unit(x, ans))


def mod_jvp_x_batched(t, ans, x, y):
    return lift_tangent(t, x, ans) + 0 * y


def mod_jvp_y_batched(t, ans, x, y):
    return -lift_tangent(t, y, ans) * (x // y)


entry(operator.mod, (add_vjp_x, mod_vjp_y),
      (lambda t, ans, x, y: t + 0 * y, lambda t, ans, x, y: -t * (x // y)),
      batched=(mod_jvp_x_batched, mod_jvp_y_batched), forms=BROADCASTING)
entry(operator.abs, abs_vjp, abs_jvp, forms='Python floats and arrays, real or complex; 0 at 0')

# `x += y` differentiates as `x = x + y`.
for _inplace, _op in [(operator.iadd, operator.add), (operator.isub, operator.sub),
                      (operator.imul, operator.mul), (operator.itruediv, operator.truediv),
                      (operator.imatmul, operator.matmul),
                      (operator.imod, operator.mod)]:
    alias(_inplace, _op)
nondifferentiable(operator.ifloordiv, operator.index, operator.iand, operator.ior,
                  operator.ixor)

describe(BROADCASTING, operator.iadd, operator.isub, operator.imul, operator.itruediv,
         operator.imod, np.add, np.subtract, np.multiply, np.divide)
describe(UNARY, np.negative, np.positive)
describe(MATMUL, operator.imatmul, np.matmul)
