"""The njit twins of the runtime helpers the native combined function calls (`TWINS`):
each computes what its helper computes, for the argument kinds it accepts (Numba
refuses the others when it types the code, which `runtime.native` tells at the
user's line). `numba()` imports Numba, and only when asked for.
"""
from __future__ import annotations

import inspect

import numpy as np

from tapeflow.errors import TapeflowError

__all__ = ['TWINS', 'TYPERS', 'numba', 'ready']


def numba():
    """The numba module, or an error saying how to install it."""
    try:
        import numba as module
    except ImportError as error:
        raise TapeflowError("compile='numba' needs Numba, which is not installed: "
                            "pip install 'tapeflow[numba]' (or use compile='python')") from error
    return module


# ------------------------------------------------------------------ twins of the helpers
# Each twin: the Python function generated code calls, and Numba's implementation of
# it for the argument types it accepts (`TYPERS[twin](*numba types)`: the function to
# compile, or None); other types are a typing error, told at the user's line (never a
# different number). Arrays are accepted of float64 only: the helpers keep `x`'s dtype.

def _arrays(*types, ndim=None):
    return all(hasattr(t, 'ndim') and str(t.dtype) == 'float64' and
               (ndim is None or t.ndim == ndim) for t in types)


def _number(t):
    return not hasattr(t, 'ndim') and str(t) in ('float64', 'int64')


def grad_of_sum(g, x, axis=None):
    """`rules.numpy_reductions.grad_of_sum`: `g` in `x`'s shape, of a whole-array sum
    or of a sum along one axis."""
    raise NotImplementedError('compiled by Numba only (`_sum_typer`)')


def _spread_whole(g, x, axis=None):
    return np.full(x.shape, g)


def _spread_along(g, x, axis=None):
    out = np.empty(x.shape)
    out[...] = np.expand_dims(g, axis)
    return out


def _sum_typer(g, x, axis=None):
    if not _arrays(x):
        return None
    if _number(g) and (axis is None or _absent(axis)):
        return _spread_whole
    if _arrays(g) and g.ndim == x.ndim - 1 and _integer(axis):
        return _spread_along
    return None


def _integer(t):
    return str(t) == 'int64' or str(t).startswith('Literal[int]')


def _absent(t):
    return t.__class__.__name__ in ('Omitted', 'NoneType')


def add_adjoint(a, b):
    """`runtime.helpers.add_adjoint` of two numbers or two float64 arrays: `a + b`."""
    return a + b


def like_layout(value, like):
    """`rules.write_checks.like_layout`: what `like <op>= v` wrote, as a new array in
    `like`'s layout; of numbers, and of float64 arrays both in C order (what Numba's
    arithmetic makes), `value` itself, as NumPy's strides agree there."""
    return value


def broadcast_tangent(t, ans):
    """`rules.shapes.broadcast_tangent`: the tangent `t` in the shape of `ans` (numbers;
    float64 arrays, `t` a number or an array that broadcasts to `ans`)."""
    raise NotImplementedError('compiled by Numba only (`_broadcast_typer`)')


def _tangent_as_is(t, ans):
    return t


def _tangent_spread(t, ans):
    out = np.empty(ans.shape)
    out[...] = t
    return out


def _broadcast_typer(t, ans):
    if _number(t) and _number(ans):
        return _tangent_as_is
    if _arrays(ans) and (_number(t) or _arrays(t) and t.ndim <= ans.ndim):
        return _tangent_spread
    return None


def zeros_like_adjoint(x):
    """The symbolic zero 0.0 as the adjoint of `x`: 0.0 for a number, zeros of its
    shape for a float64 array (what Numba can add arrays to)."""
    raise NotImplementedError('compiled by Numba only (`_zeros_typer`)')


def _zero_number(x):
    return 0.0


def _zeros_of(x):
    return np.zeros(x.shape)


def _zeros_typer(x):
    return _zero_number if _number(x) else _zeros_of if _arrays(x) else None


def untake(g, x, idx):
    """`rules.indexing.untake` of a float64 array and a basic index (ints, slices,
    None): zeros in `x`'s shape, `g` written at `idx`."""
    out = np.zeros(x.shape)
    out[idx] = g
    return out


def _basic_index(idx):
    parts = idx.types if hasattr(idx, 'types') else (idx,)
    return all(str(t) == 'none' or _integer(t) or str(t).startswith('slice') for t in parts)


def grad_of_mean(g, x):
    """`rules.numpy_reductions.grad_of_mean` of a whole-array mean: `g / x.size` in `x`'s
    shape."""
    return np.full(x.shape, g / x.size)


def uniform_sum(g, x):
    """`rules.reduced_cotangents.uniform_sum`, as the array `grad_of_sum` gives (the same
    numbers: the NumPy path keeps `g` a number only where that changes none)."""
    return np.full(x.shape, g)


def uniform_mean(g, x):
    """`rules.reduced_cotangents.uniform_mean`, as an array (see `uniform_sum`)."""
    return np.full(x.shape, g / x.size)


def grad_of_matmul_a(g, a, b):
    """`rules.operators.grad_of_matmul_a` of 1-D and 2-D operands, as it computes them:
    `g @ b.T`, `outer(g, b)` (b one axis), `b @ g` (a one axis), `g * b` (both)."""
    raise NotImplementedError('compiled by Numba only (`_matmul_typer`)')


def grad_of_matmul_b(g, a, b):
    """`rules.operators.grad_of_matmul_b` of 1-D and 2-D operands: `a.T @ g`, `g @ a`
    (b one axis), `outer(a, g)` (a one axis), `g * a` (both)."""
    raise NotImplementedError('compiled by Numba only (`_matmul_typer`)')


def _g_at_bt(g, a, b):
    return g @ b.T


def _outer_g_b(g, a, b):
    return np.outer(g, b)


def _b_at_g(g, a, b):
    return b @ g


def _g_times_b(g, a, b):
    return g * b


def _at_at_g(g, a, b):
    return a.T @ g


def _g_at_a(g, a, b):
    return g @ a


def _outer_a_g(g, a, b):
    return np.outer(a, g)


def _g_times_a(g, a, b):
    return g * a


def _matmul_typer(by_ndim, both_vectors):
    """The typer of a matrix product's cotangent helper: its twin by the operands' axes
    (`by_ndim`: (a.ndim, b.ndim) -> twin), `both_vectors` for two 1-D operands."""
    def typer(g, a, b):
        if not (_arrays(a, b) and a.ndim in (1, 2) and b.ndim in (1, 2)):
            return None
        if a.ndim == 1 and b.ndim == 1:
            return both_vectors if _number(g) else None
        return by_ndim[a.ndim, b.ndim] if _arrays(g, ndim=a.ndim + b.ndim - 2) else None
    return typer


def unbroadcast(g, x):
    """`rules.shapes.unbroadcast`: `g` summed down to `x`'s shape (numbers; float64 arrays
    of one to three axes, `x` of as many, or of one where `g` has two)."""
    raise NotImplementedError('compiled by Numba only (`_unbroadcast_typer`)')


def fit(g, x):
    """`rules.shapes.fit`: of numbers and float64 arrays, `unbroadcast` (no complex part to
    drop, no list to rebuild)."""
    raise NotImplementedError('compiled by Numba only (`_unbroadcast_typer`)')


def _same(g, x):
    return g


def _summed(g, x):
    return g.sum()


def _to_rows(g, x):          # x one axis, g two: the leading axis summed first
    rows = g.sum(axis=0)
    if rows.shape[0] == x.shape[0] or x.shape[0] != 1:
        return rows
    return np.full(1, rows.sum())


def _to_shape_1(g, x):
    if g.shape[0] == x.shape[0] or x.shape[0] != 1:
        return g
    return np.full(1, g.sum())


def _to_shape_3(g, x):
    if g.shape == x.shape:
        return g
    if x.shape[0] == 1 and g.shape[0] != 1:
        g = g.sum(axis=0).reshape((1, g.shape[1], g.shape[2]))
    if x.shape[1] == 1 and g.shape[1] != 1:
        g = g.sum(axis=1).reshape((g.shape[0], 1, g.shape[2]))
    if x.shape[2] == 1 and g.shape[2] != 1:
        g = g.sum(axis=2).reshape((g.shape[0], g.shape[1], 1))
    return g


def _to_shape_2(g, x):
    if g.shape == x.shape:
        return g
    if x.shape[0] == 1 and g.shape[0] != 1:
        g = g.sum(axis=0).reshape((1, g.shape[1]))
    if x.shape[1] == 1 and g.shape[1] != 1:
        g = g.sum(axis=1).reshape((g.shape[0], 1))
    return g


def _unbroadcast_typer(g, x):
    if _number(g) and _number(x):
        return _same
    if _arrays(g) and _number(x):
        return _summed
    if _arrays(g, x) and g.ndim == x.ndim:
        return {1: _to_shape_1, 2: _to_shape_2, 3: _to_shape_3}.get(g.ndim)
    if _arrays(g, ndim=2) and _arrays(x, ndim=1):
        return _to_rows
    return None


def float64_array(x):
    """Nothing for a float64 array, a typing error for another (`native_loops`' loops)."""
    return None


def reversed_range(r):
    """`reversed(r)` of a range, as a range (what Numba iterates; `transforms.native`
    writes `reversed(r)` so)."""
    return range(r.start + (len(r) - 1) * r.step, r.start - r.step, -r.step)


def _when(accepts):
    return lambda twin: lambda *types: twin if accepts(*types) else None


TYPERS = {
    grad_of_sum: lambda twin: _sum_typer,
    add_adjoint: _when(lambda a, b: (_number(a) and _number(b)) or
                       (_arrays(a, b) and a.ndim == b.ndim)),
    like_layout: _when(lambda value, like: (_number(value) and _number(like)) or
                       (_arrays(value, like) and value.ndim == like.ndim and
                        value.layout == like.layout == 'C')),
    untake: _when(lambda g, x, idx: _arrays(x) and (_number(g) or _arrays(g)) and
                  _basic_index(idx)),
    grad_of_mean: _when(lambda g, x: _arrays(x) and _number(g)),
    uniform_sum: _when(lambda g, x: _arrays(x) and _number(g)),
    uniform_mean: _when(lambda g, x: _arrays(x) and _number(g)),
    grad_of_matmul_a: lambda twin: _matmul_typer(
        {(2, 2): _g_at_bt, (2, 1): _outer_g_b, (1, 2): _b_at_g}, _g_times_b),
    grad_of_matmul_b: lambda twin: _matmul_typer(
        {(2, 2): _at_at_g, (2, 1): _g_at_a, (1, 2): _outer_a_g}, _g_times_a),
    unbroadcast: lambda twin: _unbroadcast_typer,
    fit: lambda twin: _unbroadcast_typer,
    zeros_like_adjoint: lambda twin: _zeros_typer,
    broadcast_tangent: lambda twin: _broadcast_typer,
    reversed_range: _when(lambda r: str(r).startswith('range_state')),
    float64_array: _when(lambda x: _arrays(x)),
}
TWINS = frozenset(f.__name__ for f in TYPERS)
_registered: list = []


def _register_twins():
    """Numba's implementation of each twin, for the types it accepts."""
    from numba.extending import overload
    for twin, typer_of in TYPERS.items():
        typer = typer_of(twin)
        typer.__signature__ = inspect.signature(twin)     # Numba checks the two agree
        overload(twin)(typer)
    _registered.append(True)


def ready():
    """Numba imported and the twins' types registered, before anything compiles."""
    numba()
    if not _registered:
        _register_twins()
