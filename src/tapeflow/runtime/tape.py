"""`GradientTape`: TensorFlow 2's eager reverse mode, over the shared rule table.

Inside `with GradientTape() as tape:` the operations that involve a watched
Tensor or Variable are recorded (see :mod:`tapeflow.runtime.recording`);
`tape.gradient(target, sources)` runs the VJP rules of the recorded nodes in
reverse order (:mod:`tapeflow.runtime.backward`). The backward pass computes
on NumPy values, unless a tape is recording at that moment (or a
ForwardAccumulator is active): then it computes on Tensors, so that the tape
(or accumulator) records the backward pass and can differentiate it again
(higher order).

Semantics follow TF 2.x: a non-persistent tape gives one set of gradients and
then frees its records; unconnected sources give None (or zeros); gradients
have the dtype of their source; `jacobian` / `batch_jacobian` are loops of
backward passes with one-hot output gradients. Tapes are thread-local.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from tapeflow.rules.arrays import is_foreign_array

from tapeflow.runtime import pytree, recorders
from tapeflow.runtime.backward import (UnconnectedGradients, as_gradient, batch_one_hots,
                                       one_hots, ones, sweep, unconnected_mode)
from tapeflow.runtime.recorders import state
from tapeflow.runtime.structure import flatten, flatten_up_to, pack_sequence_as
from tapeflow.runtime.tensor import Tensor, as_value, wrap

__all__ = ['GradientTape', 'UnconnectedGradients']

_SEQUENCE_TYPES = frozenset((list, tuple))   # `cls in` a set: one hash, no __eq__
_ARRAYS = (np.ndarray, np.generic)
_NONE = UnconnectedGradients.NONE

_new = object.__new__


class GradientTape:
    """Records operations for automatic differentiation (TF's `tf.GradientTape`)."""

    __slots__ = ('_persistent', '_watch_accessed', '_nodes', '_live', '_watched',
                 '_recording', '_consumed', '__weakref__')
    _forward = False   # a reverse-mode recorder (see recording.record)

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._nodes = []       # recorded nodes, in execution order
        self._live = set()     # ids of watched Tensors and of recorded outputs
        self._watched = {}     # id -> watched Tensor or Variable, in watch order
        self._recording = False
        self._consumed = False

    # ------------------------------------------------------------ context

    def __enter__(self):
        if self._recording:
            raise ValueError('Tape is still recording, This can happen if you try to '
                             're-enter an already-active tape.')
        if self._consumed:
            self._clear()
        recorders.enter(self)
        self._recording = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._recording:
            self._recording = False
            recorders.leave(self)
        return False

    def _push(self, index=None):
        recorders.enter(self, index)
        self._recording = True

    def _pop(self):
        """Leave the recorder stack; returns the position this tape had there."""
        self._recording = False
        return recorders.leave(self)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording operations on this tape."""
        if not self._recording:
            raise RuntimeError('Trying to stop recording a tape which is not recording.')
        index = self._pop()
        try:
            yield
        finally:
            self._push(index)   # same nesting as before, among tapes and accumulators

    def reset(self):
        """Forget everything recorded and watched, as if entering a new tape."""
        self._clear()

    def _clear(self):
        self._nodes = []
        self._live = set()
        self._watched = {}
        self._consumed = False

    # ------------------------------------------------------------ watching

    def watch(self, tensor):
        """Ensure `tensor` (a Tensor, Variable or nested structure of them) is traced."""
        for t in (tensor,) if isinstance(tensor, Tensor) else flatten(tensor):
            if not isinstance(t, Tensor):
                raise ValueError(f'Passed in object {t!r} of type {type(t).__name__!r}, '
                                 'not tf.Tensor or tf.Variable.')
            if t._value.dtype.kind not in 'fc':
                warnings.warn(f'The dtype of the watched tensor must be floating (e.g. '
                              f'tf.float32), got {t.dtype.name}; its gradient will be None',
                              stacklevel=2)
            self._watch_one(t)

    def _watch_one(self, t):
        if self._consumed:
            self._clear()
        key = id(t)
        self._live.add(key)
        self._watched.setdefault(key, t)

    def watched_variables(self):
        """The Variables this tape watches, in order of construction."""
        found = [v for v in self._watched.values() if v._is_variable]
        return tuple(sorted(found, key=lambda v: v._uid))

    # ------------------------------------------------------------ gradients

    def _begin_backward(self):
        if self._consumed:
            raise RuntimeError('A non-persistent GradientTape can only be used to compute '
                               'one set of gradients (or jacobians)')
        if self._recording and not self._persistent:
            self._pop()

    def _end_backward(self):
        if not self._persistent:
            # Free the records (and what they keep alive); watched values stay
            # referenced for watched_variables(), as in TF.
            self._nodes = None
            self._live = None
            self._consumed = True

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(sources), with the structure of `sources`."""
        if self._consumed or (self._recording and not self._persistent):
            self._begin_backward()
        if unconnected_gradients is not _NONE:
            mode = unconnected_mode(unconnected_gradients)
        else:
            mode = _NONE
        try:
            if target.__class__ is Tensor and output_gradients is None:
                # The common cases, one Tensor target and one Tensor or a flat
                # list or tuple of them as sources, without the structure code.
                if isinstance(sources, Tensor):
                    flat = (sources,)
                    kind = None
                else:
                    flat = sources
                    kind = sources.__class__
                    if kind is not list and kind is not tuple:
                        flat = None
                    else:
                        for s in sources:
                            if not isinstance(s, Tensor):
                                flat = None
                                break
                if flat is not None:
                    value = target._value
                    live = self._live
                    if id(target) in live and value.dtype.kind in 'fc':
                        seed = ones(value)     # in value's library
                        tensor_mode = bool(state.tapes)
                        if tensor_mode:
                            seed = wrap(seed)
                        watched = self._watched
                        if len(flat) == 1 and len(watched) == 1 and id(flat[0]) in watched:
                            nodes, reach = self._nodes, live   # what _prune would say
                        else:
                            nodes, reach = self._prune(flat)
                        get = sweep(nodes, reach, {id(target): seed}, tensor_mode).get
                        result = []
                        for s in flat:
                            g = get(id(s))
                            if (g.__class__ is np.ndarray and g.shape) or isinstance(g, np.generic):
                                # as_gradient(g, s, mode), its common case inlined
                                dtype = s._value.dtype
                                if g.dtype is dtype and dtype.kind in 'fc':
                                    t = _new(Tensor)
                                    t._value = g
                                    result.append(t)
                                    continue
                            result.append(as_gradient(g, s, mode))
                    elif any(s is target for s in flat):
                        return self._gradient(target, sources, output_gradients, mode)
                    else:
                        result = [as_gradient(None, s, mode) for s in flat]
                    if kind is None:
                        return result[0]
                    return result if kind is list else tuple(result)
            return self._gradient(target, sources, output_gradients, mode)
        finally:
            if not self._persistent:
                # self._end_backward(), inlined
                self._nodes = None
                self._live = None
                self._consumed = True

    def _gradient(self, target, sources, output_gradients, mode):
        if target is None or isinstance(target, (str, bytes)):
            got = 'None' if target is None else f'{type(target).__name__} {target!r:.40}'
            raise TypeError(f'Argument `target` should be a list or nested structure of '
                            f'Tensors or Variables to be differentiated, but received {got}.')
        flat_sources = _check_sources(sources)
        flat_targets = flatten(target)
        tensor_mode = bool(state.tapes)
        seeds, own = {}, {}
        source_ids = {id(s) for s in flat_sources}
        for t, g in zip(flat_targets, _output_gradients(target, flat_targets, output_gradients)):
            if isinstance(t, Tensor) and t.dtype.kind in 'fc':
                # a target the tape did not see (a Variable never read on it) that is also a
                # source: its own gradient, the seed, as in TF (d v / d v = 1)
                into = seeds if id(t) in self._live else own if id(t) in source_ids else None
                if into is None:
                    continue
                if g is None:
                    g = ones(t._value)
                elif not tensor_mode and isinstance(g, Tensor):
                    g = g._value
                if tensor_mode and not isinstance(g, Tensor):
                    g = wrap(g)
                prev = into.get(id(t))
                into[id(t)] = g if prev is None else prev + g
        grads = self._backward(seeds, flat_sources, tensor_mode) if seeds else {}
        if own:
            grads = {**grads, **own}    # (nothing recorded reaches a value the tape did not see)
        flat = [as_gradient(grads.get(id(s)), s, mode) for s in flat_sources]
        return pack_sequence_as(sources, flat)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target / d source, of shape `target.shape + source.shape`, per source."""
        self._begin_backward()
        mode = unconnected_mode(unconnected_gradients)
        flat_sources = _check_sources(sources)
        try:
            # a structured target (a pytree of tensors): its structure outside, the sources'
            # inside, as JAX's jacobians
            targets, target_def = pytree.flatten(target, none_is_leaf=True)
            per_target = []
            for leaf in targets:
                rows = self._rows(leaf, flat_sources, one_hots(leaf), mode)
                shape = np.shape(as_value(leaf))
                flat = [None if r is None else _reshape(_stack(r, 0, s), shape + s.shape)
                        for r, s in zip(rows, flat_sources)]
                per_target.append(pack_sequence_as(sources, flat))
        finally:
            self._end_backward()
        return target_def.unflatten(per_target)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per example b: d target[b] / d source[b] (rows of a batch independent)."""
        self._begin_backward()
        mode = unconnected_mode(unconnected_gradients)
        (source,) = _check_sources([source])
        tshape, sshape = np.shape(as_value(target)), source.shape
        try:
            for shape in (tshape, sshape):
                if len(shape) < 2:
                    raise ValueError(f'Shape {shape} must have rank at least 2')
            if tshape[0] != sshape[0]:
                raise ValueError(f'Need first dimension of target shape ({tshape}) and source '
                                 f'shape ({sshape}) to match.')
            (rows,) = self._rows(target, [source], batch_one_hots(target), mode)
            flat = None if rows is None else _reshape(_stack(rows, 1, source),
                                                      tshape + sshape[1:])
        finally:
            self._end_backward()
        return flat

    def _rows(self, target, sources, seeds, mode):
        """Per source, the list of gradients for each seed (None: unconnected)."""
        tensor_mode = bool(state.tapes)
        connected = (isinstance(target, Tensor) and id(target) in self._live
                     and target.dtype.kind in 'fc')
        rows = [[] for _ in sources]
        if connected:
            pruned = self._prune(sources)
            for seed in seeds:
                if tensor_mode:
                    seed = wrap(seed)
                grads = sweep(pruned[0], pruned[1], {id(target): seed}, tensor_mode)
                for row, s in zip(rows, sources):
                    row.append(grads.get(id(s)))
        result = []
        for row, s in zip(rows, sources):
            if not connected or all(g is None for g in row) or s.dtype.kind not in 'fc':
                if mode is _NONE:
                    result.append(None)
                    continue
                row = [None] * len(seeds)
            result.append([as_gradient(g, s, UnconnectedGradients.ZERO) for g in row])
        return result

    def _backward(self, seeds, sources, tensor_mode):
        nodes, reach = self._prune(sources)
        return sweep(nodes, reach, dict(seeds), tensor_mode)

    def _prune(self, sources):
        """The nodes on a path from a source, and the ids they reach."""
        live = self._live
        if len(sources) == 1:
            key = id(sources[0])
            if key not in live:
                return [], set()
            reach = {key}
            if len(self._watched) == 1 and key in self._watched:
                return self._nodes, live   # the one watched value is the source
        else:
            reach = {id(s) for s in sources if id(s) in live}
        if not reach:
            return [], reach
        watched = self._watched
        if len(watched) <= len(reach) and all(key in reach for key in watched):
            # Everything recorded descends from a source: nothing to prune.
            return self._nodes, live
        kept = []
        for node in self._nodes:
            for x in node[1]:
                if id(x) in reach or (x.__class__ in _SEQUENCE_TYPES
                                      and any(id(e) in reach for e in x)):
                    kept.append(node)
                    out = node[4]
                    if out.__class__ is tuple:
                        reach.update(id(o) for o in out)
                    else:
                        reach.add(id(out))
                    break
        return kept, reach


# ---------------------------------------------------------------- helpers

def _check_sources(sources):
    flat = flatten(sources)
    for s in flat:
        if not isinstance(s, Tensor):
            raise ValueError(f'sources must be Tensors or Variables (or nested structures of '
                             f'them); got {type(s).__name__}: {s!r}')
    return flat


def _output_gradients(target, targets, output_gradients):
    if output_gradients is None:
        return [None] * len(targets)
    try:
        flat = flatten_up_to(target, output_gradients)
    except ValueError:
        flat = flatten(output_gradients)
    if len(flat) != len(targets):
        raise ValueError(f'output_gradients has {len(flat)} entries but target has '
                         f'{len(targets)}: give one per target')
    checked = []
    for t, g in zip(targets, flat):
        if g is None or not isinstance(t, Tensor):
            checked.append(None)
            continue
        if isinstance(g, (str, bytes)):
            raise TypeError(f'output_gradients holds a {type(g).__name__} {g!r:.40}: give one '
                            f'Tensor, array or number per target, of the target\'s shape')
        if isinstance(g, Tensor):
            value = g._value
            if g._is_variable:
                g = +g
        elif isinstance(g, _ARRAYS) or is_foreign_array(g):
            value = g
        else:
            value = g = np.asarray(g, dtype=t.dtype)
        if np.shape(value) != t.shape:
            raise ValueError(f'Mismatch between output_gradients shape {np.shape(value)} '
                             f'and target shape {t.shape}')
        if value.dtype != t.dtype:
            raise ValueError(f'output_gradients dtype {value.dtype.name} does not match '
                             f'target dtype {t.dtype.name}')
        checked.append(g)
    return checked


def _stack(rows, axis, source):
    if not rows:
        return np.zeros((0,) + source.shape, source.dtype)
    if any(_recorded_anywhere(r) for r in rows):
        return np.stack(rows, axis=axis)
    return wrap(np.stack([r._value for r in rows], axis=axis))


def _recorded_anywhere(t):
    return any(id(t) in tape._live for tape in state.tapes)


def _reshape(x, shape):
    if isinstance(x, Tensor) and _recorded_anywhere(x):
        return np.reshape(x, shape)
    return wrap(np.reshape(as_value(x), shape))

