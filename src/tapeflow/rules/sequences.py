"""The cotangent of a list: a value that costs O(1) to read, update and shorten.

A loop that appends to a list and reads its last element (`ys.append(ys[-1] * c)`)
makes, in its reverse sweep, one cotangent contribution per trip to one slot of
the list's cotangent, and drops one slot per trip. With a dense Python list as
the cotangent, each of those copies the whole list: the reverse sweep is
quadratic in the trip count. `Items` is the list's cotangent as a sparse map
from position to cotangent (absent positions are zero) of a known length.

It is a *value*: every operation returns a new `Items` and leaves its operand
as it was, so generated code (and generated code differentiated again, which
pushes old cotangents on its tape and reads them later) can treat it like a
number. Underneath, the versions of one cotangent share one dict (Baker's
rerooting of persistent arrays): the newest version reads and writes it in
place in O(1); an older version read again takes the recorded differences
back, and becomes the newest. Generated code uses each version once, so each
operation is O(1).

`a + b` adds item by item (never concatenates), with another `Items`, a list,
a tuple, or the symbolic zero 0.0. `list(items)` is the dense list.
"""
from __future__ import annotations

__all__ = ['Items', 'dense']

_ABSENT = None            # a position with no cotangent (a cotangent is never None)


class _Version:
    """One version of the shared dict: the root holds it; the others, one difference from the next."""
    __slots__ = ('data', 'key', 'value', 'next')

    def __init__(self, data):
        self.data, self.key, self.value, self.next = data, None, None, None


def _reroot(version) -> dict:
    """Make `version` the one that holds the dict (undoing newer differences); return the dict."""
    if version.data is not None:
        return version.data
    path = []
    node = version
    while node.data is None:
        path.append(node)
        node = node.next
    for step in reversed(path):
        data = node.data
        old = data.get(step.key, _ABSENT)
        _put(data, step.key, step.value)
        node.data, node.key, node.value, node.next = None, step.key, old, step
        step.data, step.key, step.value, step.next = data, None, None, None
        node = step
    return version.data


def _put(data, key, value):
    if value is _ABSENT:
        data.pop(key, None)
    else:
        data[key] = value


def _is_zero(value) -> bool:
    return value.__class__ is float and value == 0.0


class Items:
    """The cotangent of a list of `length` items (see the module docstring)."""
    __slots__ = ('length', '_version')

    def __init__(self, length, entries=None, _version=None):
        self.length = length
        self._version = _version if _version is not None else _Version(dict(entries or {}))

    # ---------------------------------------------------------------- reading

    def _data(self) -> dict:
        return _reroot(self._version)

    def _position(self, index) -> int:
        if not -self.length <= index < self.length:
            raise IndexError('list cotangent index out of range')
        return index % self.length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        if isinstance(index, slice):
            data = self._data()
            return [data.get(i, 0.0) for i in range(self.length)[index]]
        return self._data().get(self._position(index), 0.0)

    def __iter__(self):
        data = self._data()
        return iter([data.get(i, 0.0) for i in range(self.length)])

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        items = [np.asarray(item) for item in self]
        # the symbolic zero 0.0 of a row stands for zeros of the rows' shape
        shapes = {item.shape for item in items if item.ndim}
        if len(shapes) == 1:
            shape = shapes.pop()
            items = [np.zeros(shape, item.dtype) if item.ndim == 0 and item == 0.0 else item
                     for item in items]
        return np.asarray(items, dtype=dtype)

    def __repr__(self):
        return f'Items({list(self)!r})'

    def __eq__(self, other):
        return isinstance(other, (Items, list, tuple)) and list(self) == list(other)

    __hash__ = None

    # ---------------------------------------------------------------- new versions

    def _with(self, key, value, length=None) -> 'Items':
        data = self._data()
        old = data.get(key, _ABSENT)
        _put(data, key, value)
        new = _Version(data)
        version = self._version
        version.data, version.key, version.value, version.next = None, key, old, new
        return Items(self.length if length is None else length, _version=new)

    def added(self, index, cotangent) -> 'Items':
        """This cotangent plus `cotangent` at `index`."""
        if _is_zero(cotangent):
            return self
        position = self._position(index)
        current = self._data().get(position, _ABSENT)
        return self._with(position, cotangent if current is _ABSENT or _is_zero(current)
                          else add_cotangents(current, cotangent))

    def cleared(self, index) -> 'Items':
        """Zero at `index` (what a write there overwrote gets no cotangent)."""
        return self._with(self._position(index), _ABSENT)

    def without_last(self) -> 'Items':
        """The cotangent of the list before `append` (its last slot gone)."""
        if self.length == 0:
            return self
        return self._with(self.length - 1, _ABSENT, self.length - 1)

    def inserted(self, index) -> 'Items':
        """A zero slot at `index`, the slots after it moved up (before `pop(index)`)."""
        if index == self.length:
            return self._grown()
        data = self._data()
        moved = {(k + 1 if k >= index else k): v for k, v in data.items()}
        return Items(self.length + 1, moved)

    def _grown(self) -> 'Items':
        new = _Version(self._data())
        version = self._version
        version.data, version.key, version.value, version.next = None, self.length, _ABSENT, new
        return Items(self.length + 1, _version=new)

    # ---------------------------------------------------------------- addition

    def __add__(self, other):
        if _is_zero(other):
            return self
        if isinstance(other, Items):
            small, large = (self, other) if len(self._data()) <= len(other._data()) else (other, self)
            entries = list(small._data().items())
            result = large
            for position, value in entries:
                result = result.added(position, value)
            return result
        if isinstance(other, (list, tuple)):
            result = self
            for position, value in enumerate(other):
                result = result.added(position, value)
            return result
        return NotImplemented

    __radd__ = __add__


def add_cotangents(a, b):
    """a + b of two cotangents of one value of any structure (lists, tuples, dicts,
    `Items`); the float 0.0 is the symbolic zero."""
    if isinstance(a, Items) or isinstance(b, Items):
        return a + b
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a)(add_cotangents(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):     # an object's, a dict's: by key
        out = {k: add_cotangents(a.get(k, 0.0), b.get(k, 0.0)) for k in {**a, **b}}
        return type(b)(out) if type(b) is not dict else type(a)(out)   # (an object's `Fields`)
    return a + b


def dense(cotangent):
    """`cotangent` with every `Items` in it (at any depth of lists and tuples) a plain list."""
    if isinstance(cotangent, Items):
        return [dense(c) for c in cotangent]
    if isinstance(cotangent, (list, tuple)) and not hasattr(cotangent, '_fields'):
        return type(cotangent)(dense(c) for c in cotangent)
    return cotangent
