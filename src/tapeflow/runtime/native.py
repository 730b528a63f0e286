"""The native path's run-time half: Numba, imported here and only when asked for.

`namespace()` is what the native combined function (`transforms.native`) may read:
NumPy, `math`, and the njit twins of the runtime helpers it calls (`TWINS`: each
computes what its helper computes, for the argument kinds it accepts; Numba refuses
the others when it types the code). `Native` is what `compiled.combined` becomes:
the njit function, whose compilation for new argument types (Numba types the whole
function before any of it runs) is told at the user's line when it fails.

`import tapeflow` never imports Numba: `numba()` does, at the first native compilation.
"""
from __future__ import annotations

import inspect
import math
import re
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
# it for the argument types it accepts (`accepts(*numba types)`); other types are a
# typing error, told at the user's line (never a different number).

def _arrays(*types, ndim=None):
    return all(hasattr(t, 'ndim') and (ndim is None or t.ndim == ndim) for t in types)


def grad_of_sum(g, x):
    """`rules.numpy_reductions.grad_of_sum` of a whole-array sum: `g` in `x`'s shape."""
    return np.full(x.shape, g)


def uniform_sum(g, x):
    """`rules.numpy_reductions.uniform_sum`, as the array `grad_of_sum` gives (the same
    numbers: the NumPy path keeps `g` a number only where that changes none)."""
    return np.full(x.shape, g)


def uniform_mean(g, x):
    """`rules.numpy_reductions.uniform_mean`, as an array (see `uniform_sum`)."""
    return np.full(x.shape, g / x.size)


def grad_of_matmul_a(g, a, b):
    """`rules.operators.grad_of_matmul_a` of 2-D operands: `g @ b.T`."""
    return g @ b.T


def grad_of_matmul_b(g, a, b):
    """`rules.operators.grad_of_matmul_b` of 2-D operands: `a.T @ g`."""
    return a.T @ g


_ACCEPTS = {
    grad_of_sum: lambda g, x: _arrays(x) and not _arrays(g),
    uniform_sum: lambda g, x: _arrays(x) and not _arrays(g),
    uniform_mean: lambda g, x: _arrays(x) and not _arrays(g),
    grad_of_matmul_a: lambda g, a, b: _arrays(g, a, b, ndim=2),
    grad_of_matmul_b: lambda g, a, b: _arrays(g, a, b, ndim=2),
}
TWINS = frozenset(f.__name__ for f in _ACCEPTS)
_registered: list = []


def _register_twins():
    """Numba's implementation of each twin, for the types it accepts."""
    from numba.extending import overload
    for twin, accepts in _ACCEPTS.items():
        def typer(*types, twin=twin, accepts=accepts):
            return twin if accepts(*types) else None
        typer.__signature__ = inspect.signature(twin)     # Numba checks the two agree
        overload(twin)(typer)
    _registered.append(True)


def namespace() -> dict:
    """A fresh namespace for one native module: NumPy, math and the twins."""
    numba()
    if not _registered:
        _register_twins()
    return dict({f.__name__: f for f in _ACCEPTS}, np=np, math=math)


# ------------------------------------------------------------------ the compiled function

_GENERATED_LINE = re.compile(r'File "(<tapeflow [^"]*>)", line (\d+)')


class Native:
    """The native combined function: calls the njit `dispatcher`; where Numba cannot
    compile it for the arguments given, a located `UnsupportedError` (target 'numba')
    or, with target 'auto', one warning and `fallback` (the NumPy path) from then on.

    `filename`, `lines`: the user's file, and {generated line: (user line, column)}.
    """
    __slots__ = ('dispatcher', 'fallback', 'target', 'filename', 'lines', '__weakref__')

    def __init__(self, dispatcher, fallback, target, filename, lines):
        self.dispatcher = numba().njit(dispatcher)
        self.fallback, self.target, self.filename, self.lines = fallback, target, filename, lines

    def __call__(self, *args):
        try:
            return self.dispatcher(*args)
        except numba().core.errors.NumbaError as error:    # typing: before anything ran
            located = self.located(error)
            if self.target != 'auto':
                raise located from None
            warnings.warn(NativeFallbackWarning(f"{located} (compile='auto': the NumPy path "
                                                f"runs it)"), stacklevel=2)
            self.dispatcher = self.fallback
            return self.fallback(*args)

    def located(self, error) -> UnsupportedError:
        """Numba's error, told at the user's line of the innermost generated line it names."""
        message = str(error)
        line, col = self.lines.get(1, (0, 0))
        for match in _GENERATED_LINE.finditer(message):
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
