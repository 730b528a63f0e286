"""The disk cache of generated code: a new process loads what an earlier one compiled.

Off unless a folder is given: `tapeflow.set_cache_dir(path)` (None turns it
off), or the environment variable TAPEFLOW_CACHE_DIR, read when tapeflow is
imported (as JAX's persistent compilation cache). `compilation.compile` asks it
on every in-memory miss: an entry found under the compilation's key
(`disk_key.key_of`) is loaded instead of running the pipeline; a compilation
that was run is written there.

An entry holds what rebuilds a `pipeline.Compiled` without the pipeline: the
generated module's text and code object (`marshal`: the key names the Python
version), the text tracebacks show and the source map to the user's lines,
the parameters; and how each name of the generated module's namespace is found
again in the new process: a free name of the function (looked up in the live
function, as the resolver does: the key says it describes the same thing), a
default of the function, a constant, an object found by module and qualname
(a derivative rule, NumPy's functions), or a callee (below). No object is
pickled. A compilation whose namespace holds anything else is not written.

Callees: each user function the code calls is asked for again as the compiler
asked (`compile_callee(fn, wrt, **keywords)`: the in-memory cache, then the
disk, then the pipeline) and bound as the compiler bound it
(`pipeline.bind_role`, recursion included); the entry is used only when each
callee has the key it had when the entry was written.

Files: `<key>.tapeflow` in the folder, a magic line, the sha256 of the payload,
the payload. Each is written to a temporary file in the same folder, then
renamed over the entry (`os.replace`: atomic), so a reader finds the old file,
the new one or none. A missing, short, corrupt or foreign file is a miss,
never an error: the function is compiled and the file written again. Two
processes that miss one entry at once both compile it and both write it, and
either file is right (one key, one code). The folder must be trusted as a
`__pycache__` is: its code is executed.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import linecache
import marshal
import os
import sys
import tempfile
import types

from tapeflow.disk_key import follow, key_of
from tapeflow.syntax import resolve, sourcemap
from tapeflow.syntax.unparse import label_of, load_module
from tapeflow.transforms.pipeline import Compiled, bind_role
from tapeflow.transforms.context import mark_generated

__all__ = ['set_cache_dir', 'cache_dir', 'entry', 'Entry']

_MAGIC = b'tapeflow disk cache 1\n'
_SUFFIX = '.tapeflow'
_ROLES = ('combined', 'forward', 'backward')
_CONSTANTS = (type(None), bool, int, float, complex, str, bytes)
_folder = [None]


def set_cache_dir(path) -> None:
    """Keep generated code in the folder `path` (made when first written), so that
    another process skips compiling it; None keeps it in memory only (the default)."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f'set_cache_dir: a folder path or None, not {path!r}')
    _folder[0] = os.path.abspath(os.fspath(path)) if path is not None else None


def cache_dir():
    """The folder of the disk cache, or None when it is off."""
    return _folder[0]


def entry(fn, key):
    """The disk `Entry` of compiling `fn` for the in-memory subkey `key`; None when the
    disk cache is off or the compilation cannot be keyed exactly (`disk_key`)."""
    if _folder[0] is None:
        return None
    found = key_of(fn, key)
    return Entry(_folder[0], fn, key, found) if found is not None else None


class _NotStorable(Exception):
    """Something the entry would need cannot be found again in another process."""


class Entry:
    """One compilation's file: `load` it, or `store` what the pipeline made."""

    def __init__(self, folder, fn, subkey, key):
        self.fn, self.subkey, self.key = fn, subkey, key
        self.digest = key.digest
        self.path = os.path.join(folder, key.digest + _SUFFIX)

    def load(self, placeholder, runtime_names, compile_callee):
        """The `Compiled` rebuilt from the file for `placeholder` (its fn, wrt, lifted),
        or None: no file, a damaged one, or one whose names or callees do not fit."""
        payload = _read(self.path, self.digest)
        if payload is None:
            return None
        try:
            return _rebuild(payload, placeholder, runtime_names, compile_callee, self.digest)
        except Exception:        # noqa: BLE001  (any doubt is a miss: compiled afresh)
            return None

    def store(self, compiled, runtime_names) -> bool:
        """Write `compiled` (fresh from the pipeline); False when it cannot be kept, or
        when what the key describes changed while compiling (a file saved meanwhile)."""
        again = key_of(self.fn, self.subkey)
        if again is None or again.digest != self.digest:
            return False
        try:
            payload = _payload(compiled, runtime_names, self.key)
            body = marshal.dumps(payload)
        except (_NotStorable, ValueError):
            return False
        return _write(self.path, body)


# ------------------------------------------------------------------ writing

def _payload(compiled, runtime_names, key) -> dict:
    namespace, bindings = compiled.namespace, compiled.bindings
    filename = namespace.get('__tapeflow_filename__')
    shown = linecache.cache.get(filename)
    if bindings is None or shown is None or not set(bindings.values) <= key.names \
            or len(compiled.links) != len(compiled.callees):
        raise _NotStorable(compiled.fn)
    linked = {name for *_, names in compiled.links for name in names.values()}
    names = []
    for name, value in namespace.items():
        if name in ('__builtins__', '__tapeflow_filename__') or name in linked or \
                (value.__class__ is types.FunctionType and value.__code__.co_filename == filename):
            continue                    # the module's own functions, callees, exec's own
        if runtime_names.get(name, resolve.MISSING) is value and name not in bindings.values:
            continue                    # the runtime's helpers: the loader starts from them
        names.append((name, _ref(name, value, bindings, compiled.fn)))
    links = []
    for (fn, wrt, keywords, roles), callee in zip(compiled.links, compiled.callees):
        if callee.disk_key is None or not _plain(keywords):
            raise _NotStorable(fn)
        links.append((_ref(None, fn, bindings, compiled.fn), tuple(wrt), keywords, roles,
                      callee.disk_key))
    functions = {role: getattr(compiled, role).__name__ for role in _ROLES
                 if getattr(compiled, role) is not None}
    return {
        'key': key.digest, 'label': label_of(filename),
        'params': list(compiled.params), 'source': compiled.source,
        'split_source': compiled.split_source, 'module_source': compiled.module_source,
        'code': compile(compiled.module_source, '<tapeflow>', 'exec'),
        'display': ''.join(shown[2]), 'lines': sourcemap.lines_of(filename),
        'in_place': compiled.in_place, 'written': compiled.written, 'order': compiled.combined.__tapeflow_order__,
        'tapes': compiled.combined.__tapeflow_tapes__,
        'functions': functions, 'bindings': sorted(bindings.values), 'names': names,
        'links': links,
    }


def _ref(name, value, bindings, fn):
    """How `value` (bound to `name` in the namespace, if given) is found again."""
    if name is not None and bindings.values.get(name, resolve.MISSING) is value:
        return ('binding', name)
    for other, bound in bindings.values.items():
        if bound is value:
            return ('binding', other)
    for position, default in enumerate(fn.__defaults__ or ()):
        if default is value:
            return ('default', position)
    if _plain(value):
        return ('constant', value)
    if isinstance(value, types.ModuleType):
        return ('module', value.__name__)
    module, qualname = getattr(value, '__module__', None), getattr(value, '__qualname__', None)
    if isinstance(module, str) and isinstance(qualname, str) and \
            follow(sys.modules.get(module), qualname) is value:
        return ('import', module, qualname)
    raise _NotStorable(value)


def _plain(value) -> bool:
    """A value `marshal` writes and reads back as the same value of the same type."""
    if value.__class__ in (tuple, frozenset):
        return all(_plain(v) for v in value)
    if value.__class__ is dict:
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return value.__class__ in _CONSTANTS


def _write(path, body) -> bool:
    """`body` under `path`, whole or not at all (a temporary file renamed over it)."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix='.', suffix='.tmp')
        try:
            with os.fdopen(handle, 'wb') as f:
                f.write(_MAGIC + hashlib.sha256(body).digest() + body)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        return False
    return True


# ------------------------------------------------------------------ reading

def _read(path, digest):
    """The payload of the file at `path` if it is whole and written for `digest`, else None."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return None
    start = len(_MAGIC) + 32
    if not data.startswith(_MAGIC) or len(data) < start or \
            hashlib.sha256(data[start:]).digest() != data[len(_MAGIC):start]:
        return None
    try:
        payload = marshal.loads(data[start:])
    except Exception:            # noqa: BLE001  (unreadable: a miss)
        return None
    return payload if isinstance(payload, dict) and payload.get('key') == digest else None


def _rebuild(payload, placeholder, runtime_names, compile_callee, digest):
    fn = placeholder.fn
    bindings = resolve.bindings_of(fn)
    for name in payload['bindings']:
        value = bindings.lookup(name)
        if value is resolve.MISSING:
            return None
        bindings.values[name] = value
    namespace = dict(runtime_names)
    for name, ref in payload['names']:
        namespace[name] = _find(ref, bindings, fn)
    compiled = Compiled(fn, placeholder.wrt, placeholder.lifted, list(payload['params']),
                        payload['source'], payload['module_source'], namespace,
                        bindings=bindings, in_place=payload['in_place'],
                        written=tuple(payload['written']))
    compiled.split_source = payload['split_source']
    for ref, wrt, keywords, roles, callee_digest in payload['links']:
        callee_fn = _find(ref, bindings, fn)
        callee = compile_callee(callee_fn, wrt, **keywords)
        if callee.disk_key != callee_digest:
            return None                 # the callee is not what the entry was made with
        compiled.callees.append(callee)
        compiled.links.append((callee_fn, wrt, keywords, roles))
        for role, name in roles.items():
            bind_role(callee, namespace, name, role)
    load_module(payload['module_source'], namespace, payload['label'],
                display=payload['display'], code=payload['code'])
    if payload['lines'] is not None:
        sourcemap.register(namespace['__tapeflow_filename__'], *payload['lines'])
    for role, name in payload['functions'].items():
        generated = namespace[name]
        mark_generated(generated, payload['order'], payload['tapes'])
        setattr(compiled, role, generated)
    compiled.disk_key = digest
    return compiled


def _find(ref, bindings, fn):
    kind = ref[0]
    if kind == 'binding':
        return bindings.values[ref[1]]
    if kind == 'default':
        return fn.__defaults__[ref[1]]
    if kind == 'constant':
        return ref[1]
    module = sys.modules.get(ref[1])
    if module is None and ref[1].startswith('tapeflow.'):
        module = importlib.import_module(ref[1])      # a rule family not imported yet
    if module is None:
        raise LookupError(ref)
    found = module if kind == 'module' else follow(module, ref[2])
    if found is None:
        raise LookupError(ref)
    return found


set_cache_dir(os.environ.get('TAPEFLOW_CACHE_DIR') or None)
