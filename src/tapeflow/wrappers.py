"""What a call of a wrapped function runs: a wrapper, or the function it wraps.

`functools.wraps` gives a decorator's wrapper the name, the `__wrapped__`
and the attributes of the function it wraps, and `inspect` follows
`__wrapped__` to read the inner source. Reading the inner function instead of
the wrapper skips what the wrapper does (a clip, a scale): a plausible wrong
gradient. So a wrapper is read as written, and `inner_function` names the
few wrappers that may stand for the function they wrap:

- a `tf.function` (`__tapeflow_python__`) and an `functools.lru_cache`, which
  only compile or cache it;
- a pass-through, `def wrapper(*args, **kwargs): return fn(*args, **kwargs)`
  (`syntax.parse.pass_through_target`).

A function tapeflow made that the compiler cannot read (a Jacobian function,
a `custom_gradient` function) carries `__tapeflow_opaque__`, the reason, and
is refused at the user's `def`. `callables.python_function_of` asks here, and so
do `export` and the command line, through it.
"""
from __future__ import annotations

import functools
import inspect
import linecache

from tapeflow.syntax.errors import UnsupportedError
from tapeflow.syntax.parse import pass_through_target

__all__ = ['own', 'inner_function', 'JACOBIAN_OPAQUE']

# A Jacobian function has no generated caller (as `grad`'s has): the compiler
# cannot read it, and reading the function it wraps instead would be wrong.
JACOBIAN_OPAQUE = ('its Jacobian function (made by {} or hessian) cannot be called inside a '
                   'function that is differentiated (jacfwd, jacrev and grad of it can); there, write the '
                   'derivative with grad, value_and_grad or jvp (a Hessian-vector product '
                   'is jvp(grad(f), (x,), (v,)))')


def own(fn, name):
    """`fn`'s attribute `name` if it is `fn`'s own: `functools.wraps` copies the
    attributes of the wrapped function onto its wrapper, where they do not
    describe what the wrapper does."""
    value = getattr(fn, name, None)
    if value is not None and value is getattr(getattr(fn, '__wrapped__', None), name, None):
        return None
    return value


def inner_function(fn):
    """The function a call of `fn` amounts to when `fn` only compiles, caches or passes
    its arguments on; None when `fn` is itself what is read."""
    opaque = own(fn, '__tapeflow_opaque__')
    if opaque is not None:
        raise _opaque_error(fn, opaque)
    inner = own(fn, '__tapeflow_python__')
    if inner is None and isinstance(fn, functools._lru_cache_wrapper):
        inner = fn.__wrapped__
    if inner is None:
        inner = pass_through_target(fn)
    return inner


def _opaque_error(fn, reason):
    """An error at the user's def of the function tapeflow's `fn` was made from."""
    user = inspect.unwrap(fn)
    code = getattr(user, '__code__', None)
    name = getattr(user, '__name__', repr(user))
    if code is None:
        return UnsupportedError(f'{name}: {reason}')
    return UnsupportedError(f'{name}: {reason}', code.co_filename, code.co_firstlineno, 0,
                            linecache.getline(code.co_filename, code.co_firstlineno).rstrip()
                            or None)
