"""autograd's `check_grads` and `combo_check`, with tapeflow computing the derivatives.

The check is autograd's, restated: for the function of the arguments at
`argnum`, the reverse-mode pullback `vjp(f, x)` is compared with central
differences through <x_v, vjp(y_v)> = <y_v, df(x)[x_v]> along random
directions, the forward mode `jvp(f, x, v)` directly, and at order 2 both
checks are repeated on the function (x, v) -> vjp(f, x)(v) (and
(x, v) -> jvp(f, x, v)). Vector spaces are autograd's: a complex array's
inner product is Re(conj(a) . b) and its covector is the conjugate.

tapeflow reads a function's source, so the functions this module hands to
tapeflow (the argument-fixing wrappers and the (x, v) functions of order 2)
are written as source into a module of their own (`_wrappers`), one per
calling pattern, rather than built with *args closures.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile

import numpy as np

import tapeflow as tf

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6

__all__ = ['check_grads', 'combo_check', 'scalar_close']


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


# ------------------------------------------------------------------ vector spaces

def _children(x):
    if isinstance(x, (tuple, list)):
        return list(x)
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return None


def _rebuild(like, values):
    if isinstance(like, dict):
        return dict(zip(sorted(like), values))
    if hasattr(like, '_fields'):
        return type(like)(*values)
    return type(like)(values)


def _map(fn, *trees):
    kids = _children(trees[0])
    if kids is None:
        return fn(*trees)
    return _rebuild(trees[0], [_map(fn, *parts) for parts in zip(*(_children(t) for t in trees))])


def _leaves(tree):
    kids = _children(tree)
    if kids is None:
        return [tree]
    return [leaf for kid in kids for leaf in _leaves(kid)]


def _randn(x):
    def leaf(a):
        a = np.asarray(a)
        if np.iscomplexobj(a):
            return (np.array(np.random.randn(*a.shape)).astype(a.dtype)
                    + 1j * np.array(np.random.randn(*a.shape)).astype(a.dtype))
        return np.array(np.random.randn(*a.shape)).astype(a.dtype)
    return _map(leaf, x)


def _inner(x, y):
    total = 0.0
    for a, b in zip(_leaves(x), _leaves(y)):
        a, b = np.asarray(a), np.asarray(b)
        if np.iscomplexobj(a):
            total += np.real(np.dot(np.conj(np.ravel(a)), np.ravel(b)))
        else:
            total += np.dot(np.ravel(a), np.ravel(np.real(b) if np.iscomplexobj(b) else b))
    return total


def _covector(x):
    return _map(lambda a: np.conj(a) if np.iscomplexobj(a) else a, x)


def _add(x, y):
    return _map(lambda a, b: a + b, x, y)


def _scale(x, c):
    return _map(lambda a: a * c, x)


def _same_space(x, y):
    """autograd's `vspace(x) == vspace(y)`: structure, shapes and dtype kinds."""
    kx, ky = _children(x), _children(y)
    if (kx is None) != (ky is None):
        return False
    if kx is not None:
        return type(x) is type(y) and len(kx) == len(ky) and all(map(_same_space, kx, ky))
    ax, ay = np.asarray(x), np.asarray(y)
    return ax.shape == ay.shape and np.iscomplexobj(ax) == np.iscomplexobj(ay)


def _numerical_jvp(f, x):
    def jvp(v):
        plus = f(_add(x, _scale(v, EPS / 2)))
        minus = f(_add(x, _scale(v, -EPS / 2)))
        return _scale(_add(plus, _scale(minus, -1.0)), 1.0 / EPS)
    return jvp


# ------------------------------------------------------------------ the functions tapeflow reads

_MODULE_DIR = tempfile.mkdtemp(prefix='tapeflow-autograd-shim-')
_makers = {}


def _maker(name, source):
    """The function `make` of a module written from `source` (cached by `name`)."""
    if name not in _makers:
        path = os.path.join(_MODULE_DIR, f'_wrappers_{len(_makers)}.py')
        with open(path, 'w') as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(f'_wrappers_{len(_makers)}', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _makers[name] = module.make
    return _makers[name]


def _unary(fun, argnum, args, kwargs):
    """f(x) = fun(*args with x at argnum, **kwargs), as a def tapeflow can read."""
    import functools
    while isinstance(fun, functools.partial):
        if isinstance(argnum, int):
            argnum = argnum + len(fun.args)
        else:
            argnum = tuple(i + len(fun.args) for i in argnum)
        args = tuple(fun.args) + tuple(args)
        kwargs = {**fun.keywords, **kwargs}
        fun = fun.func
    slots = {argnum: 'x'} if isinstance(argnum, int) else \
        {i: f'x[{k}]' for k, i in enumerate(argnum)}
    parts = [slots.get(i, f'args[{i}]') for i in range(len(args))]
    parts += [f'{k}=kwargs[{k!r}]' for k in kwargs]
    call = ', '.join(parts)
    key = ('unary', call)
    make = _maker(key, f'def make(fun, args, kwargs):\n'
                       f'    def unary(x):\n'
                       f'        return fun({call})\n'
                       f'    return unary\n')
    return make(fun, args, kwargs)


def _vjp_of(f):
    """(x, v) -> the pullback of f at x applied to v."""
    make = _maker('vjp', 'import tapeflow as tf\n\n'
                         'def make(f):\n'
                         '    def vjp_f(x, v):\n'
                         '        out, pullback = tf.vjp(f, x)\n'
                         '        return pullback(v)[0]\n'
                         '    return vjp_f\n')
    return make(f)


def _jvp_of(f):
    """(x, v) -> the tangent of f at x along v."""
    make = _maker('jvp', 'import tapeflow as tf\n\n'
                         'def make(f):\n'
                         '    def jvp_f(x, v):\n'
                         '        out, tangent = tf.jvp(f, (x,), (v,))\n'
                         '        return tangent\n'
                         '    return jvp_f\n')
    return make(f)


# ------------------------------------------------------------------ the checks

def check_vjp(f, x):
    y, pullback = tf.vjp(f, x)
    jvp = _numerical_jvp(f, x)
    x_v, y_v = _randn(x), _randn(y)
    vjp_y = _covector(pullback(_covector(y_v))[0])
    assert _same_space(vjp_y, x), f'VJP has the wrong space: {vjp_y!r} for {x!r}'
    exact = _inner(x_v, vjp_y)
    numeric = _inner(y_v, jvp(x_v))
    assert scalar_close(numeric, exact), (
        f'Derivative (VJP) check failed with arg {x}:\nanalytic: {exact}\nnumeric:  {numeric}')


def check_jvp(f, x):
    x_v = _randn(x)
    _, tangent = tf.jvp(f, (x,), (x_v,))
    numeric = _numerical_jvp(f, x)(x_v)
    assert _same_space(tangent, numeric), f'JVP has the wrong space: {tangent!r} for {numeric!r}'
    v = _randn(tangent)
    assert scalar_close(_inner(tangent, v), _inner(numeric, v)), (
        f'Value mismatch:\nx: {tangent}\ny: {numeric}')


def _check(f, x, modes, order):
    if 'fwd' in modes:
        check_jvp(f, x)
        if order > 1:
            g = _jvp_of(f)
            v = _randn(x)
            _check(_unary(g, (0, 1), (x, v), {}), (x, v), modes, order - 1)
    if 'rev' in modes:
        check_vjp(f, x)
        if order > 1:
            g = _vjp_of(f)
            v = _randn(f(x))
            _check(_unary(g, (0, 1), (x, v), {}), (x, v), modes, order - 1)


def check_grads(fun, argnum=0, modes=None, order=2):
    if modes is None:
        modes = ['fwd', 'rev']

    def nary(*args, **kwargs):
        x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
        _check(_unary(fun, argnum, args, kwargs), x, modes, order)
    return nary


def combo_check(fun, *args, **kwargs):
    def _combo(*arg_lists, **kwarg_lists):
        pairs = [[(k, v) for v in vs] for k, vs in kwarg_lists.items()]
        for _args in itertools.product(*arg_lists):
            for _kwargs in itertools.product(*pairs):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))
    return _combo
