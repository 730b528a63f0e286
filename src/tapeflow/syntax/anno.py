"""Annotations on gast nodes, under documented keys.

Passes communicate through these instead of side tables. Every key is a member
of `Key`; the value type is documented beside it.
"""
from __future__ import annotations

import enum


class Key(enum.Enum):
    # Hashed by identity, in C: passes look annotations up at every node they visit, and
    # Enum's own __hash__ is a Python function. (Members are singletons, equal to themselves only.)
    __hash__ = object.__hash__

    # Location of the user's code a node comes from: (lineno, col_offset) in
    # the user's file. Set by `parse`, copied by every pass that rewrites.
    ORIGIN = 'origin'
    # The Python object a free name or dotted reference resolves to (Name and
    # Attribute nodes in load context). Set by `resolve`.
    RESOLVED = 'resolved'
    # For `push` calls and the `pop` that undoes them: an int that pairs them,
    # so the optimizer can remove both. Set by the reverse transform.
    TAPE_PAIR = 'tape_pair'
    # A statement inserted by tapeflow that does not map to a user line.
    SYNTHETIC = 'synthetic'
    # On a `pop` that restores a value mutated in place (`y[i] = _pop()`).
    RESTORES_IN_PLACE = 'restores_in_place'
    # On the `if <flags>: break` that ends a lowered loop body: an exit the
    # reverse sweep does not mirror (the trip count already records it).
    LOOP_EXIT = 'loop_exit'
    # On `y = y + v` written `y += v` (desugar): the operation may write into
    # `y`'s memory (`transforms.mutation` decides). True; for the `t += v` of
    # `y[i] += v` (`t = y[i]; t += v; y[i] = t`), the name `y` (a str).
    IN_PLACE = 'in_place'
    # On a statement run as written that writes into the memory of a name
    # (the name, a str): the reverse sweep saves and restores that memory.
    # Set by `transforms.mutation`.
    MUTATES = 'mutates'
    # On a statement that writes memory in place (and on the restore the
    # reverse sweep makes of it): the other names that may have held that
    # memory (a frozenset). The restore stays: what the tape gives back to
    # them may be that memory.
    SHARES = 'shares'
    # On a call of a user function: the kinds of its arguments, as far as the
    # caller knows them (`analysis.aliasing`), to compile the callee for them.
    ARG_KINDS = 'arg_kinds'
    # On `bx = bx + rule(g, ...)` of the reverse sweep, where the rule does not
    # take the symbolic zero for `g`: (g's name, the primal result, the contribution
    # node); on a callee's backward call, (g's name or None, the result, the call, 'keep').
    COTANGENT = 'cotangent'
    # On the forward sweep's `y = f_forward(_tape, ...)` of a user function: the primal
    # `y = f(...)`, what a checkpointed loop runs without the tape (`transforms.checkpoint`).
    PRIMAL = 'primal'
    # On a `for` loop written `for i in tf.checkpoint(range(n))`: True; the loop is
    # checkpointed (`transforms.checkpoint`) whatever the `checkpoint=` option says.
    CHECKPOINT = 'checkpoint'
    # On a `for` loop that `desugar` made of a loop over a sequence: the names whose items
    # its first statements read (`v = xs[_i]`). Where one may not be a sequence (a dict,
    # a set, a generator), `transforms.mutation` reads its items through `iterated`.
    ITERATED = 'iterated'
    # On a nested def that `desugar` made of a guarded body (`try`, `with`): True; it is
    # called where it is made, so its closure reads each free name's value there.
    CALLED_AT_ONCE = 'called_at_once'
    # On such a def: the names of the state it gives back, those it may write into marked
    # (`rules.guards.WRITTEN`).
    KEPT = 'kept'


_ATTR = '_tapeflow_anno'


class _Annotations(dict):
    """Copied shallowly: a deep copy of a node shares the objects it names."""

    def __deepcopy__(self, memo):
        return _Annotations(self)


def setanno(node, key: Key, value):
    annotations = node.__dict__.get(_ATTR)
    if annotations is None:
        annotations = node.__dict__[_ATTR] = _Annotations()
    annotations[key] = value
    return node


def getanno(node, key: Key, default=None):
    annotations = node.__dict__.get(_ATTR)
    return default if annotations is None else annotations.get(key, default)


def defaultanno(node, key: Key, value):
    """`setanno(node, key, value)` where the node has no `key` (or it is None)."""
    annotations = node.__dict__.get(_ATTR)
    if annotations is None:
        annotations = node.__dict__[_ATTR] = _Annotations()
    elif annotations.get(key) is not None:
        return node
    annotations[key] = value
    return node


def hasanno(node, key: Key) -> bool:
    return key in node.__dict__.get(_ATTR, {})


def delanno(node, key: Key):
    node.__dict__.get(_ATTR, {}).pop(key, None)


def copyanno(source, target, *keys: Key):
    annotations = source.__dict__.get(_ATTR)
    if annotations:
        for key in keys or _KEYS:
            if key in annotations:
                setanno(target, key, annotations[key])
    return target


_KEYS = tuple(Key)
