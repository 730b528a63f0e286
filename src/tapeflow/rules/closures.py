"""Functions made inside differentiated code, as values: `Closure`.

A nested def (or a lambda) that reads the enclosing function's locals and is used as a
value (stored, passed, returned) is compiled as its lifted function, which takes those
locals as extra parameters (`transforms.sugar.nested_defs`), and a `Closure` holding
their values: `closure(f, nparams, ndefaults, *values)` where the def stood. The
compiler reads that call as a tuple of the values (their cotangents are the closure's),
and the dispatcher (`tapeflow.calls`) calls the lifted function with them.
"""
from __future__ import annotations

__all__ = ['Closure', 'closure', 'MISSING']


class Closure:
    """A function made inside differentiated code that reads the enclosing function's
    locals (a nested def or a lambda used as a value): the lifted function `fn`, whose
    first `nparams` parameters are the def's own and whose last ones take those locals,
    and `values`: the def's `ndefaults` defaults, then the locals' values where the def
    stood.

    Its values may carry derivatives: a call through the dispatcher differentiates them
    too, and the closure's cotangent is the tuple of theirs."""
    __slots__ = ('fn', 'nparams', 'ndefaults', 'values', 'named', '__name__', '__qualname__')

    def __init__(self, fn, nparams, ndefaults, values):
        self.fn, self.nparams, self.ndefaults = fn, nparams, ndefaults
        self.values = tuple(values)
        # a def with star parameters: the parameters of its defaults, passed by name where
        # a call leaves them out; the locals go first, positional-only
        self.named = getattr(fn, '__tapeflow_defaults_named__', None)
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, '__qualname__', fn.__name__)

    def __call__(self, *args, **kwargs):
        if self.named is not None:
            free = self.values[self.ndefaults:]
            code = self.fn.__code__
            positional = code.co_varnames[len(free):code.co_argcount][:len(args)]
            given = dict(kwargs)
            for name, value in zip(self.named, self.values):
                if name not in positional and name not in given:
                    given[name] = value
            return self.fn(*free, *args, **given)
        names = self.fn.__code__.co_varnames[:self.nparams]
        given = list(args) + [MISSING] * (self.nparams - len(args))
        if len(args) > self.nparams:
            raise TypeError(f'{self.__name__}() takes {self.nparams} positional arguments but '
                            f'{len(args)} were given')
        for name, value in kwargs.items():
            if name not in names or given[names.index(name)] is not MISSING:
                raise TypeError(f'{self.__name__}() got an unexpected or repeated argument '
                                f'{name!r}')
            given[names.index(name)] = value
        first = self.nparams - self.ndefaults
        for i, value in enumerate(given):
            if value is MISSING:
                if i < first:
                    raise TypeError(f'{self.__name__}() missing required argument {names[i]!r}')
                given[i] = self.values[i - first]
        return self.fn(*given, *self.values[self.ndefaults:])

    def __repr__(self):
        return f'<closure {self.__qualname__}>'


MISSING = object()


def _mark_closure(fn):
    fn.__tapeflow_closure__ = True      # (the compiler reads `closure(f, n, d, *values)` as a pack)
    return fn


@_mark_closure
def closure(fn, nparams, ndefaults, *values):
    """What generated code makes of `def inner(...)` used as a value (`Closure`)."""
    return Closure(fn, nparams, ndefaults, values)


# ---------------------------------------------------------------- partial, as a value

def _partial_vjp(i):
    """The cotangent of argument i of `functools.partial(f, *args)` from the partial's
    (`tapeflow.call_plans`: (the function's, the arguments' tuple, the keywords' dict)).
    Of a partial `f`, Python makes one partial of its function (`_flattened`)."""
    def vjp(g, ans, *args, **keywords):
        if g.__class__ is float and g == 0.0:
            return 0.0
        inner = _flattened(ans, args[0])
        if inner is None:
            return g[0] if i == 0 else g[1][i - 1]
        if i > 0:
            return g[1][len(inner.args) + i - 1]
        kept = {k: g[2][k] for k in inner.keywords if k in g[2] and k not in keywords}
        return (g[0], tuple(g[1][:len(inner.args)]), kept)
    return vjp


def _partial_jvp(i):
    def jvp(t, ans, *args, **keywords):
        if t.__class__ is float and t == 0.0:
            return 0.0
        inner = _flattened(ans, args[0])
        before = len(inner.args) if inner is not None else 0
        if i > 0:
            return (0.0, tuple(t if k == before + i - 1 else 0.0
                               for k in range(before + len(args) - 1)), {})
        if inner is None:
            return (t, (0.0,) * (len(args) - 1), {})
        kept = {k: v for k, v in t[2].items() if k not in keywords}
        return (t[0], tuple(t[1]) + (0.0,) * (len(args) - 1), kept)
    return jvp


def _flattened(ans, func):
    """`func` where it is a partial that `functools.partial(func, ...)` merged into the
    partial `ans` it made (`ans.func` is then `func.func`, its arguments first), else None."""
    import functools
    if isinstance(func, functools.partial) and ans.func is not func:
        return func
    return None


def _register_partial():
    import functools

    from tapeflow.rules.registry import defjvp, defvjp, linear_pair
    for i in range(32):
        vjp, jvp = _partial_vjp(i), _partial_jvp(i)
        defvjp(functools.partial, vjp, argnums=[i])
        defjvp(functools.partial, jvp, argnums=[i])
        linear_pair(vjp, jvp)


_register_partial()
