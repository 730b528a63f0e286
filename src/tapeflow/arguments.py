"""The arguments of a call: what a compilation is specialised to, and the checks on them.

`scalar_positions`, `array_shapes` and `argument_kinds` read a call's arguments
into the parts of a compilation's key (`compilation.Spec`); `binder` puts keyword
arguments in their places (generated code takes every parameter by position);
the `check_*` functions refuse, with JAX's words, what cannot be differentiated,
before generated code fails deep inside.
"""
from __future__ import annotations

import inspect
import numbers

import numpy as np

import tapeflow.runtime.pytree as pytree
from tapeflow.analysis.aliasing import kind_of_value
from tapeflow.rules.arrays import is_foreign_array, mixed_libraries, numpy_dtype
from tapeflow.transforms import variants


SCALAR_TYPES = (float, int, bool)


def scalar_positions(args) -> tuple:
    """Positions of scalar arguments (Python or NumPy): part of a compilation's key."""
    return tuple(i for i, a in enumerate(args)
                 if a.__class__ in SCALAR_TYPES or isinstance(a, np.generic))


def array_shapes(args) -> tuple:
    """(position, shape) of the NumPy array arguments: part of a compilation's key."""
    return tuple((i, a.shape) for i, a in enumerate(args) if a.__class__ is np.ndarray)


def argument_kinds(args) -> tuple:
    """What each argument is (a scalar, an array, a list...; `analysis.aliasing`), or the
    function it is (`FunctionArgument`): part of a compilation's key, so the compiler
    knows which writes change what, and which function a parameter calls."""
    return tuple(FunctionArgument(a) if variants.is_function(a) else kind_of_value(a)
                 for a in args)


class FunctionArgument:
    """The kind of an argument that is a function, equal only for that same function:
    compiled code made for it reads the parameter as that function (`python_function_of`)."""
    __slots__ = ('fn',)

    def __init__(self, fn):
        self.fn = fn

    def __eq__(self, other):
        return other.__class__ is FunctionArgument and other.fn is self.fn

    def __hash__(self):
        return id(self.fn)

    def __repr__(self):
        return f'FunctionArgument({self.fn!r})'


def compiler_kinds(kinds) -> tuple:
    """`kinds` as the compiler's analyses read them: a function argument's parameter is
    not read (it is a constant of the code made for it)."""
    return tuple(None if k.__class__ is FunctionArgument else k for k in kinds)

_MISSING = object()


def binder(python_fn, fname):
    """`bind(args, kwargs)`: all of `python_fn`'s positional parameters, keyword arguments
    put in their places and defaults filled in (generated code takes them by position)."""
    code = python_fn.__code__
    names = code.co_varnames[:code.co_argcount]
    defaults = python_fn.__defaults__ or ()
    nparams, first_default = len(names), len(names) - len(defaults)
    star = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)

    def bind(args, kwargs):
        if star:
            if kwargs:
                raise TypeError(f'{fname}() takes *args or **kwargs, which tapeflow does not '
                                f'compile: name each parameter')
            return args             # compiling says where: the fence rejects *args
        if not kwargs:
            if len(args) == nparams:
                return args
            missing = nparams - len(args)
            if 0 <= missing <= len(defaults):
                return args + tuple(defaults[len(defaults) - missing:])
        if len(args) > nparams:
            raise TypeError(f'{fname}() takes {nparams} positional arguments but {len(args)} '
                            f'were given')
        out = list(args) + [_MISSING] * (nparams - len(args))
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError(f'{fname}() got an unexpected keyword argument {name!r}')
            i = names.index(name)
            if out[i] is not _MISSING:
                raise TypeError(f'{fname}() got multiple values for argument {name!r}')
            out[i] = value
        for i in range(nparams):
            if out[i] is _MISSING:
                if i < first_default:
                    raise TypeError(f'{fname}() missing required positional argument: '
                                    f'{names[i]!r}')
                out[i] = defaults[i - first_default]
        return tuple(out)
    return bind

# ------------------------------------------------------------------ checks and conversions


def check_differentiable(value, position, fname):
    dtype = dtype_of(value)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        raise TypeError(
            f'grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of '
            f'np.inexact), but got {dtype.name} for argument {position} of {fname}(). '
            f'If you want to differentiate with respect to it, pass a float.')


def check_pytree_argument(value, position, fname):
    """A differentiated argument is a pytree of numbers and arrays (`runtime.pytree`)."""
    for path, leaf in pytree.leaves_with_paths(value):
        if not isinstance(leaf, (numbers.Number, np.ndarray, np.generic, str, bytes)) and not \
                hasattr(leaf, '__array__') and not hasattr(leaf, '__array_namespace__'):
            raise TypeError(f'cannot differentiate {fname}() with respect to argument {position}: '
                            f'{pytree.path_text("it", path) if path else "it"} is a '
                            f'{type(leaf).__name__}, not a float, an array or a pytree of them '
                            f'(dataclasses and NamedTuples are; register other classes with '
                            f'tf.register_pytree)')


def dtype_of(value):
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, numbers.Integral) and not isinstance(value, np.ndarray):
        return np.dtype(int)
    if isinstance(value, (float, complex)):
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if is_foreign_array(value):
        return numpy_dtype(value)
    return None


def check_libraries(fn, compiled, args):
    """A clear error where `fn`'s arguments, or an argument and an array global it
    reads, belong to array libraries that cannot compute together (`rules.arrays`),
    before generated code fails deep inside with a TypeError (once per argument types)."""
    if not any(is_foreign_array(leaf) for a in args for leaf in pytree.leaves(a)):
        return
    names = inspect.signature(fn).parameters if hasattr(fn, '__code__') else {}
    names = list(names) + [f'argument {i}' for i in range(len(names), len(args))]
    named = [(f'argument {names[i]!r}', leaf) for i, a in enumerate(args)
             for leaf in pytree.leaves(a)]
    bindings = getattr(compiled, 'bindings', None)
    values = getattr(bindings, 'values', {}) if bindings is not None else {}
    named += [(f'the global {name!r}', v) for name, v in values.items()]
    why = mixed_libraries(named)
    if why:
        code = fn.__code__
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: {fn.__name__}() mixes '
                        f'array libraries: {why}')


def check_not_structured(fn, args, kind):
    """A seed of 1.0 given to a tuple, list or dict output fails inside generated code;
    say what JAX says instead, at the user's def (runs `fn` again: an error path only)."""
    try:
        out = fn(*args)
    except Exception:
        return
    code = fn.__code__
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: {kind} requires a scalar '
                        f'output, but {fn.__name__}() returned a {type(out).__name__}; to '
                        f'return more, use has_aux=True (output, aux) or vjp') from None
    if isinstance(out, np.ndarray) and out.ndim:
        raise TypeError(f'{code.co_filename}:{code.co_firstlineno}:1: Gradient only defined for '
                        f'scalar-output functions. Output of {fn.__name__}() had shape: '
                        f'{out.shape}; for a Jacobian, use jacrev or jacfwd') from None


def check_scalar(value, fname):
    if not isinstance(value, (numbers.Number, np.ndarray, np.generic)) and not is_foreign_array(value):
        forgot = ' (None: does it lack a return?)' if value is None else ''
        raise TypeError(f'grad requires real-valued outputs (output dtype that is a sub-dtype of '
                        f'np.floating), but {fname}() returned {type(value).__name__}{forgot}')
    if np.ndim(value) != 0:
        raise TypeError(f'Gradient only defined for scalar-output functions. Output of {fname}() '
                        f'had shape: {np.shape(value)}')
    if dtype_of(value) is not None and not np.issubdtype(dtype_of(value), np.inexact):
        raise TypeError(f'grad requires real-valued outputs (output dtype that is a sub-dtype of '
                        f'np.floating), but {fname}() returned {dtype_of(value)}')


def split_aux(value, has_aux, fname):
    if not has_aux:
        return value, None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
    return value[0], value[1]
