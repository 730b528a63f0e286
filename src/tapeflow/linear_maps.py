"""Linear maps on trees of arrays: what custom rules need to transpose one.

A *tree* is a tuple, list or dict of trees, or a leaf (an array, a number,
None). Helpers: leaves in order (dicts by sorted key) and rebuilding, zeros,
inner products, unit directions; `transpose(L, ...)`, the transpose of a
linear function by tapeflow's reverse mode (or, where the compiler cannot read
it, one call per element), `checked_transpose`, the same refusing a function
that is not linear; `summable`, a tuple/dict tangent that adds leaf by leaf.
"""
from __future__ import annotations

import inspect

import numpy as np

from tapeflow.rules.registry import MissingRule
from tapeflow.runtime.support import is_zero
from tapeflow.syntax.errors import TapeflowError, UnsupportedError

__all__ = ['Rule', 'leaves_of', 'rebuild', 'zero_leaf', 'zeros_like', 'inner', 'has_float', 'basis',
           'transpose', 'checked_transpose', 'check_shape', 'summable', 'located']


def leaves_of(tree):
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in leaves_of(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves_of(item)]
    return [tree]


def rebuild(tree, leaves):
    if isinstance(tree, dict):
        return type(tree)((key, rebuild(tree[key], leaves)) for key in sorted(tree))
    if isinstance(tree, (list, tuple)):
        items = [rebuild(item, leaves) for item in tree]
        return type(tree)(*items) if hasattr(tree, '_fields') else type(tree)(items)
    return next(leaves)


def zero_leaf(leaf):
    if isinstance(leaf, float):
        return 0.0
    return np.zeros(np.shape(leaf), np.result_type(np.asarray(leaf).dtype, float))


def zeros_like(tree):
    return rebuild(tree, iter([zero_leaf(leaf) for leaf in leaves_of(tree)]))


def inner(a, b) -> float:
    """The inner product of two trees of one structure (None: a zero)."""
    return sum(float(np.sum(np.asarray(x) * np.asarray(y))) for x, y in zip(leaves_of(a), leaves_of(b))
               if x is not None and y is not None)


def has_float(tree) -> bool:
    for leaf in leaves_of(tree):
        if isinstance(leaf, (float, complex)):
            return True
        dtype = getattr(leaf, 'dtype', None)
        if dtype is not None and np.dtype(dtype).kind in 'fc':
            return True
    return False


def inner_abs(a, b) -> float:
    return sum(float(np.sum(np.abs(np.asarray(x) * np.asarray(y))))
               for x, y in zip(leaves_of(a), leaves_of(b)) if x is not None and y is not None)


def basis(tree):
    """Every unit direction of the float leaves of `tree`, one tree per direction."""
    leaves = leaves_of(tree)
    zeros = [zero_leaf(leaf) for leaf in leaves]
    for j, leaf in enumerate(leaves):
        for k in range(int(np.size(leaf))):
            parts = list(zeros)
            if isinstance(leaf, float):
                parts[j] = 1.0
            else:
                unit = np.zeros(np.size(leaf), zeros[j].dtype)
                unit[k] = 1.0
                parts[j] = unit.reshape(np.shape(leaf))
            yield rebuild(tree, iter(parts)), j, k


def transpose(linear, x_like, y, args, position):
    """`L^T y` for the linear map `L(x) = linear(*args)` with `x` at `args[position]`.

    Tapeflow's reverse mode over `linear` (exact: the VJP of a linear map at any
    point is its transpose); where the compiler cannot read `linear`, one call
    of it per element of `x`: `(L^T y)_k = <L(e_k), y>`.
    """
    from tapeflow import api
    args = list(args)
    args[position] = zeros_like(x_like)
    try:
        compiled = api.compile_adjoint(linear, (position,), kinds=api.argument_kinds(args))
    except (UnsupportedError, MissingRule, TapeflowError, TypeError):
        compiled = None
    if compiled is not None:
        tape = []
        api.forward_value(compiled, tape, args)
        return api.like_argument(compiled.backward(tape, y), x_like)
    leaves = [zero_leaf(leaf) for leaf in leaves_of(x_like)]
    for unit, j, k in basis(x_like):
        args[position] = unit
        value = inner(linear(*args), y)
        if isinstance(leaves[j], float):
            leaves[j] = value
        else:
            leaves[j].reshape(-1)[k] = value
    return rebuild(x_like, iter(leaves))


def probe(tree, scale):
    """A fixed pseudo-random direction in the space of `tree`, times `scale`."""
    rng = np.random.default_rng(20240611)
    leaves = []
    for leaf in leaves_of(tree):
        if isinstance(leaf, float):
            leaves.append(float(rng.standard_normal()) * scale)
        else:
            dtype = np.result_type(np.asarray(leaf).dtype, float)
            leaves.append((rng.standard_normal(np.shape(leaf)) * scale).astype(dtype))
    return rebuild(tree, iter(leaves))


def checked_transpose(linear, x_like, y, args, position, rule, reason):
    """`transpose`, and a check that `linear` is linear: the transpose of a map that is
    not would be a plausible wrong number. The check is the adjoint identity
    `<L(p), y> = <p, L^T y>` along two fixed directions `p` of different sizes (a
    clip or a square breaks it): two more calls of `linear`."""
    r = transpose(linear, x_like, y, args, position)
    for scale in (1.0, 1e3):
        p = probe(x_like, scale)
        args = list(args)
        args[position] = p
        lp = linear(*args)
        lhs, rhs = inner(lp, y), inner(p, r)
        scale_of = max(inner_abs(lp, y), inner_abs(p, r))
        low = any(np.asarray(leaf).dtype.kind in 'fc' and np.asarray(leaf).dtype.itemsize < 8
                  for leaf in leaves_of((lp, r)) if leaf is not None)
        if abs(lhs - rhs) > (1e-3 if low else 1e-8) * scale_of:
            raise located(rule, reason)
    return r


def check_shape(ct, arg, who, position):
    for c, a in zip(leaves_of(ct), leaves_of(arg)):
        if c is not None and np.shape(c) != np.shape(a):
            raise ValueError(f'{who} returned a cotangent of shape {np.shape(c)} for argument '
                             f'{position}, whose shape is {np.shape(a)}: they must be equal')


class _SummedTuple(tuple):
    """A tangent of a tuple output that adds leaf by leaf: the compiler sums the
    contributions of a primitive's arguments with `+`, which on plain tuples would
    concatenate them."""

    def __add__(self, other):
        if is_zero(other):
            return self
        if not isinstance(other, (tuple, list)):
            return NotImplemented
        return _SummedTuple(rebuild(tuple(self), iter(
            [a if is_zero(b) else b if is_zero(a) else a + b
             for a, b in zip(leaves_of(tuple(self)), leaves_of(tuple(other)))])))

    def __radd__(self, other):
        if is_zero(other):
            return self
        return NotImplemented


class _SummedDict(dict):
    """A tangent of a dict output that adds key by key (see `_SummedTuple`)."""

    def __add__(self, other):
        if is_zero(other):
            return self
        if not isinstance(other, dict):
            return NotImplemented
        return _SummedDict(rebuild(dict(self), iter(
            [a if is_zero(b) else b if is_zero(a) else a + b
             for a, b in zip(leaves_of(dict(self)), leaves_of(dict(other)))])))

    def __radd__(self, other):
        if is_zero(other):
            return self
        return NotImplemented


def summable(tangent):
    """`tangent`, a primitive's output tangent, in a form the compiler may add to another."""
    if tangent.__class__ is tuple:
        return _SummedTuple(tangent)
    if tangent.__class__ is list:
        return _SummedTuple(tangent)
    if tangent.__class__ is dict:
        return _SummedDict(tangent)
    return tangent


def located(fn, reason):
    """An UnsupportedError at the def of `fn`."""
    code = getattr(inspect.unwrap(fn), '__code__', None)
    if code is None:
        return UnsupportedError(reason)
    return UnsupportedError(reason, code.co_filename, code.co_firstlineno, 0)


class Rule:
    """A rule of the table for one argument, `method(argnum, g, ans, *args)`: a callable
    object, so the compiler calls it (never inlines it). Its qualified name is what
    the compiler's error says when asked to differentiate it again."""

    def __init__(self, method, argnum, kind, owner):
        self.method, self.argnum, self.kind = method, argnum, kind
        base = ''.join(c if c.isalnum() else '_' for c in owner)
        self.__name__ = f'{base}_{kind}{argnum or ""}'
        self.__module__ = 'tapeflow'
        self.__qualname__ = (f'{owner}\'s {kind.upper()} rule, which is not differentiated '
                             f'again (no second derivatives through custom_vjp, custom_jvp or '
                             f'vmap in compiled code: use the eager GradientTape)')

    def __call__(self, g, ans, *args):
        out = self.method(self.argnum, g, ans, *args)
        return summable(out) if self.kind == 'jvp' else out
