"""Writing Python objects into a standalone module: what `export.export_source` uses.

`ModuleWriter` gives each object the generated code reaches a name in the
module and its source: a literal (numbers, strings, NumPy arrays), an import (a
public attribute of a module other than tapeflow), or the source of a function
or of one of tapeflow's small runtime classes, copied with `inspect` and its own
free names written the same way. A value that cannot be written as source
raises `ExportError` naming it.
"""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import linecache
import symtable
import sys
import textwrap
import types

import numpy as np

from tapeflow.syntax import nodes
from tapeflow.syntax.errors import TapeflowError, UnsupportedError

__all__ = ['ExportError', 'ModuleWriter', 'free_globals']


class ExportError(TapeflowError):
    """A name the generated code uses cannot be written into a standalone module."""


def free_globals(text) -> list:
    """Names the functions of `text` read from the module's globals, in their bodies or
    where they are defined (a parameter's default, `k=_default`)."""
    found = []

    def visit(table):
        kind = table.get_type()
        for sym in table.get_symbols() if kind in ('function', 'module') else ():
            if sym.is_global() and sym.is_referenced() and sym.get_name() not in found \
                    and not (kind == 'module' and sym.is_assigned()):
                found.append(sym.get_name())
        for child in table.get_children():
            visit(child)

    visit(symtable.symtable(text, '<generated>', 'exec'))
    return found


_NOT_BUILTIN = object()


class ModuleWriter:
    """Gives each object the generated code reaches a name in the module, and its source."""

    def __init__(self):
        self.names = {}            # name -> object
        self.named = {}            # id(object) -> name
        self.modules = {}          # alias -> module name
        self.definitions = []      # source texts, dependencies first
        self.aliases = []          # `name = other` lines, after every definition
        self.generated = {}        # id(generated function) -> callback(name) naming its def
        self._keep = []            # objects named by id must stay alive

    def reserve(self, name, obj):
        self.names[name] = obj
        self.named[id(obj)] = name
        self._keep.append(obj)

    def imports(self):
        lines = []
        for alias, module in sorted(self.modules.items(), key=lambda kv: (kv[1], kv[0])):
            lines.append(f'import {module}' if alias == module else f'import {module} as {alias}')
        return lines

    def require(self, name, obj, user):
        """Make `name` denote `obj` in the module (generated code's names cannot change)."""
        if id(obj) in self.generated and name not in self.names:
            self.reserve(name, obj)
            self.generated.pop(id(obj))(name)
            return
        if name in self.names:
            if self.names[name] is not obj and not _same_value(self.names[name], obj):
                raise ExportError(f'cannot export: {name!r} means two different things '
                                  f'({_describe(self.names[name])} and {_describe(obj)})')
            if id(obj) not in self.named:
                return
            if self.named[id(obj)] != name:
                self.aliases.append(f'{name} = {self.named[id(obj)]}')
            return
        if id(obj) in self.named:             # already written under another name
            self.names[name] = obj
            self.aliases.append(f'{name} = {self.named[id(obj)]}')
            return
        self._define(name, obj, user)

    def name_for(self, preferred, obj, user):
        """The name `obj` has in the module, writing it there first if needed."""
        if getattr(builtins, preferred, _NOT_BUILTIN) is obj and preferred not in self.names:
            return preferred
        if id(obj) in self.named:
            return self.named[id(obj)]
        if preferred in self.names and self.names[preferred] is obj:
            return preferred
        name = preferred
        counter = 1
        while name in self.names or (hasattr(builtins, name) and getattr(builtins, name) is not obj):
            name = f'{preferred}_{counter}'
            counter += 1
        self._define(name, obj, user)
        return name

    def _define(self, name, obj, user):
        if getattr(builtins, name, _NOT_BUILTIN) is obj:
            return
        self.names[name] = obj
        self._keep.append(obj)
        if isinstance(obj, types.ModuleType):
            if obj.__name__.split('.')[0] == 'tapeflow':
                raise ExportError(f'{user} uses the module {obj.__name__}; an exported module '
                                  f'cannot import tapeflow')
            self.modules[name] = obj.__name__
            return
        if obj is UnsupportedError:                # a helper's refusal: a class of its own here
            self.named[id(obj)] = name
            self.definitions.append(f'class {name}(NotImplementedError):\n'
                                    f'    """tapeflow\'s refusal of a construct, raised by a helper."""')
            return
        if 'tapeflow.rules.guards' in (getattr(obj, '__module__', None), type(obj).__module__):
            raise ExportError(f'cannot export {user}: its try and with statements run through '
                              f"tapeflow's dispatcher (tapeflow.calls), which an exported module "
                              f'cannot import; call tapeflow.grad where tapeflow is installed')
        literal = self._literal(obj, user)
        if literal is not None:
            self.named.setdefault(id(obj), name)
            self.definitions.append(f'{name} = {literal}')
            return
        if getattr(obj, '__wrapped__', None) is not None and \
                (getattr(obj, '__module__', None) or '').split('.')[0] == 'tapeflow':
            obj = inspect.unwrap(obj)              # tapeflow's wrappers: dispatch, lru_cache
            self._keep.append(obj)
        if isinstance(obj, types.FunctionType):
            self.named[id(obj)] = name             # before its source: it may be recursive
            self.definitions.append(self._function_source(name, obj, user))   # after its dependencies
            return
        if isinstance(obj, type) and (obj.__module__ or '').split('.')[0] == 'tapeflow' \
                and obj.__bases__ == (object,):
            self.named[id(obj)] = name             # a runtime value class (rules.sequences.Items)
            self.definitions.append(self._class_source(name, obj, user))
            return
        importable = _importable(obj)
        if importable:
            module, attr = importable
            alias = self.name_for(module.split('.')[-1] if module != 'numpy' else 'np',
                                  sys.modules[module], user)
            self.named[id(obj)] = name
            self.definitions.append(f'{name} = {alias}.{attr}')
            return
        raise ExportError(f'cannot export {name!r} ({_describe(obj)}), used by {user}: '
                          f'it cannot be written as source')

    def _literal(self, obj, user):
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            return repr(obj)
        if isinstance(obj, type) and getattr(builtins, obj.__name__, None) is obj:
            return obj.__name__
        if isinstance(obj, (tuple, list)):
            items = [self._literal(v, user) for v in obj]
            if any(i is None for i in items):
                return None
            body = ', '.join(items) + (',' if isinstance(obj, tuple) and len(items) == 1 else '')
            return f'({body})' if isinstance(obj, tuple) else f'[{body}]'
        if isinstance(obj, np.ndarray) and obj.dtype.kind in 'biufc':
            np_name = self.name_for('np', np, user)
            return f'{np_name}.array({obj.tolist()!r}, dtype={np_name}.{obj.dtype.name})'
        if isinstance(obj, np.generic) and obj.dtype.kind in 'biufc':
            np_name = self.name_for('np', np, user)
            return f'{np_name}.{obj.dtype.name}({obj.item()!r})'
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return f'{self.name_for("np", np, user)}.{obj.__name__}'
        return None

    def _function_source(self, name, fn, user):
        where = f'{fn.__module__}.{fn.__qualname__}'
        tree = _function_ast(fn)
        if tree is None:
            raise ExportError(f'cannot export {name!r}: the source of {where} is not available')
        freevars = fn.__code__.co_freevars
        # Free globals of the copied function: each gets a name in this module.
        text = ast.unparse(tree)
        renames = {}
        for free in free_globals(text):
            if free in freevars:
                continue
            if free in fn.__globals__:
                value = fn.__globals__[free]
            elif hasattr(builtins, free):
                continue
            else:
                raise ExportError(f'cannot export {where}: it uses {free!r}, which is not defined')
            target = self.name_for(free, value, where)
            if target != free:
                renames[free] = target
        if renames:
            tree = _Rename(renames).visit(tree)
        if isinstance(tree, ast.Lambda):
            body = f'{name} = {ast.unparse(tree)}'
        else:
            tree.name = name
            body = ast.unparse(tree)
        if not freevars:
            return body
        cells = []
        for var, cell in zip(freevars, fn.__closure__):
            cells.append(self.name_for(f'_{name.lstrip("_")}_{var}', cell.cell_contents, where))
        maker = f'_make{name}' if name.startswith('_') else f'_make_{name}'
        return (f'def {maker}({", ".join(freevars)}):\n'
                + textwrap.indent(body, '    ') + f'\n    return {name}\n\n\n'
                + f'{name} = {maker}({", ".join(cells)})')


    def _class_source(self, name, cls, user):
        """The source of one of tapeflow's own classes, its globals named in this module."""
        where = f'{cls.__module__}.{cls.__qualname__}'
        try:
            tree = nodes.parse_ast(textwrap.dedent(inspect.getsource(cls))).body[0]
        except (OSError, TypeError, SyntaxError):
            raise ExportError(f'cannot export {name!r}: the source of {where} is not available') \
                from None
        namespace = sys.modules[cls.__module__].__dict__
        renames = {}
        for free in free_globals(ast.unparse(tree)):
            if free == cls.__name__ or free not in namespace:
                continue
            target = self.name_for(free, namespace[free], where)
            if target != free:
                renames[free] = target
        tree = _Rename(renames).visit(tree) if renames else tree
        tree.name = name
        return ast.unparse(tree)


class _Rename(ast.NodeTransformer):
    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node


def _function_ast(fn):
    """The ast of `fn` (FunctionDef, or Lambda), without decorators and annotations."""
    try:
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except TypeError:
        return None
    text = ''.join(linecache.getlines(filename, fn.__globals__))
    if not text:
        return None
    try:
        module = nodes.parse_ast(text)
    except SyntaxError:
        return None
    code = fn.__code__
    candidates = []
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            first = node.decorator_list[0].lineno if getattr(node, 'decorator_list', None) else node.lineno
            if code.co_firstlineno in (node.lineno, first) and \
                    (isinstance(node, ast.Lambda) == (fn.__name__ == '<lambda>')) and \
                    (isinstance(node, ast.Lambda) or node.name == code.co_name):
                candidates.append(node)
    if len(candidates) > 1:
        candidates = [c for c in candidates if _same_code(c, code)] or candidates[:1]
    if not candidates:
        return None
    node = copy.deepcopy(candidates[0])
    for arguments in [n.args for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.Lambda))]:
        for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs + \
                [a for a in (arguments.vararg, arguments.kwarg) if a]:
            arg.annotation = None
    for n in ast.walk(node):
        if isinstance(n, ast.FunctionDef):
            n.returns = None
            n.decorator_list = []
    return node


def _same_code(node, code):
    try:
        compiled = nodes.compile_ast(ast.Expression(body=node) if isinstance(node, ast.Lambda)
                                     else ast.Module(body=[node], type_ignores=[]), '<candidate>',
                                     'eval' if isinstance(node, ast.Lambda) else 'exec')
    except (SyntaxError, ValueError, TypeError):
        return False
    for const in compiled.co_consts:
        if isinstance(const, types.CodeType) and const.co_code == code.co_code:
            return True
    return False


def _importable(obj):
    """(module, attribute) when `obj` is a public attribute of a non-tapeflow module."""
    module = getattr(obj, '__module__', None)
    name = getattr(obj, '__name__', None)
    if module is None or name is None or module.split('.')[0] == 'tapeflow':
        return None
    for candidate in (module, module.split('.')[0]):
        if candidate in sys.modules and getattr(sys.modules[candidate], name, None) is obj:
            return candidate, name
    return None


def _same_value(a, b):
    try:
        return type(a) is type(b) and isinstance(a, (int, float, str, bool)) and a == b
    except Exception:          # noqa: BLE001  (arrays and the like: not the same)
        return False


def _describe(obj):
    if isinstance(obj, types.ModuleType):
        return f'module {obj.__name__}'
    if callable(obj) and hasattr(obj, '__qualname__'):
        return f'{getattr(obj, "__module__", "?")}.{obj.__qualname__}'
    return f'a {type(obj).__name__}'
