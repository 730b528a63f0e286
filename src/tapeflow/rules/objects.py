"""What attribute writes on an object the function makes become
(`transforms.sugar.attributes`): `o.v = x` is `_attrs[k] = x` on `attributes_of(o)`, the
object's own `__dict__`, so the writes and reads are a dict's, differentiated by key
(`rules.dicts`)."""
from __future__ import annotations

from tapeflow.rules.registry import nondifferentiable

__all__ = ['attributes_of', 'matches_sequence']


def attributes_of(obj):
    """`obj.__dict__`: the object's attributes, written and read in place."""
    return obj.__dict__


_SEQUENCE_FLAG = 1 << 5         # Py_TPFLAGS_SEQUENCE: what `case [a, b]:` tests


def matches_sequence(value) -> bool:
    """Whether a sequence pattern (`case [a, b]:`) can match `value`, as CPython decides:
    its type says it is a sequence (collections.abc.Sequence registers one; NumPy 2.5 says
    so of ndarray, earlier NumPy does not), and it is no str, bytes or bytearray."""
    return bool(type(value).__flags__ & _SEQUENCE_FLAG) and \
        not isinstance(value, (str, bytes, bytearray))


nondifferentiable(attributes_of, matches_sequence)
