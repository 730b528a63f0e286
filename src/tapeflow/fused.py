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
"""
from __future__ import annotations

import functools

import numpy as np

from tapeflow import api, cache
from tapeflow.runtime import recording
from tapeflow.runtime.tensor import Tensor, as_value

__all__ = ['function']

_SCALARS = (float, int, bool)


def function(fn=None, *, optimize=True):
    """Decorator: compile `fn` on first differentiated use, cache, fuse under a tape."""
    if fn is None:
        return functools.partial(function, optimize=optimize)
    return CompiledFunction(fn, optimize)


class CompiledFunction:
    def __init__(self, fn, optimize):
        functools.update_wrapper(self, fn)
        self.__tapeflow_python__ = fn
        self._fn = fn
        self._optimize = optimize
        code = fn.__code__
        self._free_names = tuple(code.co_names) + tuple(code.co_freevars)
        self._compiled_for = {}     # (wrt, lifted names) -> (compiled, validity check)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f'<tapeflow.function {self._fn.__qualname__}>'

    # ---------------------------------------------------------------- calls

    def __call__(self, *args):
        if not recording.is_recording():
            return self._plain(args)
        variables = self._free_variables()
        for _, v in variables:
            recording.variable_accessed(v)
        for a in args:
            if isinstance(a, Tensor) and a._is_variable:
                recording.variable_accessed(a)
        wrt = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and recording.is_watched(a)
                    and _is_float(a))
        lifted = tuple((name, v) for name, v in variables if recording.is_watched(v) and _is_float(v))
        if not wrt and not lifted:
            return self._plain(args)
        tapes = recording.active_tapes()
        if len(tapes) > 1:
            return self._nested(args, wrt, lifted, tapes)
        return self._fused(args, wrt, lifted)

    def _plain(self, args):
        wrapped = any(isinstance(a, Tensor) for a in args)
        out = self._fn(*[as_value(a) for a in args]) if wrapped else self._fn(*args)
        return _wrap(out) if wrapped else out

    def _free_variables(self):
        fn = self._fn
        found = []
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        for name in self._free_names:
            if name in cells:
                try:
                    value = cells[name].cell_contents
                except ValueError:
                    continue
            else:
                value = fn.__globals__.get(name)
            if isinstance(value, Tensor) and value._is_variable:
                found.append((name, value))
        return found

    def _compiled(self, wrt, lifted, args):
        names = tuple(name for name, _ in lifted)
        values = [as_value(a) for a in args] + [as_value(v) for _, v in lifted]
        scalars = tuple(i for i, v in enumerate(values) if v.__class__ in _SCALARS or
                        isinstance(v, np.generic))
        key = (wrt, names, len(args), scalars)
        entry = self._compiled_for.get(key)
        if entry is None or not entry[1]():
            positions = wrt + tuple(range(len(args), len(args) + len(names)))
            compiled = api.compile_adjoint(self._fn, positions, names, optimize=self._optimize,
                                           scalar_args=scalars)
            entry = self._compiled_for[key] = (compiled, cache.validator(compiled, self._fn))
        return entry[0]

    def _fused(self, args, wrt, lifted):
        compiled = self._compiled(wrt, lifted, args)
        values = [as_value(a) for a in args] + [as_value(v) for _, v in lifted]
        tape = []
        out = compiled.forward(tape, *values)
        saved = tuple(tape)
        outputs = _wrap(out)
        inputs = [args[i] for i in wrt] + [v for _, v in lifted]
        n = len(inputs)

        def backward(cotangents):
            ct = cotangents[0] if not isinstance(outputs, tuple) else tuple(cotangents)
            grads = compiled.backward(list(saved), _plain_cotangent(ct))
            return (grads,) if n == 1 else tuple(grads)

        recording.record_node(inputs, outputs if isinstance(outputs, tuple) else (outputs,), backward)
        return outputs

    def _nested(self, args, wrt, lifted, tapes):
        """The innermost tape gets one node; the outer tapes record the sweeps on Tensors."""
        inner = tapes[-1]
        compiled = self._compiled(wrt, lifted, args)
        values = list(args) + [v for _, v in lifted]
        tape = []
        with inner.stop_recording():
            out = compiled.forward(tape, *values)
        saved = tuple(tape)
        outputs = _wrap(out) if not isinstance(out, Tensor) else +out
        inputs = [args[i] for i in wrt] + [v for _, v in lifted]
        n = len(inputs)

        def backward(cotangents):
            ct = cotangents[0] if not isinstance(outputs, tuple) else tuple(cotangents)
            grads = compiled.backward(list(saved), ct)
            return (grads,) if n == 1 else tuple(grads)

        # On the inner tape alone: the outer tapes recorded the sweep itself.
        recording.record_node(inputs, outputs if isinstance(outputs, tuple) else (outputs,),
                              backward, tapes=[inner])
        return outputs


def _is_float(t) -> bool:
    value = as_value(t)
    dtype = getattr(value, 'dtype', None)
    if dtype is None:
        return isinstance(value, (float, complex))
    return dtype.kind in 'fc'


def _wrap(out):
    if isinstance(out, tuple):
        return tuple(_wrap(o) for o in out)
    if isinstance(out, Tensor):
        return out
    return recording.wrap(np.asarray(out))      # a Python float stays float64


def _plain_cotangent(ct):
    if isinstance(ct, tuple):
        return tuple(as_value(c) for c in ct)
    return as_value(ct)
