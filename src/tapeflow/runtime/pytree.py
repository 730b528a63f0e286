"""Pytrees: the one model of structured arguments and results (JAX's).

A *node* is a tuple, a list, a dict, None (a node with no children), a
NamedTuple, a dataclass instance, or an instance of a class registered with
`register_pytree(cls, flatten, unflatten)` (JAX's `register_pytree_node`
signature: `flatten(obj) -> (children, aux)`, `unflatten(aux, children) ->
obj`). Anything else is a *leaf* (arrays, numbers, strings, Tensors...).

`children(tree)` lists a node's `(key, child)` pairs in a fixed order (a dict
by sorted key, as JAX and `tf.nest`; a dataclass by field order; a
NamedTuple by position) and `rebuild(tree, values)` makes a node of `tree`'s
kind holding `values` in that order. A key is a dict key, a sequence
position, an `Attr` (a dataclass field, read as `obj.name`) or a `Child` (the
k-th child a registered class's `flatten` returns). `flatten`, `unflatten`,
`tree_map` and the path helpers are built on these two.

`none_is_leaf=True` gives `tf.nest`'s model (None a leaf), which the eager
tape uses for its sources and targets (`runtime.structure`).

This module is runtime: it knows nothing of the compiler (no gast).
"""
from __future__ import annotations

import dataclasses

__all__ = ['register_pytree', 'is_node', 'children', 'rebuild', 'flatten', 'unflatten',
           'tree_map', 'leaves', 'leaves_with_paths', 'child_at', 'leaf_at', 'replace_at',
           'path_text', 'Attr', 'Child', 'is_registered', 'TreeDef', 'kind_name',
           'node_fields']

_REGISTRY: dict = {}        # class -> (flatten, unflatten)


def register_pytree(cls, flatten, unflatten):
    """Make instances of `cls` pytree nodes: `flatten(obj) -> (children, aux)`,
    `unflatten(aux, children) -> obj` (JAX's `register_pytree_node`). Returns `cls`."""
    if not isinstance(cls, type):
        raise TypeError(f'register_pytree registers a class, not {cls!r}')
    if not callable(flatten) or not callable(unflatten):
        raise TypeError('register_pytree(cls, flatten, unflatten): flatten and unflatten must '
                        'be callables')
    _REGISTRY[cls] = (flatten, unflatten)
    return cls


def is_registered(tree) -> bool:
    return type(tree) in _REGISTRY


class Attr(str):
    """The key of a dataclass field (`obj.name`)."""
    __slots__ = ()

    def __repr__(self):
        return f'Attr({str(self)!r})'


class Child(int):
    """The key of the k-th child of a registered class (what its `flatten` returns)."""
    __slots__ = ()

    def __repr__(self):
        return f'Child({int(self)})'


def _is_namedtuple(tree) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), '_fields')


def _is_dataclass(tree) -> bool:
    return dataclasses.is_dataclass(tree) and not isinstance(tree, type)


def is_node(tree, none_is_leaf=False) -> bool:
    if tree is None:
        return not none_is_leaf
    return isinstance(tree, (list, tuple, dict)) or type(tree) in _REGISTRY or _is_dataclass(tree)


def node_fields(tree):
    """The field names of a NamedTuple or dataclass node (None for other nodes)."""
    if _is_namedtuple(tree):
        return tuple(type(tree)._fields)
    if _is_dataclass(tree):
        return tuple(f.name for f in dataclasses.fields(tree))
    return None


def kind_name(tree) -> str:
    return type(tree).__name__


def children(tree, none_is_leaf=False):
    """[(key, child)] of a node in order, or None for a leaf."""
    cls = type(tree)
    if cls in _REGISTRY:
        kids, _ = _REGISTRY[cls][0](tree)
        return [(Child(k), c) for k, c in enumerate(kids)]
    if tree is None:
        return None if none_is_leaf else []
    if isinstance(tree, dict):
        return [(k, tree[k]) for k in _sorted_keys(tree)]
    if isinstance(tree, (list, tuple)):
        return list(enumerate(tree))
    if _is_dataclass(tree):
        return [(Attr(f.name), getattr(tree, f.name)) for f in dataclasses.fields(tree)]
    return None


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:               # keys of mixed types: insertion order
        return list(d)


def rebuild(tree, values):
    """A node of `tree`'s kind holding `values` (in the order of `children`)."""
    values = list(values)
    cls = type(tree)
    if cls in _REGISTRY:
        _, aux = _REGISTRY[cls][0](tree)
        return _REGISTRY[cls][1](aux, values)
    if tree is None:
        return None
    if isinstance(tree, dict):
        new = dict(zip(_sorted_keys(tree), values))
        if cls is dict:
            return {k: new[k] for k in tree}           # the user's key order
        out = tree.copy()                               # a subclass keeps its own state
        for k in tree:
            out[k] = new[k]
        return out
    if _is_namedtuple(tree):
        return cls(*values)
    if isinstance(tree, (list, tuple)):
        return cls(values)
    if _is_dataclass(tree):
        return _new_dataclass(tree, values)
    raise TypeError(f'{tree!r} is a leaf, not a pytree node')


def _new_dataclass(like, values):
    """An instance of `like`'s dataclass with its fields set to `values` (no `__init__`:
    a gradient or tangent is not a value `__post_init__` must accept)."""
    cls = type(like)
    out = cls.__new__(cls)
    for f, v in zip(dataclasses.fields(like), values):
        object.__setattr__(out, f.name, v)
    return out


def child_at(tree, key):
    if isinstance(key, Child):
        return children(tree)[int(key)][1]
    if isinstance(key, Attr):
        return getattr(tree, key)
    return tree[key]


def leaf_at(tree, path):
    for key in path:
        tree = child_at(tree, key)
    return tree


def replace_at(tree, path, value):
    """A copy of `tree` with the subtree at `path` replaced by `value` (the rest shared)."""
    if not path:
        return value
    return rebuild(tree, [replace_at(child, path[1:], value) if key == path[0] else child
                          for key, child in children(tree)])


def path_text(name, path):
    """`xs[1]['w']`, `params.w`: where a leaf is, for messages."""
    out = name
    for key in path:
        if isinstance(key, Attr):
            out += f'.{key}'
        elif isinstance(key, Child):
            out += f'<child {int(key)}>'
        else:
            out += f'[{key!r}]'
    return out


def leaves_with_paths(tree, is_leaf=None, none_is_leaf=False, path=()):
    """[(path, leaf)] in order."""
    kids = None if is_leaf is not None and is_leaf(tree) else children(tree, none_is_leaf)
    if kids is None:
        return [(path, tree)]
    out = []
    for key, child in kids:
        out.extend(leaves_with_paths(child, is_leaf, none_is_leaf, path + (key,)))
    return out


def leaves(tree, is_leaf=None, none_is_leaf=False):
    return [leaf for _, leaf in leaves_with_paths(tree, is_leaf, none_is_leaf)]


@dataclasses.dataclass(frozen=True, eq=False)
class TreeDef:
    """The structure of a pytree without its leaves: `like` is the node itself (None
    for a leaf), rebuilt around new children by `rebuild`."""
    like: object
    is_leaf_: bool
    subtrees: tuple = ()
    num_leaves: int = 1

    def unflatten(self, flat):
        items = iter(list(flat))
        out = self._build(items)
        if next(items, _END) is not _END:
            raise ValueError(f'too many leaves for a structure of {self.num_leaves}')
        return out

    def _build(self, items):
        if self.is_leaf_:
            value = next(items, _END)
            if value is _END:
                raise ValueError(f'too few leaves for a structure of {self.num_leaves}')
            return value
        return rebuild(self.like, [s._build(items) for s in self.subtrees])

    def __repr__(self):
        if self.is_leaf_:
            return '*'
        return f'{kind_name(self.like)}({", ".join(map(repr, self.subtrees))})'


_END = object()


def _treedef(tree, is_leaf, none_is_leaf, flat):
    kids = None if is_leaf is not None and is_leaf(tree) else children(tree, none_is_leaf)
    if kids is None:
        flat.append(tree)
        return TreeDef(None, True)
    subs = tuple(_treedef(c, is_leaf, none_is_leaf, flat) for _, c in kids)
    return TreeDef(tree, False, subs, sum(s.num_leaves for s in subs))


def flatten(tree, is_leaf=None, none_is_leaf=False):
    """(leaves, treedef)."""
    flat = []
    treedef = _treedef(tree, is_leaf, none_is_leaf, flat)
    return flat, treedef


def unflatten(treedef, flat):
    return treedef.unflatten(flat)


def tree_map(fn, tree, *rest, is_leaf=None, none_is_leaf=False):
    """`fn` applied leaf by leaf to `tree` and trees of its structure (`rest`)."""
    flat, treedef = flatten(tree, is_leaf, none_is_leaf)
    others = [flatten_up_to(treedef, r) for r in rest]
    return treedef.unflatten([fn(x, *xs) for x, *xs in zip(flat, *others)] if others
                             else [fn(x) for x in flat])


def flatten_up_to(treedef, tree):
    """The parts of `tree` at the leaves of `treedef` (a subtree there is one value)."""
    out = []
    _up_to(treedef, tree, out, ())
    return out


def _up_to(treedef, tree, out, path):
    if treedef.is_leaf_:
        out.append(tree)
        return
    like = treedef.like
    kids = children(tree, none_is_leaf=False) if is_node(tree) else None
    if kids is None or not _same_kind(like, tree) or len(kids) != len(treedef.subtrees):
        raise ValueError(f'the structures do not match{" at " + path_text("", path) if path else ""}:'
                         f' expected {_describe(like)}, got {_describe(tree)}')
    expected = [k for k, _ in children(like)]
    if [k for k, _ in kids] != expected:
        raise ValueError(f'the structures do not match{" at " + path_text("", path) if path else ""}:'
                         f' keys {expected} vs {[k for k, _ in kids]}')
    for sub, (key, child) in zip(treedef.subtrees, kids):
        _up_to(sub, child, out, path + (key,))


def _same_kind(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict)
    if isinstance(a, (list, tuple)) and not _is_namedtuple(a):
        return isinstance(b, (list, tuple))
    return type(a) is type(b)


def _describe(tree) -> str:
    if isinstance(tree, (list, tuple, dict)):
        return f'a {type(tree).__name__} of {len(tree)}'
    return f'a {type(tree).__name__}'


# ------------------------------------------------------------------ cotangents kept by field
# Generated code keeps the cotangent of a dataclass or registered object as a dict keyed by
# attribute name (what `p.w` reads give, `rules.fields`); of a NamedTuple as a tuple.

def _is_zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def _object_node(tree) -> bool:
    return is_node(tree) and tree is not None and not isinstance(tree, (list, tuple, dict))


def _holds_object(tree) -> bool:
    if _object_node(tree):
        return True
    kids = children(tree)
    return bool(kids) and any(_holds_object(c) for _, c in kids)


def child_cotangents(g, arg, kids=None):
    """The cotangent of each child of the node `arg` out of its cotangent `g`: a node of
    `arg`'s kind, a list, tuple or sparse list (sequences), or a dict keyed by key or, for
    an object, by attribute name. The symbolic zero 0.0 stands for zeros anywhere."""
    kids = children(arg) if kids is None else kids
    if _is_zero(g):
        return [0.0] * len(kids)
    if type(g) is type(arg) and not isinstance(arg, (list, tuple, dict)):
        return [c for _, c in children(g)]
    keys = [k for k, _ in kids]
    if isinstance(g, dict) and not isinstance(arg, dict):        # fields read as p.w
        if is_registered(arg):
            return _registered_cotangents(g, arg, kids)
        unknown = [k for k in g if k not in keys]
        if unknown:
            raise TypeError(f'a derivative reached the attribute .{unknown[0]} of a '
                            f'{type(arg).__name__}, which is not one of its fields')
        return [g.get(k, 0.0) for k in keys]
    if isinstance(g, dict):
        return [g.get(k, 0.0) for k in keys]
    return [g[int(k)] for k in keys]


def _registered_cotangents(g, arg, kids):
    """A registered class's children's cotangents from a dict keyed by attribute: the
    attribute `name` is the child its `flatten` returned (the same object)."""
    from tapeflow.runtime.support import add_adjoint
    out = [0.0] * len(kids)
    for name, part in g.items():
        value = getattr(arg, name, _END)
        where = [k for k, (_, child) in enumerate(kids) if child is value]
        if not where:
            raise TypeError(f'a derivative reached the attribute .{name} of a '
                            f'{type(arg).__name__}, which is not one of the children its '
                            f'registered flatten returns; return it from flatten, or read it '
                            f'through a child')
        if len(where) > 1:
            raise TypeError(f'the attribute .{name} of a {type(arg).__name__} is the same object '
                            f'as its children {where} (its registered flatten returns it more '
                            f'than once): which one a derivative belongs to is not known')
        out[where[0]] = add_adjoint(out[where[0]], part)
    return out


def as_argument(g, arg):
    """The cotangent `g` of `arg` with every object in it (dataclass, registered class) of
    its argument's type rather than a dict of fields; zeros stay symbolic, leaves as they are."""
    if _is_zero(g) or not _holds_object(arg):
        return g
    kids = children(arg)
    parts = child_cotangents(g, arg, kids)
    return rebuild(arg, [as_argument(p, c) for p, (_, c) in zip(parts, kids)])


def as_fields(h, arg):
    """The inverse of `as_argument`: objects in `h` as dicts keyed by attribute name."""
    if _is_zero(h) or not _holds_object(arg):
        return h
    kids = children(arg)
    parts = [as_fields(p, c) for p, (_, c) in zip(child_cotangents(h, arg, kids), kids)]
    if isinstance(arg, (list, tuple, dict)):
        return rebuild(arg, parts)
    if is_registered(arg):
        # the transpose of `as_argument`, which sums the fields that are one child: every
        # attribute that is the child gets its cotangent
        attributes = vars(arg).items() if hasattr(arg, '__dict__') else ()
        out = {}
        for (_, child), p in zip(kids, parts):
            names = [n for n, v in attributes if v is child]
            if not names:
                raise TypeError(f'a child of the registered {type(arg).__name__} is none of '
                                f'its attributes; its derivative cannot be kept by field')
            for n in names:
                out[n] = p
        return out
    if _is_namedtuple(arg):
        return tuple(parts)
    return {str(k): p for (k, _), p in zip(kids, parts)}
