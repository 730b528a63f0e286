"""Nested structures of values (TF's `tf.nest`, the part tapes need), on `runtime.pytree`.

A structure is a pytree (lists, tuples, namedtuples, dicts, dataclasses,
registered classes) whose leaves are anything else, None included (as in
`tf.nest`). `flatten` lists the leaves in order (dicts by sorted key);
`pack_sequence_as` rebuilds a structure from such a list.
"""
from __future__ import annotations

from tapeflow.runtime import pytree

__all__ = ['flatten', 'flatten_up_to', 'pack_sequence_as', 'map_structure']


def flatten(structure):
    if structure.__class__ in (list, tuple):          # the common case: a flat list
        if not any(pytree.is_node(s, none_is_leaf=True) for s in structure):
            return list(structure)
    return pytree.leaves(structure, none_is_leaf=True)


def flatten_up_to(shallow, deep):
    """The parts of `deep` at the leaves of `shallow` (a Python list there is one value)."""
    _, treedef = pytree.flatten(shallow, none_is_leaf=True)
    return pytree.flatten_up_to(treedef, deep)


def pack_sequence_as(structure, flat):
    """`structure` with its leaves replaced, in order, by the items of `flat`."""
    flat = list(flat)
    _, treedef = pytree.flatten(structure, none_is_leaf=True)
    if treedef.is_leaf_ and len(flat) != 1:
        raise ValueError(f'structure is a single value but {len(flat)} values were given')
    return treedef.unflatten(flat)


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])
