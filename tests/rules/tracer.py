"""A minimal reverse-mode tracer over the rule table, to check rules to second order.

`Traced` values dispatch NumPy (like tapeflow's Tensors) and record every call
on a graph; `gradient` walks the graph backwards with the VJP rules of the
registry. Running a VJP rule on Traced values and differentiating the result
again is what the eager tape does for higher-order derivatives: this checks,
numerically, that every rule is itself correctly differentiable by the rules.
"""
from __future__ import annotations

import operator

import numpy as np

from tapeflow.rules import lookup
from tapeflow.rules.numpy_shape import astype
from tapeflow.rules.shapes import add_cotangents


class Node:
    def __init__(self, fn, args, kwargs, ans):
        self.fn, self.args, self.kwargs, self.ans = fn, args, kwargs, ans


class Traced(np.lib.mixins.NDArrayOperatorsMixin):
    __tapeflow_tensor__ = True      # records what it is given, as Tensor does

    def __init__(self, value, node=None, index=None):
        self.value, self.node, self.index = np.asarray(value), node, index

    def __array__(self, *args, **kwargs):
        raise TypeError('a rule converted a traced value with np.asarray')

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        assert method == '__call__' and 'out' not in kwargs, (ufunc, method)
        return record(ufunc, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return record(func, args, kwargs)

    def __getitem__(self, idx):
        return record(operator.getitem, (self, idx), {})

    def __len__(self):
        return len(self.value)

    def __bool__(self):
        return bool(self.value)

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    T = property(lambda self: record(np.transpose, (self,), {}))

    def sum(self, *args, **kwargs):
        return record(np.sum, (self,) + args, kwargs)

    def reshape(self, *shape, **kwargs):
        return record(np.reshape, (self, shape[0] if len(shape) == 1 else shape), kwargs)

    def astype(self, dtype, **kwargs):
        return record(astype, (self, dtype), kwargs)


def plain(x):
    if isinstance(x, Traced):
        return x.value
    if isinstance(x, list):
        return [plain(i) for i in x]
    if isinstance(x, tuple):
        return tuple(plain(i) for i in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _traced_in(x):
    if isinstance(x, Traced):
        return x.node is not None or getattr(x, 'leaf', False)
    if isinstance(x, (list, tuple)):
        return any(_traced_in(i) for i in x)
    return False


def record(fn, args, kwargs):
    ans = fn(*plain(args), **plain(kwargs))
    entry = lookup(fn)
    assert entry is not None, f'a rule called {fn}, which has no rule'
    live = [i for i, a in enumerate(args) if _traced_in(a)]
    node = Node(fn, args, kwargs, ans) if live and not entry.nondiff else None
    if isinstance(ans, (tuple, list)):
        outs = [_output(a, node, k) for k, a in enumerate(ans)]
        return tuple(outs) if isinstance(ans, tuple) else outs
    return _output(ans, node, None)


def _output(value, node, index):
    """Arrays come back traced (like Tensors); Python scalars and shapes stay plain."""
    if isinstance(value, (np.ndarray, np.generic)):
        return Traced(value, node, index)
    return value


def leaf(value):
    t = Traced(value)
    t.leaf = True
    return t


def _parents(node):
    for a in node.args:
        for t in (a if isinstance(a, (list, tuple)) else [a]):
            if isinstance(t, Traced) and t.node is not None:
                yield t.node


def _order(root):
    seen, order = set(), []

    def visit(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for parent in _parents(node):
            visit(parent)
        order.append(node)
    visit(root)
    return order[::-1]


def gradient(out, wrt):
    """d out / d wrt for a scalar Traced `out` and a leaf `wrt`."""
    if not isinstance(out, Traced) or out.node is None:
        return np.zeros_like(wrt.value)
    cots = {id(out.node): 1.0 if out.index is None else _slot(None, out.index, 1.0)}
    total = None
    for node in _order(out.node):
        g = cots.pop(id(node), None)
        if g is None:
            continue
        if isinstance(node.ans, (tuple, list)):
            g = tuple(g) + (None,) * (len(node.ans) - len(g))
        entry = lookup(node.fn)
        for i, arg in enumerate(node.args):
            if not _traced_in(arg):
                continue
            cot = entry.vjp(i)(g, node.ans, *plain(node.args), **plain(node.kwargs))
            pieces = zip(arg, cot) if isinstance(arg, (list, tuple)) else [(arg, cot)]
            for t, c in pieces:
                if not isinstance(t, Traced):
                    continue
                if t is wrt:
                    total = add_cotangents(total, c)
                elif t.node is not None:
                    key = id(t.node)
                    if t.index is None:
                        cots[key] = add_cotangents(cots.get(key), c)
                    else:
                        cots[key] = _slot(cots.get(key), t.index, c)
    return np.zeros_like(wrt.value) if total is None else total


def _slot(current, index, value):
    slots = list(current) if current is not None else []
    slots += [None] * (index + 1 - len(slots))
    slots[index] = add_cotangents(slots[index], value)
    return slots
