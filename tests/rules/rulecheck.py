"""A numerical checker for derivative rules, driven by a spec table.

A `Spec` names a primitive, its arguments and keyword arguments. Arguments are
either constants or markers of differentiable inputs:

    A(shape, lo, hi)      a random float64 array (A(value=...) for a fixed one)
    F(lo, hi)             a random Python float
    L(A(...), F(...))     a list (or `tuple_=True`: a tuple; `tuple_=SomeNamedTuple`:
                          one of those) of such inputs

For every differentiable argument `check` compares, along random directions:

* the JVP rule with central finite differences (and its shape with the output's);
* the VJP rule with finite differences through <vjp(u), v> = <u, df(v)>,
  and with the JVP through <vjp(u), v> = <u, jvp(v)>;
* the cotangent's structure: the argument's shape, a float for a Python float,
  a list for a list; float32 in, float32 cotangent out;
* the same rules run on `FakeTensor`s (objects that, like tapeflow's Tensors,
  dispatch NumPy through __array_ufunc__/__array_function__ and refuse
  np.asarray): same results, and every NumPy function the rule called on them
  has a rule itself, so the eager tape can differentiate the rule again.

Inputs are read-only arrays, so a rule that mutates its arguments fails.
The pairing is Re(sum(a * b)) over all leaves (bilinear, as autograd's).
"""
from __future__ import annotations

import dataclasses
import operator
import zlib
from typing import Any

import numpy as np

from tapeflow.rules.sequences import Items

from tapeflow.rules import RULES
from tapeflow.rules.registry import ATTRIBUTES, METHODS, load_lazily, lookup

load_lazily()               # the spec table reads the whole rule table, SciPy's too


# ---------------------------------------------------------------- markers

@dataclasses.dataclass
class A:
    shape: tuple = ()
    lo: float = -2.0
    hi: float = 2.0
    value: Any = None
    complex_: bool = False


@dataclasses.dataclass
class F:
    lo: float = -2.0
    hi: float = 2.0
    value: float | None = None


@dataclasses.dataclass
class L:
    items: tuple
    tuple_: bool = False

    def __init__(self, *items, tuple_=False):
        self.items, self.tuple_ = items, tuple_


@dataclasses.dataclass
class Spec:
    fn: Any
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    name: str = ''
    rtol: float = 1e-5
    atol: float = 1e-7
    eps: float = 1e-6
    f32: bool = True
    tensor: bool = True
    second: bool = True             # also check second order (False at a kink)
    wrt: tuple | None = None        # argnums to check (default: every marker)

    @property
    def id(self):
        return self.name or getattr(self.fn, '__name__', repr(self.fn))


def _is_marker(x):
    return isinstance(x, (A, F, L))


# ---------------------------------------------------------------- values and structure

def realize(marker, rng):
    if isinstance(marker, A):
        if marker.value is not None:
            return np.array(marker.value, dtype=float)
        x = rng.uniform(marker.lo, marker.hi, marker.shape)
        if marker.complex_:
            x = x + 1j * rng.uniform(marker.lo, marker.hi, marker.shape)
        return np.asarray(x)
    if isinstance(marker, F):
        value = marker.value if marker.value is not None else rng.uniform(marker.lo, marker.hi)
        return float(value)
    if isinstance(marker, L):
        items = [realize(m, rng) for m in marker.items]
        if isinstance(marker.tuple_, type):
            return marker.tuple_(*items)
        return tuple(items) if marker.tuple_ else items
    return marker


def leaves(x):
    """The arrays (and scalars) of a (nested) structure, as complex-or-real arrays."""
    if isinstance(x, (list, tuple, Items)):
        return [leaf for item in x for leaf in leaves(item)]
    if x is None:
        return []
    return [np.asarray(x)]


def like(x, make):
    """A structure like `x` whose leaves are `make(leaf)`."""
    if isinstance(x, (list, tuple)):
        return type(x)(like(item, make) for item in x) if not hasattr(x, '_fields') \
            else tuple(like(item, make) for item in x)
    if isinstance(x, float):
        return float(np.real(make(np.asarray(x))))
    return make(np.asarray(x))


def random_like(x, rng, dtype=None):
    def make(leaf):
        r = rng.standard_normal(leaf.shape)
        if np.iscomplexobj(leaf):
            r = r + 1j * rng.standard_normal(leaf.shape)
        return np.asarray(r.astype(dtype or r.dtype))
    return like(x, make)


def _remake(x, items):
    """A sequence of `x`'s type (a NamedTuple's too) holding `items`."""
    return type(x)(*items) if hasattr(x, '_fields') else type(x)(items)


def add(x, v, h):
    if isinstance(x, (list, tuple)):
        return _remake(x, [add(a, b, h) for a, b in zip(x, v)])
    if isinstance(x, float):
        return x + h * v
    return x + h * v


def scale(x, c):
    return like(x, lambda leaf: leaf * c)


def pair(a, b):
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb), (len(la), len(lb))
    return sum(float(np.real(np.sum(p * q))) for p, q in zip(la, lb))


def readonly(x):
    if isinstance(x, np.ndarray):
        x = x.copy()
        x.setflags(write=False)
        return x
    if isinstance(x, list):
        return [readonly(i) for i in x]
    if isinstance(x, tuple) and not hasattr(x, '_fields'):
        return tuple(readonly(i) for i in x)
    return x


def close(actual, expected, rtol, atol, what):
    la, le = leaves(actual), leaves(expected)
    assert len(la) == len(le), f'{what}: {len(la)} leaves, expected {len(le)}'
    for a, e in zip(la, le):
        assert a.shape == e.shape, f'{what}: shape {a.shape}, expected {e.shape}'
        scale_ = float(np.max(np.abs(e))) if e.size else 0.0
        err = float(np.max(np.abs(a - e))) if e.size else 0.0
        assert err <= atol + rtol * scale_, f'{what}: error {err:.3g} (scale {scale_:.3g})'


def scalar_close(a, b, rtol, atol, what):
    assert abs(a - b) <= atol + rtol * max(abs(a), abs(b), 1.0), f'{what}: {a!r} vs {b!r}'


# ---------------------------------------------------------------- fake Tensors

class FakeTensor(np.lib.mixins.NDArrayOperatorsMixin):
    """A stand-in for tapeflow's Tensor: dispatches NumPy, refuses unwrapping."""

    __tapeflow_tensor__ = True      # records what it is given, as Tensor does
    called: set = set()

    def __init__(self, value):
        self.value = np.asarray(value)

    def __array__(self, *args, **kwargs):
        raise TypeError('a rule converted a Tensor with np.asarray/np.array')

    def __float__(self):
        raise TypeError('a rule converted a Tensor to float')

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != '__call__' or 'out' in kwargs:
            raise TypeError(f'a rule called {ufunc.__name__}.{method} / out= on a Tensor')
        FakeTensor.called.add(ufunc)
        return wrap(ufunc(*unwrap(inputs), **unwrap(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        FakeTensor.called.add(func)
        return wrap(func(*unwrap(args), **unwrap(kwargs)))

    def __getitem__(self, idx):
        FakeTensor.called.add(operator.getitem)
        return wrap(self.value[unwrap(idx)])

    def __len__(self):
        return len(self.value)

    def __bool__(self):
        return bool(self.value)

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)

    @property
    def T(self):
        FakeTensor.called.add(ATTRIBUTES['T'])
        return wrap(self.value.T)

    def _method(self, name, *args, **kwargs):
        FakeTensor.called.add(METHODS[name][0])
        return wrap(getattr(self.value, name)(*unwrap(args), **unwrap(kwargs)))

    def sum(self, *a, **k): return self._method('sum', *a, **k)
    def reshape(self, *a, **k): return self._method('reshape', *a, **k)
    def astype(self, *a, **k): return self._method('astype', *a, **k)


def wrap(x):
    if isinstance(x, (np.ndarray, np.generic)):
        return FakeTensor(x)
    if isinstance(x, list):
        return [wrap(i) for i in x]
    if isinstance(x, tuple):
        return _remake(x, [wrap(i) for i in x])
    return x


def unwrap(x):
    if isinstance(x, FakeTensor):
        return x.value
    if isinstance(x, (list, Items)):
        return [unwrap(i) for i in x]
    if isinstance(x, tuple):
        return tuple(unwrap(i) for i in x)
    if isinstance(x, dict):
        return {k: unwrap(v) for k, v in x.items()}
    return x


def wrap_arrays(x):
    """Wrap the arrays of a structure, leave Python floats alone."""
    if isinstance(x, np.ndarray):
        return FakeTensor(x)
    if isinstance(x, list):
        return [wrap_arrays(i) for i in x]
    if isinstance(x, tuple):
        return _remake(x, [wrap_arrays(i) for i in x])
    return x


# ---------------------------------------------------------------- the check

def _float32(x):
    if isinstance(x, tuple) and hasattr(x, '_fields'):       # an argument of its own type
        return _remake(x, [_float32(i) for i in x])

    def make(leaf):
        return leaf.astype(np.complex64 if np.iscomplexobj(leaf) else np.float32)
    if isinstance(x, float):
        return x
    return like(x, make)


def _structure_matches(cot, arg, what):
    if isinstance(arg, list) and isinstance(cot, Items):
        cot = list(cot)                     # a list's cotangent in sparse form
    if isinstance(arg, (list, tuple)):
        assert isinstance(cot, type(arg)), \
            f'{what}: cotangent {type(cot).__name__} of a {type(arg).__name__}'
        assert len(cot) == len(arg), f'{what}: {len(cot)} cotangents for {len(arg)} items'
        for c, a in zip(cot, arg):
            _structure_matches(c, a, what)
    elif isinstance(arg, float):
        assert isinstance(cot, float), \
            f'{what}: cotangent of a Python float is {type(cot).__name__}'
    else:
        assert np.shape(cot) == np.shape(arg), \
            f'{what}: cotangent shape {np.shape(cot)}, argument {np.shape(arg)}'


def _dtype_is_32(cot, arg, what):
    if isinstance(arg, (list, tuple)):
        for c, a in zip(cot, arg):
            _dtype_is_32(c, a, what)
    elif not isinstance(arg, float):
        expected = np.complex64 if np.iscomplexobj(arg) else np.float32
        dtype = np.asarray(cot).dtype
        assert dtype == expected, f'{what}: float32 input, cotangent dtype {dtype}'


def check(spec: Spec):
    rng = np.random.default_rng(zlib.crc32(spec.id.encode()))
    entry = RULES[spec.fn]
    args = [readonly(realize(a, rng)) for a in spec.args]
    kwargs = spec.kwargs
    ans = readonly(spec.fn(*args, **kwargs))
    argnums = spec.wrt if spec.wrt is not None else \
        [i for i, a in enumerate(spec.args) if _is_marker(a)]
    assert argnums, f'{spec.id}: nothing to differentiate'
    u = readonly(random_like(ans, rng))
    for i in argnums:
        what = f'{spec.id} arg {i}'
        v = readonly(random_like(args[i], rng) if not isinstance(args[i], float)
                     else float(rng.standard_normal()))

        def moved(h):
            shifted = list(args)
            shifted[i] = add(args[i], v, h)
            return spec.fn(*shifted, **kwargs)
        fd = [(p - m) / (2 * spec.eps)
              for p, m in zip(leaves(moved(spec.eps)), leaves(moved(-spec.eps)))]

        jvp = entry.jvp(i)(v, ans, *args, **kwargs)
        close(leaves(jvp), fd, spec.rtol, spec.atol, f'{what}: JVP vs finite differences')
        vjp = entry.vjp(i)(u, ans, *args, **kwargs)
        _structure_matches(vjp, args[i], what)
        lhs = pair(vjp, v)
        scalar_close(lhs, pair(leaves(u), fd), spec.rtol, spec.atol * 10,
                     f'{what}: <vjp(u), v> vs <u, finite differences>')
        scalar_close(lhs, pair(u, jvp), 1e-9, 1e-12, f'{what}: <vjp(u), v> vs <u, jvp(v)>')

        if spec.f32 and not any(np.iscomplexobj(leaf) for leaf in leaves(args[i])):
            args32 = [_float32(a) if _is_marker(m) else a for a, m in zip(args, spec.args)]
            ans32 = spec.fn(*args32, **kwargs)
            u32 = _float32(random_like(ans32, rng))
            cot32 = entry.vjp(i)(u32, ans32, *args32, **kwargs)
            _dtype_is_32(cot32, args32[i], what)

        if spec.tensor:
            FakeTensor.called = set()
            targs = [wrap_arrays(a) if _is_marker(m) else a for a, m in zip(args, spec.args)]
            tjvp = unwrap(entry.jvp(i)(wrap_arrays(v), wrap(ans), *targs, **kwargs))
            tvjp = unwrap(entry.vjp(i)(wrap(u), wrap(ans), *targs, **kwargs))
            close(leaves(tjvp), leaves(jvp), 1e-9, 1e-12, f'{what}: JVP on Tensors')
            close(leaves(tvjp), leaves(vjp), 1e-9, 1e-12, f'{what}: VJP on Tensors')
            missing = [f for f in FakeTensor.called if lookup_rule(f) is None]
            assert not missing, \
                f'{what}: rules called functions without rules on Tensors: {missing}'


def lookup_rule(fn):
    try:
        return lookup(fn)
    except TypeError:
        return None
