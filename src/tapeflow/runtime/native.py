"""The native path's run-time half: Numba, imported here and only when asked for.

`namespace()` is what the native combined function (`transforms.native`) may read:
NumPy, `math`, and the njit twins of the runtime helpers it calls (`TWINS`: each
computes what its helper computes, for the argument kinds it accepts; Numba refuses
the others when it types the code). `Native` is what `compiled.combined` becomes:
the njit function, whose compilation for new argument types (Numba types the whole
function before any of it runs) is told at the user's line when it fails.

`module_file` and `load_file` keep the native function in a module file, where
Numba's disk cache can key on it. `import tapeflow` never imports Numba: `numba()`
does, at the first native compilation.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import os
import re
import sys
import tempfile
import warnings

import numpy as np

from tapeflow.errors import NativeFallbackWarning, TapeflowError, UnsupportedError

__all__ = ['TWINS', 'Native', 'namespace', 'numba']


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
# it for the argument types it accepts (`_TYPERS[twin](*numba types)`: the function to
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
    """`rules.operators.grad_of_matmul_a` of 2-D operands: `g @ b.T`."""
    return g @ b.T


def grad_of_matmul_b(g, a, b):
    """`rules.operators.grad_of_matmul_b` of 2-D operands: `a.T @ g`."""
    return a.T @ g


def unbroadcast(g, x):
    """`rules.shapes.unbroadcast`: `g` summed down to `x`'s shape (numbers; float64 arrays
    of one to three axes, `x` of as many, or of one where `g` has two)."""
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


_TYPERS = {
    grad_of_sum: lambda twin: _sum_typer,
    add_adjoint: _when(lambda a, b: (_number(a) and _number(b)) or
                       (_arrays(a, b) and a.ndim == b.ndim)),
    untake: _when(lambda g, x, idx: _arrays(x) and (_number(g) or _arrays(g)) and
                  _basic_index(idx)),
    grad_of_mean: _when(lambda g, x: _arrays(x) and _number(g)),
    uniform_sum: _when(lambda g, x: _arrays(x) and _number(g)),
    uniform_mean: _when(lambda g, x: _arrays(x) and _number(g)),
    grad_of_matmul_a: _when(lambda g, a, b: _arrays(g, a, b, ndim=2)),
    grad_of_matmul_b: _when(lambda g, a, b: _arrays(g, a, b, ndim=2)),
    unbroadcast: lambda twin: _unbroadcast_typer,
    zeros_like_adjoint: lambda twin: _zeros_typer,
    broadcast_tangent: lambda twin: _broadcast_typer,
    reversed_range: _when(lambda r: str(r).startswith('range_state')),
    float64_array: _when(lambda x: _arrays(x)),
}
TWINS = frozenset(f.__name__ for f in _TYPERS)
_registered: list = []


def _register_twins():
    """Numba's implementation of each twin, for the types it accepts."""
    from numba.extending import overload
    for twin, typer_of in _TYPERS.items():
        typer = typer_of(twin)
        typer.__signature__ = inspect.signature(twin)     # Numba checks the two agree
        overload(twin)(typer)
    _registered.append(True)


def _ready():
    """Numba imported and the twins' types registered, before anything compiles."""
    numba()
    if not _registered:
        _register_twins()


def namespace() -> dict:
    """A fresh namespace for one native module: NumPy, math and the twins."""
    _ready()
    return dict({f.__name__: f for f in _TYPERS}, np=np, math=math)


# ------------------------------------------------------------------ module files

HEADER = (f'"""Generated by tapeflow (compile=\'numba\'); loaded by it, compiled by Numba."""\n'
          f'import math\n\nimport numpy as np\n\n'
          f'from tapeflow.runtime.native import {", ".join(sorted(TWINS))}\n\n\n')


def module_file(text, folder):
    """The module file holding `text` under `folder` (the disk cache's), written once
    (content-addressed: a file's text never changes, so Numba's index of it stays
    valid); None without a folder, or where it cannot be written."""
    if folder is None:
        return None
    body = HEADER + text
    digest = hashlib.sha256(body.encode()).hexdigest()[:24]
    path = os.path.join(folder, 'native', f'tapeflow_native_{digest}.py')
    if os.path.exists(path):
        return path
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix='.tmp')
        with os.fdopen(handle, 'w') as f:
            f.write(body)
        os.replace(temporary, path)
    except OSError:
        return None
    return path


def load_file(path, name):
    """The function `name` of the module file at `path`, and the file's name."""
    _ready()
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = sys.modules.get(module_name)
    if module is None:          # (in sys.modules: Numba's cached code finds its globals there)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
    return getattr(module, name), path


# ------------------------------------------------------------------ the compiled function

_GENERATED_LINE = re.compile(r'File "([^"]*)", line (\d+)')


# What the native function accepts: the values Numba computes with as NumPy does (a
# float32 array would be computed in float64 where NumPy keeps float32).
_SCALARS = (float, int, bool, np.float64, np.int64, np.bool_)
_DTYPES = frozenset({np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)})


class Native:
    """The native combined function: calls the njit `dispatcher`, which compiles only
    after `Native` checked the arguments of a call no compiled version takes (their
    kinds, `_SCALARS` and `_DTYPES`); where Numba cannot compile it, or the arguments
    are of another kind, a located `UnsupportedError` (target 'numba') or, with target
    'auto', one warning and `fallback` (the NumPy path) from then on.

    `filename`, `generated`, `lines`: the user's file, the generated one, and
    {generated line: (user line, column)}; `cache`: Numba keeps the machine code on
    disk (the generated file is a module file, `module_file`).
    """
    __slots__ = ('dispatcher', 'jitted', 'fallback', 'target', 'filename', 'generated',
                 'lines', '__weakref__')

    def __init__(self, function, fallback, target, filename, generated, lines, cache=False):
        self.jitted = numba().njit(cache=cache)(function)
        self.dispatcher = self.first_call     # then `jitted`, which compiles no more itself
        self.fallback, self.target, self.filename = fallback, target, filename
        self.generated, self.lines = generated, lines

    def first_call(self, *args):
        return self.compile_for(args)(*args)

    def __call__(self, *args):
        try:
            return self.dispatcher(*args)
        except TypeError as error:
            if self.dispatcher is self.fallback or 'No matching definition' not in str(error):
                raise
        return self.compile_for(args)(*args)

    def compile_for(self, args):
        """The function to call with `args` (of kinds no compiled version takes): the
        dispatcher compiled for them, or, where that fails, an error or the fallback."""
        try:
            self.check(args)
            jitted = self.jitted
            jitted.disable_compile(False)
            try:
                jitted.compile(tuple(numba().typeof(a) for a in args))
            finally:
                jitted.disable_compile(len(jitted.signatures) > 0)
            self.dispatcher = jitted
        except (UnsupportedError, numba().core.errors.NumbaError) as error:
            self.refuse(error if isinstance(error, UnsupportedError) else self.located(error))
        return self.dispatcher

    def admit(self, args):
        """For a caller that meets arguments of new classes: Numba would convert a NumPy
        scalar of another kind (np.float32) to the kind it compiled for, not refuse it."""
        if self.dispatcher is not self.fallback:
            try:
                self.check(args)
            except UnsupportedError as error:
                self.refuse(error)

    def refuse(self, located):
        """`located` raised (target 'numba'), or warned and the NumPy path taken ('auto')."""
        if self.target != 'auto':
            raise located from None
        warnings.warn_explicit(f"{located} (compile='auto': the NumPy path runs it)",
                               NativeFallbackWarning, located.filename, located.lineno)
        self.dispatcher = self.fallback

    def check(self, args):
        """A located error for an argument Numba would compute with other than NumPy."""
        code = self.jitted.py_func.__code__
        for name, value in zip(code.co_varnames[:code.co_argcount], args):
            if isinstance(value, np.ndarray) and value.dtype in _DTYPES:
                continue
            if value.__class__ in _SCALARS:
                continue
            kind = f'an array of {value.dtype}' if isinstance(value, np.ndarray) else \
                type(value).__name__
            line, col = self.lines[min(self.lines)] if self.lines else (0, 0)
            raise UnsupportedError(
                f"compile='numba': the argument {name} is {kind}: the native path takes "
                f"numbers and arrays of float64, int64 or bool (NumPy keeps float32 where "
                f"Numba would compute in float64); use compile='python'",
                self.filename, line, col)

    def located(self, error) -> UnsupportedError:
        """Numba's error, told at the user's line of the innermost generated line it names."""
        message = str(error)
        line, col = self.lines[min(self.lines)] if self.lines else (0, 0)
        for match in _GENERATED_LINE.finditer(message):
            if os.path.abspath(match.group(1)) != os.path.abspath(self.generated):
                continue                        # (Numba names files relative to the cwd)
            number = int(match.group(2))        # the nearest located line at or above it
            above = max((n for n in self.lines if n <= number), default=None)
            if above is not None:
                line, col = self.lines[above]
        message = re.sub(r'\x1b\[[0-9;]*m', '', message)         # Numba colours its messages
        reasons = [text.strip() for text in message.splitlines() if text.strip() and
                   not text.startswith(('Failed in', 'During:', 'File ', ' '))]
        reason = reasons[0] if reasons else message.strip().split('\n')[0]
        return UnsupportedError(f"compile='numba': Numba cannot compile this line: {reason}; "
                                f"write it with what Numba supports, or use compile='python'",
                                self.filename, line, col)
