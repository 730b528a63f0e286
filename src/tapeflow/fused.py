"""`tapeflow.function`: compiled functions, and their calls as ONE node on a tape.

Without a recording tape a call just computes (on plain values; Tensors in,
Tensors out). Under a tape, the inputs the tape watches — Tensor arguments,
and trainable Variables the function reads from its globals or closure — are
the differentiated inputs of a compiled adjoint (that set is part of the cache
key). The call then:

- with one tape recording: unwraps the inputs, runs the generated forward
  sweep once on NumPy values, records one node that keeps the sweep's tape,
  and wraps the output; the node's backward is the generated reverse sweep;
- with nested tapes: the innermost tape gets the fused node, while the outer
  ones record the forward sweep run on Tensors; the backward then runs on
  Tensors too, so the outer tapes see through it (higher order).

Every call decides afresh (a global may be rebound, a Variable reassigned, a
tape watch other values): which globals and closure cells hold Variables,
which inputs the tape watches, which are scalars and the arrays' shapes (the
compiled code is specialised to them, as `grad`'s is). With one tape,
`recording.read_call` reports all that in its one pass over the arguments;
the node is recorded by `recording.record_fused`, the runtime's one way to
record a compiled call. That case, the hot path of eager training loops, runs
in `__call__`'s own frame (the other cases rejoin it to record).
"""
from __future__ import annotations

import functools
import inspect
import operator

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow import api, cache, compilation
from tapeflow.arguments import binder
from tapeflow.caller_arguments import left_as_plain, owned, plain_point
from tapeflow.runtime import recorders, recording
from tapeflow.runtime.randomness import function_sources
from tapeflow.runtime.recorders import state
from tapeflow.runtime.recording import is_float_value, read_call, record_fused
from tapeflow.runtime.tensor import Tensor, as_value, wrap

__all__ = ['function']

_SCALAR_TYPES = frozenset((float, int, bool))   # `cls in`: one hash, no __eq__
_first, _second = operator.itemgetter(0), operator.itemgetter(1)   # of (name, Variable)
_NONE_FREE = ((), (), ())     # _free_variables() of a function that reads no free names


def function(fn=None, *, optimize=True, compile='python'):
    """Decorator: compile `fn` on first differentiated use, cache, fuse under a tape.

    `compile='numba'` (or 'auto', see `grad`): under one tape, the node's backward
    runs the native value-and-gradient with the cotangent as its seed (the forward
    sweep again, natively); the value is the NumPy path's. Under nested tapes the
    sweeps stay Python (the outer tapes record them)."""
    compilation.Spec(compile=compile)           # its check: compile= names a target
    if fn is None:
        return functools.partial(function, optimize=optimize, compile=compile)
    if not hasattr(fn, '__code__'):
        raise TypeError(f'tf.function decorates a Python function (def ...), not '
                        f'{type(fn).__name__} {fn!r:.60}')
    return CompiledFunction(fn, optimize, compile)


class CompiledFunction:
    def __init__(self, fn, optimize, target='python'):
        functools.update_wrapper(self, fn)
        self.__tapeflow_python__ = fn
        self._fn = fn
        self._optimize = optimize
        self._target = target
        code = fn.__code__
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        # The names the body may resolve outside itself, each with its closure
        # cell (None: a global), in a fixed order; scanned on every call under
        # a tape for Variables (a global may be rebound between calls).
        self._free = tuple((name, cells.get(name))
                           for name in tuple(code.co_names) + tuple(code.co_freevars))
        self._globals = fn.__globals__
        # Under a tape, a call that leaves parameters to their defaults gets them
        # filled in: the Variables a call reads are passed after all the parameters.
        star = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        self._nparams = code.co_argcount if fn.__defaults__ and not star else 0
        # The common layout, globals first then cells, is scanned in two
        # parts: the globals' values in one C-level pass, compared by identity
        # with the last scan's (see _free_variables).
        first_cell = next((i for i, (_, cell) in enumerate(self._free) if cell is not None),
                          len(self._free))
        if all(cell is not None for _, cell in self._free[first_cell:]):
            self._global_names = tuple(name for name, _ in self._free[:first_cell])
            self._cells = self._free[first_cell:]
        else:
            self._global_names = None
            self._cells = None
        # (values of _global_names, then what _free_variables returns of them) at the
        # last scan
        self._last_scan = None
        # (wrt, lifted names, arity, scalar positions, array (position, shape)s or None
        #  when not specialised) -> (compiled, validity check)
        self._compiled_for = cache.Recent()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f'<tapeflow.function {self._fn.__qualname__}>'

    # ---------------------------------------------------------------- calls

    def __call__(self, *args, **kwargs):
        if kwargs:                       # in their places, defaults filled in
            args = binder(self._fn, self._fn.__name__)(args, kwargs)
        tapes = state.tapes
        if not tapes:
            return self._plain(args)
        if len(args) < self._nparams:
            args = binder(self._fn, self._fn.__name__)(args, {})
        global_names = self._global_names
        if global_names and not self._cells:
            # self._free_variables(), its common case inlined: the globals are
            # the objects they were at the last call.
            last = self._last_scan
            if last is not None and all(map(operator.is_, map(self._globals.get, global_names),
                                            last[0])):
                variables, read, free_names = last[1:]
            else:
                variables, read, free_names = self._free_variables()
        else:
            variables, read, free_names = self._free_variables() if self._free else _NONE_FREE
        call = read_call(tapes, args, read)
        if call is not None:
            # One GradientTape, the hot path of eager training loops: read_call's
            # one pass gave the inputs it watches, the forward sweep's values and
            # the scalars and shapes of the compile key.
            tape, wrt, watched, values, scalars, shapes = call
            if watched:     # lifted: the Variables the adjoint differentiates too
                if len(watched) == len(read):       # all it reads: the common case
                    lifted, names = read, free_names
                else:
                    lifted = tuple(map(read.__getitem__, watched))
                    names = tuple(map(free_names.__getitem__, watched))
                key = (wrt, names, len(args), scalars, shapes)
            elif wrt:
                lifted = ()
                key = (wrt, (), len(args), scalars, shapes)
            else:
                return self._plain(args)
            entry = self._compiled_for.get(key)
            if entry is None or not entry[1]():
                entry = self._compile(key)
            compiled = entry[0]
        else:
            # Several recorders, a ForwardAccumulator, or a used tape.
            wrt, pairs = self._read(args, variables)
            if not wrt and not pairs:
                return self._plain(args)
            if len(tapes) > 1:
                return self._nested(args, wrt, pairs, recorders.active_tapes())
            tape = tapes[0]
            lifted = tuple(map(_second, pairs))
            values = [as_value(a) for a in args] + [v._value for v in lifted]
            compiled = self._compiled(wrt, pairs, len(args), values)

        # The forward sweep on `values`; the call recorded on `tape` as one node.
        saved = []
        taken = None
        if compiled.written:    # (it writes into its arguments: the sweeps on a copy, the
            given = values[:len(args)]      # plain call on another leaves them as Python)
            taken = plain_point(self._fn, given)
            values = list(owned(tuple(values)))
        # (a sweep that restores memory in place runs the forward again for a second
        # backward: it draws the random numbers this one draws)
        drawn = function_sources(compiled.fn, values) if compiled.in_place else None
        out = api.forward_value(compiled, saved, values)
        # `saved` is the forward sweep's tape: each backward pops a copy of it (or, for
        # a sweep that restores memory in place, a tape from the forward run again).
        if out.__class__ is np.ndarray or isinstance(out, np.generic):
            many = False
            outputs = (wrap(out),)
        else:
            many = isinstance(out, tuple)
            outputs = _wrap(out) if many else (_wrap(out),)
        if lifted:
            inputs = tuple([args[i] for i in wrt]) + lifted
        else:
            inputs = (args[wrt[0]],) if len(wrt) == 1 else tuple([args[i] for i in wrt])
        again = api.backward_tapes(compiled, values, saved, drawn) if compiled.in_place else None
        sweep = compiled.backward
        if compiled.native_source and not compiled.in_place:    # compile='numba'
            compiled.combined.admit(values)
            sweep = functools.partial(_native_sweep, compiled.combined, tuple(values))

        # Its state in defaults, not closure cells: two objects a call, not seven, for
        # the garbage collector to count, and no cells made on every call of __call__.
        def backward(cotangents, saved=saved, again=again, sweep=sweep,
                     one=len(inputs) == 1, many=many):
            if many:
                ct = tuple([as_value(c) for c in cotangents])
            else:
                ct = cotangents[0]
                if isinstance(ct, Tensor):
                    ct = ct._value
            grads = sweep(list(saved) if again is None else again(), ct)
            return (grads,) if one else tuple(grads)

        record_fused(tape, inputs, outputs, backward)
        if taken is not None:
            left_as_plain(self._fn, given, *taken)
        return outputs if many else outputs[0]

    def _read(self, args, variables):
        """(wrt, lifted) of a call `read_call` does not take, its Variables reported read."""
        for _, v in variables:
            recorders.variable_accessed(v)
        for a in args:
            if isinstance(a, Tensor) and a._is_variable:
                recorders.variable_accessed(a)
        is_watched = recorders.is_watched
        wrt = tuple(i for i, a in enumerate(args)
                    if isinstance(a, Tensor) and is_watched(a) and _is_float(a))
        # Every float Variable it reads is passed in as a value (the generated code never
        # meets a Tensor), the ones no recorder watches too: they get no tangent.
        lifted = tuple((name, v) for name, v in variables if _is_float(v)) \
            if wrt or any(is_watched(v) for _, v in variables) else ()
        return wrt, lifted

    def _plain(self, args):
        wrapped = any(isinstance(a, Tensor) for a in args)
        out = self._fn(*[as_value(a) for a in args]) if wrapped else self._fn(*args)
        return _wrap(out) if wrapped else out

    def _free_variables(self):
        """The Variables the names in `_free` hold now: (name, Variable) pairs, then
        the Variables alone and their names (tuples)."""
        names = self._global_names
        if names is None:
            return _split(self._scan(self._free))
        if names:
            values = tuple(map(self._globals.get, names))
            last = self._last_scan
            if last is None or not all(map(operator.is_, values, last[0])):
                found = tuple(self._scan(zip(names, (None,) * len(names))))
                last = self._last_scan = (values, *_split(found))
            if not self._cells:
                return last[1:]
            return _split(list(last[1]) + self._scan(self._cells))
        return _split(self._scan(self._cells))

    def _scan(self, pairs):
        found = []
        get = self._globals.get
        for name, cell in pairs:
            if cell is None:
                value = get(name)
            else:
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
            if isinstance(value, Tensor) and value._is_variable:
                found.append((name, value))
        return found

    def _compiled(self, wrt, lifted, arity, values, specialise=True):
        """The compiled adjoint for a call whose forward sweep takes the NumPy `values`;
        specialised to the arrays' shapes unless told not to."""
        scalars = []
        shapes = []
        i = 0
        for value in values:
            if value.__class__ is np.ndarray:
                shapes.append((i, value.shape))
            elif value.__class__ in _SCALAR_TYPES or isinstance(value, np.generic):
                scalars.append(i)
            i += 1
        key = (wrt, tuple(map(_first, lifted)) if lifted else (), arity, tuple(scalars),
               tuple(shapes) if specialise else None)
        entry = self._compiled_for.get(key)
        if entry is None or not entry[1]():
            entry = self._compile(key)
        return entry[0]

    def _compile(self, key):
        """Compile for `key` (see `_compiled_for`); returns the new entry."""
        wrt, names, arity, scalars, shapes = key
        positions = wrt + tuple(range(arity, arity + len(names)))
        compiled = compilation.compile(self._fn, compilation.Spec(
            'reverse', positions, names, scalars, shapes or (), optimize=self._optimize,
            compile=self._target))
        entry = self._compiled_for[key] = (compiled, cache.validator(compiled, self._fn))
        return entry

    def _nested(self, args, wrt, lifted, tapes):
        """The innermost tape gets one node; the outer tapes record the sweeps on Tensors."""
        inner = tapes[-1]
        values = list(args) + [v for _, v in lifted]
        compiled = self._compiled(wrt, lifted, len(args), [as_value(v) for v in values],
                                  specialise=False)
        tape = []
        drawn = function_sources(compiled.fn, values) if compiled.in_place else None
        with inner.stop_recording():
            out = api.forward_value(compiled, tape, values)
        tapes = api.backward_tapes(compiled, values, tape, drawn)
        outputs = _wrap(out) if not isinstance(out, Tensor) else +out
        inputs = [args[i] for i in wrt] + [v for _, v in lifted]
        n = len(inputs)

        def backward(cotangents):
            ct = cotangents[0] if not isinstance(outputs, tuple) else tuple(cotangents)
            grads = compiled.backward(tapes(), ct)
            return (grads,) if n == 1 else tuple(grads)

        # On the inner tape alone: the outer tapes recorded the sweep itself.
        recording.record_node(inputs, outputs if isinstance(outputs, tuple) else (outputs,),
                              backward, tapes=[inner])
        return outputs


def _native_sweep(native, values, tape, cotangent):
    """The backward sweep as the native value-and-gradient with `cotangent` as its seed
    (the tape is not read: the native function runs its forward sweep again)."""
    return native(*values, cotangent)[1]


def _split(pairs):
    """(name, Variable) pairs, and the Variables and names in two tuples."""
    return pairs, tuple(map(_second, pairs)), tuple(map(_first, pairs))


def _is_float(t) -> bool:
    return is_float_value(as_value(t))


def _wrap(out):
    if out.__class__ is np.ndarray or isinstance(out, np.generic):
        return wrap(out)
    if isinstance(out, tuple):
        return tuple([_wrap(o) for o in out])
    if isinstance(out, Tensor):
        return out
    if is_foreign_array(out):                   # CuPy, Dask...: held as it is
        return wrap(out)
    return wrap(np.asarray(out))      # a Python float stays float64

