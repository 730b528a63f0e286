"""The reverse sweep over recorded nodes, and the gradients it gives back.

`sweep(nodes, reach, grads, tensor_mode)` runs the VJP rules of the nodes a
GradientTape recorded (see :mod:`tapeflow.runtime.recording` for their
form), last first, accumulating cotangents by the id of the value they
belong to; custom nodes (`CUSTOM`) call their own backward. In
`tensor_mode` (a recorder is active during the sweep) the rules compute on
Tensors, so that recorder sees the backward pass (higher order); otherwise
on NumPy values. `as_gradient` turns a cotangent into what `gradient` returns for
a source: a Tensor of the source's dtype, None or zeros
(`UnconnectedGradients`). Used by :mod:`tapeflow.runtime.tape` and
:mod:`tapeflow.runtime.forward` (which transposes through a private tape).
"""
from __future__ import annotations

import enum

import numpy as np

from tapeflow.rules.arrays import is_foreign_array
from tapeflow.runtime.recording import CUSTOM
from tapeflow.runtime.tensor import Tensor, as_value, wrap

__all__ = ['UnconnectedGradients', 'unconnected_mode', 'sweep', 'tensor_args', 'ones', 'zeros',
           'as_gradient', 'one_hots', 'batch_one_hots']

_SEQUENCE_TYPES = frozenset((list, tuple))   # `cls in` a set: one hash, no __eq__
_ARRAYS = (np.ndarray, np.generic)


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""

    NONE = 'none'
    ZERO = 'zero'


_NONE = UnconnectedGradients.NONE


def unconnected_mode(value):
    """`unconnected_gradients` as given (the enum or its value), checked."""
    if isinstance(value, UnconnectedGradients):
        return value
    try:
        return UnconnectedGradients(value)
    except (ValueError, TypeError):
        raise ValueError(f'Unknown value for unconnected_gradients: {value!r}') from None


def sweep(nodes, reach, grads, tensor_mode):
    """Propagate the cotangents in `grads` (id -> cotangent, updated) back through `nodes`."""
    get = grads.get
    for rule, inputs, args, kwargs, out in reversed(nodes):
        if out.__class__ is not tuple:
            g = get(id(out))
            if g is None:
                continue
            ans = out if tensor_mode else out._value
        elif rule is CUSTOM:
            # `args` is the node's backward; `out` a tuple (see record_node).
            if len(out) == 1:
                g = get(id(out[0]))
                if g is None:
                    continue
                cotangents = args((g,))
            else:
                gs = [get(id(o)) for o in out]
                if all(c is None for c in gs):
                    continue
                cotangents = args(tuple([zeros(o, tensor_mode) if c is None else c
                                         for c, o in zip(gs, out)]))
            for x, c in zip(inputs, cotangents):
                if c is not None:
                    key = id(x)
                    if key in reach:
                        if not tensor_mode and isinstance(c, Tensor):
                            c = c._value
                        prev = get(key)
                        grads[key] = c if prev is None else prev + c
            continue
        else:
            gs = [get(id(o)) for o in out]
            if all(g is None for g in gs):
                continue
            g = tuple(zeros(o, tensor_mode) if c is None else c for c, o in zip(gs, out))
            ans = out if tensor_mode else tuple(o._value for o in out)
        call_args = tensor_args(inputs, args) if tensor_mode else args
        vjps = rule.vjps
        for i, x in enumerate(inputs):
            key = id(x)
            if key in reach:   # (a list or tuple input is never in reach itself)
                try:
                    vjp = vjps[i]
                except KeyError:
                    vjp = rule.vjp(i)   # raises MissingRule, naming the argument
                c = vjp(g, ans, *call_args, **kwargs) if kwargs else vjp(g, ans, *call_args)
                if c is not None:
                    prev = get(key)
                    grads[key] = c if prev is None else prev + c
            elif x.__class__ in _SEQUENCE_TYPES:
                if not any(id(e) in reach for e in x):
                    continue
                parts = rule.vjp(i)(g, ans, *call_args, **kwargs)
                for e, c in zip(x, parts):
                    if c is not None and id(e) in reach:
                        prev = get(id(e))
                        grads[id(e)] = c if prev is None else prev + c
    return grads


def tensor_args(inputs, args):
    """Arguments for a rule run on Tensors: the recorded objects themselves.

    A Variable reassigned since the operation contributes its old value, as a
    constant.
    """
    call = list(inputs)
    for i, (x, a) in enumerate(zip(inputs, args)):
        if isinstance(x, Tensor) and x._is_variable and x._value is not a:
            call[i] = wrap(a)
    return call


# ---------------------------------------------------------------- seeds and results

_ONE = {}   # dtype -> the scalar 1 of that dtype


def _one(dtype):
    one = _ONE[dtype] = dtype.type(1)
    return one


def ones(value):
    """Ones like the NumPy value `value` (the scalar cached per dtype)."""
    if isinstance(value, np.generic):
        dtype = value.dtype
        one = _ONE.get(dtype)
        if one is None:
            one = _one(dtype)
        return one
    return np.ones_like(value)


def zeros(like, tensor_mode):
    """Zeros like the Tensor `like`'s value (a Tensor of them in `tensor_mode`)."""
    value = like._value
    zero = value.dtype.type(0) if isinstance(value, np.generic) else np.zeros_like(value)
    return wrap(zero) if tensor_mode else zero


def as_gradient(g, source, mode):
    """The gradient returned for `source`: a Tensor of its dtype, None, or zeros."""
    dtype = source._value.dtype
    if g is None or dtype.kind not in 'fc':
        if mode is _NONE:
            return None
        return wrap(np.zeros_like(source._value))
    if g.__class__ is Tensor:
        return g if g._value.dtype == dtype else g.astype(dtype)
    if not (isinstance(g, _ARRAYS) or is_foreign_array(g)):
        g = np.asarray(g)
    kind = g.dtype
    if kind is not dtype and kind != dtype:
        g = g.astype(dtype)
    return wrap(g)


def one_hots(target):
    """One seed per element of `target`: the rows of the identity."""
    value = as_value(target)
    shape, dtype = np.shape(value), getattr(value, 'dtype', np.float32)
    size = int(np.prod(shape))
    return [row.reshape(shape) if shape else row[0] for row in np.eye(size, dtype=dtype)]


def batch_one_hots(target):
    """One seed per element of an example: that element set in every example."""
    value = as_value(target)
    shape = value.shape
    inner = int(np.prod(shape[1:]))
    seeds = []
    for k in range(inner):
        seed = np.zeros((shape[0], inner), value.dtype)
        seed[:, k] = 1
        seeds.append(seed.reshape(shape))
    return seeds
