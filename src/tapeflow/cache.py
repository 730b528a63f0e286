"""The in-memory cache of compiled adjoints.

Keyed weakly on the function's `__code__`, then on the differentiated inputs
(positions and lifted free names) and the options. An entry is used only while
every global and closure value it resolved is still the same object, so
redefining a function, or rebinding a global function it calls, compiles
afresh. Recursion: an entry is registered before its body is compiled, so a
function that calls itself finds its own (still incomplete) entry.
"""
from __future__ import annotations

import gc
import threading
import weakref

_entries: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()
_lock = threading.RLock()
stats = {'hits': 0, 'misses': 0}


def valid(compiled, fn=None, _seen=None) -> bool:
    """Every binding of `compiled` (seen from `fn`, if given) and of its callees is unchanged."""
    seen = _seen if _seen is not None else set()
    if id(compiled) in seen:
        return True
    seen.add(id(compiled))
    if compiled.bindings is not None and not compiled.bindings.still_valid(fn):
        return False
    return all(valid(c, f, seen) for c, f in _depends_on(compiled))


def _depends_on(compiled):
    """(compiled, fn) pairs whose validity `compiled`'s rests on: its callees, and,
    for generated code that calls another compilation (a `grad` read as a
    function), that compilation."""
    pairs = [(c, None) for c in compiled.callees]
    calls = getattr(compiled.fn, '__tapeflow_adjoint__', None)
    if calls is not None:
        pairs.append(calls)
    return pairs


def validator(compiled, fn):
    """A cheap zero-argument check that `compiled` still fits `fn` (for per-call use)."""
    checks, seen, pending = [], set(), [(compiled, fn)]
    while pending:
        entry, owner = pending.pop()
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        owner = owner or entry.fn
        if entry.bindings is not None and entry.bindings.values:
            cells = dict(zip(owner.__code__.co_freevars, owner.__closure__ or ()))
            for name, value in entry.bindings.values.items():
                if name in cells:
                    checks.append((cells[name], None, value))
                elif name in owner.__globals__:
                    checks.append((owner.__globals__, name, value))
                else:
                    checks.append((owner.__globals__, name, _BUILTIN))
        pending.extend(_depends_on(entry))
    if not checks:
        return _always
    missing = object()

    def still_valid():
        for where, name, value in checks:
            if name is None:
                if where.cell_contents is not value:
                    return False
            elif where.get(name, missing) is not value and value is not _BUILTIN:
                return False
            elif value is _BUILTIN and name in where:
                return False
        return True
    return still_valid


_BUILTIN = object()


def _always():
    return True


def lookup(fn, key):
    table = _entries.get(fn.__code__)
    if table is None:
        return None
    entry = table.get((id(fn.__globals__), key))
    if entry is None or (entry.combined is not None and not valid(entry, fn)):   # done compiling
        return None
    return entry


def store(fn, key, compiled):
    with _lock:
        _entries.setdefault(fn.__code__, {})[(id(fn.__globals__), key)] = compiled


def compile_once(fn, key, wrt, lifted, compile_fn):
    """The cached entry for (fn, key), or `compile_fn()`'s result, stored.

    The entry is registered before compiling, so recursion finds it: a
    function that calls itself binds its own (still incomplete) entry, which
    is filled in place when compilation ends. A failed compilation leaves
    nothing behind.
    """
    from tapeflow.transforms.pipeline import Compiled, bind_pending

    def build():
        placeholder = Compiled(fn, wrt, lifted, [], '', '', {})
        store(fn, key, placeholder)
        # Compiling makes many short-lived trees; with a big heap around, the
        # cyclic collector would scan it all, again and again. Reference
        # counting frees the trees; the collector waits until we are done.
        collecting = gc.isenabled()
        gc.disable()
        try:
            compiled = compile_fn()
        except BaseException:
            _entries.get(fn.__code__, {}).pop((id(fn.__globals__), key), None)
            raise
        finally:
            if collecting:
                gc.enable()
        pending = placeholder.pending
        placeholder.__dict__.update(compiled.__dict__)
        placeholder.pending = pending
        bind_pending(placeholder)
        return placeholder

    return get_or_compile(fn, key, build)


def get_or_compile(fn, key, build):
    """The cached entry for (fn, key), or `build()`'s, stored."""
    entry = lookup(fn, key)
    if entry is not None:
        stats['hits'] += 1
        return entry
    stats['misses'] += 1
    with _lock:
        return build()


def clear():
    _entries.clear()
    stats.update(hits=0, misses=0)
