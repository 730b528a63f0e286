"""The text read is the code that runs: a source file edited since it was imported is refused.

Python runs the code object compiled when the module was imported; `inspect`
reads the file as it is now. When the two differ (the file was edited and not
re-imported), compiling the text would differentiate code that does not run:
the value and gradient of the new text beside the old code's value. So the text
read for a function is compiled here and compared with the function's code
object: instructions, names, constants (nested code too), arguments, flags. A
text that does not compile to it is a located error saying so (re-import the
module). `parse` calls `check` on every def and lambda it reads.

Compiled as it stood: inside the scopes its qualified name gives (a closure's
free variables bound by an enclosing `def`, so they compile to cells; a
method in its class, for `super()`'s `__class__`), with the module's `from
__future__` flags, and the module names it reads bound by `import` as its file
binds them (Python 3.11 compiles `np.tanh(x)` otherwise when `np` is; where
the text ran in parts, a document's blocks, other ways are tried). Lines and
columns are not compared: a file whose lines moved (a comment added inside the
function, lines added above it) still holds the code that runs, and errors
point at the text as it is now.

Not checked: code pytest rewrote (its assertions), whose text is not its code.
A verdict is kept per code object, text and way of compiling it.
"""
from __future__ import annotations

import __future__
import linecache
import re
import symtable
import textwrap
import types
import weakref

from tapeflow.syntax.errors import UnsupportedError

__all__ = ['check', 'compiles_to']

_FUTURE = 0
for _name in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _name).compiler_flag
_NESTED = 0x10                          # CO_NESTED: a wrapper makes a function nested
_REWRITTEN = frozenset({'@py_builtins', '@pytest_ar'})    # pytest's assertion rewriting

_VERDICTS: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()    # code -> {how: verdict}


def check(fn, code, text, filename, first_line):
    """Refuse, at the `def`, a function whose source `text` (dedented, its decorators
    first, at `first_line` of `filename`) is not the code it runs."""
    if not isinstance(code, types.CodeType) or _rewritten(code):
        return
    qualname = getattr(code, 'co_qualname', None) or _qualname_in(code) or code.co_name
    if not any(compiles_to(text, code, modules, qualname) for modules in _imports(fn, code, filename)):
        name = getattr(fn, '__qualname__', getattr(fn, '__name__', 'this function'))
        defined = re.compile(rf'\s*(async\s+)?def\s+{re.escape(code.co_name)}\b')
        at = next((k for k, line in enumerate(text.splitlines()) if defined.match(line)), 0)
        raise UnsupportedError(
            f'{name}: the file changed since it was imported (its text here is not the code '
            f'that runs): re-import the module (importlib.reload) or restart, then differentiate',
            filename, first_line + at, 0)


def compiles_to(text, code, modules=(), qualname=None) -> bool:
    """Whether `text`, the source of the def whose code is `code`, compiles to it; `modules`:
    the names it reads that its module binds by `import` (Python 3.11 compiles `np.tanh(x)`
    otherwise when `np` is); `qualname`: where it is defined (`make.<locals>.inner`)."""
    known = _VERDICTS.get(code)
    key = (text, tuple(modules), qualname)
    if known is not None and key in known:
        return known[key]
    verdict = _compiles_to(text, code, modules, qualname or code.co_name)
    try:
        _VERDICTS.setdefault(code, {})[key] = verdict
    except TypeError:
        pass
    return verdict


def _imports(fn, code, filename):
    """The sets of names to compile the text with as imported at module level (what Python's
    compiler asks of the module's scope), tried in turn: those its file imports; where the
    text was compiled in parts (blocks of a document, cells), those holding modules, or none.
    (Only whether a call `np.f(x)` is compiled as a method's differs between them.)"""
    # (a local named like a module the file imports counts too: Python 3.11 compiles
    # `np.tanh(x)` after a local `import numpy as np` by the module scope's `np`)
    names = {n for c in _codes(code) for n in c.co_names + c.co_varnames}
    imported = _module_imports(filename)
    if imported is not None:
        yield tuple(sorted(names & imported))
    scope = getattr(fn, '__globals__', None) or {}
    yield tuple(sorted(n for n in names if isinstance(scope.get(n), types.ModuleType)))
    yield ()


_IMPORTS: dict = {}     # filename -> (its text, the names its module scope imports)


def _module_imports(filename):
    """The names the module scope of `filename` binds by `import`; None where its text is not
    Python (a document whose blocks ran)."""
    text = ''.join(linecache.getlines(filename))
    known = _IMPORTS.get(filename)
    if known is not None and known[0] == text:
        return known[1]
    try:        # (the compiler's own symbol table: no syntax tree objects made, from any thread)
        table = symtable.symtable(text, filename, 'exec')
    except (SyntaxError, ValueError):
        return None
    names = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_imported()}
    if len(_IMPORTS) > 64:
        _IMPORTS.clear()
    _IMPORTS[filename] = (text, frozenset(names))
    return _IMPORTS[filename][1]


def _qualname_in(code):
    """Python 3.10 (no `co_qualname`; `functools.wraps` rewrites `__qualname__`): the qualified
    name its constants give its nested functions (`make.<locals>.inner.<locals>.<listcomp>`)."""
    nested = {c.co_name for c in code.co_consts if isinstance(c, types.CodeType)}
    for constant in code.co_consts:
        if isinstance(constant, str) and '.<locals>.' in constant:
            head, _, tail = constant.rpartition('.<locals>.')
            if tail in nested and head.rpartition('.')[2] == code.co_name:
                return head
    return None


def _scopes(qualname, code) -> list:
    """[('def' | 'class', name)]: the scopes `code` is defined in, outermost first, read
    from its qualified name (Python 3.10 keeps nested code's qualified names as constants),
    completed where its free variables need a function or `__class__` a class."""
    parts, scopes, k = qualname.split('.')[:-1], [], 0
    while k < len(parts):
        if k + 1 < len(parts) and parts[k + 1] == '<locals>':
            scopes.append(('def', parts[k]))
            k += 2
        else:
            scopes.append(('class', parts[k]))
            k += 1
    if not all(name.isidentifier() for _, name in scopes):
        scopes = []
    if any(v != '__class__' for v in code.co_freevars) and not any(k == 'def' for k, _ in scopes):
        scopes.insert(0, ('def', '__tapeflow_outer__'))
    if '__class__' in code.co_freevars and (not scopes or scopes[-1][0] != 'class'):
        scopes.append(('class', '__tapeflow_class__'))
    return scopes


def _compiles_to(text, code, modules=(), qualname='') -> bool:
    freevars = [v for v in code.co_freevars if v != '__class__']
    scopes = _scopes(qualname, code)
    innermost = max((k for k, (kind, _) in enumerate(scopes) if kind == 'def'), default=None)
    lines = [f'import {name}' for name in modules]
    for depth, (kind, name) in enumerate(scopes):
        lines.append('    ' * depth + f'{kind} {name}' + ('():' if kind == 'def' else ':'))
        if depth == innermost and freevars:
            lines.append('    ' * (depth + 1) + ' = '.join(freevars) + ' = None')
    depth = len(scopes)
    source = '\n'.join(lines + [textwrap.indent(text, '    ' * depth)]) + '\n'
    try:
        module = compile(source, code.co_filename, 'exec', flags=code.co_flags & _FUTURE,
                         dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return False
    for candidate in _codes(module):
        if candidate.co_name == code.co_name and _same(candidate, code):
            return True
    return False


def _codes(code):
    pending = [code]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


def _same(a, b) -> bool:
    """The same code but for where it is (its lines and columns)."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount,
            a.co_posonlyargcount, a.co_kwonlyargcount, a.co_name, a.co_flags & ~_NESTED) != \
            (b.co_code, b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars, b.co_argcount,
             b.co_posonlyargcount, b.co_kwonlyargcount, b.co_name, b.co_flags & ~_NESTED):
        return False
    if getattr(a, 'co_exceptiontable', b'') != getattr(b, 'co_exceptiontable', b''):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    placed = '__firstlineno__' in a.co_names        # (a class body, Python 3.13: its line)
    for x, y in zip(a.co_consts, b.co_consts):
        if placed and x == a.co_firstlineno and y == b.co_firstlineno:
            continue
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType)
                    and _same(x, y)):
                return False
        elif not _same_constant(x, y):
            return False
    return True


def _same_constant(x, y) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, tuple):
        return len(x) == len(y) and all(map(_same_constant, x, y))
    if isinstance(x, (float, complex)):
        return repr(x) == repr(y)           # -0.0 is not 0.0; nan is nan
    return x == y


def _rewritten(code) -> bool:
    return any(not _REWRITTEN.isdisjoint(c.co_names) for c in _codes(code))
