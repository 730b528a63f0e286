"""Finite-difference checks along random directions, shared by the test suites."""
from __future__ import annotations

import copy
import zlib

import numpy as np


def seed_of(name: str) -> int:
    """A random seed fixed by a test's name (`hash` changes from process to process)."""
    return zlib.crc32(name.encode())


def perturb(value, direction, eps):
    if isinstance(value, float):
        return value + eps * direction
    if isinstance(value, (list, tuple)):
        return type(value)(perturb(v, d, eps) for v, d in zip(value, direction))
    return value + eps * direction


def random_direction(value, rng):
    if isinstance(value, float):
        return float(rng.standard_normal())
    if isinstance(value, (list, tuple)):
        return type(value)(random_direction(v, rng) for v in value)
    return rng.standard_normal(np.shape(value))


def inner(a, b):
    if isinstance(a, (list, tuple)):
        return sum(inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def numeric_directional(f, args, wrt, directions, eps=1e-6):
    """(f(x + eps v) - f(x - eps v)) / 2 eps, moving the arguments at `wrt` along `directions`."""
    plus, minus = list(args), list(args)
    for i, d in zip(wrt, directions):
        plus[i] = perturb(args[i], d, eps)
        minus[i] = perturb(args[i], d, -eps)
    return (float(np.sum(f(*plus))) - float(np.sum(f(*minus)))) / (2 * eps)


def check_gradient(f, grads, args, wrt, rng, rtol=1e-5, atol=1e-6, trials=2):
    """Assert that `grads` (one per position in `wrt`) agree with central differences."""
    for _ in range(trials):
        directions = [random_direction(args[i], rng) for i in wrt]
        numeric = numeric_directional(f, args, wrt, directions)
        analytic = sum(inner(g, d) for g, d in zip(grads, directions))
        assert np.isclose(analytic, numeric, rtol=rtol, atol=atol), (analytic, numeric)


def checked_against_plain(f, args, wrt, rng):
    """`value_and_grad(f)` at `args`, its value checked against the plain call and its
    gradients against central differences (every call on copies: `f` may write into
    its arguments); the gradients."""
    import tapeflow as tf
    positions = (wrt,) if isinstance(wrt, int) else wrt
    value, grads = tf.value_and_grad(f, argnums=wrt)(*copy.deepcopy(args))
    np.testing.assert_allclose(value, f(*copy.deepcopy(args)), rtol=1e-12)
    listed = (grads,) if isinstance(wrt, int) else grads
    check_gradient(lambda *a: f(*copy.deepcopy(a)), list(listed), args, positions, rng)
    return grads


# ------------------------------------------------------------------ to any order, both modes
# autograd's check, restated for tapeflow: the pullback `vjp(f, x)` against central
# differences through <x_v, vjp(y_v)> = <y_v, df(x)[x_v]>, the tangent `jvp(f, x, v)`
# directly, and at order k the same checks of the functions (x, v) -> vjp(f, x)(v) and
# (x, v) -> jvp(f, x, v) to order k - 1. A point is a pytree of floats and real or
# complex arrays; complex leaves pair by Re(conj(a) . b), their covector is the conjugate.

def _tree_map(fn, *trees):
    if isinstance(trees[0], (list, tuple)):
        items = [_tree_map(fn, *parts) for parts in zip(*trees)]
        return type(trees[0])(*items) if hasattr(trees[0], '_fields') else type(trees[0])(items)
    return fn(*trees)


def _tree_leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _tree_leaves(item)]
    return [tree]


def _tree_random(tree, rng):
    def leaf(a):
        shape, real = np.shape(a), rng.standard_normal(np.shape(a))
        if np.iscomplexobj(a):
            return real + 1j * rng.standard_normal(shape)
        return float(real) if isinstance(a, float) else real
    return _tree_map(leaf, tree)


def _tree_inner(a, b):
    return sum(float(np.real(np.sum(np.conj(np.asarray(x)) * np.asarray(y))))
               for x, y in zip(_tree_leaves(a), _tree_leaves(b)))


def _tree_conj(tree):
    return _tree_map(lambda a: np.conj(a) if np.iscomplexobj(a) else a, tree)


def _tree_axpy(x, a, v):
    return _tree_map(lambda p, q: p + a * q, x, v)


def vjp_function(f):
    """(x, v) -> the pullback of f at x applied to v (compiled code calls `vjp`)."""
    import tapeflow as tf

    def vjp_f(x, v):
        out, pullback = tf.vjp(f, x)
        return pullback(v)[0]

    def packed(p):
        return vjp_f(p[0], p[1])
    return packed


def jvp_function(f):
    """(x, v) -> the tangent of f at x along v."""
    import tapeflow as tf

    def jvp_f(x, v):
        out, tangent = tf.jvp(f, (x,), (v,))
        return tangent

    def packed(p):
        return jvp_f(p[0], p[1])
    return packed


def _close(a, b, rtol, atol):
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def check_grads(f, x, rng, order=2, modes=('fwd', 'rev'), eps=1e-6, rtol=1e-4, atol=1e-6,
                what='f'):
    """Assert that the derivatives of `f` at `x` agree with central differences, to
    `order`, in forward mode and reverse mode."""
    import tapeflow as tf
    y = f(x)

    def numeric(v):
        return _tree_map(lambda p, m: (p - m) / (2 * eps), f(_tree_axpy(x, eps, v)),
                         f(_tree_axpy(x, -eps, v)))
    if 'rev' in modes:
        out, pullback = tf.vjp(f, x)
        x_v, y_v = _tree_random(x, rng), _tree_random(y, rng)
        got = _tree_conj(pullback(_tree_conj(y_v))[0])
        exact, approx = _tree_inner(x_v, got), _tree_inner(y_v, numeric(x_v))
        assert _close(exact, approx, rtol, atol), \
            f'{what}: reverse mode {exact!r}, finite differences {approx!r}'
    if 'fwd' in modes:
        x_v = _tree_random(x, rng)
        _, tangent = tf.jvp(f, (x,), (x_v,))
        w = _tree_random(y, rng)
        exact, approx = _tree_inner(w, tangent), _tree_inner(w, numeric(x_v))
        assert _close(exact, approx, rtol, atol), \
            f'{what}: forward mode {exact!r}, finite differences {approx!r}'
    if order > 1:
        if 'rev' in modes:
            v = _tree_random(y, rng)
            check_grads(vjp_function(f), (x, v), rng, order - 1, modes, eps, rtol, atol,
                        f'vjp({what})')
        if 'fwd' in modes:
            v = _tree_random(x, rng)
            check_grads(jvp_function(f), (x, v), rng, order - 1, modes, eps, rtol, atol,
                        f'jvp({what})')


def exact_to_second_order(f, x):
    """`f`'s value against the plain call's, its gradient against central differences and
    forward mode, and its Hessian against differences of the gradient, at `x`."""
    checked_against_plain(f, [x.copy()], 0, np.random.default_rng(seed_of(f.__name__)))
    check_grads(f, x.copy(), np.random.default_rng(seed_of(f.__name__) + 1), order=1)
    hessian_against_differences(f, x)


def hessian_against_differences(f, x):
    """tf.hessian of `f` at `x` against central differences of its gradient."""
    import tapeflow as tf
    grad, eps = tf.grad(f), 1e-5
    numeric = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps)
                        for e in np.eye(len(x))])
    np.testing.assert_allclose(tf.hessian(f)(x.copy()), numeric, rtol=1e-4, atol=1e-6)


def line_of(fn, text):
    """The line of `fn`'s source file holding `text` (the first, inside `fn`)."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)
