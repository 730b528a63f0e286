"""`ForwardAccumulator`: TensorFlow 2's eager forward mode, over the shared rule table.

    with ForwardAccumulator(primals, tangents) as acc:
        y = f(x)
    acc.jvp(y)          # J_f(x) @ tangent, computed while f ran

An accumulator maps primal Tensors (by identity) to their tangents. While it
is active it sits on the thread's recorder stack beside the GradientTapes
(`recorders.state.tapes`, innermost last), so every operation reaches it
through the same path as a tape (:func:`tapeflow.runtime.recording.record`).
For an operation with an input that has a tangent, it calls the operation's
JVP rules from the rule table (`RULES[fn].jvps[i](t, ans, *args, **kwargs)`,
one per input that moves, summed) and stores the output's tangent at once.
An input without a rule raises `MissingRule` naming the function and the
argument. Nodes made by `record_node` (custom_gradient, compiled functions)
use their `jvp` when given one, else the transpose of their backward.

Nesting is strict, as in TF: the operations an accumulator runs to compute
tangents are seen only by the recorders entered *before* it (outer tapes and
accumulators); then the rules compute on Tensors so those recorders can
differentiate the tangents again. Hence:

- a tape around an accumulator: `tape.gradient(acc.jvp(y), x)` is
  reverse-over-forward (a Hessian-vector product);
- an accumulator around a tape: `acc.jvp(tape.gradient(y, x))` is
  forward-over-reverse (the tape's backward pass runs on Tensors while a
  recorder is active, so the accumulator sees it);
- accumulators around accumulators: higher-order forward derivatives, taken
  from the outer one: `outer.jvp(inner.jvp(y))`.

With no outer recorder, rules compute on NumPy values. Tangents are freed
with their primal (weak references); `jvp` only looks tangents up, inside
the context or after it, and returns Tensors of the primal's shape, or None
(zeros with `UnconnectedGradients.ZERO`) for a value the tangents do not reach.
"""
from __future__ import annotations

import contextlib
import functools
import warnings
import weakref

import numpy as np

from tapeflow.rules.arrays import is_foreign_array

from tapeflow.rules import MissingRule
from tapeflow.runtime import recorders
from tapeflow.runtime.backward import UnconnectedGradients, tensor_args, unconnected_mode
from tapeflow.runtime.structure import flatten, flatten_up_to, pack_sequence_as
from tapeflow.runtime.tape import GradientTape
from tapeflow.runtime.tensor import Tensor, convert_to_tensor, wrap

__all__ = ['ForwardAccumulator']

_SEQUENCE_TYPES = frozenset((list, tuple))
_ARRAYS = (np.ndarray, np.generic)

_ZERO = UnconnectedGradients.ZERO
_RNG = np.random.default_rng(20240601)   # points at which backward functions are transposed


class ForwardAccumulator:
    """Computes Jacobian-vector products with forward-mode autodiff (TF semantics)."""

    __slots__ = ('_live', '_refs', '_recording', '_self_ref', '__weakref__')
    # Read by the recording path: an accumulator computes tangents as operations
    # run (`_forward`) and never watches the Variables it sees (`_watch_accessed`).
    _forward = True
    _watch_accessed = False

    def __init__(self, primals, tangents):
        self._live = {}      # id(primal) -> tangent (Tensor, or NumPy value)
        self._refs = {}      # id(primal) -> weak reference that forgets the tangent
        self._recording = False
        self._self_ref = weakref.ref(self)
        seen = set()
        for primal in flatten(primals):
            if id(primal) in seen:
                raise ValueError(
                    f'Tensor {primal} was specified as a primal multiple times. This may '
                    'indicate an error. If it was intended, please sum the corresponding '
                    'tangents.')
            seen.add(id(primal))
        self._watch(primals, tangents)

    def __repr__(self):
        state = 'recording' if self._recording else 'not recording'
        return f'<ForwardAccumulator: {len(self._live)} tangents, {state}>'

    # ------------------------------------------------------------ context

    def __enter__(self):
        if self._recording:
            raise ValueError('Accumulator is already recording.')
        recorders.enter(self)
        self._recording = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._recording:
            recorders.leave(self)
            self._recording = False
        return False

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily compute no tangents (the position among recorders is kept)."""
        if not self._recording:
            raise RuntimeError('Trying to stop recording an accumulator which is not '
                               'recording.')
        index = recorders.leave(self)
        self._recording = False
        try:
            yield
        finally:
            recorders.enter(self, index)
            self._recording = True

    # ------------------------------------------------------------ watching

    def _watch(self, primals, tangents):
        """Watch `primals` with `tangents` (same structure); a second watch adds up."""
        flat_primals = flatten(primals)
        try:
            flat_tangents = flatten_up_to(primals, tangents)
        except ValueError:
            raise ValueError(f'The two structures do not match: primals {primals!r} and '
                             f'tangents {tangents!r}') from None
        for primal, tangent in zip(flat_primals, flat_tangents):
            if not isinstance(primal, Tensor):
                raise ValueError(f'Passed in object {primal!r} of type '
                                 f'{type(primal).__name__!r} as a primal, not tf.Tensor or '
                                 'tf.Variable.')
            dtype = primal._value.dtype
            if dtype.kind not in 'fc':
                warnings.warn(f'The dtype of the watched primal must be floating (e.g. '
                              f'tf.float32), got {dtype.name}', stacklevel=3)
            tangent = convert_to_tensor(tangent, dtype=dtype)
            if tangent.shape != primal.shape:
                raise ValueError(f'Tangent {tangent} was expected to be of shape '
                                 f'{primal.shape} but is instead of shape {tangent.shape}')
            previous = self._live.get(id(primal))
            if previous is not None:
                tangent = _as_tensor(previous) + tangent
            self._set(primal, tangent)

    def _set(self, primal, tangent):
        key = id(primal)
        if key not in self._refs:
            self._refs[key] = weakref.ref(primal, functools.partial(_forget, self._self_ref, key))
        self._live[key] = tangent

    # ------------------------------------------------------------ results

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangents computed for `primals` (a Tensor or nested structure of them).

        Performs no computation. Returns None for a value the tangents do not
        reach (zeros of its shape and dtype with
        `unconnected_gradients=UnconnectedGradients.ZERO` or 'zero').
        """
        zero = unconnected_mode(unconnected_gradients) is _ZERO
        live = self._live

        def fetch(x):
            tangent = live.get(id(x)) if isinstance(x, Tensor) else None
            if tangent is None:
                if not zero or x is None:
                    return None
                value = x._value if isinstance(x, Tensor) else x
                if not (isinstance(value, _ARRAYS) or is_foreign_array(value)):
                    value = np.asarray(value)
                return wrap(np.zeros_like(value))
            if tangent.__class__ is not Tensor:
                tangent = live[id(x)] = _as_tensor(tangent)
            return tangent

        if isinstance(primals, Tensor):
            return fetch(primals)
        return pack_sequence_as(primals, [fetch(x) for x in flatten(primals)])

    # ------------------------------------------------------------ accumulating

    def _accumulate(self, node):
        """The tangent of a recorded operation `node` = (rule, inputs, args, kwargs, out)."""
        rule, inputs, args, kwargs, out = node
        live = self._live
        saved = recorders.narrow_to_outer(self)   # the recorders entered before this one
        try:
            tensor_mode = bool(recorders.state.tapes)
            call_args = tensor_args(inputs, args) if tensor_mode else args
            many = out.__class__ is tuple
            if tensor_mode:
                ans = out
            else:
                ans = tuple(o._value for o in out) if many else out._value
            total = None
            moved = False
            for i, x in enumerate(inputs):
                if x.__class__ in _SEQUENCE_TYPES:
                    if not any(id(e) in live for e in x):
                        continue
                    t = type(x)([self._tangent(e, tensor_mode) if id(e) in live
                                 else np.zeros_like(a) for e, a in zip(x, args[i])])
                else:
                    t = live.get(id(x))
                    if t is None:
                        continue
                    t = _as_tensor(t) if tensor_mode else _as_value(t)
                moved = True
                try:
                    jvp = rule.jvps[i]
                except KeyError:
                    jvp = rule.jvp(i)   # raises MissingRule, naming the argument
                c = jvp(t, ans, *call_args, **kwargs) if kwargs else jvp(t, ans, *call_args)
                if c is None:
                    continue
                if total is None:
                    total = c
                elif many:
                    total = [a if b is None else b if a is None else a + b
                             for a, b in zip(total, c)]
                else:
                    total = total + c
            if not moved:   # the moving Tensor is deeper than one level of list
                raise MissingRule(f'no forward-mode rule for {rule.name} applied to a Tensor '
                                  'nested two or more levels deep in a list argument')
            if total is None:
                return
            if many:
                for o, c in zip(out, total):
                    if c is not None:
                        self._store(o, c, tensor_mode, rule)
            else:
                self._store(out, total, tensor_mode, rule)
        finally:
            recorders.restore(saved)

    def _tangent(self, x, tensor_mode):
        t = self._live[id(x)]
        return _as_tensor(t) if tensor_mode else _as_value(t)

    def _store(self, o, c, tensor_mode, rule):
        """Keep `c` as the tangent of output `o`, in `o`'s dtype (checked shape)."""
        value = o._value
        dtype = value.dtype
        if dtype.kind not in 'fc':
            return
        if tensor_mode:
            if not isinstance(c, Tensor):
                c = wrap(np.asarray(c))
            cvalue = c._value
        else:
            if isinstance(c, Tensor):
                c = c._value
            if not (isinstance(c, _ARRAYS) or is_foreign_array(c)):
                c = np.asarray(c)
            cvalue = c
        if cvalue.shape != value.shape:
            name = getattr(rule, 'name', rule)
            raise ValueError(f'the JVP rule of {name} gave a tangent of shape {cvalue.shape} '
                             f'for an output of shape {value.shape}')
        if cvalue.dtype != dtype:
            c = c.astype(dtype)
        self._set(o, c)

    def _accumulate_custom(self, inputs, outputs, backward, jvp):
        """Tangents of the outputs of a `record_node` node."""
        live = self._live
        tangents = [live.get(id(x)) if isinstance(x, Tensor) else None for x in inputs]
        if all(t is None for t in tangents):
            return
        saved = recorders.narrow_to_outer(self)   # the recorders entered before this one
        try:
            tensor_mode = bool(recorders.state.tapes)
            tangents = [None if t is None else _as_tensor(t) if tensor_mode else _as_value(t)
                        for t in tangents]
            if jvp is not None:
                result = list(jvp(tangents))
            else:
                result = _transposed(backward, outputs, tangents, tensor_mode)
            for o, c in zip(outputs, result):
                if c is not None:
                    self._store(o, c, tensor_mode, 'a record_node node')
        finally:
            recorders.restore(saved)


def _forget(self_ref, key, ref):
    """A primal died: drop its tangent (unless the id was watched anew)."""
    acc = self_ref()
    if acc is not None and acc._refs.get(key) is ref:
        del acc._refs[key]
        acc._live.pop(key, None)


def _as_tensor(t):
    if isinstance(t, Tensor):
        return t
    return wrap(t if (isinstance(t, _ARRAYS) or is_foreign_array(t)) else np.asarray(t))


def _as_value(t):
    return t._value if isinstance(t, Tensor) else t


# ---------------------------------------------------------------- custom nodes

def _transposed(backward, outputs, tangents, tensor_mode):
    """J @ t for a node known only by its backward u -> J^T u (linear in u).

    On Tensors: J t = d<backward(u), t>/du, by a private tape, at a random u
    (any u would do; a random one tells a cotangent that is constant because
    it is zero from one computed out of the tape's sight). A backward that
    does not compute on the Tensors it is given (a compiled function's NumPy
    sweep) is applied to the rows of the identity instead, one call per
    output element, when no outer recorder needs the result; under one, that
    is a MissingRule error.
    """
    us = [wrap(_RNG.standard_normal(o.shape).astype(o.dtype)) for o in outputs]
    tape = GradientTape()
    tape._push()
    try:
        for u in us:
            tape._watch_one(u)
        cotangents = backward(tuple(us))
        total = None
        detached = False
        for c, t in zip(cotangents, tangents):
            if c is None or t is None:
                continue
            if not (isinstance(c, Tensor) and id(c) in tape._live):
                if np.any(_as_value(c) != 0):
                    detached = True
                    break
                continue
            term = np.sum(c * t)
            total = term if total is None else total + term
    finally:
        if tape._recording:
            tape._pop()
    if detached:
        if tensor_mode:
            raise MissingRule('no forward-mode rule for a node recorded by record_node '
                              '(a custom_gradient or compiled function): it has no jvp and '
                              'its backward does not compute on Tensors, so it cannot be '
                              'transposed under an outer tape or accumulator')
        return _by_rows(backward, outputs, tangents)
    if total is None:
        return [None] * len(outputs)
    return tape.gradient(total, us)


def _by_rows(backward, outputs, tangents):
    """J @ t one output element at a time: (J t)_k = <J^T e_k, t>."""
    result = []
    for k, o in enumerate(outputs):
        if o.dtype.kind not in 'fc':
            result.append(None)
            continue
        value = np.zeros(o.shape, o.dtype)
        flat = value.reshape(-1)
        for j in range(flat.size):
            seeds = [np.zeros(p.shape, p.dtype) for p in outputs]
            seeds[k].reshape(-1)[j] = 1
            cotangents = backward(tuple(seeds))
            flat[j] = sum(np.sum(np.asarray(_as_value(c)) * t)
                          for c, t in zip(cotangents, tangents)
                          if c is not None and t is not None)
        result.append(value)
    return result
