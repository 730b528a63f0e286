"""Objects made from values that carry derivatives: `Gain(2.0 * x)`, `Layer(w, 0.1)`.

Exact where the class's `__init__` does nothing but store its parameters as attributes
(a dataclass's own `__init__`, or a def of `self.a = a` statements), so that the new
object's attributes are the arguments themselves: the call is then a primitive whose
rules gather an argument's cotangent from the object's attribute cotangents and scatter
its tangent into them (`rules.objects.register_construction`). The object's methods read
those attributes as any object's (`rules.fields`). Any other class stays refused, located.
"""
from __future__ import annotations

import ast as pyast
import dataclasses
import inspect
import textwrap

from tapeflow.rules import objects, registry

_PLAIN = object.__setattr__, object.__getattribute__, object.__new__


def construction_entry(cls):
    """The rule entry of calling the user's class `cls`, registered at the first call seen;
    None where its `__init__` does more than store its parameters."""
    entry = registry.lookup(cls)
    if entry is not None:
        return entry
    stored = stored_parameters(cls)
    return None if stored is None else objects.register_construction(cls, stored)


def stored_parameters(cls):
    """For each positional parameter of `cls.__init__` (after self), (its name, the
    attributes it is stored in); None where the class is not plain or `__init__` does
    anything else."""
    setattr_ = object.__setattr__ if _frozen_dataclass(cls) else cls.__setattr__
    if type(cls) is not type or (setattr_, cls.__getattribute__, cls.__new__) != _PLAIN \
            or hasattr(cls, '__getattr__') or any('__slots__' in vars(k) for k in cls.__mro__[:-1]):
        return None
    init = vars(cls).get('__init__')
    if init is None:
        return None
    stored = _of_dataclass(cls, init) if dataclasses.is_dataclass(cls) else None
    if stored is None:
        stored = _of_source(init)
    if stored is None:
        return None
    names = {name for _, names in stored for name in names}
    if any(name in vars(k) and _descriptor(vars(k)[name]) for k in cls.__mro__[:-1]
           for name in names):
        return None             # (a property, a method: not a plain store)
    return stored


def _descriptor(value) -> bool:
    """A class attribute that a store into an instance's attribute of that name would run
    or that reads would prefer (a plain value, a dataclass field's default, is shadowed)."""
    kind = type(value)
    return hasattr(kind, '__get__') or hasattr(kind, '__set__') or hasattr(kind, '__delete__')


def _frozen_dataclass(cls) -> bool:
    """A frozen dataclass: its `__setattr__` refuses, its generated `__init__` stores past
    it (`object.__setattr__`)."""
    params = getattr(cls, '__dataclass_params__', None)
    return params is not None and params.frozen and '__setattr__' in vars(cls) and \
        not _has_source(vars(cls)['__setattr__'])


def _of_dataclass(cls, init):
    """A dataclass's generated `__init__`: each positional field stores its parameter."""
    if getattr(cls, '__post_init__', None) is not None or _has_source(init):
        return None
    fields = list(getattr(cls, '__dataclass_fields__', {}).values())
    if any(f._field_type is not dataclasses._FIELD for f in fields
           if f._field_type is not dataclasses._FIELD_CLASSVAR):
        return None             # (an InitVar: what __post_init__ reads)
    positional = [f for f in fields if f._field_type is dataclasses._FIELD and f.init
                  and not getattr(f, 'kw_only', False)]
    return tuple((f.name, (f.name,)) for f in positional)


def _has_source(fn) -> bool:
    try:
        inspect.getsource(fn)
    except (OSError, TypeError):
        return False
    return True


def _of_source(init):
    """A def whose statements are all `self.a = p` (p a parameter, or a constant)."""
    try:
        tree = pyast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, pyast.FunctionDef) or fdef.decorator_list:
        return None
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or len(args.args) < 1:
        return None
    me, params = args.args[0].arg, [a.arg for a in args.args[1:]]
    stored = {p: [] for p in params}
    body = fdef.body
    if body and isinstance(body[0], pyast.Expr) and isinstance(body[0].value, pyast.Constant):
        body = body[1:]                                     # (a docstring)
    for stmt in body:
        if not (isinstance(stmt, pyast.Assign) and len(stmt.targets) == 1):
            return None
        target, value = stmt.targets[0], stmt.value
        if not (isinstance(target, pyast.Attribute) and isinstance(target.value, pyast.Name)
                and target.value.id == me):
            return None
        if isinstance(value, pyast.Name) and value.id in stored:
            stored[value.id].append(target.attr)
        elif not isinstance(value, pyast.Constant):
            return None
    attrs = [t.targets[0].attr for t in body]
    if len(set(attrs)) != len(attrs):
        return None             # (an attribute stored twice: the last store stays)
    return tuple((p, tuple(stored[p])) for p in params)
