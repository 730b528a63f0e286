"""What attribute writes on an object the function makes become
(`transforms.sugar.attributes`): `o.v = x` is `_attrs[k] = x` on `attributes_of(o)`, the
object's own `__dict__`, so the writes and reads are a dict's, differentiated by key
(`rules.dicts`)."""
from __future__ import annotations

from tapeflow.rules.registry import nondifferentiable

__all__ = ['attributes_of', 'matches_sequence', 'Fields', 'register_construction']


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


# ------------------------------------------------------------------ objects made here

class Fields(dict):
    """The tangent or cotangent of an object: its attributes' by name (what `rules.fields`
    reads a field's from and makes); `+` adds two by name, as the tangents of several
    arguments of a call add, and the cotangents of a loop's trips."""

    def __add__(self, other):
        from tapeflow.rules.sequences import add_cotangents
        if other.__class__ is float and other == 0.0:
            return self
        out = Fields(self)
        for name, value in other.items():
            out[name] = add_cotangents(out[name], value) if name in out else value
        return out

    __radd__ = __add__


def _attribute_part(g, cls, name):
    """The cotangent of the attribute `name` out of `g`, an object of `cls`'s (a dict by
    attribute name, as `rules.fields` makes it, or an object of `cls`)."""
    if isinstance(g, dict):
        return g.get(name, 0.0)
    if isinstance(g, cls):
        return getattr(g, name)
    raise TypeError(f'tapeflow internal error: a cotangent {type(g).__name__} of a '
                    f'{cls.__name__} object')


def register_construction(cls, stored):
    """The rules of `cls(a0, a1, ...)` where `cls.__init__` only stores its parameters:
    `stored[i]`, (the name of parameter i, the attributes it is stored in), from
    `transforms.constructors`; a keyword argument is differentiated as its position.
    Each argument's pair is a gather and its scatter (`registry.linear_pair`)."""
    from tapeflow.rules.batching import defjvp_batched
    from tapeflow.rules.registry import defjvp, defvjp, linear_pair, positional_keywords
    from tapeflow.rules.sequences import add_cotangents
    from tapeflow.rules.shapes import is_symbolic_zero
    entry = positional_keywords(cls, **{param: i for i, (param, _) in enumerate(stored)})
    for i, (_, names) in enumerate(stored):
        if not names:
            continue

        def vjp(g, ans, *args, _names=names):
            total = 0.0
            for name in _names if not is_symbolic_zero(g) else ():
                total = add_cotangents(total, _attribute_part(g, cls, name))
            return total

        def jvp(t, ans, *args, _names=names):
            return 0.0 if is_symbolic_zero(t) else Fields({name: t for name in _names})
        vjp.__name__ = f'{cls.__name__}_vjp_{i}'
        jvp.__name__ = f'{cls.__name__}_jvp_{i}'
        defvjp(cls, vjp, argnums=[i])
        defjvp(cls, jvp, argnums=[i])
        defjvp_batched(cls, jvp, argnums=[i])        # (a batch stays whole in the slot)
        linear_pair(vjp, jvp)
    return entry
