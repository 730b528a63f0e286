"""Desugar, attribute writes on an object the function makes: `o = C(...); o.v = 2 * x;
... o.v ...` is `o = C(...); _attrs = attributes_of(o); _attrs['v'] = 2 * x; ... _attrs['v']`,
the object's own `__dict__` written and read as a dict (`rules.objects`, `rules.dicts`).

Exact where the object is seen only through these attributes, so every write and read of
them is the dict's: `o` is bound only by calls of one plain class (no `__slots__`,
`__setattr__`, `__getattr__`, `__getattribute__`, and no class attribute, property or
method named like an attribute written), and read only as `o.attr`, never passed, returned,
aliased, called (`o.method()` could read what was written) or used by a nested function
but for reading its attributes (`o.v` there is the closure's `_attrs['v']`, read as it runs).
Any other attribute write is refused, located, as before. Runs after `syntax.resolve`.
"""
from __future__ import annotations

import types

from tapeflow.rules import objects
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno

_PLAIN = object.__setattr__, object.__getattribute__


def lower_attribute_writes(node, namer, source, bindings):
    stores = [n for n in nodes.walk_terms(node) if isinstance(n, ast.Attribute)
              and isinstance(n.ctx, (ast.Store, ast.Del))]
    if not stores:
        return
    names, first = {}, {}
    for n in stores:
        if not isinstance(n.value, ast.Name):
            raise source.error(n, 'assignment to an attribute is supported on a name bound to '
                                  'an object the function makes (o = C(...); o.v = ...); '
                                  'assign to a name first')
        names.setdefault(n.value.id, set()).add(n.attr)
        first.setdefault(n.value.id, n)
    for name, attrs in names.items():
        _check(node, name, attrs, source, first[name])
    refs = {}
    for name in names:
        ref = nodes.name(namer.new(f'_attrs_{name}'))
        fn_ref = nodes.name(namer.new('_attributes_of'))
        bindings.computed[fn_ref.id] = objects.attributes_of
        setanno(fn_ref, Key.RESOLVED, objects.attributes_of)
        refs[name] = (ref.id, fn_ref.id)
    _rewrite(node, names, refs)


def _check(node, name, attrs, source, write):
    """Refused, located, unless `name` is an object the function makes, seen only through
    its attributes."""
    def refuse(at, why):
        raise source.error(at, f'assignment to an attribute of {name} is not supported here: '
                               f'{why}')
    params = {a.id for a in node.args.args + node.args.kwonlyargs}
    if name in params:
        refuse(write, f'{name} is a parameter (write into an object the function makes, '
                     f'o = C(...), or return the new value)')
    inner = {id(n) for d in nodes.walk_terms(node) if isinstance(d, (ast.FunctionDef, ast.Lambda))
             and d is not node for n in nodes.walk_terms(d) if n is not d}
    used_as_value = {id(a.value) for a in nodes.walk_terms(node) if isinstance(a, ast.Attribute)
                     and isinstance(a.value, ast.Name) and a.value.id == name}
    read = {id(a.value) for a in nodes.walk_terms(node) if isinstance(a, ast.Attribute)
            and isinstance(a.value, ast.Name) and a.value.id == name
            and isinstance(a.ctx, ast.Load)}       # (a nested function may read `o.v`)
    method_calls = {id(c.func.value) for c in nodes.walk_terms(node) if isinstance(c, ast.Call)
                    and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                    and c.func.value.id == name}
    classes = set()
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Name) and n.id == name:
            if id(n) in inner and id(n) not in read:
                refuse(n, f'a nested function uses {name} other than by reading its '
                          f'attributes')
            if isinstance(n.ctx, ast.Store):
                continue
            if id(n) in method_calls:
                refuse(n, f'a method of {name} is called (it may read what was written); '
                          f'keep the values in names or a dict')
            if id(n) not in used_as_value:
                refuse(n, f'{name} is used as a value here (passed, returned or stored), '
                          f'not only through its attributes')
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.For, ast.With, ast.comprehension)):
            targets = n.targets if isinstance(n, ast.Assign) else \
                [getattr(n, 'target', None)] if not isinstance(n, ast.With) else \
                [item.optional_vars for item in n.items]
            for t in targets:
                if t is None:
                    continue
                bound = [m for m in nodes.walk_terms(t) if isinstance(m, ast.Name) and m.id == name
                         and isinstance(m.ctx, ast.Store)]
                if not bound:
                    continue
                made = getanno(n.value.func, Key.RESOLVED) if isinstance(n, ast.Assign) and \
                    len(n.targets) == 1 and t is n.targets[0] and isinstance(n.value, ast.Call) \
                    else None
                if not isinstance(made, type):
                    refuse(t, f'{name} is bound here to something other than a new object '
                              f'(o = C(...))')
                classes.add(made)
    if len(classes) != 1:
        refuse(write, f'{name} is never bound to a new object (o = C(...))')
    cls = classes.pop()
    mro = cls.__mro__[:-1]          # (object's own slots are not the instance's)
    if cls is not types.SimpleNamespace and (cls.__setattr__, cls.__getattribute__) != _PLAIN or hasattr(cls, '__getattr__') or \
            any('__slots__' in vars(k) for k in mro):
        refuse(write, f'{cls.__name__} controls its attributes (__slots__, __setattr__, '
                     f'__getattr__)')
    for attr in sorted(attrs):
        if any(attr in vars(k) for k in mro):
            refuse(write, f'{cls.__name__} has a class attribute, property or method named '
                         f'{attr!r}')


def _rewrite(node, names, refs):
    """Each `o.attr` of a written attribute read or written through `_attrs_o`; after each
    `o = C(...)`, `_attrs_o = attributes_of(o)`."""
    for parent in nodes.walk_terms(node):
        for field, value in list(ast.iter_fields(parent)):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    made = _replaced(item, names, refs)
                    if made is not None:
                        value[i] = made
            else:
                made = _replaced(value, names, refs)
                if made is not None:
                    setattr(parent, field, made)
    for block in list(_blocks(node)):
        at = 0
        while at < len(block):
            stmt = block[at]
            at += 1
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in refs:
                ref, fn_ref = refs[stmt.targets[0].id]
                func = nodes.name(fn_ref)
                made = nodes.assign(ref, nodes.call(func, nodes.name(stmt.targets[0].id)))
                setanno(made.value.func, Key.RESOLVED, objects.attributes_of)
                block.insert(at, nodes.located(made, stmt))
                at += 1


def _replaced(item, names, refs):
    if not (isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name)
            and item.value.id in names and item.attr in names[item.value.id]):
        return None
    store = isinstance(item.ctx, ast.Store)
    made = nodes.subscript(nodes.name(refs[item.value.id][0]), nodes.const(item.attr), store=store)
    if isinstance(item.ctx, ast.Del):
        made.ctx = ast.Del()
    return nodes.copy_location(made, item)


def _blocks(node):
    for n in nodes.walk_terms(node):
        for field in ('body', 'orelse', 'finalbody'):
            block = getattr(n, field, None)
            if isinstance(block, list) and block and not isinstance(block[0], ast.expr):
                yield block
        for handler in getattr(n, 'handlers', None) or ():
            yield handler.body
