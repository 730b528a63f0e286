"""Recording: how an eager operation reaches the active tapes.

Every operation on Tensors (operators, NumPy functions through
`__array_ufunc__` / `__array_function__`, array methods) ends in `apply` or,
for operators, directly in `record`. An operation is recorded on each active
tape of the current thread that already knows (watches, or recorded the
producer of) one of its Tensor inputs, as one *node*:

    (rule, inputs, args, kwargs, out)

`rule` is the operation's entry in the rule table (`tapeflow.rules.RULES`) —
the same VJPs the compiler uses — or `CUSTOM` for a node made by
`record_node`, whose `args` slot then holds its backward function. `inputs`
are the positional arguments as the user passed them (Tensors, Variables,
lists of them, constants), `args` their NumPy values at the time of the call
(a Variable may be reassigned later), `out` the output Tensor (or tuple).

The active *recorders* (GradientTapes and ForwardAccumulators, per thread)
are kept by :mod:`tapeflow.runtime.recorders`; an accumulator (`_forward`)
gets each node as it happens and computes the output's tangent at once (see
:mod:`tapeflow.runtime.forward`).

Guarantees: nothing is recorded when no tape is active, or when no input is
known to a tape; an operation with no rule, applied to a watched Tensor with a
floating result, raises `MissingRule` naming it; non-differentiable operations
and integer/boolean results are never recorded. Trainable Variables read
while a tape with `watch_accessed_variables=True` is active are watched by it.
"""
from __future__ import annotations

import inspect

import numpy as np

from tapeflow.rules.arrays import is_foreign_array, numpy_dtype

from tapeflow.rules import RULES, MissingRule, lookup
from tapeflow.runtime.recorders import is_watched, state, variable_read
from tapeflow.runtime.tensor import Tensor, wrap

__all__ = ['apply', 'record', 'record_node', 'read_call', 'record_fused', 'is_float_value',
           'CUSTOM', 'NO_KWARGS', 'describe', 'wrap']

_new = object.__new__
NO_KWARGS: dict = {}   # shared keyword arguments of a call that has none; never mutated
_SEQUENCES = (list, tuple)
_SEQUENCE_TYPES = frozenset(_SEQUENCES)
_ARRAYS = (np.ndarray, np.generic)
_SCALAR_TYPES = frozenset((float, int, bool))   # `cls in`: one hash, no __eq__



class _Custom:
    """Marks a node made by `record_node` (its backward is in the node)."""

    __slots__ = ()

    def __repr__(self):
        return 'CUSTOM'


CUSTOM = _Custom()


def describe(fn):
    """A readable name for a callable: `numpy.sin`, `operator.mul`, `mymodule.f`."""
    entry = lookup(fn)
    if entry is not None:
        return entry.name
    if isinstance(fn, np.ufunc):
        return f'numpy.{fn.__name__}'
    module = getattr(fn, '__module__', None) or ''
    if module.startswith('numpy'):
        module = 'numpy'
    elif module == '_operator':
        module = 'operator'
    name = getattr(fn, '__qualname__', None) or getattr(fn, '__name__', None) or repr(fn)
    return f'{module}.{name}' if module else name


# ---------------------------------------------------------------- recording

def record(tapes, fn, inputs, args, kwargs, out, candidates):
    """Record `out = fn(*inputs, **kwargs)` on the tapes that know a candidate.

    `candidates` are the Tensors among the inputs (nested ones included).
    """
    for x in candidates:
        if x._is_variable:
            variable_read(x, tapes)
    if len(tapes) == 1:
        # One recorder (the common case): the loop below, unrolled.
        tape = tapes[0]
        live = tape._live
        for x in candidates:
            if id(x) in live:
                break
        else:
            return
        try:
            rule = RULES.get(fn) or lookup(fn)      # (a miss may register a lazy family)
        except TypeError:   # an unhashable callable has no rule
            rule = None
        if out.__class__ is tuple:
            differentiable = _differentiable(out)
        else:
            differentiable = out._value.dtype.kind in 'fc'
        if rule is None:
            if differentiable:
                raise MissingRule(
                    f'no derivative rule for {describe(fn)}: it was applied to a '
                    f'watched Tensor (argument {_live_position(inputs, live)})')
            return
        if rule.nondiff or not differentiable:
            return
        node = (rule, inputs, args, kwargs, out)
        if tape._forward:   # a ForwardAccumulator: the output's tangent, now
            tape._accumulate(node)
        elif out.__class__ is tuple:
            tape._nodes.append(node)
            for o in out:
                live.add(id(o))
        else:
            tape._nodes.append(node)
            live.add(id(out))
        return
    node = None
    for tape in tapes:
        live = tape._live
        for x in candidates:
            if id(x) in live:
                break
        else:
            continue
        if node is None:
            try:
                rule = RULES.get(fn) or lookup(fn)
            except TypeError:   # an unhashable callable has no rule
                rule = None
            if rule is None:
                if _differentiable(out):
                    raise MissingRule(
                        f'no derivative rule for {describe(fn)}: it was applied to a '
                        f'watched Tensor (argument {_live_position(inputs, live)})')
                return
            if rule.nondiff or not _differentiable(out):
                return
            node = (rule, inputs, args, kwargs, out)
        if tape._forward:   # a ForwardAccumulator: the output's tangent, now
            tape._accumulate(node)
            continue
        tape._nodes.append(node)
        if out.__class__ is tuple:
            for o in out:
                live.add(id(o))
        else:
            live.add(id(out))


def _differentiable(out):
    if out.__class__ is tuple:
        return any(o._value.dtype.kind in 'fc' for o in out)
    return out._value.dtype.kind in 'fc'


def _live_position(inputs, live):
    for i, x in enumerate(inputs):
        if id(x) in live or (x.__class__ in _SEQUENCE_TYPES and any(id(e) in live for e in x)):
            return i
    return '?'


def apply(fn, args, kwargs):
    """Call `fn` on the values of Tensor arguments; wrap; offer to the tapes."""
    candidates = []
    raw_args = []
    for a in args:   # _unwrap(a, candidates), its common cases inlined
        if isinstance(a, Tensor):
            candidates.append(a)
            raw_args.append(a._value)
        elif a.__class__ in _SEQUENCE_TYPES:
            raw_args.append(_unwrap(a, candidates))
        else:
            raw_args.append(a)
    raw_args = tuple(raw_args)
    if kwargs:
        kw_candidates = []
        raw_kwargs = {k: _unwrap(v, kw_candidates) for k, v in kwargs.items()}
        if kw_candidates and state.tapes:
            try:
                args, kwargs = _positional(fn, args, kwargs)
            except TypeError:
                if any(is_watched(x) or (x._is_variable and x._trainable) for x in kw_candidates):
                    raise
            else:
                return apply(fn, args, kwargs)
    else:
        raw_kwargs = NO_KWARGS
    raw = fn(*raw_args, **raw_kwargs)
    if raw.__class__ is np.ndarray or isinstance(raw, np.generic):
        out = _new(Tensor)   # wrap(raw), inlined
        out._value = raw[()] if raw.__class__ is np.ndarray and not raw.shape else raw
        tapes = state.tapes
        if tapes and candidates:
            record(tapes, fn, args, raw_args, raw_kwargs, out, candidates)
        return out
    out = _wrap(raw)
    if out is raw:
        return raw
    tapes = state.tapes
    if tapes and candidates:
        record(tapes, fn, args, raw_args, raw_kwargs,
               tuple(out) if out.__class__ is not Tensor else out, candidates)
    return out


def _unwrap(x, candidates):
    if isinstance(x, Tensor):
        candidates.append(x)
        return x._value
    if x.__class__ in _SEQUENCE_TYPES and any(
            isinstance(e, Tensor) or e.__class__ in _SEQUENCE_TYPES for e in x):
        return type(x)([_unwrap(e, candidates) for e in x])
    return x


def _wrap(raw):
    """Tensors for the arrays in a NumPy function's result; other results as is."""
    if isinstance(raw, _ARRAYS) or is_foreign_array(raw):
        return wrap(raw)
    if isinstance(raw, _SEQUENCES) and raw and all(isinstance(r, _ARRAYS) or is_foreign_array(r) for r in raw):
        items = [wrap(r) for r in raw]
        if raw.__class__ is list:
            return items
        return type(raw)(*items) if hasattr(raw, '_fields') else tuple(items)
    return raw


_SIGNATURES: dict = {}


def _positional(fn, args, kwargs):
    """Move Tensor keyword arguments into their positions, so rules see them."""
    names = [k for k, v in kwargs.items() if isinstance(v, Tensor)]
    try:
        signature = _SIGNATURES.get(fn) or _SIGNATURES.setdefault(fn, inspect.signature(fn))
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        signature = None
    params = list(signature.parameters.values()) if signature else []
    positions = {p.name: i for i, p in enumerate(params)
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if signature is None or any(name not in positions for name in names):
        raise TypeError(f'{describe(fn)}: pass the Tensor argument(s) {names} positionally, '
                        'so that they can be differentiated')
    rest = dict(bound.arguments)
    positional = [rest.pop(p.name, p.default) for p in params[:max(positions[n] for n in names) + 1]]
    for p in params:
        if p.kind is p.VAR_KEYWORD and p.name in rest:
            rest.update(rest.pop(p.name))
    return tuple(positional), rest


# ---------------------------------------------------------------- custom nodes

def record_node(inputs, outputs, backward, tapes=None, jvp=None):
    """Record ONE node `outputs = F(inputs)` on the active tapes that know an input.

    `inputs`: a sequence of values (non-Tensors are carried along, never
    differentiated); `outputs`: a sequence of fresh Tensors. `backward` is
    called as `backward(cotangents)` with one cotangent per output (zeros
    where an output received none) and returns one cotangent per input (None
    for none). Cotangents are NumPy values, or Tensors when a tape is
    recording during the backward pass (higher order): `backward` should then
    compute on Tensors (e.g. the original inputs) so that tape records it.

    Forward mode (a ForwardAccumulator among the recorders): `jvp`, when
    given, is called as `jvp(tangents)` with one tangent per input (None for
    none) and returns one tangent per output (None for none), computing on
    Tensors or NumPy values like `backward`. Without it the accumulator
    transposes `backward`.

    Trainable Variables among `inputs` count as read. `tapes` restricts the
    recording to some of the active tapes (the others may have recorded the
    computation op by op). Returns True when the node was recorded on at
    least one tape.
    """
    if tapes is None:
        tapes = state.tapes
    if not tapes:
        return False
    inputs = tuple(inputs)
    outputs = tuple(outputs)
    candidates = [x for x in inputs if isinstance(x, Tensor)]
    for x in candidates:
        if x._is_variable:
            variable_read(x, tapes)
    node = (CUSTOM, inputs, backward, None, outputs)
    recorded = False
    for tape in tapes:
        live = tape._live
        if not any(id(x) in live for x in candidates):
            continue
        for o in outputs:
            if id(o) in live:
                raise ValueError('record_node: outputs must be new Tensors, not inputs '
                                 'or values already recorded')
        if tape._forward:
            tape._accumulate_custom(inputs, outputs, backward, jvp)
            recorded = True
            continue
        tape._nodes.append(node)
        for o in outputs:
            live.add(id(o))
        recorded = True
    return recorded


def read_call(tapes, args, variables):
    """A compiled function's call, about to be recorded as one node (`record_fused`).

    When the one active recorder is a GradientTape that can take a node now
    (the common case, the hot path of eager training loops): report what the
    call reads and describe its inputs, in one pass, returning
    `(tape, positions, variable_positions, values, scalars, shapes)`:

    - `positions` (a tuple): those in `args` of the floating-point Tensors
      the tape watches or recorded the producer of; `variable_positions` (a
      sequence), those in `variables` of the floating-point Variables it watches;
    - `values` (a new list): the NumPy values of `args`, then those of the
      watched `variables`, in that order — what a forward sweep takes;
    - `scalars` (a tuple): the positions in `values` of Python and NumPy
      scalars; `shapes` (a tuple): `(position, shape)` of each NumPy array —
      what compiled code is specialised to.

    Otherwise None, having done nothing: `variable_accessed` and
    `is_watched` then serve.

    `tapes` is `state.tapes` (not empty), `args` the call's arguments,
    `variables` the Variables it reads from its globals or closure. Each
    Variable read counts as `variable_accessed` says (the tape may start
    watching it; custom_gradient's collectors see it), the `variables` first.
    """
    if len(tapes) != 1:
        return None
    tape = tapes[0]
    if tape._forward or tape._consumed:
        return None
    live = tape._live
    watch = tape._watch_accessed
    watched_variables = lifted = ()     # lifted: the values of those
    if variables:
        watchers = state.watchers
        watched_variables, lifted = [], []
        j = 0
        for v in variables:      # variable_read(v, tapes), inlined (as below)
            if watch and v._trainable and id(v) not in live:
                tape._watch_one(v)
            for watcher in watchers:
                watcher.append(v)
            if id(v) in live:
                value = v._value
                try:
                    floating = value.dtype.kind in 'fc'
                except AttributeError:      # a Python scalar, a library's own dtype
                    floating = is_float_value(value)
                if floating:
                    watched_variables.append(j)
                    lifted.append(value)
            j += 1
    watched = []
    values = []
    scalars = []
    shapes = []
    i = 0
    for a in (*args, *lifted) if lifted else args:
        if isinstance(a, Tensor):
            value = a._value
            if a._is_variable:
                if watch and a._trainable and id(a) not in live:
                    tape._watch_one(a)
                for watcher in state.watchers:
                    watcher.append(a)
            if id(a) in live:
                try:
                    floating = value.dtype.kind in 'fc'
                except AttributeError:      # a library's own kind of dtype
                    floating = is_float_value(value)
                if floating:
                    watched.append(i)
        else:
            value = a
        if value.__class__ is np.ndarray:
            shapes.append((i, value.shape))
        elif value.__class__ in _SCALAR_TYPES or isinstance(value, np.generic):
            scalars.append(i)
        values.append(value)
        i += 1
    return tape, tuple(watched), watched_variables, values, tuple(scalars), tuple(shapes)


def is_float_value(value):
    """True for a floating-point (or complex) value: an array of any library, a scalar."""
    dtype = getattr(value, 'dtype', None)
    if dtype is None:
        return isinstance(value, (float, complex))
    return (dtype.kind if hasattr(dtype, 'kind') else numpy_dtype(value).kind) in 'fc'


def record_fused(tape, inputs, outputs, backward):
    """Record a compiled function's call on `tape` as ONE node (see `record_node`).

    The one way the compiled-function path records: `tape` is an active
    recorder, `inputs` (a tuple) Tensors it differentiates through, whose
    reads `read_call` (or `variable_accessed`) reported, `outputs` a tuple
    of new Tensors, `backward` as `record_node`'s.
    """
    if tape._forward:
        return record_node(inputs, outputs, backward, tapes=[tape])
    live = tape._live
    if len(outputs) == 1:       # the common case, without the loops below
        if id(outputs[0]) not in live:
            tape._nodes.append((CUSTOM, inputs, backward, None, outputs))
            live.add(id(outputs[0]))
            return True
    for o in outputs:
        if id(o) in live:
            raise ValueError('record_node: outputs must be new Tensors, not inputs '
                             'or values already recorded')
    tape._nodes.append((CUSTOM, inputs, backward, None, outputs))
    for o in outputs:
        live.add(id(o))
    return True
