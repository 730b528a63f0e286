"""The derivative rule table: the single place rules live.

A *primitive* is a callable (``numpy.sin``, ``operator.mul``, ``math.exp``...)
whose derivative is known. For each primitive the table holds, per positional
argument, a VJP and a JVP, side by side:

    vjp(g, ans, *args, **kwargs)  -> cotangent of that argument, in its shape
    jvp(t, ans, *args, **kwargs)  -> the output tangent contributed by that
                                     argument when it moves along ``t``

``ans`` is the primitive's output, ``args``/``kwargs`` its inputs. A rule is
an ordinary function: the eager tape calls it; the compiler calls it too, or,
when it is a ``def`` whose body is a single ``return``, inlines its expression
into the generated code (so keep such rules free of side effects, and refer
only to module-level names: ``np``, ``unbroadcast``...).

Both the compiler and the eager runtime read this table; nothing here knows
about either. Functions whose outputs carry no derivative (``np.zeros``,
``np.shape``, comparisons...) are registered as *non-differentiable*.

Registering::

    defvjp(np.sin, lambda g, ans, x: g * np.cos(x))
    defjvp(np.sin, lambda t, ans, x: t * np.cos(x))

    @vjp_rule(np.tanh)
    def _(g, ans, x):
        return g * (1.0 - ans * ans)

The helpers in :mod:`tapeflow.rules.entries` make a function's rules one entry
(`elementwise(np.sin, lambda g, ans, x: g * np.cos(x), forms=..., scalar=math.sin)`;
`entry(np.sum, sum_vjp, sum_jvp, batched=..., forms=...)` for any other function)
and the common shapes one word (`def_elementwise`, `def_linear`, `def_nondiff`).
"""
from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Callable, Optional

__all__ = [
    'Primitive', 'RULES', 'ATTRIBUTES', 'METHODS', 'lookup', 'primitive',
    'defvjp', 'defjvp', 'vjp_rule', 'jvp_rule', 'nondifferentiable',
    'alias', 'is_nondifferentiable', 'MissingRule', 'register_attribute',
    'register_method', 'FORMS', 'describe', 'static', 'available',
    'VERSION_DEPENDENT', 'version_dependent', 'linear_pair', 'RULES_OF_RULES',
    'lazily', 'load_lazily', 'user_primitives', 'user_generation', 'positional_keywords',
]

# Rule-table version: part of the on-disk cache key of generated code.
VERSION = 2


class MissingRule(TypeError):
    """A primitive has no derivative rule for an argument that needs one."""


@dataclasses.dataclass
class Primitive:
    """Everything known about one differentiable callable."""

    fn: Callable
    name: str
    vjps: dict = dataclasses.field(default_factory=dict)   # argnum -> rule
    jvps: dict = dataclasses.field(default_factory=dict)   # argnum -> rule
    nondiff: bool = False
    # Positional arguments that never carry a derivative (shapes, axes, the
    # condition of `where`...). Passing an active value there is an error.
    static_argnums: frozenset = frozenset()
    # argnum -> JVP rule taking a batch `(B,) + shape` of tangents (rules/batching.py)
    batched_jvps: dict = dataclasses.field(default_factory=dict)
    # keyword -> the position it stands for, where a keyword argument carries derivatives
    # (odeint's `args=`: 3; see `positional_keywords`)
    keyword_argnums: dict = dataclasses.field(default_factory=dict)

    def vjp(self, argnum: int) -> Callable:
        try:
            return self.vjps[argnum]
        except KeyError:
            raise MissingRule(
                f'no reverse-mode rule for argument {argnum} of {self.name}'
            ) from None

    def jvp(self, argnum: int) -> Callable:
        try:
            return self.jvps[argnum]
        except KeyError:
            raise MissingRule(
                f'no forward-mode rule for argument {argnum} of {self.name}'
            ) from None


# callable -> Primitive. Keyed on the object itself (ufuncs and builtins hash).
RULES: dict = {}
# Attribute name -> primitive applied to the object (`x.T` is transpose(x)).
ATTRIBUTES: dict = {}
# Method name -> (primitive, how to map `x.m(*a, **k)` to `fn(x, *a, **k)`).
METHODS: dict = {}


def _name_of(fn) -> str:
    module = getattr(fn, '__module__', None) or ''
    name = getattr(fn, '__name__', None) or repr(fn)
    if module in ('numpy', 'numpy.core', 'numpy._core.umath', None, '') or module.startswith('numpy'):
        module = 'numpy'
    if module == '_operator':
        module = 'operator'
    return f'{module}.{name}' if module else name


# Primitives whose entries code outside tapeflow changed (`defvjp` in a user's
# module, a `custom_vjp`), in order: the disk cache's key holds their rules
# (tapeflow's own rules are part of tapeflow's version). Every change of an
# entry passes through `primitive`, which notes who asked for it.
_USER_PRIMITIVES: dict = {}
_user_generation = [0]
# (the helpers that register for their caller: who called them is who asked)
_REGISTRARS = frozenset({__name__, 'tapeflow.rules.user', 'tapeflow.rules.batching',
                         'tapeflow.rules.entries', 'tapeflow.custom_derivatives'})


def _note_registrar(fn):
    """Note `fn` when the code asking to change its entry is not tapeflow's."""
    try:
        frame = sys._getframe(2)
    except ValueError:                  # called from the bottom of the stack: not tapeflow
        frame = None
    while frame is not None and frame.f_globals.get('__name__') in _REGISTRARS:
        frame = frame.f_back
    module = (frame.f_globals.get('__name__') or '') if frame is not None else ''
    if module != 'tapeflow' and not module.startswith('tapeflow.'):
        _USER_PRIMITIVES[fn] = None
        _user_generation[0] += 1


def user_primitives() -> list:
    """The primitives whose entries code outside tapeflow changed, first changed first."""
    return list(_USER_PRIMITIVES)


def user_generation() -> int:
    """A number that changes whenever code outside tapeflow changes an entry."""
    return _user_generation[0]


def primitive(fn, name: Optional[str] = None) -> Primitive:
    """The table entry for `fn`, created empty if it is new."""
    _note_registrar(fn)
    entry = RULES.get(fn)
    if entry is None:
        entry = RULES[fn] = Primitive(fn, name or _name_of(fn))
    return entry


def lookup(fn) -> Optional[Primitive]:
    """The entry for `fn`, or None. Never raises (unhashable callables too). A rule
    family registered lazily (`lazily`) is registered at the first miss that may be
    one of its functions."""
    try:
        entry = RULES.get(fn)
    except TypeError:
        return None
    if entry is None:
        make = getattr(fn, '__tapeflow_rules__', None)      # a rule whose rules wait
        if make is not None:
            make()
            entry = RULES.get(fn)
        elif _LAZY and load_lazily(fn):
            entry = RULES.get(fn)
        if entry is None:       # a function made at run time (`vmap`) carries its own entry:
            entry = getattr(fn, '__tapeflow_primitive__', None)     # it dies with the function
    return entry


# ------------------------------------------------------------------ lazy families

# The rules of an optional library are registered when first needed: importing SciPy
# takes longer than all of tapeflow, and most programs never call it.
_LAZY: list = []        # [(module that must be imported first, register(), objects)]


def lazily(module, register, *objects):
    """Register a rule family by calling `register()` when a lookup misses while
    `module` has been imported (its functions can only be met then), or misses for one
    of `objects` (NumPy functions whose rules live in that family)."""
    _LAZY.append((module, register, objects))


def load_lazily(fn=None) -> bool:
    """Register the lazy families `fn` may belong to (every one, without `fn`)."""
    import sys
    loaded = False
    for entry in list(_LAZY):
        module, register, objects = entry
        if fn is None or module in sys.modules or any(fn is o for o in objects):
            try:
                _LAZY.remove(entry)
            except ValueError:          # another thread is registering it
                continue
            register()
            loaded = True
    return loaded


def defvjp(fn, *vjps, argnums=None, name=None):
    """Register reverse rules, one per positional argument (None skips one)."""
    entry = primitive(fn, name)
    for argnum, rule in zip(argnums or range(len(vjps)), vjps):
        if rule is not None:
            entry.vjps[argnum] = rule
    return entry


def defjvp(fn, *jvps, argnums=None, name=None):
    """Register forward rules, one per positional argument (None skips one)."""
    entry = primitive(fn, name)
    for argnum, rule in zip(argnums or range(len(jvps)), jvps):
        if rule is not None:
            entry.jvps[argnum] = rule
    return entry


def vjp_rule(fn, argnum: int = 0):
    """Decorator form of `defvjp` for one argument."""
    def register(rule):
        primitive(fn).vjps[argnum] = rule
        return rule
    return register


def jvp_rule(fn, argnum: int = 0):
    """Decorator form of `defjvp` for one argument."""
    def register(rule):
        primitive(fn).jvps[argnum] = rule
        return rule
    return register


def nondifferentiable(*fns):
    """Mark callables whose outputs carry no derivative."""
    for fn in fns:
        primitive(fn).nondiff = True


def is_nondifferentiable(fn) -> bool:
    entry = lookup(fn)
    return entry is not None and entry.nondiff


def alias(new, existing, name=None):
    """`new` has exactly the rules of `existing` (np.multiply of `*`...).

    The two entries share their rule dicts: a rule added to one is the other's.
    """
    old = RULES[existing]
    RULES[new] = Primitive(new, name or _name_of(new), old.vjps, old.jvps,
                           old.nondiff, old.static_argnums, old.batched_jvps,
                           old.keyword_argnums)


def register_attribute(attr: str, fn):
    """`x.<attr>` means `fn(x)` for differentiation (`x.T`: transpose)."""
    ATTRIBUTES[attr] = fn


def register_method(name: str, fn, varargs: bool = False):
    """`x.<name>(*a, **k)` means `fn(x, *a, **k)`.

    With `varargs`, `x.reshape(2, 3)` packs the positional arguments into one
    tuple: `fn(x, (2, 3))`, as NumPy's methods accept both spellings.
    """
    METHODS[name] = (fn, varargs)


# ------------------------------------------------------------------ additions

# Primitive -> one line on the argument forms its rules support (axis, keepdims,
# ord...). Read by `tapeflow.rules.coverage` to write docs/numpy-support.md.
FORMS: dict = {}


def describe(forms: str, *fns):
    """Record the argument forms the rules of `fns` support, for the docs."""
    for fn in fns:
        FORMS[fn] = forms


def static(fn, *argnums):
    """Positional arguments of `fn` that never carry a derivative (axes, shapes)."""
    entry = primitive(fn)
    entry.static_argnums = entry.static_argnums | frozenset(argnums)
    return entry


def positional_keywords(fn, **positions):
    """Keyword arguments of `fn` that carry derivatives, each differentiated as the
    positional argument it stands for: after `positional_keywords(odeint, t=2, args=3)`,
    `odeint(f, y0, t, args=(w,))` has argument 3's rules for the tuple `(w,)`, as
    `odeint(f, y0, t, (w,))` has (the compiler moves a keyword to its position where the
    arguments before it are given: `transforms.operations`)."""
    entry = primitive(fn)
    entry.keyword_argnums = {**entry.keyword_argnums, **positions}
    return entry


# Rules and helpers of rules registered as primitives so that the compiler differentiates
# the rules again (their own rules are checked through the functions they serve).
RULES_OF_RULES: set = set()


def linear_pair(vjp, jvp, statics=40):
    """Make the rules `vjp(g, ans, *args)` and `jvp(t, ans, *args)` of a function that only
    moves numbers (a gather and its scatter) primitives of their own: each is linear in
    its first argument and the transpose of the other, and the rest (the output, the
    primal's shape, axes) carries no derivative. Then the compiler differentiates them
    again (second order and beyond) without reading their star-argument signatures."""
    def vjp_of_jvp(h, ans2, t, ans, *args, **kwargs):
        return vjp(h, ans, *args, **kwargs)

    def jvp_of_jvp(t2, ans2, t, ans, *args, **kwargs):
        return jvp(t2, ans, *args, **kwargs)

    def vjp_of_vjp(h, ans2, g, ans, *args, **kwargs):
        return jvp(h, ans, *args, **kwargs)

    def jvp_of_vjp(g2, ans2, g, ans, *args, **kwargs):
        return vjp(g2, ans, *args, **kwargs)

    for rule, (vjp_rule, jvp_rule) in ((jvp, (vjp_of_jvp, jvp_of_jvp)),
                                       (vjp, (vjp_of_vjp, jvp_of_vjp))):
        defvjp(rule, vjp_rule, argnums=[0])
        defjvp(rule, jvp_rule, argnums=[0])
        static(rule, *range(1, statics))
        RULES_OF_RULES.add(rule)
    # the rules' rules are such a pair again (orders 3, 4...): registered when first
    # looked up (`lookup`), not here, so importing tapeflow stays quick
    for pair in ((vjp_of_jvp, jvp_of_jvp), (vjp_of_vjp, jvp_of_vjp)):
        for rule in pair:
            rule.__tapeflow_rules__ = functools.partial(linear_pair, *pair, statics + 2)


# ------------------------------------------- names only some versions have

def available(module, names) -> list:
    """The attributes among `names` that `module` defines, in order.

    Read from the module's `__dict__`, never through `getattr`: a name NumPy
    has removed is skipped, and so is one it deprecates through the module's
    `__getattr__` (reading it warns), so registering rules never warns.
    """
    defined = vars(module)
    return [defined[name] for name in names if name in defined]


# 'np.row_stack' -> the NumPy or Python versions that have it. Rules for these
# names are registered where the running version has them;
# docs/numpy-support.md lists the names apart, so that it reads the same on
# every supported NumPy and Python.
VERSION_DEPENDENT: dict = {}


def version_dependent(module, name: str, versions: str) -> list:
    """`[module.<name>]` where the running version has it, else `[]`.

    `versions` says which versions have the name ('NumPy < 2.5'), for the docs.
    """
    prefix = module.__name__
    if prefix == 'numpy' or prefix.startswith('numpy.'):
        prefix = 'np' + prefix[len('numpy'):]
    VERSION_DEPENDENT[f'{prefix}.{name}'] = versions
    return available(module, [name])
