"""What code may draw random numbers from, read from its instructions (`plan_of`).

`plan_of(fn)` reads a function's instructions (and, the same way, those of the
user functions it names), once per code object:
- `flags`: NUMPY (a function of `np.random` is named), PYTHON (of the `random`
  module), WALK (a generator method is called on a value reached from a
  parameter: the values passed in are searched when the state is taken);
- `roots`: the global and closure access paths (`rng`, `cfg.rng`, a user
  function that draws) whose values are looked at when the state is taken;
- `refusal`: (file, line, column, why) where the code draws from a generator
  no rerun can find again: one made from fresh entropy (`default_rng()` with
  no seed), or one held by a local the code computed by a call. Callers
  refuse to recompute such code, at that place.

Methods are told by their names (`GENERATOR_METHODS`) where the object is not
known while reading: an object of the user's with a `normal()` method counts
as a generator (its attributes are searched, nothing is refused for it unless
it is a local computed by a call). `runtime.randomness` takes and sets the
states.
"""
from __future__ import annotations

import builtins
import dataclasses
import dis
import functools
import operator
import random as _random
import types
import weakref

import numpy as np

__all__ = ['GENERATOR_TYPES', 'GENERATOR_METHODS', 'NUMPY', 'PYTHON', 'WALK', 'MISSING', 'Plan',
           'NOTHING', 'plan_of', 'run_by', 'follow', 'walk']

GENERATOR_TYPES = (np.random.Generator, np.random.RandomState, _random.Random)
NUMPY, PYTHON, WALK = 1, 2, 4

# Methods of Generator and RandomState that draw or set the state (called on a value
# the analysis cannot resolve, they mark a draw; `f`, `bytes`, `sample`... are left out:
# too common as names of other things).
GENERATOR_METHODS = frozenset("""
    beta binomial chisquare choice dirichlet exponential gamma geometric gumbel hypergeometric
    integers laplace logistic lognormal logseries multinomial multivariate_hypergeometric
    multivariate_normal negative_binomial noncentral_chisquare noncentral_f normal pareto
    permutation permuted poisson rayleigh shuffle standard_cauchy standard_exponential
    standard_gamma standard_normal standard_t triangular uniform vonmises wald weibull zipf rand
    randn randint random_integers random_sample ranf random gauss randrange normalvariate
    expovariate betavariate gammavariate lognormvariate vonmisesvariate paretovariate
    weibullvariate choices seed set_state setstate jumped advance""".split())

# Called with no argument, these draw their seed from the operating system: a rerun
# cannot draw the same numbers.
_FRESH = (np.random.default_rng, np.random.RandomState, np.random.SeedSequence,
          np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox,
          np.random.SFC64, _random.Random, np.random.seed, _random.seed)
_LIBRARIES = ('numpy', 'scipy', 'tapeflow', 'builtins', 'math', 'random', 'operator',
              'functools', 'itertools', 'collections')

_CALLS = frozenset({'CALL', 'CALL_FUNCTION', 'CALL_METHOD', 'CALL_FUNCTION_KW', 'CALL_KW'})
_SKIP = frozenset({'PRECALL', 'PUSH_NULL', 'CACHE', 'NOP', 'EXTENDED_ARG'})
_GLOBAL_LOADS = frozenset({'LOAD_GLOBAL', 'LOAD_NAME', 'LOAD_FROM_DICT_OR_GLOBALS'})
_DEREF_LOADS = frozenset({'LOAD_DEREF', 'LOAD_CLASSDEREF', 'LOAD_FROM_DICT_OR_DEREF'})
_FAST_LOADS = frozenset({'LOAD_FAST', 'LOAD_FAST_CHECK', 'LOAD_FAST_AND_CLEAR', 'LOAD_CLOSURE'})
_ATTRIBUTES = frozenset({'LOAD_ATTR', 'LOAD_METHOD'})
_STORES = frozenset({'STORE_FAST', 'STORE_DEREF'})
_BOUNDARIES = frozenset({'POP_TOP', 'RETURN_VALUE', 'RETURN_CONST', 'STORE_GLOBAL', 'STORE_ATTR',
                         'STORE_SUBSCR', 'FOR_ITER', 'GET_ITER', 'RESUME'})
MISSING = object()


def walk(value, found, seen, depth):
    """Generators held by `value`: in its tuples, lists, dicts, objects' attributes."""
    if isinstance(value, GENERATOR_TYPES):
        if id(value) not in seen:
            seen.add(id(value))
            found.append(value)
        return
    if depth > 4 or value is None or value.__class__ in _ATOMS or isinstance(value, np.ndarray):
        return
    if isinstance(value, (tuple, list)):
        items = value[:64]
    elif isinstance(value, dict):
        items = list(value.values())[:64]
    elif isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                            types.MethodType)):
        return
    else:
        attributes = getattr(value, '__dict__', None)
        if not isinstance(attributes, dict):
            return
        items = list(attributes.values())[:64]
    key = id(value)
    if ('walked', key) in seen:
        return
    seen.add(('walked', key))
    for item in items:
        walk(item, found, seen, depth + 1)


_ATOMS = frozenset({bool, int, float, complex, str, bytes, np.float64, np.float32, np.int64})


def follow(fn, path):
    """The value of a root path (`('g', name, attr, ...)` or `('c', name, ...)`) seen from `fn`."""
    kind, name, *attrs = path
    if kind == 'c':
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        try:
            value = cells[name].cell_contents
        except (KeyError, ValueError):
            return MISSING
    else:
        value = fn.__globals__.get(name, MISSING)
        if value is MISSING:
            value = getattr(builtins, name, MISSING)
    for attr in attrs:
        if value is MISSING:
            return value
        try:
            value = getattr(value, attr, MISSING)
        except Exception:           # noqa: BLE001  (a property that fails: not a source)
            return MISSING
    return value


# ------------------------------------------------------------------ what code draws from

@dataclasses.dataclass(frozen=True)
class Plan:
    """What a function's code (or some lines of it) may draw random numbers from."""
    flags: int = 0
    roots: tuple = ()           # access paths: ('g' | 'c', name, attr, ...)
    refusal: tuple = None       # (filename, line, column, why)

    @property
    def draws(self) -> bool:
        return bool(self.flags or self.roots or self.refusal)


NOTHING = Plan()
# fn -> (its code, the globals it read, its Plan)
_PLANS: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()


def run_by(value):
    """The Python functions a call of `value` runs: a `custom_vjp`/`custom_jvp` function's
    own function and rules, a `tf.function`'s function, a def itself; None for others."""
    custom = getattr(value, '__tapeflow_custom__', None)
    if custom is not None:
        return [f for f in (custom.fun, getattr(custom, 'fwd', None), getattr(custom, 'jvp', None))
                if isinstance(f, types.FunctionType)]
    inner = getattr(value, '__tapeflow_python__', None)
    if isinstance(inner, types.FunctionType):
        return [inner]
    return [value] if isinstance(value, types.FunctionType) else None


def plan_of(fn, lines=None, locals_are_passed=False) -> Plan:
    """What `fn`'s code may draw from (see the module's docstring). `lines`: only the
    instructions of these lines (first, last) of its file, a loop of it; with
    `locals_are_passed`, each of its local variables counts as a value passed in (a
    checkpointed loop's snapshot holds them all)."""
    functions = run_by(fn)
    if functions is not None and functions != [fn]:     # (their roots are their own)
        plans = [plan_of(f) for f in functions]
        # (WALK: their roots are read where the sources are taken, through `run_by`)
        return Plan(functools.reduce(operator.or_, (p.flags for p in plans), 0)
                    | (WALK if any(p.draws for p in plans) else 0),
                    (), next((p.refusal for p in plans if p.refusal), None))
    code = getattr(fn, '__code__', None)
    if not isinstance(code, types.CodeType) or _is_library(fn):
        return NOTHING
    cacheable = lines is None and not locals_are_passed
    if cacheable:
        try:
            known = _PLANS.get(fn)
        except TypeError:
            known = None
        if known is not None and known[0] is code and _same_globals(fn, known[1]):
            return known[2]
        _PLANS_BEING_READ.add(id(fn))
    try:
        plan = _Reader(fn, lines, locals_are_passed).read()
    finally:
        if cacheable:
            _PLANS_BEING_READ.discard(id(fn))
    if cacheable:
        try:
            _PLANS[fn] = (code, _globals_read(fn), plan)
        except TypeError:
            pass
    return plan


def _globals_read(fn) -> tuple:
    """(name, value) of the globals `fn`'s code names, as they are now (a plan rests on them)."""
    names = {n for c in _codes(fn.__code__) for n in c.co_names}
    scope = fn.__globals__
    return tuple((n, scope.get(n, MISSING)) for n in sorted(names))


def _same_globals(fn, read) -> bool:
    scope = fn.__globals__
    return all(scope.get(n, MISSING) is v for n, v in read)


def _codes(code):
    pending = [code]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


_PLANS_BEING_READ: set = set()      # recursion: a function being read draws what it is found to


def _is_library(fn) -> bool:
    module = getattr(fn, '__module__', None) or ''
    return module.partition('.')[0] in _LIBRARIES


class _Reader:
    """One pass over the instructions of a function (and the code nested in it)."""

    def __init__(self, fn, lines, locals_are_passed):
        self.fn, self.lines, self.passed_locals = fn, lines, locals_are_passed
        code = fn.__code__
        nparams = code.co_argcount + code.co_kwonlyargcount + \
            bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        self.params = set(code.co_varnames[:nparams])
        self.cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        self.flags, self.roots, self.refusal = 0, [], None
        self.line = {}                  # id(instruction) -> its line
        self.own = set()                # a loop's: the locals it stores into
        self.stored = {}                # local name -> the statements storing into it

    def read(self) -> Plan:
        self._code(self.fn.__code__, outer=True)
        roots = tuple(dict.fromkeys(self.roots))
        return Plan(self.flags, roots, self.refusal)

    def _passed(self, name) -> bool:
        """A value passed in: a parameter, or a variable a checkpointed loop's snapshots hold."""
        return name in self.params or (self.passed_locals and name not in self.own)

    def _in_lines(self, instruction) -> bool:
        if self.lines is None:
            return True
        line = self.line.get(id(instruction))
        return line is not None and self.lines[0] <= line <= self.lines[1]

    def _code(self, code, outer):
        instructions, line = [], code.co_firstlineno
        for ins in dis.get_instructions(code):
            line = _line_of(ins) or line
            if ins.opname not in _SKIP:
                self.line[id(ins)] = line
                instructions.append(ins)
        if outer and self.lines is not None:    # a loop's own locals: not passed in
            self.own = {i.argval for i in instructions if i.opname in _STORES
                        and self._in_lines(i)}
        for name, spans in self._stores(instructions).items():
            self.stored.setdefault(name, []).extend(spans)
        stored = self.stored
        recv = None                       # what the last loads left on the stack, if known
        for k, ins in enumerate(instructions):
            op, arg = ins.opname, ins.argval
            inside = self._in_lines(ins)
            if op in _GLOBAL_LOADS:
                name = arg if isinstance(arg, str) else None
                recv = ('g', name) if name else None
                if inside and name:
                    self._value(recv, instructions, k)
            elif op in _DEREF_LOADS:
                if outer and arg in self.cells:
                    recv = ('c', arg)
                    if inside:
                        self._value(recv, instructions, k)
                else:
                    recv = ('p', arg) if self._passed(arg) else ('l', arg)
            elif op in _FAST_LOADS:
                recv = ('p', arg) if self._passed(arg) else ('l', arg)
            elif op == 'LOAD_FAST_LOAD_FAST':
                second = arg[1] if isinstance(arg, tuple) else None
                recv = ('p', second) if self._passed(second) else ('l', second)
            elif op in _ATTRIBUTES:
                if recv is None:
                    if inside and arg in GENERATOR_METHODS:
                        self._refuse(ins, f'.{arg}() of a value it computes there')
                    continue
                if inside and arg in GENERATOR_METHODS:
                    self._method(recv, arg, ins, stored)
                recv = recv + (arg,)
                if inside and recv[0] in 'gc':
                    self._value(recv, instructions, k)
            elif op == 'LOAD_CONST' and isinstance(arg, types.CodeType):
                self._code(arg, outer=False)
                recv = None
            elif op == 'BINARY_SUBSCR' and recv is not None and recv[0] == 'p':
                recv = ('p', recv[1], '[]')
            else:
                recv = None

    def _stores(self, instructions) -> dict:
        """local name -> the instructions of each statement storing into it (from the
        statement's first load on), when it is one expression."""
        out, span = {}, []
        for ins in instructions:
            if ins.opname in _STORES:
                out.setdefault(ins.argval, []).append(span)
                span = []
            elif ins.opname in _BOUNDARIES or ins.opname.startswith(('POP_JUMP', 'JUMP')):
                span = []
            else:
                span.append(ins)
        return out

    def _value(self, path, instructions, k):
        """A global or closure value the code names: what it draws, if it is a source."""
        value = follow(self.fn, path)
        if value is MISSING:
            return
        if any(value is f for f in _FRESH):
            following = instructions[k + 1] if k + 1 < len(instructions) else None
            if following is not None and following.opname in _CALLS and following.argval == 0:
                why = (f'{_name(value)}() reseeds from fresh entropy' if value in
                       (np.random.seed, _random.seed) else
                       f'{_name(value)}() without a seed makes a generator from fresh entropy')
                self._refuse(following, why + ', which no rerun draws again')
                return
        if isinstance(value, GENERATOR_TYPES):
            self._source(value, path)
            return
        owner = getattr(value, '__self__', None)
        if isinstance(owner, GENERATOR_TYPES) and callable(value):
            self._source(owner, path[:-1] if len(path) > 2 else path)
            return
        functions = run_by(value)
        if functions:
            for function in functions:
                if id(function) in _PLANS_BEING_READ or _is_library(function):
                    continue
                inner = plan_of(function)
                if inner.draws:
                    self.flags |= inner.flags & (NUMPY | PYTHON)
                    self.roots.append(path)
                    if inner.refusal is not None and self.refusal is None:
                        self.refusal = inner.refusal
            return
        if isinstance(value, (list, tuple, dict)) and not isinstance(value, np.ndarray):
            found = []
            walk(value, found, set(), 1)
            if found:
                self.roots.append(path)

    def _source(self, source, path):
        if source is np.random.mtrand._rand:
            self.flags |= NUMPY
        elif source is _random._inst:
            self.flags |= PYTHON
        else:
            self.roots.append(path)

    def _method(self, recv, method, ins, stored):
        """`<recv>.method(...)`, a generator's method by its name."""
        kind, name = recv[0], recv[1]
        if kind in 'gc':
            value = follow(self.fn, recv)
            if value is MISSING or isinstance(value, types.ModuleType):
                return                      # (np.random.normal: classified as a value)
            if not isinstance(value, GENERATOR_TYPES):
                self.roots.append(recv)     # an object's: its generators are searched
            return
        if kind == 'p':
            self.flags |= WALK
            return
        # a local variable: fine where every value stored into it is a generator made
        # with a seed, a parameter's, or a global's
        for stored_value in stored.get(name, [None]):
            if not self._known_store(stored_value):
                self._refuse(ins, f'.{method}() of {name}, which holds a value it cannot '
                                  f'find again (made by a call, not passed in nor global)')
                return

    def _known_store(self, span) -> bool:
        """Whether a statement `name = <span>` stores a source a rerun finds again: a
        value passed in (or reached from one), a global's, a generator made with a seed,
        what a user function returns that draws only from sources it finds."""
        if not span:
            return False
        first = span[0]
        code = self.fn.__code__
        if first.opname in _FAST_LOADS or first.opname == 'LOAD_FAST_LOAD_FAST' or (
                first.opname in _DEREF_LOADS and first.argval not in self.cells):
            root = first.argval[0] if isinstance(first.argval, tuple) else first.argval
            if self._passed(root):
                self.flags |= WALK
                return True
            return False
        if first.opname not in _GLOBAL_LOADS and first.opname not in _DEREF_LOADS:
            return False
        path = ('c' if first.opname in _DEREF_LOADS else 'g', first.argval)
        for ins in span[1:]:
            if ins.opname not in _ATTRIBUTES:
                break
            path += (ins.argval,)
        value = follow(self.fn, path)
        called = any(ins.opname in _CALLS for ins in span)
        if value is MISSING:
            return False
        if any(value is f for f in _FRESH):
            return called           # (with no argument: refused where it is called)
        if isinstance(value, GENERATOR_TYPES) and not called:
            self.roots.append(path)
            return True
        for function in run_by(value) or ():
            inner = plan_of(function)
            if inner.draws and inner.refusal is None and code is not None:
                self.roots.append(path)
                return True
        return False

    def _refuse(self, ins, why):
        if self.refusal is None:
            code = self.fn.__code__
            line = self.line.get(id(ins)) or code.co_firstlineno
            col = getattr(getattr(ins, 'positions', None), 'col_offset', None) or 0
            self.refusal = (code.co_filename, line, col, why)


def _line_of(ins):
    """The line of an instruction; on Python 3.10, of the first of a line only."""
    positions = getattr(ins, 'positions', None)
    if positions is not None:
        return positions.lineno
    line = getattr(ins, 'starts_line', None)
    return line if isinstance(line, int) and not isinstance(line, bool) else None


def _name(fn) -> str:
    module = getattr(fn, '__module__', '') or ''
    name = getattr(fn, '__qualname__', getattr(fn, '__name__', 'it'))
    if module.startswith('numpy'):
        return f'np.random.{name}'
    if module == 'random':
        return f'random.{name}'
    return name
