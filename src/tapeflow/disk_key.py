"""What one compilation depends on, written as text: the key of the disk cache.

`key_of(fn, key)` describes everything the generated code of `fn` (for the
in-memory cache's subkey `key`) is made from, and returns the sha256 of that
text, or None when some part cannot be described exactly: then the
compilation is not cached on disk (it is compiled as without a disk cache).

The text holds
- tapeflow: its version, a stamp of its source files (path, size, mtime: a
  developer's edit is a new version), the rule table's `registry.VERSION`;
  Python's major.minor (and the cache tag of its bytecode, and -O: code
  compiled under it has no asserts), NumPy's and gast's versions;
  the derivative rules code outside tapeflow registered (`defvjp`, custom_vjp);
- the function: module, qualname, file and first line, the text of its lines
  and its code (instructions, names, constants, their lines and columns), its
  defaults, and each free name it may read (closure cells, globals,
  builtins: every name its code and its nested code name), with the value
  that name has now, described (below); the subkey (differentiated
  positions, lifted names, shapes, argument kinds, mode, options).

A value is described exactly or not at all:
- None, bools, numbers, strings, bytes: type and repr; tuples, lists, dicts,
  sets of such values: their items;
- a NumPy array of at most `ARRAY_BYTES` bytes: dtype, shape, hash of its
  bytes (a larger one is not hashed on every lookup: not cached); NumPy
  scalars and dtypes: dtype and bytes;
- a module: its name, and the version of its package (a library: the standard
  library, NumPy, tapeflow, anything under site-packages) or the hash of its
  file (the user's own modules);
- a library's function or class: module and qualname (found there again: the
  same object); a user's class: module, qualname and its module (above);
- a user's function: the same as the function compiled (its own lines,
  defaults, closure and free names, recursively; its registered rules), so
  that a callee's edit or rebinding is a new key;
- anything else (an instance of a user's class, a partial, a function
  tapeflow generated, a nested def lifted out of its function...): not described.

What must run first: nothing; this module reads objects and files, never parses.
"""
from __future__ import annotations

import builtins
import dis
import hashlib
import inspect
import linecache
import os
import sys
import types

import numpy as np

__all__ = ['key_of', 'free_names', 'follow', 'ARRAY_BYTES', 'Opaque']

FORMAT = 1          # of the text below; a change of it is a new key everywhere

# Larger arrays are not cached: hashing their bytes costs ~0.5 ms per MB on
# every lookup, and an array that large read as a global is rare.
ARRAY_BYTES = 1 << 20
_MAX_ITEMS = 10_000      # items of lists/tuples/dicts described one by one in a key, at most

_LIBRARIES = frozenset({'builtins', 'numpy', 'tapeflow'})   # their versions are in every key
_SITE = (os.sep + 'site-packages' + os.sep, os.sep + 'dist-packages' + os.sep)
_STDLIB = os.path.dirname(os.__file__) + os.sep


class Opaque(Exception):
    """A value that cannot be described exactly: the compilation is not cached on disk."""


class Key:
    """`digest`: the sha256 of the description; `names`: the free names it covers."""
    __slots__ = ('digest', 'names')

    def __init__(self, digest, names):
        self.digest, self.names = digest, names


def key_of(fn, key):
    """The `Key` of compiling `fn` for the in-memory subkey `key`, or None (not cacheable)."""
    try:
        describer = _Describer()
        text = '\n'.join((_environment(), _user_rules(), 'key ' + describer.value(key),
                          describer.function(fn, top=True)))
    except Exception:            # noqa: BLE001  (Opaque, or an object that fails when read:
        return None              # either way not described, compiled as without the cache)
    return Key(hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest(),
               describer.top_names)


# ------------------------------------------------------------------ what every key holds

_ENVIRONMENT: list = []


def _environment() -> str:
    """tapeflow's version and source stamp, Python's and NumPy's versions (computed once)."""
    if not _ENVIRONMENT:
        from tapeflow import __version__
        from tapeflow.rules import registry
        from tapeflow.syntax import ast
        _ENVIRONMENT.append(
            f'tapeflow-disk-cache {FORMAT}\ntapeflow {__version__} {_source_stamp()} '
            f'rules {registry.VERSION}\npython {sys.version_info[0]}.{sys.version_info[1]} '
            f'{sys.implementation.cache_tag} -O{sys.flags.optimize}\nnumpy {np.__version__}\n'
            f'gast {ast.PARSER_VERSION}')
    return _ENVIRONMENT[0]


def _source_stamp() -> str:
    """A hash of every source file of tapeflow: its path, size and modification time."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest, pending = hashlib.sha256(), [root]
    while pending:
        folder = pending.pop()
        for item in sorted(os.scandir(folder), key=lambda e: e.name):
            if item.is_dir() and item.name != '__pycache__':
                pending.append(item.path)
            elif item.name.endswith('.py'):
                stat = item.stat()
                digest.update(f'{item.path[len(root):]} {stat.st_size} {stat.st_mtime_ns}\n'.encode())
    return digest.hexdigest()


_RULES_SEEN: list = [None, '']        # [registry generation, its description]


def _user_rules() -> str:
    """The rules code outside tapeflow registered (tapeflow's own are in its version)."""
    from tapeflow.rules import registry
    generation = registry.user_generation()
    if _RULES_SEEN[0] != generation:
        describer, parts = _Describer(tolerant=True), []
        for fn in registry.user_primitives():
            head = describer.part(fn)   # an opaque one is reached through a value a key refuses
            parts.append(f'{head} {describer.rules(registry.RULES.get(fn))}')
        _RULES_SEEN[:] = [generation, 'user rules ' + '\n'.join(parts)]
    return _RULES_SEEN[1]


# ------------------------------------------------------------------ describing values

class _Describer:
    """`tolerant`: a part that cannot be described is written 'opaque' instead of making
    the whole key None. For the rules user code registered (`_user_rules`): what a rule
    can put into generated code is its text (inlined) or a value that the entry must
    find again by name (a constant is always described); the values a rule only reads
    when it runs change nothing in the code."""

    def __init__(self, tolerant=False):
        self.functions = {}      # id(function) -> its number, while describing (recursion)
        self.keep = []           # what is numbered by id stays alive meanwhile
        self.top_names = frozenset()
        self.tolerant = tolerant
        self.items = 0           # container items described so far (bounded: `_MAX_ITEMS`)

    def part(self, obj) -> str:
        """`value(obj)`, or 'opaque' when tolerant."""
        try:
            return self.value(obj)
        except Opaque:
            if not self.tolerant:
                raise
            return f'opaque {type(obj).__name__}' + (
                f' {obj.__module__}:{obj.__qualname__}' if isinstance(obj, types.FunctionType) else '')

    def value(self, obj) -> str:
        cls = obj.__class__
        if obj is None or obj is Ellipsis or cls in (bool, int, float, complex, str, bytes):
            return f'{cls.__name__}:{obj!r}'
        if cls in (tuple, list, set, frozenset, dict):
            return self._container(obj, cls)
        if cls is np.ndarray:
            return self._array(obj)
        if isinstance(obj, np.generic) and obj.dtype.kind not in 'OV':
            return f'npscalar:{obj.dtype.str}:{obj.tobytes().hex()}'
        if cls is np.dtype or isinstance(obj, np.dtype):
            if obj.fields is not None or obj.kind in 'OV':
                raise Opaque(obj)
            return f'dtype:{obj.str}'
        if isinstance(obj, types.ModuleType):
            return self.module(obj)
        if cls is types.FunctionType:
            return self.function(obj)
        return self.named(obj)

    def _container(self, obj, cls):
        self.items += len(obj)
        if self.items > _MAX_ITEMS:
            raise Opaque(obj)
        if cls is dict:
            items = sorted(f'{self.value(k)}: {self.value(v)}' for k, v in obj.items())
        elif cls in (set, frozenset):
            items = sorted(self.value(v) for v in obj)
        else:
            items = [self.value(v) for v in obj]
        return f'{cls.__name__}(' + ', '.join(items) + ')'

    def _array(self, array):
        if array.dtype.kind in 'OV' or array.nbytes > ARRAY_BYTES:
            raise Opaque(array)
        data = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
        return f'ndarray:{array.dtype.str}:{array.shape}:{data}'

    def module(self, module) -> str:
        name = module.__name__
        version = _library_version(module)
        if version is not None:
            return f'module:{name}:{version}'
        path = getattr(module, '__file__', None)
        if not path:
            raise Opaque(module)
        return f'module:{name}:{_file_digest(path)}'

    def named(self, obj) -> str:
        """A library's function or class by where it is found, a user's class with its module."""
        module_name = getattr(obj, '__module__', None)
        qualname = getattr(obj, '__qualname__', None)
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        if module is None or not isinstance(qualname, str) or follow(module, qualname) is not obj:
            raise Opaque(obj)
        if isinstance(obj, type) and _library_version(module) is None:
            return f'class:{module_name}:{qualname}:{self.module(module)}'
        version = _library_version(module)
        if version is None:
            raise Opaque(obj)            # an object of the user's that is not a def or a class
        return f'ref:{module_name}:{qualname}:{version}'

    def function(self, fn, top=False) -> str:
        """A def: its lines and everything they read (recursion is told by number)."""
        number = self.functions.get(id(fn))
        if number is not None:
            return f'recursion:{number}'
        module = sys.modules.get(fn.__module__) if isinstance(fn.__module__, str) else None
        if not top and module is not None and _library_version(module) is not None:
            return self.named(fn)        # a library's function: its version says it all
        code = fn.__code__
        if code.co_filename.startswith('<tapeflow') or hasattr(fn, '__tapeflow_source__') \
                or hasattr(fn, '__tapeflow_adjoint__'):
            raise Opaque(fn)             # generated by tapeflow in this process
        self.functions[id(fn)] = len(self.functions)
        self.keep.append(fn)
        parts = [f'def {fn.__module__}:{fn.__qualname__} {code.co_filename}:{code.co_firstlineno}',
                 'text ' + _text_digest(fn), 'code ' + _code_digest(code),
                 f'order {getattr(fn, "__tapeflow_order__", 0)}',
                 f'checkpoint {bool(getattr(fn, "__tapeflow_checkpoint__", False))}',
                 'defaults ' + self.part(fn.__defaults__ or ()),
                 'kwdefaults ' + self.part(dict(fn.__kwdefaults__ or {}))]
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        names = free_names(code)
        for name in sorted(names):
            if name in cells:
                try:
                    parts.append(f'cell {name} = {self.part(cells[name].cell_contents)}')
                except ValueError:       # an empty cell
                    parts.append(f'cell {name} empty')
            elif name in fn.__globals__ or hasattr(builtins, name):
                where = 'global' if name in fn.__globals__ else 'builtin'
                value = fn.__globals__[name] if where == 'global' else getattr(builtins, name)
                parts.append(f'{where} {name} = {self._global(code, name, value)}')
            else:
                parts.append(f'unbound {name}')
        from tapeflow.rules import registry
        entry = registry.RULES.get(fn)
        if entry is not None:
            parts.append('rules ' + self.rules(entry))
        if top:
            self.top_names = frozenset(names)
        return '{' + '\n'.join(parts) + '}'

    def _global(self, code, name, value) -> str:
        """`value(value)`; for a name the code only reads as an attribute (`x.T`, while
        the module holds a global `T` that cannot be described), that fact instead."""
        try:
            return self.part(value)
        except Opaque:
            if name in _global_loads(code):
                raise
            return 'an attribute only'

    def rules(self, entry) -> str:
        """A rule table entry: its flags and rules (a rule that is not a def: by kind only,
        since only a def is ever inlined into generated code; the others are called by a
        name whose value the stored entry must find again)."""
        if entry is None:
            return 'none'
        parts = [f'nondiff={entry.nondiff} static={sorted(entry.static_argnums)}']
        for kind, table in (('vjp', entry.vjps), ('jvp', entry.jvps), ('batched', entry.batched_jvps)):
            for argnum in sorted(table):
                rule = table[argnum]
                described = self.part(rule) if rule.__class__ is types.FunctionType \
                    else f'opaque {type(rule).__name__}'
                parts.append(f'{kind}{argnum} {described}')
        return '[' + '; '.join(parts) + ']'


def free_names(code) -> frozenset:
    """Every name `code` and the code nested in it may read from outside: its closure
    cells, and the globals (or builtins, or attributes: a superset) its instructions name."""
    names, pending = set(code.co_freevars), [code]
    while pending:
        current = pending.pop()
        names.update(current.co_names)
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return frozenset(names)


def _global_loads(code) -> set:
    """The names `code` (and the code nested in it) reads as globals or builtins, not as
    attributes: read from its instructions only when it matters (`_Describer._global`)."""
    names, pending = set(), [code]
    while pending:
        current = pending.pop()
        names.update(i.argval for i in dis.get_instructions(current) if i.opname in _GLOBAL_OPS)
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names


_GLOBAL_OPS = frozenset({'LOAD_GLOBAL', 'LOAD_NAME', 'STORE_GLOBAL', 'DELETE_GLOBAL',
                         'LOAD_FROM_DICT_OR_GLOBALS'})


def follow(obj, qualname):
    """`obj.<qualname>` (dotted), or None."""
    for part in qualname.split('.'):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_VERSIONS: dict = {}


def _library_version(module):
    """'' for the standard library, NumPy and tapeflow (their versions are in every key),
    the package's version for one installed under site-packages, None for the user's own
    (a module of the user's named as one of the standard library's is the user's)."""
    top = module.__name__.partition('.')[0]
    if top not in _VERSIONS:
        package = sys.modules.get(top, module)
        path = getattr(package, '__file__', None) or ''
        version = getattr(package, '__version__', None)
        if top in _LIBRARIES or top in sys.stdlib_module_names and \
                (not path or path.startswith(_STDLIB)):
            _VERSIONS[top] = ''
        elif version is not None and any(s in path for s in _SITE):
            _VERSIONS[top] = str(version)
        else:
            _VERSIONS[top] = None
    return _VERSIONS[top]


_FILES: dict = {}       # path -> ((size, mtime), sha256 of its bytes)


def _file_digest(path) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        raise Opaque(path) from None
    stamp = (stat.st_size, stat.st_mtime_ns)
    known = _FILES.get(path)
    if known is None or known[0] != stamp:
        try:
            with open(path, 'rb') as f:
                known = _FILES[path] = (stamp, hashlib.sha256(f.read()).hexdigest())
        except OSError:
            raise Opaque(path) from None
    return known[1]


def _text_digest(fn) -> str:
    """The hash of the lines `fn`'s code spans in its file, read as the parser reads them."""
    code = fn.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    first, last = code.co_firstlineno, _last_line(code)
    if not lines or last is None or last > len(lines):
        raise Opaque(fn)
    return hashlib.sha256(''.join(lines[first - 1:last]).encode('utf-8', 'surrogatepass')).hexdigest()


def _code_digest(code) -> str:
    """A hash of what `code` is: its instructions, names, constants and their places in the
    file (two lambdas on one line share their lines, not their code; the parser tells
    them apart by their places)."""
    digest, pending = hashlib.sha256(), [code]
    while pending:
        current = pending.pop()
        digest.update(repr((current.co_name, current.co_firstlineno, current.co_argcount,
                            current.co_posonlyargcount, current.co_kwonlyargcount,
                            current.co_flags, current.co_names, current.co_varnames,
                            current.co_freevars, current.co_cellvars,
                            [_constant_text(c) for c in current.co_consts])).encode())
        digest.update(current.co_code)
        digest.update(current.co_linetable)     # the lines and columns of each instruction
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return digest.hexdigest()


def _constant_text(constant) -> str:
    """A constant of code as text that is the same in every process (a frozenset's
    order is not: strings hash differently in each)."""
    if isinstance(constant, types.CodeType):
        return 'code'                   # described on its own
    if isinstance(constant, tuple):
        return '(' + ', '.join(map(_constant_text, constant)) + ')'
    if isinstance(constant, frozenset):
        return 'frozenset(' + ', '.join(sorted(map(_constant_text, constant))) + ')'
    return f'{type(constant).__name__}:{constant!r}'


def _last_line(code):
    """The last line of the file any instruction of `code` (or of code nested in it) covers."""
    if not hasattr(code, 'co_positions'):       # Python 3.10: no end lines; read the block
        try:
            lines, first = inspect.getsourcelines(code)
        except (OSError, TypeError):
            return None
        return first + len(lines) - 1
    last, pending = code.co_firstlineno, [code]
    while pending:
        current = pending.pop()
        for _, end, _, _ in current.co_positions():
            if end is not None and end > last:
                last = end
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return last
