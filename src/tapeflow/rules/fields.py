"""Reading a field of a structured value: `p.w` where `p` is a dataclass, a NamedTuple,
a registered pytree class or any other object (a bound method's `self`).

`field(obj, name)` is `getattr(obj, name)`. Its cotangent is kept the way a
dict's is: for a NamedTuple (a tuple) the tuple of its fields with `g` at the
field's position (so `p.w` and `p[0]` add up), for any other object a dict
`{name: g}` keyed by attribute name (absent fields are zero); the functional
API turns that dict into a value of the argument's own type. An array or a
number has no fields: an attribute without a rule there is refused.
"""
from __future__ import annotations

import types

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.indexing import untake
from tapeflow.rules.objects import Fields

__all__ = ['field', 'field_cotangent', 'field_tangent']


def field(obj, name):
    """`obj.name`: the primitive the compiler reads an attribute without a rule as."""
    return getattr(obj, name)


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), '_fields')


def _check_has_fields(obj, name):
    if isinstance(obj, (np.ndarray, np.generic, int, float, complex, list, dict)) or \
            (isinstance(obj, tuple) and not _is_namedtuple(obj)):
        raise TypeError(f'no derivative rule for the attribute .{name} of a '
                        f'{type(obj).__name__}')


def field_cotangent(g, obj, name):
    """The cotangent of `obj` from the cotangent `g` of `obj.name`."""
    _check_has_fields(obj, name)
    if g.__class__ is float and g == 0.0:
        return 0.0
    if _is_namedtuple(obj):
        return untake(g, obj, type(obj)._fields.index(name))
    return Fields({name: g})            # (`+` adds two by name: a loop's trips add them)


def field_tangent(t, obj, name):
    """The tangent of `obj.name` from the tangent `t` of `obj` (of `obj`'s type, or a dict
    or tuple cotangent that `field_cotangent` made, when generated code is swept again)."""
    if t.__class__ is float and t == 0.0:
        return 0.0
    if isinstance(t, dict):
        return t.get(name, 0.0)
    if _is_namedtuple(obj) and isinstance(t, (tuple, list)) and not hasattr(type(t), '_fields'):
        return t[type(obj)._fields.index(name)]
    return getattr(t, name)


def _bound_to(ans, obj) -> bool:
    """`obj.name` is a method bound to `obj` (its cotangent is the object's own)."""
    return isinstance(ans, (types.MethodType, types.BuiltinMethodType)) and \
        ans.__self__ is obj


def _field_vjp(g, ans, obj, name):
    return g if _bound_to(ans, obj) else field_cotangent(g, obj, name)


def _field_jvp(t, ans, obj, name):
    return t if _bound_to(ans, obj) else field_tangent(t, obj, name)


entry(field, _field_vjp, _field_jvp, batched=_field_jvp, static=(1,), forms=None)

# Generated code calls these: both linear in their first argument, each the other's transpose.
entry(field_cotangent, lambda h, ans, g, obj, name: field_tangent(h, obj, name),
      lambda t, ans, g, obj, name: field_cotangent(t, obj, name),
      batched=lambda t, ans, g, obj, name: field_cotangent(t, obj, name), static=(1, 2),
      forms=None)
entry(field_tangent, lambda h, ans, t, obj, name: field_cotangent(h, obj, name),
      lambda t, ans, u, obj, name: field_tangent(t, obj, name),
      batched=lambda t, ans, u, obj, name: field_tangent(t, obj, name), static=(1, 2),
      forms=None)
