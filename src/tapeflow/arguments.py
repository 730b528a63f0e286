"""The arguments of a call: what a compilation is specialised to, and the checks on them.

`scalar_positions`, `array_shapes` and `argument_kinds` read a call's arguments
into the parts of a compilation's key (`compilation.Spec`); `binder` puts keyword
arguments in their places (generated code takes every parameter by position);
the `check_*` functions refuse, with JAX's words, what cannot be differentiated,
before generated code fails deep inside.
"""
from __future__ import annotations

import ast
import inspect
import numbers
import textwrap

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
    if code.co_kwonlyargcount or code.co_flags & inspect.CO_VARKEYWORDS:
        return _keyword_binder(python_fn, fname)
    names = code.co_varnames[:code.co_argcount]
    defaults = python_fn.__defaults__ or ()
    nparams, first_default = len(names), len(names) - len(defaults)
    star = code.co_flags & inspect.CO_VARARGS

    def bind(args, kwargs):
        if star:
            if kwargs:
                raise TypeError(f'{fname}() takes *args and keyword arguments, which tapeflow '
                                f'does not compile together: pass them by position')
            return args             # (`variants.arity_variant` names the star's values)
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


def _keyword_binder(python_fn, fname):
    """`bind` for a function with keyword-only parameters or a `**` parameter, as Python
    binds a call (its TypeErrors too): the positional parameters, the star's values, the
    keyword-only parameters, then the `**` dict (`variants.keyword_variant`'s order)."""
    signature = inspect.signature(python_fn, follow_wrapped=False)
    kinds = inspect.Parameter

    def bind(args, kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f'{fname}() {error}') from None
        bound.apply_defaults()
        out = []
        for name, p in signature.parameters.items():
            value = bound.arguments[name]
            if p.kind == kinds.VAR_POSITIONAL:
                out.extend(value)
            elif p.kind == kinds.VAR_KEYWORD:
                out.append(dict(value))
            else:
                out.append(value)
        return tuple(out)
    return bind


def call_flat(f, args):
    """`f` called with `args` as `binder` laid them out (keyword-only values, then the
    `**` dict, last), as Python takes them: for the entry points that run `f` itself."""
    from tapeflow.callables import signature_function      # (callables reads this module)
    code = getattr(signature_function(f), '__code__', None)
    if code is None or not (code.co_kwonlyargcount or code.co_flags & inspect.CO_VARKEYWORDS):
        return f(*args)
    double = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    tail = code.co_kwonlyargcount + double
    names = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    kwargs = dict(zip(names, args[len(args) - tail:]))
    if double:
        kwargs.update(args[-1])
    return f(*args[:len(args) - tail], **kwargs)

# ------------------------------------------------------------------ checks and conversions


def parse_argnums(argnums, fn, kind):
    """`(single, wrt)`: `argnums` read as JAX reads it (an int, or a tuple or list of ints; a
    negative one counts from the end of `fn`'s positional parameters), or a TypeError that
    says what argnums takes."""
    fname = getattr(fn, '__name__', 'f')
    single = isinstance(argnums, numbers.Integral) and not isinstance(argnums, (bool, np.bool_))
    wrt = (argnums,) if single else tuple(argnums) if isinstance(argnums, (tuple, list)) else None
    if wrt is None or not all(isinstance(i, numbers.Integral)
                              and not isinstance(i, (bool, np.bool_)) for i in wrt):
        raise TypeError(f'{kind}({fname}, argnums={argnums!r}): argnums takes an int or a tuple '
                        f'of ints (the positions of the arguments to differentiate), not '
                        f'{type(argnums).__name__} {argnums!r}')
    wrt = tuple(int(i) for i in wrt)
    if any(i < 0 for i in wrt):
        nparams = _positional_count(fn)
        if nparams is None:
            raise TypeError(f'{kind}({fname}, argnums={argnums!r}): a negative argnums counts '
                            f'from the last parameter, and {fname}() has no fixed number of '
                            f'them: give the position from the start')
        if any(i + nparams < 0 for i in wrt):
            raise TypeError(f'{kind}({fname}, argnums={argnums!r}): {fname}() has {nparams} '
                            f'positional parameters')
        wrt = tuple(i + nparams if i < 0 else i for i in wrt)
    return single, wrt


def _positional_count(fn):
    """How many positional parameters calls of `fn` have (None: *args, or not known)."""
    from tapeflow.callables import signature_function      # (callables reads this module)
    try:
        code = signature_function(fn).__code__
    except (TypeError, AttributeError):
        return None
    if code.co_flags & inspect.CO_VARARGS:
        return None
    return code.co_argcount


def check_callable(f, kind):
    """`kind(f, ...)` takes a function: say so, in place of an AttributeError deep inside."""
    if not callable(f):
        raise TypeError(f'{kind}(f, ...) takes the function to differentiate as f, not '
                        f'{type(f).__name__} {f!r:.60}')


def check_primals(f, primals, kind, tangents=None):
    """`f` and the primals of `vjp`/`jvp`/`linearize` (and their tangents): refuse, naming
    the function and the argument, a nonzero float tangent given to an integer primal,
    which carries no derivative (JAX asks for a float0 tangent there; an integer tangent,
    which cannot mean a direction to move it in, is left alone as before). A primal that
    is not a number (a string, None: settings) is passed through undifferentiated."""
    check_callable(f, kind)
    fname = getattr(f, '__name__', 'f')
    for i, (p, t) in enumerate(zip(primals, tangents or ())):
        dtype = dtype_of(p)
        if dtype is not None and not np.issubdtype(dtype, np.inexact) and \
                any(_moves(leaf) for leaf in pytree.leaves(t)):
            raise TypeError(f'{kind}: argument {i} of {fname}() holds {dtype.name} values, '
                            f'which carry no derivative, but its tangent is not zero: pass '
                            f'floats ({p!r:.30} as float) to differentiate it, or a zero '
                            f'tangent')


def moving_positions(primals) -> tuple:
    """The positions `vjp` and `jvp` differentiate: floats, float and complex arrays and
    pytrees of them; not integers, strings or None (settings passed through)."""
    return tuple(i for i, p in enumerate(primals) if p is not None
                 and not isinstance(p, (str, bytes))
                 and (dtype_of(p) is None or np.issubdtype(dtype_of(p), np.inexact)))


def _moves(leaf) -> bool:
    """A float or complex tangent that is not zero."""
    dtype = np.dtype(type(leaf)) if isinstance(leaf, (float, complex)) else dtype_of(leaf)
    if dtype is None or not np.issubdtype(dtype, np.inexact):
        return False
    return bool(np.any(leaf))


def check_cotangent(cotangent, out, fname):
    """A cotangent given to `vjp`'s pullback has the output's shape (JAX's words), where
    both are arrays or numbers; a string or None there is refused too."""
    if cotangent is None or isinstance(cotangent, (str, bytes)):
        raise TypeError(f'vjp of {fname}(): the cotangent given to the pullback is '
                        f'{"None" if cotangent is None else "a " + type(cotangent).__name__}, '
                        f'not an array or a float of the output\'s shape {np.shape(out)}')
    if isinstance(cotangent, np.ndarray) and cotangent.ndim and \
            isinstance(out, (np.ndarray, np.generic, numbers.Number)) and \
            cotangent.shape != np.shape(out):
        raise ValueError(f'Shape of cotangent input to vjp pullback function {cotangent.shape} '
                         f'must be the same as the shape of the output of {fname}() '
                         f'{np.shape(out)}')


def parameter_name(fn, position):
    """The name of `fn`'s positional parameter at `position`, for messages (or None)."""
    code = getattr(fn, '__code__', None)
    if code is None or position >= code.co_argcount:
        return None
    return code.co_varnames[position]


def check_differentiable(value, position, fname, name=None):
    """Refuse, with JAX's words, a differentiated argument that is not a float, a float or
    complex array or a pytree of them (an int, a string, None, an integer array...)."""
    where = f'argument {position}' + (f' ({name!r})' if name else '')
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f'cannot differentiate {fname}() with respect to {where}: it is '
                        f'{"None" if value is None else "a " + type(value).__name__}, not a '
                        f'float, an array or a pytree of them; pass a float there, or leave '
                        f'the position out of argnums')
    dtype = dtype_of(value)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        raise TypeError(
            f'grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of '
            f'np.inexact), but got {dtype.name} for {where} of {fname}(). '
            f'If you want to differentiate with respect to it, pass a float.')
    # (a string or an int inside a structured argument is a constant left alone, as the
    # dict of settings beside the parameters: `tests/test_check_grads.py`)


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
    say what JAX says instead, at the user's return (runs `fn` again: an error path only)."""
    try:
        out = fn(*args)
    except Exception:
        return
    where = returned_at(fn)
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f'{where}{kind} requires a scalar output, but {fn.__name__}() returned '
                        f'a {type(out).__name__}; to return more, use has_aux=True (output, '
                        f'aux) or vjp') from None
    if isinstance(out, np.ndarray) and out.ndim:
        raise TypeError(f'{where}Gradient only defined for scalar-output functions. Output of '
                        f'{fn.__name__}() had shape: {out.shape}; for a Jacobian, use jacrev or '
                        f'jacfwd') from None


def check_scalar(value, fname, fn=None, holomorphic=False, kind='grad'):
    """Refuse, with JAX's words, an output `grad` cannot seed: not a number, not a scalar,
    an integer, or complex (unless `holomorphic`); located at `fn`'s return where known."""
    why = _unseedable(value, fname, holomorphic, kind)
    if why:
        raise TypeError(returned_at(fn) + why)


def _unseedable(value, fname, holomorphic, kind):
    if not isinstance(value, (numbers.Number, np.ndarray, np.generic)) and not is_foreign_array(value):
        forgot = ' (None: does it lack a return?)' if value is None else ''
        return (f'{kind} requires real-valued outputs (output dtype that is a sub-dtype of '
                f'np.floating), but {fname}() returned {type(value).__name__}{forgot}')
    if np.ndim(value) != 0:
        return (f'Gradient only defined for scalar-output functions. Output of {fname}() had '
                f'shape: {np.shape(value)}; for a Jacobian, use jacrev or jacfwd, or reduce it '
                f'(np.sum) first')
    dtype = np.dtype(complex) if isinstance(value, complex) else dtype_of(value)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        return (f'{kind} requires real-valued outputs (output dtype that is a sub-dtype of '
                f'np.floating), but {fname}() returned {dtype}')
    is_complex = dtype is not None and np.issubdtype(dtype, np.complexfloating)
    if is_complex and not holomorphic:
        return (f'{kind} requires real-valued outputs (output dtype that is a sub-dtype of '
                f'np.floating), but {fname}() returned {dtype.name}. For holomorphic '
                f'differentiation, pass holomorphic=True. For differentiating non-holomorphic '
                f'functions involving complex outputs, use tf.vjp directly (or differentiate '
                f'np.real or np.abs of it)')
    if holomorphic and not is_complex:
        return (f'{kind} with holomorphic=True requires outputs with complex dtype, but '
                f'{fname}() returned {"float" if dtype is None else dtype}')
    return None


def check_holomorphic_input(value, position, fname, name=None, kind='grad'):
    """holomorphic=True: the differentiated argument is complex, leaf by leaf (JAX)."""
    where = f'argument {position}' + (f' ({name!r})' if name else '')
    for leaf in pytree.leaves(value):
        dtype = np.dtype(complex) if isinstance(leaf, complex) else dtype_of(leaf)
        if dtype is None or not np.issubdtype(dtype, np.complexfloating):
            raise TypeError(f'{kind} with holomorphic=True requires inputs with complex dtype, '
                            f'but got {type(leaf).__name__ if dtype is None else dtype.name} '
                            f'for {where} of {fname}()')


def returned_at(fn) -> str:
    """'file:line:col: ' of the last `return` of the Python function `fn` (of its `def`
    where it has none or its source cannot be read), '' for anything else."""
    code = getattr(fn, '__code__', None)
    if code is None:
        return ''
    line, col = code.co_firstlineno, 0
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent(''.join(lines)))
        returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)
                   and not _nested_return(tree, n)]
        if returns:
            last = max(returns, key=lambda n: (n.lineno, n.col_offset))
            indent = len(lines[0]) - len(lines[0].lstrip())     # what dedent took off
            line, col = first + last.lineno - 1, last.col_offset + indent
    except (OSError, TypeError, SyntaxError, IndexError):
        pass
    return f'{code.co_filename}:{line}:{col + 1}: '


def _nested_return(tree, node) -> bool:
    """Whether `node` belongs to a function nested inside the one `tree` defines."""
    top = tree.body[0] if tree.body else None
    for inner in ast.walk(top) if top is not None else ():
        if inner is not top and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda)):
            if any(n is node for n in ast.walk(inner)):
                return True
    return False


def split_aux(value, has_aux, fname):
    if not has_aux:
        return value, None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f'has_aux=True requires {fname}() to return a pair (output, aux)')
    return value[0], value[1]
