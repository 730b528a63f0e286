"""What the rules of scipy.integrate.odeint (`rules.scipy_integrate`) integrate: the
right-hand side func(y, t, *args) as a `Field` of flat vectors, its value, pullback
(`tapeflow.vjp`) and pushforward (`tapeflow.jvp`), and the float leaves of what it reads
(args, a closure's values) as one vector (`Numbers`), read from a tangent or cotangent of
any structure (None or the symbolic zero 0.0 standing for zeros at any depth).
"""
import numpy as np

from tapeflow.rules.closures import Closure
from tapeflow.rules.sequences import dense as plain

__all__ = ['Field', 'Numbers', 'moves', 'is_zero', 'flat', 'shaped_like', 'carries_numbers',
           'snapshot', 'same']


# ---------------------------------------------------------------- the numbers of a pytree

def moves(leaf) -> bool:
    """A leaf whose numbers move: a float, a float array."""
    if isinstance(leaf, (bool, np.bool_)):
        return False
    if isinstance(leaf, float):
        return True
    dtype = getattr(leaf, 'dtype', None)
    return dtype is not None and np.issubdtype(dtype, np.floating)


def is_zero(value) -> bool:
    """None, or the symbolic zero (a number 0 standing for a structure of zeros)."""
    if value is None:
        return True
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return isinstance(value, (int, float, np.number)) and value == 0


class Numbers:
    """The float leaves of a pytree (func's args) as one flat vector, and back."""

    def __init__(self, tree):
        from tapeflow.runtime import pytree
        self.tree = tree
        self.leaves, self.treedef = pytree.flatten(tree)
        self.moving = [moves(leaf) for leaf in self.leaves]
        self.size = sum(int(np.size(leaf)) for leaf, m in zip(self.leaves, self.moving) if m)

    def vector(self, value):
        """The numbers of `value`, a tree like this one's (a tangent or a cotangent; None
        or 0.0 for zeros, at any depth), at its float leaves, in one vector."""
        parts = []
        _read(value, self.tree, parts)
        return np.concatenate(parts) if parts else np.zeros(0)

    def tree_of(self, vector, fill=None):
        """The tree like this one's holding `vector`'s numbers at its float leaves (a
        Python float for a float), `fill(leaf)` at the others."""
        values, at = [], 0
        for leaf, moving in zip(self.leaves, self.moving):
            if not moving:
                values.append(fill(leaf) if fill is not None else None)
                continue
            n = int(np.size(leaf))
            part = vector[at:at + n]
            at += n
            values.append(float(part[0]) if isinstance(leaf, float) else
                          np.reshape(part, np.shape(leaf)).astype(leaf.dtype))
        return self.treedef.unflatten(values)


def _read(value, like, parts):
    from tapeflow.runtime import pytree
    kids = pytree.children(like)
    if kids is None:
        if moves(like):
            number = 0.0 if is_zero(value) else np.real(np.asarray(value))
            parts.append(np.broadcast_to(np.asarray(number, dtype=float), np.shape(like)).ravel())
        return
    if is_zero(value):
        for _, kid in kids:
            _read(None, kid, parts)
        return
    for (_, kid), (_, part) in zip(kids, pytree.children(plain(value)) or ()):
        _read(part, kid, parts)


# ---------------------------------------------------------------- the system

class Field:
    """func(y, t, *args) as the rules call it: y a vector of D numbers, the float leaves of
    what else it reads (args, and a closure's values: `extra`) one vector (`numbers`); its
    value, pullback and pushforward through tapeflow."""

    def __init__(self, func, y0, args, tfirst):
        self.tfirst, self.dim = bool(tfirst), int(np.size(y0))
        self.args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        self.func, self.extra = func, ()
        if isinstance(func, Closure):       # a lambda or nested def that reads locals
            given, first = 2 + len(self.args), func.nparams - func.ndefaults
            self.func = func.fn
            self.extra = tuple(func.values[i - first] for i in range(given, func.nparams)) + \
                func.values[func.ndefaults:]
        self.numbers = Numbers(self.args + self.extra)

    def _primals(self, y, t):
        return (t, y, *self.args, *self.extra) if self.tfirst else \
            (y, t, *self.args, *self.extra)

    def value(self, y, t):
        return flat(self.func(*self._primals(y, t)))

    def pullback(self, y, t, a):
        """(f, a df/dy, a df/d(args and extra)) at (y, t), flat."""
        from tapeflow.products import vjp
        out, pull = vjp(self.func, *self._primals(np.array(y), float(t)))
        cotangents = pull(shaped_like(a, out))
        ay = cotangents[1 if self.tfirst else 0]
        ay = np.zeros(self.dim) if is_zero(ay) else flat(ay)
        return flat(out), ay, self.numbers.vector(cotangents[2:])

    def push(self, y, t, s, dp):
        """(f, df/dy s + df/d(args and extra) dp) at (y, t), flat; `dp` a vector."""
        from tapeflow.products import jvp
        dargs = self.numbers.tree_of(dp, fill=lambda leaf: np.zeros(np.shape(leaf)))
        tangents = (0.0, np.array(s), *dargs) if self.tfirst else (np.array(s), 0.0, *dargs)
        out, tangent = jvp(self.func, self._primals(np.array(y), float(t)), tangents)
        return flat(out), np.zeros(self.dim) if is_zero(tangent) else flat(tangent)

    def split(self, vector):
        """(args' part, extra's part) of a vector of all the numbers, as trees."""
        tree = self.numbers.tree_of(vector)
        return tuple(tree[:len(self.args)]), tuple(tree[len(self.args):])

    def closure_value(self, func, extra):
        """The cotangent of the closure `func` from that of `extra`: a tuple over its values
        (0.0 for a default that odeint's args override)."""
        given, first = 2 + len(self.args), func.nparams - func.ndefaults
        defaults = [extra[first + j - given] if first + j >= given else 0.0
                    for j in range(func.ndefaults)]
        return tuple(defaults) + tuple(extra[func.nparams - given:])

    def extra_of(self, func, tangent):
        """The tangent of `extra` from that of the closure `func` (a tuple over its values)."""
        if is_zero(tangent):
            return (None,) * len(self.extra)
        given, first = 2 + len(self.args), func.nparams - func.ndefaults
        return tuple(tangent[i - first] for i in range(given, func.nparams)) + \
            tuple(tangent[func.ndefaults:])


def flat(value):
    """A value of func (an array, a list of numbers) as one vector of floats."""
    return np.asarray(plain(value), dtype=float).ravel()


def shaped_like(vector, out):
    """`vector` in the structure of func's value `out` (an array, a list of numbers)."""
    if isinstance(out, (list, tuple)):
        parts = np.split(vector, np.cumsum([np.size(o) for o in out])[:-1])
        shaped = [float(v[0]) if np.ndim(o) == 0 else np.reshape(v, np.shape(o))
                  for v, o in zip(parts, out)]
        return shaped if isinstance(out, list) else tuple(shaped)
    if np.ndim(out) == 0:
        return float(vector[0])
    return np.reshape(vector, np.shape(out))


def carries_numbers(value) -> bool:
    """Whether a tangent of any structure holds a number that is not 0."""
    if is_zero(value):
        return False
    if isinstance(value, (list, tuple, dict)):
        return any(carries_numbers(v) for v in (value.values() if isinstance(value, dict)
                                                  else value))
    return bool(np.any(np.asarray(plain(value)) != 0))


# ---------------------------------------------------------------- one call, again

def snapshot(values):
    """The structure and leaves of `values`, its arrays copied (for `same`)."""
    from tapeflow.runtime import pytree
    leaves, treedef = pytree.flatten(values)
    return treedef, [np.array(leaf, copy=True) if isinstance(leaf, np.ndarray) else leaf
                     for leaf in leaves]


def same(snapshot, values):
    """Whether `values` holds the numbers and objects `snapshot` took."""
    from tapeflow.runtime import pytree
    treedef, kept = snapshot
    leaves, now = pytree.flatten(values)
    if repr(now) != repr(treedef) or len(leaves) != len(kept):
        return False
    for old, new in zip(kept, leaves):
        if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
            if not (isinstance(old, np.ndarray) and isinstance(new, np.ndarray)
                    and old.shape == new.shape and old.dtype == new.dtype
                    and np.array_equal(old, new, equal_nan=True)):
                return False
        elif old is not new and not (type(old) is type(new) and _equal(old, new)):
            return False
    return True


def _equal(old, new) -> bool:
    try:
        return bool(old == new)
    except Exception:               # (an object whose == is not a bool)
        return False
