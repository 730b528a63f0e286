"""Numeric checks of derivatives, for users' tests: `check_grads`, and the leaves it moves.

An argument is a pytree: lists, tuples (namedtuples included) and dicts of
pytrees, down to leaves. Real floating leaves (Python floats, NumPy floating
scalars and arrays) are differentiated; every other leaf (ints, bools,
strings, None) is left alone. A complex leaf is refused: the conventions for
complex derivatives differ between libraries, and a check that picked one
silently could pass a wrong gradient.

`check_grads` moves each argument along a random direction of its own
structure and compares `grad(f, k)` (first order) and the Hessian-vector
product `jvp(grad(f, k))` (second order) with central differences.
The command line's `tapeflow check` reuses the leaf helpers.
"""
from __future__ import annotations

import copy

import numpy as np

from tapeflow.runtime import pytree

__all__ = ['check_grads', 'float_leaves', 'has_float_leaf', 'replace_leaf', 'map_float_leaves',
           'zero_tangent', 'path_text', 'structure_mismatch', 'mismatch_message']


# ------------------------------------------------------------------ leaves of a pytree

def _is_float(leaf) -> bool:
    if isinstance(leaf, bool):
        return False
    if isinstance(leaf, float):
        return True
    if isinstance(leaf, (np.ndarray, np.generic)):
        if np.issubdtype(leaf.dtype, np.complexfloating):
            raise TypeError(f'check_grads checks real-valued arguments; a complex '
                            f'{"array" if isinstance(leaf, np.ndarray) else "number"} '
                            f'({leaf.dtype}) has no single convention for its derivative')
        return np.issubdtype(leaf.dtype, np.floating)
    if isinstance(leaf, complex):
        raise TypeError('check_grads checks real-valued arguments; a complex number has no '
                        'single convention for its derivative')
    return False


def _children(tree):
    """(key, child) pairs of a pytree node (`runtime.pytree`); None for a leaf."""
    return pytree.children(tree)


def _rebuild(tree, values):
    """A node of `tree`'s kind holding `values` (in the order of `_children`)."""
    return pytree.rebuild(tree, values)


def float_leaves(tree, path=()):
    """[(path, leaf)] of the real floating leaves of `tree`; a path is a tuple of keys."""
    children = _children(tree)
    if children is None:
        return [(path, tree)] if _is_float(tree) else []
    out = []
    for key, child in children:
        out.extend(float_leaves(child, path + (key,)))
    return out


def has_float_leaf(tree) -> bool:
    return bool(float_leaves(tree))


def map_float_leaves(fn, tree):
    """`tree` with each real floating leaf replaced by `fn(leaf)`, other leaves kept."""
    children = _children(tree)
    if children is None:
        return fn(tree) if _is_float(tree) else tree
    return _rebuild(tree, [map_float_leaves(fn, child) for _, child in children])


def replace_leaf(tree, path, value):
    """A copy of `tree` with the leaf at `path` replaced by `value` (the rest shared)."""
    if not path:
        return value
    children = _children(tree)
    return _rebuild(tree, [replace_leaf(child, path[1:], value) if key == path[0] else child
                           for key, child in children])


def _zeros_where_symbolic(tangent, like):
    """`tangent` with each symbolic zero (the float 0.0) where `like` has an array made
    zeros of that shape: a gradient read as a function carries no shapes of its own for
    the items it is zero in, and neither does its tangent there."""
    if tangent.__class__ is float and tangent == 0.0 and isinstance(like, np.ndarray):
        return np.zeros(like.shape, np.result_type(like, float))
    children = _children(like)
    if children is None or _children(tangent) is None:
        return tangent
    tangent_children = _children(tangent)
    if [k for k, _ in children] != [k for k, _ in tangent_children]:
        return tangent
    return _rebuild(tangent, [_zeros_where_symbolic(t, child)
                              for (_, child), (_, t) in zip(children, tangent_children)])


def leaf_at(tree, path):
    return pytree.leaf_at(tree, path)


def zero_tangent(tree):
    """The tangent that does not move `tree`: zeros at float leaves, 0 at other numbers.

    An int inside a structure is a number the forward sweep may multiply by
    its tangent, so it gets 0 (never itself); strings and None are kept.
    """
    children = _children(tree)
    if children is None:
        if _is_float(tree):
            return np.zeros_like(tree) if isinstance(tree, np.ndarray) else 0.0
        if isinstance(tree, (int, np.integer, np.bool_)):      # bool is an int
            return 0
        return tree
    return _rebuild(tree, [zero_tangent(child) for _, child in children])


def path_text(name, path):
    """`xs[1]['w']`, `p.w`: where a leaf is, for messages."""
    return pytree.path_text(name, path)


def mismatch_message(arg, value, what):
    """'`what` at [1] is a tuple of 2, where the argument has a list of 2', or None
    when `value` has the structure of `arg` (see `structure_mismatch`)."""
    mismatch = structure_mismatch(arg, value)
    if mismatch is None:
        return None
    path, expected, got = mismatch
    return f'{what}{_at(path)} is {got}, where the argument has {expected}'


def _at(path):
    return f' at {path_text("", path)}' if path else ''


def _describe(value):
    if isinstance(value, (list, tuple, dict)):
        return f'a {type(value).__name__} of {len(value)}'
    if pytree.is_node(value) and value is not None:
        return f'a {type(value).__name__}'
    if isinstance(value, np.ndarray):
        return f'an array of shape {value.shape}'
    return f'{type(value).__name__} {value!r}' if not isinstance(value, float) else 'a float'


def structure_mismatch(arg, value, path=()):
    """Where `value` (a gradient or tangent) does not have the structure and the float
    leaves' shapes of `arg`: `(path, expected, got)`, or None when it does."""
    children = _children(arg)
    if children is None:
        if _is_float(arg):
            if isinstance(value, (list, tuple, dict)) or value is None or \
                    np.shape(value) != np.shape(arg):
                return path, _describe(arg), _describe(value)
        return None
    value_children = _children(value)
    if isinstance(arg, dict):
        same_kind = isinstance(value, dict)
    elif isinstance(arg, (list, tuple)):
        same_kind = type(value) is type(arg) or \
            (hasattr(arg, '_fields') and isinstance(value, (list, tuple)))
    else:
        same_kind = type(value) is type(arg)
    if not same_kind or value_children is None or len(value_children) != len(children) or \
            [k for k, _ in value_children] != [k for k, _ in children]:
        return path, _describe(arg), _describe(value)
    for (key, child), (_, got) in zip(children, value_children):
        found = structure_mismatch(child, got, path + (key,))
        if found is not None:
            return found
    return None


def _random_direction(tree, rng):
    """A standard normal direction of `tree`'s structure; other leaves do not move."""
    children = _children(tree)
    if children is None:
        if not _is_float(tree):
            return zero_tangent(tree)
        if isinstance(tree, np.ndarray):
            return rng.standard_normal(tree.shape)
        return float(rng.standard_normal())
    return _rebuild(tree, [_random_direction(child, rng) for _, child in children])


def _moved(tree, direction, step):
    """`tree + step * direction` at its float leaves."""
    out = tree
    for path, leaf in float_leaves(tree):
        out = replace_leaf(out, path, leaf + step * leaf_at(direction, path))
    return out


def _inner(tree, a, b):
    """Sum over the float leaves of `tree` of <a leaf, b leaf> (float64)."""
    return sum(float(np.sum(np.asarray(leaf_at(a, p), dtype=np.float64) *
                            np.asarray(leaf_at(b, p), dtype=np.float64)))
               for p, _ in float_leaves(tree))


# ------------------------------------------------------------------ check_grads

_MODES = ('fwd', 'rev')


def check_grads(f, args, order=2, modes=None, eps=None, rtol=None, atol=None, seed=0):
    """Check `f`'s compiled derivatives against central differences, up to `order` (1 or 2).

    JAX's signature: `check_grads(f, args, order, modes=('fwd', 'rev'), atol, rtol, eps)`.
    `args` are the positional arguments, each a pytree (`runtime.pytree`: lists,
    tuples, dicts, dataclasses, NamedTuples, registered classes) of floats and
    float arrays; ints, bools and strings inside are left alone. For each
    argument holding a float, along a random direction `v` of its structure:

    - 'rev', order 1: `grad(f, k)` (of the argument's type) against differences of `f`;
    - 'fwd', order 1: `jvp(f)` along `v` against the same differences;
    - 'fwd', order 2: the Hessian-vector product forward over reverse
      (`jvp(grad(f, k))`) against differences of the gradient;
    - 'rev', order 2: the same product reverse over reverse (the pullback of
      `grad(f, k)` applied to `v`).

    With `modes` left out, 'rev' at order 1 and 'fwd' at order 2 are required, and
    the other two checks run where `f` has the derivatives they need (an
    adjoint written as a lambda has none), so existing callers keep working;
    with `modes` given, every check they name is required.

    Raises `AssertionError` naming the argument and both numbers on a
    mismatch, `NotImplementedError` when a required mode is not available for
    `f`; returns None.
    """
    from tapeflow.api import grad, jvp, vjp
    from tapeflow.rules.registry import MissingRule
    from tapeflow.syntax.errors import UnsupportedError

    if not callable(f):
        raise TypeError(f'check_grads(f, args) takes the function to check as f, not '
                        f'{type(f).__name__} {f!r:.60}')
    if not isinstance(args, (tuple, list)):
        raise TypeError(f'check_grads(f, args): args is the tuple (or list) of the arguments of '
                        f'{getattr(f, "__name__", "f")}(), not {type(args).__name__}: write '
                        f'check_grads(f, (x,))')
    if order not in (1, 2):
        raise ValueError(f'check_grads checks order 1 or 2, not {order!r}')
    strict = modes is not None
    modes = _MODES if modes is None else ((modes,) if isinstance(modes, str) else tuple(modes))
    unknown = [m for m in modes if m not in _MODES]
    if unknown or not modes:
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', not {modes!r}")
    eps = 1e-6 if eps is None else eps
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-6 if atol is None else atol
    unavailable = (UnsupportedError, MissingRule, NotImplementedError)
    rng = np.random.default_rng(seed)
    args = tuple(args)
    name = getattr(f, '__name__', 'f')
    positions = tuple(i for i, a in enumerate(args) if has_float_leaf(a))
    if not positions:
        raise TypeError(f'check_grads: no argument of {name}() holds a float to differentiate '
                        f'(write 2.0, not 2)')

    def fresh(point):                   # `f` may write into its arguments: each call its own
        return copy.deepcopy(list(point))

    def moved(k, v, step):
        out = list(args)
        out[k] = _moved(args[k], v, step)
        return out

    def value(point):
        return float(np.sum(f(*fresh(point))))

    def required(mode, at_order):
        if strict:
            return mode in modes
        return (mode, at_order) in (('rev', 1), ('fwd', 2))

    for k in positions:
        arg, where = args[k], f'argument {k}'
        v = _random_direction(arg, rng)
        tangents = [v if j == k else zero_tangent(a) for j, a in enumerate(args)]
        numeric = (value(moved(k, v, eps)) - value(moved(k, v, -eps))) / (2 * eps)
        grad_k = grad(f, k)
        if 'rev' in modes or order == 2:
            g = grad_k(*fresh(args))
            _assert_structure(arg, g, f'the gradient of {name} wrt {where}')
            analytic = _inner(arg, g, v)
            if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
                raise AssertionError(f'first derivative of {name} wrt {where} along a random '
                                     f'direction: {analytic!r} (compiled) vs {numeric!r} '
                                     f'(differences)')
        if 'fwd' in modes:
            try:
                _, tangent = jvp(f, fresh(args), tangents)
            except unavailable as e:
                if required('fwd', 1):
                    raise NotImplementedError(
                        f"check_grads(modes=('fwd',)): the forward mode of {name} wrt {where} "
                        f"is not available: {e}. Pass modes=('rev',).") from e
            else:
                analytic = float(np.sum(tangent))
                if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
                    raise AssertionError(f'first derivative (forward mode) of {name} wrt '
                                         f'{where} along a random direction: {analytic!r} '
                                         f'(compiled) vs {numeric!r} (differences)')
        if order < 2:
            continue
        plus, minus = grad_k(*fresh(moved(k, v, eps))), grad_k(*fresh(moved(k, v, -eps)))
        products = []
        if 'fwd' in modes:
            try:
                _, hv = jvp(grad_k, fresh(args), tangents)
                products.append(('forward over reverse', hv))
            except unavailable as e:
                if required('fwd', 2):
                    raise NotImplementedError(
                        f'check_grads(order=2): the second derivative of {name} wrt {where} '
                        f'({_describe(arg)}) needs forward over reverse (jvp of its gradient), '
                        f'which is not available: {e}. Pass order=1 to check the first '
                        f'derivative only.') from e
        if 'rev' in modes:
            try:
                _, pullback = vjp(grad_k, *fresh(args))
                products.append(('reverse over reverse', pullback(v)[k]))
            except unavailable as e:
                if required('rev', 2):
                    raise NotImplementedError(
                        f'check_grads(order=2): the second derivative of {name} wrt {where} '
                        f'({_describe(arg)}) needs reverse over reverse (vjp of its gradient), '
                        f'which is not available: {e}. Pass order=1, or modes=("fwd",).') from e
        for how, hv in products:
            hv = _zeros_where_symbolic(hv, arg)
            _assert_structure(arg, hv, f'the Hessian-vector product ({how}) of {name} wrt {where}')
            for path, _ in float_leaves(arg):
                numeric2 = (np.asarray(leaf_at(plus, path), dtype=np.float64) -
                            np.asarray(leaf_at(minus, path), dtype=np.float64)) / (2 * eps)
                compiled = leaf_at(hv, path)
                numeric2 = float(numeric2) if numeric2.ndim == 0 else numeric2
                if not np.allclose(compiled, numeric2, rtol=100 * rtol, atol=100 * atol):
                    raise AssertionError(f'second derivative of {name} wrt {where}{_at(path)} '
                                         f'({how}): {compiled!r} (compiled) vs {numeric2!r} '
                                         f'(differences)')


def _assert_structure(arg, value, what):
    message = mismatch_message(arg, value, what)
    if message is not None:
        raise AssertionError(message)
