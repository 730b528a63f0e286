"""Gradients and tangents in the form of what they belong to.

`like_argument(g, arg)`: a gradient as the type and shape of its argument (a
dataclass's gradient is a dataclass; NumPy, CuPy, Dask, array-API arrays each in
their own library); `real_like`: in the argument's number field (generated callers
apply it, so it has rules of its own, registered here); `tangent_like`: a tangent of
the output's structure, symbolic zeros made zeros.
"""
from __future__ import annotations

import numbers

import numpy as np

import tapeflow.runtime.pytree as pytree
from tapeflow.rules import registry
from tapeflow.rules.arrays import is_api_only, is_foreign_array, library_of, numpy_dtype, same_library
from tapeflow.rules.batching import defjvp_batched
from tapeflow.rules.sequences import dense
from tapeflow.runtime.support import is_zero


def like_argument(g, arg):
    """The gradient `g` in the type and shape of the argument `arg` (a pytree: the
    gradient of a dataclass is a dataclass of its fields' gradients)."""
    cls = arg.__class__
    if cls is float:
        return 0.0 if is_zero(g) else float(np.real(g))
    if cls is np.ndarray and g.__class__ is np.ndarray and g.dtype is arg.dtype \
            and g.shape == arg.shape and g.dtype.kind == 'f':
        return g                        # the common case, as the lines below would return it
    if isinstance(arg, np.ndarray):
        if g.__class__ is not np.ndarray and is_foreign_array(g):   # NumPy weights, Dask data
            return _like_foreign(g, arg)
        dtype = arg.dtype if np.issubdtype(arg.dtype, np.inexact) else np.float64
        if is_zero(g):
            return np.zeros(arg.shape, dtype)
        g = np.asarray(g)
        if np.iscomplexobj(g) and not np.issubdtype(dtype, np.complexfloating):
            g = g.real                  # a real argument's gradient (see `real_like`)
        if g.shape != arg.shape:
            g = np.broadcast_to(g, arg.shape).copy()
        return g.astype(dtype, copy=False)
    if arg is None:
        return None
    if is_foreign_array(arg):
        return _like_foreign(g, arg)
    children = pytree.children(arg)
    if children is not None:
        parts = pytree.child_cotangents(g, arg, children)
        return pytree.rebuild(arg, [like_argument(p, child) for p, (_, child) in zip(parts, children)])
    if isinstance(arg, np.generic):
        if np.iscomplexobj(g) and not np.iscomplexobj(arg):
            g = np.real(g)              # a real argument's gradient (see `real_like`)
        return arg.dtype.type(0 if is_zero(g) else g)
    if isinstance(arg, complex):
        return complex(g)
    if isinstance(arg, (bool, numbers.Number, str, bytes)):
        return dense(g)
    raise TypeError(f'cannot differentiate with respect to a {type(arg).__name__}: arguments '
                    f'are pytrees (tuples, lists, dicts, dataclasses, NamedTuples, classes '
                    f'registered with tf.register_pytree) of floats and float arrays')


def _like_foreign(g, arg):
    """`like_argument` for an array of another library (CuPy, Dask), or a NumPy argument whose
    gradient another library computed (NumPy weights, Dask data): made in that library,
    by functions NumPy dispatches to it (`rules.arrays`); a Dask gradient stays lazy."""
    if is_api_only(arg) or is_api_only(g):
        return _like_api(g, arg)
    dtype = numpy_dtype(arg)
    dtype = dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)
    if is_zero(g):
        return np.zeros_like(arg, dtype=dtype)
    if not is_foreign_array(g):
        g = np.zeros_like(arg, dtype=dtype) + g      # a number, or a NumPy scalar: into arg's library
    elif is_foreign_array(arg) and not same_library(g, arg):
        raise TypeError(f'the gradient of a {library_of(arg)} argument came out as a '
                        f'{library_of(g)} array: mixed array libraries (see docs/scaling-out.md)')
    if np.iscomplexobj(g) and not np.issubdtype(dtype, np.complexfloating):
        g = np.real(g)
    if g.shape != arg.shape:
        g = np.broadcast_to(g, arg.shape)
    return g.astype(dtype, copy=False) if g.dtype != dtype else g


def _like_api(g, arg):
    """`like_argument` for an array of a namespace NumPy cannot reach (array_api_strict): with
    the functions of its own namespace."""
    xp = arg.__array_namespace__()
    if is_zero(g) or g.__class__ in (float, int):
        return xp.full(arg.shape, 0.0 if is_zero(g) else g, dtype=arg.dtype, device=arg.device)
    if not same_library(g, arg):
        raise TypeError(f'the gradient of a {library_of(arg)} argument came out as a '
                        f'{library_of(g)} array: mixed array libraries (see docs/scaling-out.md)')
    if tuple(g.shape) != tuple(arg.shape):
        g = xp.broadcast_to(g, arg.shape)
    return g if g.dtype == arg.dtype else xp.astype(g, arg.dtype)


def check_tangent(primal, tangent, where):
    """A tangent has its primal's structure (`runtime.pytree`), and each leaf its primal's shape."""
    kids = pytree.children(primal)
    if kids is None:
        if np.shape(tangent) != np.shape(primal):
            raise ValueError(f'jvp: the tangent of {where} has shape {np.shape(tangent)}, '
                             f'its primal {np.shape(primal)}')
        return
    if primal is None:
        return
    if isinstance(primal, dict):
        if not isinstance(tangent, dict) or set(tangent) != set(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a dict with the keys '
                             f'{sorted(map(repr, primal))} of its primal')
    elif isinstance(primal, (list, tuple)):
        if not isinstance(tangent, (list, tuple)) or len(tangent) != len(primal):
            raise ValueError(f'jvp: the tangent of {where} must be a sequence of {len(primal)} '
                             f'like its primal, not {type(tangent).__name__} {tangent!r}')
    elif type(tangent) is not type(primal):
        raise ValueError(f'jvp: the tangent of {where} must be a {type(primal).__name__} like '
                         f'its primal, not {type(tangent).__name__}')
    for (key, p), t in zip(kids, pytree.child_cotangents(tangent, primal, kids)):
        check_tangent(p, t, pytree.path_text(where, (key,)))


def tangent_like(tangent, value):
    """The tangent of the output `value`, of its structure (symbolic zeros made zeros)."""
    if is_zero(tangent) and isinstance(value, (np.ndarray, np.generic)):
        return np.zeros(np.shape(value), np.result_type(value, float))
    kids = pytree.children(value) if value is not None else None
    if not kids:
        return tangent
    parts = pytree.child_cotangents(tangent, value, kids)
    return pytree.rebuild(value, [tangent_like(t, v) for t, (_, v) in zip(parts, kids)])


def real_like(g, x):
    """The cotangent `g` of the argument `x` in `x`'s number field (as in JAX and
    autograd): real for a real `x` (the imaginary part a complex intermediate leaves in
    it is the derivative of nothing), complex for a complex one; leaf by leaf in a
    pytree. Callers of generated code apply it, so derivatives of derivatives keep it."""
    if isinstance(x, (np.ndarray, np.generic, float, int, complex)):
        if isinstance(g, (np.ndarray, np.generic, complex)) and np.iscomplexobj(g):
            return g if np.iscomplexobj(x) else np.real(g)
        if np.iscomplexobj(x) and isinstance(g, (np.ndarray, np.generic, float)) \
                and not _is_zero(g):
            return complex(g) if isinstance(x, complex) else \
                np.asarray(g).astype(np.result_type(g, np.asarray(x).dtype))
        return g
    if isinstance(g, (list, tuple)) and isinstance(x, (list, tuple)) and len(g) == len(x):
        items = [real_like(a, b) for a, b in zip(g, x)]
        return g.__class__(*items) if hasattr(g, '_fields') else g.__class__(items)
    if isinstance(g, dict) and isinstance(x, dict):
        return {k: real_like(v, x[k]) if k in x else v for k, v in g.items()}
    return g


def _is_zero(g):
    return g.__class__ is float and g == 0.0


def _real_like_jvp(t, ans, g, x):
    return real_like(t, x)


def _real_like_vjp(h, ans, g, x):
    return real_like(h, x)


registry.defjvp(real_like, _real_like_jvp)
registry.defvjp(real_like, _real_like_vjp)
registry.static(real_like, 1)
defjvp_batched(real_like, _real_like_jvp)


# Generated code calls `as_argument` (see `_generated_caller`): linear in its cotangent.
registry.defjvp(pytree.as_argument, lambda t, ans, g, arg: pytree.as_argument(t, arg))
registry.defvjp(pytree.as_argument, lambda h, ans, g, arg: pytree.as_fields(h, arg))
registry.static(pytree.as_argument, 1)
defjvp_batched(pytree.as_argument, lambda t, ans, g, arg: pytree.as_argument(t, arg))
