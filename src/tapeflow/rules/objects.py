"""What attribute writes on an object the function makes become
(`transforms.sugar.attributes`): `o.v = x` is `_attrs[k] = x` on `attributes_of(o)`, the
object's own `__dict__`, so the writes and reads are a dict's, differentiated by key
(`rules.dicts`)."""
from __future__ import annotations

from tapeflow.rules.registry import nondifferentiable

__all__ = ['attributes_of']


def attributes_of(obj):
    """`obj.__dict__`: the object's attributes, written and read in place."""
    return obj.__dict__


nondifferentiable(attributes_of)
