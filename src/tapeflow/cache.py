"""The in-memory cache of compiled code (`compilation.compile` asks it first: `get_or_compile`).

Keyed weakly on the function's `__code__`, then on the differentiated inputs
(positions and lifted free names), the argument shapes and the options. An
entry is used only while every global and closure value it resolved is still
the same object, so redefining a function, or rebinding a global function it
calls, compiles afresh; and only while it is the code that runs (`freshness`):
the function's code object, and each callee's, are the ones compiled (IPython's
autoreload swaps `__code__`), and a callee reached as a module's attribute
(`helpers.step`) is still that attribute (`importlib.reload` makes new functions).

Bounded: at most `size()` finished entries are kept, the least recently used
go first (`set_cache_size(n)`); an evicted entry compiles again when it is
next needed.

Threads: each entry is a once-cell. The thread that creates it compiles it;
every other thread that wants it waits until it is finished. The lock that
guards the tables is held only to look up or insert, never while compiling.
Recursion: a cell is registered before its body is compiled, so a function
that calls itself (or a callee that calls it back) finds its own still
incomplete entry, in the thread that is compiling it. Another thread never
sees an incomplete entry: everything a thread compiles for one top-level
request (the function, its callees, their callees) is published together
when that request is done, since an entry bound to a still compiling one is
not usable before. Two threads whose compilations need each other's
(mutual recursion begun from both ends at once) do not wait for each other:
the one that would close the cycle compiles its own private copy.
"""
from __future__ import annotations

import collections
import sys
import threading
import types
import weakref

DEFAULT_SIZE = 512

_lock = threading.Lock()                  # guards the tables below; never held while compiling
_tables: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()   # __code__ -> _Table
_recent: 'collections.OrderedDict' = collections.OrderedDict()      # finished _Cell -> None, oldest first
_waiting: dict = {}                       # thread ident -> the _Cell it waits for
_size = [DEFAULT_SIZE]
_local = threading.local()                # .session: [(table, subkey, _Cell)], .private: {(code, subkey): _Cell}
# in memory: hits, misses; of the misses: disk_hits (read from the disk cache), disk_misses
# (looked for there, not found), compiles (the pipeline ran), disk_writes (written there)
stats = {'hits': 0, 'misses': 0, 'disk_hits': 0, 'disk_misses': 0, 'compiles': 0, 'disk_writes': 0}


class _Cell:
    """One entry: `compiled` (filled in place when done); `owner`, the thread compiling
    it (None once published); `done`, set when it is published or dropped."""
    __slots__ = ('compiled', 'owner', 'done', 'table', 'subkey', '__weakref__')

    def __init__(self, table, subkey):
        self.compiled = None
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.table, self.subkey = table, subkey


class _Table(dict):
    """The cells of one `__code__`. When the code dies, the table is listed in `_dead`
    (the weak reference's callback takes no lock: it may run inside a locked block,
    from the cyclic collector) and its cells leave the LRU order at the next change."""
    __slots__ = ('ref',)


_dead: list = []


def _purge():
    """Drop the cells of dead tables from the LRU order (with `_lock` held)."""
    while _dead:
        for cell in _dead.pop().values():
            _recent.pop(cell, None)


def size() -> int:
    """The most finished entries the cache keeps."""
    return _size[0]


def set_cache_size(n: int) -> None:
    """Keep at most `n` compiled entries (least recently used evicted first); `n >= 1`."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f'set_cache_size: the size must be an int >= 1, not {n!r}')
    with _lock:
        _size[0] = n
        _evict()


def count() -> int:
    """The number of finished entries kept."""
    with _lock:
        _purge()
        return len(_recent)


def _evict():
    """Drop the oldest finished entries beyond the bound (with `_lock` held)."""
    _purge()
    while len(_recent) > _size[0]:
        cell, _ = _recent.popitem(last=False)
        if cell.table.get(cell.subkey) is cell:
            del cell.table[cell.subkey]


def valid(compiled, fn=None, _seen=None) -> bool:
    """Every binding of `compiled` (seen from `fn`, if given) and of its callees is unchanged,
    and each is the code that runs."""
    seen = _seen if _seen is not None else set()
    if id(compiled) in seen:
        return True
    seen.add(id(compiled))
    if compiled.bindings is not None and not compiled.bindings.still_valid(fn):
        return False
    for owner, attribute, value in getattr(compiled, 'fresh', ()):
        if getattr(owner, attribute, None) is not value:
            return False
    return all(valid(c, f, seen) for c, f in _depends_on(compiled))


def codes_of(fn) -> tuple:
    """(function, its code) for `fn`, and for the function a variant of it was made from."""
    pairs = ((fn, fn.__code__),)
    original = getattr(fn, '__tapeflow_variant_of__', None)
    if original is not None and hasattr(original[0], '__code__'):
        pairs += ((original[0], original[0].__code__),)
    return pairs


def freshness(compiled, codes) -> tuple:
    """What must hold for `compiled` to be the code that runs: the `codes` (`codes_of`:
    the function's and its original's code objects, taken before compiling) unchanged,
    and each callee the compiler reached as a module's attribute (`helpers.step`, where a
    module the function reads defines it) still that attribute."""
    checks = [(owner, '__code__', code) for owner, code in codes]
    values = compiled.bindings.values.values() if compiled.bindings is not None else ()
    modules = [v for v in values if isinstance(v, types.ModuleType)]
    for callee, *_ in compiled.links:
        module = sys.modules.get(getattr(callee, '__module__', None) or '')
        name = getattr(callee, '__name__', None)
        if module is None or not isinstance(name, str) or getattr(module, name, None) is not callee:
            continue
        short = module.__name__.rpartition('.')[2]
        if any(m is module or getattr(m, short, None) is module for m in modules):
            checks.append((module, name, callee))
    return tuple(checks)


def _depends_on(compiled):
    """(compiled, fn) pairs whose validity `compiled`'s rests on: its callees, and,
    for generated code that calls another compilation (a `grad` read as a
    function), that compilation."""
    pairs = [(c, None) for c in compiled.callees]
    calls = getattr(compiled.fn, '__tapeflow_adjoint__', None)
    if calls is not None:
        pairs.append(calls)
    return pairs


def validator(compiled, fn, inline=False):
    """A cheap zero-argument check that `compiled` still fits `fn` (for per-call use).
    `inline`: the caller compares `compiled.fn.__code__` with `compiled.code` itself (one
    comparison in its own frame), and None stands for a check with nothing left to do."""
    checks, fresh, seen, pending = [], {}, set(), [(compiled, fn)]
    while pending:
        entry, owner = pending.pop()
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        fresh.update(((id(o), a), (o, a, v)) for o, a, v in getattr(entry, 'fresh', ()))
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
    own = (id(compiled.fn), '__code__')
    fresh = tuple(check for key, check in fresh.items() if not (inline and key == own))
    if not checks:
        found = _fresh_only(fresh)
        return None if inline and found is _always else found
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
        for owner, attribute, value in fresh:
            if getattr(owner, attribute, None) is not value:
                return False
        return True
    return still_valid


def _fresh_only(fresh):
    """The check of `fresh` alone; for the common one, a function's code, one comparison."""
    if not fresh:
        return _always
    if len(fresh) == 1 and fresh[0][1] == '__code__':
        function, _, code = fresh[0]
        return lambda: function.__code__ is code

    def still_fresh():
        for owner, attribute, value in fresh:
            if getattr(owner, attribute, None) is not value:
                return False
        return True
    return still_fresh


_BUILTIN = object()


def _always():
    return True


class Recent(dict):
    """A dict that keeps only the `size()` most recently written items (reads stay
    as fast as a dict's): for callers that keep compiled entries of their own,
    one per argument shape, so that they too stay within the cache's bound."""
    __slots__ = ()

    def __setitem__(self, key, value):
        self.pop(key, None)                   # written again: now the newest
        super().__setitem__(key, value)
        while len(self) > _size[0]:
            try:
                self.pop(next(iter(self)), None)
            except (StopIteration, RuntimeError):     # another thread changed it meanwhile
                break


def _table_of(code, create):
    table = _tables.get(code)
    if table is None and create:
        table = _tables[code] = _Table()
        table.ref = weakref.ref(code, lambda _ref, dead=_dead: dead.append(table))
    return table


def _session():
    session = getattr(_local, 'session', None)
    if session is None:
        session = _local.session = []
        _local.private = {}
        _local.depth = 0
    return session


def _closes_cycle(cell, me) -> bool:
    """Whether waiting for `cell` would wait, through other threads, for `me` (with `_lock`)."""
    seen = set()
    owner = cell.owner
    while owner is not None and owner not in seen:
        if owner == me:
            return True
        seen.add(owner)
        waited = _waiting.get(owner)
        owner = waited.owner if waited is not None else None
    return False


def _scope(fn) -> tuple:
    """What, besides its code, a function's compiled entry is for: its globals, and the
    objects its closure cells and defaults hold (by identity). Two closures of one def
    (`make(2.0)`, `make(3.0)`) share their code but not their entries: met in one
    compilation, each gets its own (the entry being compiled is not another's)."""
    closure = tuple(id(_contents(c)) for c in fn.__closure__) if fn.__closure__ else ()
    defaults = tuple(map(id, fn.__defaults__)) if fn.__defaults__ else ()
    if fn.__kwdefaults__:
        defaults += tuple(id(v) for _, v in sorted(fn.__kwdefaults__.items()))
    return id(fn.__globals__), closure, defaults


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:          # an empty cell (a name the outer scope defines later)
        return None


def lookup(fn, key):
    """The finished, still valid entry for (fn, key), or None (no waiting, no compiling)."""
    with _lock:
        table = _table_of(fn.__code__, False)
        cell = table.get(_scope(fn) + (key,)) if table is not None else None
        if cell is None or cell.owner is not None:
            return None
    return cell.compiled if valid(cell.compiled, fn) else None


def get_or_compile(fn, key, build):
    """The cached entry for (fn, key), or the result of `build(cell)`, stored.

    `build` fills `cell.compiled` with an incomplete entry (so that recursion
    finds it) before compiling, and returns the finished entry.
    """
    session = _session()
    me = threading.get_ident()
    code, subkey = fn.__code__, _scope(fn) + (key,)
    own = _local.private.get((code, subkey))
    if own is not None:                   # a private copy this thread is compiling
        return own.compiled
    while True:
        with _lock:
            table = _table_of(code, True)
            cell = table.get(subkey)
            if cell is not None and cell.owner is None:            # finished
                if valid(cell.compiled, fn):
                    _recent.move_to_end(cell)
                    stats['hits'] += 1
                    return cell.compiled
                _recent.pop(cell, None)                            # stale: compile afresh
                cell = None
            if cell is None:
                cell = table[subkey] = _Cell(table, subkey)
                private = False
                stats['misses'] += 1
                break
            if cell.owner == me:                                   # recursion
                stats['hits'] += 1
                return cell.compiled
            if _closes_cycle(cell, me):
                cell = _Cell(table, subkey)
                private = True
                stats['misses'] += 1
                break
            _waiting[me] = cell
        try:
            cell.done.wait()
        finally:
            with _lock:
                _waiting.pop(me, None)
    return _build(cell, private, build, session, code)


def _build(cell, private, build, session, code):
    """Compile `cell` in this thread; publish this thread's cells when the outermost ends."""
    if private:
        _local.private[code, cell.subkey] = cell
    else:
        session.append(cell)
    mark = len(session)
    _local.depth += 1
    try:
        return build(cell)
    except BaseException:
        # What was compiled inside this one may be bound to it: drop it all.
        start = mark if private else mark - 1
        failed = session[start:] + ([cell] if private else [])
        del session[start:]
        _local.private.pop((code, cell.subkey), None)
        with _lock:
            for dropped in failed:
                if dropped.table.get(dropped.subkey) is dropped:
                    del dropped.table[dropped.subkey]
                dropped.owner = None
                dropped.done.set()
        raise
    finally:
        _local.depth -= 1
        if _local.depth == 0:
            _publish(session)


def _publish(session):
    """Make this thread's finished cells visible to every thread, and wake their waiters."""
    with _lock:
        for cell in session:
            cell.owner = None
            if cell.table.get(cell.subkey) is cell:
                _recent[cell] = None
            cell.done.set()
        session.clear()
        _local.private.clear()
        _evict()


def clear():
    """Forget every finished entry (entries being compiled finish and are then kept)."""
    with _lock:
        for cell in list(_recent):
            if cell.table.get(cell.subkey) is cell:
                del cell.table[cell.subkey]
        _recent.clear()
    stats.update(dict.fromkeys(stats, 0))
