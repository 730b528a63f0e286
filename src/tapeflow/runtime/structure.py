"""Nested structures of values (TF's `tf.nest`, the part tapes need).

A structure is a list, tuple, namedtuple or dict of structures, or a leaf
(anything else, None included). `flatten` lists the leaves in order (dicts by
sorted key); `pack_sequence_as` rebuilds a structure from such a list.
"""
from __future__ import annotations

__all__ = ['flatten', 'flatten_up_to', 'pack_sequence_as', 'map_structure']


def flatten(structure):
    if structure.__class__ in (list, tuple):
        if not any(s.__class__ in (list, tuple, dict) or isinstance(s, (list, tuple, dict))
                   for s in structure):
            return list(structure)
    elif not isinstance(structure, (list, tuple, dict)):
        return [structure]
    flat = []
    _flatten_into(structure, flat)
    return flat


def _flatten_into(structure, flat):
    if isinstance(structure, dict):
        for key in sorted(structure):
            _flatten_into(structure[key], flat)
    elif isinstance(structure, (list, tuple)):
        for item in structure:
            _flatten_into(item, flat)
    else:
        flat.append(structure)


def flatten_up_to(shallow, deep):
    """The parts of `deep` at the leaves of `shallow` (a Python list there is one value)."""
    if not isinstance(shallow, (list, tuple, dict)):
        return [deep]
    if isinstance(shallow, dict):
        if not isinstance(deep, dict) or sorted(deep) != sorted(shallow):
            raise ValueError('the structures do not match')
        pairs = [(shallow[k], deep[k]) for k in sorted(shallow)]
    else:
        if not isinstance(deep, (list, tuple)) or len(deep) != len(shallow):
            raise ValueError('the structures do not match')
        pairs = zip(shallow, deep)
    flat = []
    for s, d in pairs:
        flat.extend(flatten_up_to(s, d))
    return flat


def pack_sequence_as(structure, flat):
    """`structure` with its leaves replaced, in order, by the items of `flat`."""
    flat = list(flat)
    if not isinstance(structure, (list, tuple, dict)):
        if len(flat) != 1:
            raise ValueError(f'structure is a single value but {len(flat)} values were given')
        return flat[0]
    items = iter(flat)
    packed = _pack(structure, items)
    if next(items, _END) is not _END:
        raise ValueError('too many values for the structure')
    return packed


_END = object()


def _pack(structure, items):
    if isinstance(structure, dict):
        return type(structure)((key, _pack(structure[key], items)) for key in sorted(structure))
    if isinstance(structure, (list, tuple)):
        values = [_pack(s, items) for s in structure]
        if hasattr(structure, '_fields'):
            return type(structure)(*values)
        return type(structure)(values)
    value = next(items, _END)
    if value is _END:
        raise ValueError('too few values for the structure')
    return value


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])
