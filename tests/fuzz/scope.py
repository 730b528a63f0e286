"""What the generator knows about the names a program has bound.

A program is generated statement by statement against a `Scope`: for each
live name its static type (a float, an array of a shape, a list of floats or
of arrays of a known minimal length, a loop index with its bound). The scope
needs no aliasing information: the plain Python call is the ground truth, and
every write keeps the shape of what it writes to. It only has to make sure
each generated statement runs: indices stay in range, shapes agree, and a
name is never rebound to a value of another type where a loop body or a
closure would see both.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Float:
    pass


@dataclasses.dataclass(frozen=True)
class Array:
    shape: tuple
    contiguous: bool = True   # reshape/ravel of it is a view, not a copy

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        size = 1
        for n in self.shape:
            size *= n
        return size


@dataclasses.dataclass(frozen=True)
class FloatList:
    length: int                # known on every path: at least this long


@dataclasses.dataclass(frozen=True)
class ArrayList:
    shape: tuple               # every element has this shape
    length: int


@dataclasses.dataclass(frozen=True)
class Index:
    bound: int                 # a loop variable: 0 <= i < bound


@dataclasses.dataclass(frozen=True)
class Fn:
    """A function value (a closure, a lambda, a partial, a callable object): elementwise,
    a float to a float and an array to an array of its shape."""


@dataclasses.dataclass(frozen=True)
class FnList:
    length: int                # a list of `Fn`s, at least this long


@dataclasses.dataclass(frozen=True)
class Tuple:
    element: object            # Float() or Array(shape): every item is one
    length: int


@dataclasses.dataclass(frozen=True)
class Dict:
    element: object            # Float() or Array(shape): every value is one
    keys: frozenset            # keys present on every path (ints and strings)

    @property
    def length(self):
        return len(self.keys)


@dataclasses.dataclass(frozen=True)
class Namespace:
    """An object the function made (`types.SimpleNamespace()`, a module class `State()`)
    whose attributes were all set where it was made: (name, Float() or Array(shape)) pairs."""
    attrs: tuple


SEQUENCES = (FloatList, ArrayList, FnList, Tuple)    # types with a known minimal length


def same_kind(a, b) -> bool:
    """Whether a value of type `b` may be stored where one of type `a` was (lengths may differ)."""
    if isinstance(a, Array) and isinstance(b, Array):
        return a.shape == b.shape
    if isinstance(a, ArrayList) and isinstance(b, ArrayList):
        return a.shape == b.shape
    if isinstance(a, (Tuple, Dict)) and type(a) is type(b):
        return a.element == b.element
    return type(a) is type(b)


def join(a, b):
    """The type known after two paths that left a name with types `a` and `b`; None if none."""
    if not same_kind(a, b) or isinstance(a, Index):
        return a if a == b else None
    if isinstance(a, Array):
        return Array(a.shape, a.contiguous and b.contiguous)
    if isinstance(a, SEQUENCES):
        return dataclasses.replace(a, length=min(a.length, b.length))
    if isinstance(a, Dict):
        return dataclasses.replace(a, keys=a.keys & b.keys)
    return a


class Scope:
    """Names in scope with their types, plus what the enclosing code allows.

    `growth_only`: lists may not shrink (a loop body, a helper body: an index
    checked on the first pass must stay valid). `frozen`: names that may be
    read and written through but not rebound (a closure's enclosing names).
    `kind`: 'f', 'helper' or 'closure', the function being written.
    """

    def __init__(self, variables=(), kind='f', depth=0, growth_only=False, frozen=()):
        self.vars = dict(variables)
        self.kind, self.depth = kind, depth
        self.growth_only, self.frozen = growth_only, frozenset(frozen)
        self.touched: list[str] = []
        self.hidden: dict = {}       # names a `without` scope does not see, kept for after it

    def child(self, **changes):
        """A scope for a nested block: the same names, one level deeper."""
        options = dict(kind=self.kind, depth=self.depth + 1, growth_only=self.growth_only,
                       frozen=self.frozen)
        options.update(changes)
        inner = Scope(self.vars, **options)
        inner.touched = list(self.touched)
        return inner

    def names(self, predicate=lambda t: True):
        return [name for name, t in self.vars.items() if predicate(t)]

    def of_type(self, cls, predicate=lambda t: True):
        return self.names(lambda t: isinstance(t, cls) and predicate(t))

    def rebindable(self, name) -> bool:
        return name in self.vars and name not in self.frozen

    def bind(self, name, type_):
        """Bind `name` (fresh, or rebound to the same kind) to a value of `type_`."""
        old = self.vars.get(name)
        assert old is None or same_kind(old, type_), (name, old, type_)
        self.vars[name] = type_
        self.touch(name)

    def touch(self, name):
        """Note that `name` was written: the return prefers names written last."""
        if name in self.touched:
            self.touched.remove(name)
        self.touched.append(name)

    def shrink_lists(self, kind_of):
        """One element left a list: any list of the same kind may be that list (an alias)."""
        for name, t in self.vars.items():
            if type(t) is type(kind_of) and t.length > 0:
                self.vars[name] = dataclasses.replace(t, length=t.length - 1)

    def drop_key(self, key):
        """A key left a dict: any dict may be that dict (an alias) and lose it."""
        for name, t in self.vars.items():
            if isinstance(t, Dict) and key in t.keys:
                self.vars[name] = dataclasses.replace(t, keys=t.keys - {key})

    def freeze(self, names):
        """`names` may no longer be bound again (a closure made here reads them later)."""
        self.frozen = self.frozen | frozenset(names)

    def forget(self, name):
        """`del name`."""
        self.vars.pop(name, None)
        if name in self.touched:
            self.touched.remove(name)

    def without(self, predicate, **changes):
        """A child scope that does not see the names whose type satisfies `predicate`
        (a loop over a list must not lengthen it through an alias: it would never end)."""
        inner = self.child(**changes)
        inner.vars = {n: t for n, t in inner.vars.items() if not predicate(t)}
        inner.hidden = {n: t for n, t in self.vars.items() if predicate(t)}
        return inner

    def adopt(self, branches):
        """Take the types known after every branch in `branches` (an if's two arms)."""
        merged = {}
        for name in self.vars:
            types = [branch.vars.get(name) for branch in branches]
            result = types[0]
            for other in types[1:]:
                result = join(result, other) if result is not None and other is not None else None
            if result is not None:
                merged[name] = result
        for name in branches[0].vars:
            if name not in merged and name not in self.vars:
                types = [branch.vars.get(name) for branch in branches]
                if all(t is not None for t in types):
                    merged[name] = types[0] if all(t == types[0] for t in types) else None
        self.vars = {name: t for name, t in merged.items() if t is not None}
        for branch in branches:
            for name in branch.touched:
                if name in self.vars:
                    self.touch(name)

    def adopt_loop(self, body, trips: int):
        """Take the types after `trips` passes of a loop body generated once as `body`."""
        after = {}
        for name, t in body.vars.items():
            if isinstance(t, Index):
                continue
            before = self.vars.get(name)
            if before is not None and isinstance(t, SEQUENCES) and same_kind(before, t):
                growth = t.length - before.length
                t = dataclasses.replace(t, length=before.length + trips * max(growth, 0))
            elif before is not None and isinstance(t, Dict) and same_kind(before, t):
                pass            # a body runs at least once and never deletes a key
            elif before is not None:
                t = join(before, t)
            if t is not None:
                after[name] = t
        after.update(body.hidden)
        self.vars = after
        for name in body.touched:
            if name in self.vars:
                self.touch(name)
