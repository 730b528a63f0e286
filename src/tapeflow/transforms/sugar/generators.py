"""Desugar, generator functions: read whole, a generator is the list of what it yields.

`def gen(xs): for x in xs: yield f(x)` compiles as `def gen(xs): _yielded = []; for x in
xs: _yielded.append(f(x)); return _yielded`: the same calls, in the same order, their
values read into a list. That is what a loop consuming the generator (`for w in gen(xs)`),
`list(gen(...))` or `sum(gen(...))` reads, where the consumer does not change what the
generator reads between its items (it runs first, whole, here). `yield from it` appends
what `it` gives. A `yield` whose value is read (`x = yield v`: `send`) and a generator's
`return v` are refused. Runs first among desugar's rewrites (the function's own body; a
nested generator is compiled as its own function).

Python makes a generator's items one at a time, as they are read; the list is made
where the generator is called. `check_reads` (on every function compiled, after its own
yields are lowered) keeps that the same numbers: a call of a generator function is read
where it is made, to its end (`sum`, `list`, `for v in ...`, a comprehension), by a loop
that cannot leave early, whose body binds no name a nested generator def reads and draws
no random numbers where the generator does; `transforms.generator_reads` refuses the
loops whose bodies write into what the generator reads (after the aliasing analysis).
A generator read partly (`next(gen(...))`, `zip(gen(...), ys)` stopping at the shorter,
a loop leaving early) gives Python's numbers where making its other items changes
nothing Python's run shows (`_finishes_quietly`): it is then read as `list(gen(...))`.
"""
from __future__ import annotations

import builtins
import inspect

from tapeflow.runtime import random_plans
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.parse import parse_function

# What reads a generator to its end with none of the caller's code in between.
_CONSUMERS = (builtins.sum, builtins.list, builtins.tuple, builtins.sorted, builtins.min,
              builtins.max, builtins.set, builtins.frozenset, builtins.dict)


def is_generator(fn) -> bool:
    code = getattr(fn, '__code__', None)
    return code is not None and bool(code.co_flags & inspect.CO_GENERATOR)


def refuse_as_entry(fn):
    """A generator function differentiated itself: its value is a generator object, which
    has no derivative; refused at its first `yield`."""
    source = parse_function(fn)
    first = next(n for n in nodes.walk(source.node) if isinstance(n, (ast.Yield, ast.YieldFrom)))
    raise source.error(first, f'{fn.__name__}() is a generator function (yield): its value is '
                              f'a generator, which has no derivative; differentiate a function '
                              f'that reads it, e.g. sum({fn.__name__}(x)) or list(...)')


def lower_generator(node, namer, source):
    """`node`, a generator function's def, as the function returning the list it yields."""
    out = namer.new('_yielded')
    node.body = _block(node.body, out, namer, source)
    node.body = [nodes.located(nodes.assign(out, nodes.list_()), node)] + node.body + \
        [nodes.located(nodes.return_(nodes.name(out)), node)]
    return node


def _block(stmts, out, namer, source):
    result = []
    for stmt in stmts:
        if isinstance(stmt, ast.FunctionDef):
            result.append(stmt)
            continue
        for field in ('body', 'orelse', 'finalbody'):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                setattr(stmt, field, _block(inner, out, namer, source))
        for handler in getattr(stmt, 'handlers', None) or ():
            handler.body = _block(handler.body, out, namer, source)
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(value, ast.Yield):
            item = value.value if value.value is not None else nodes.const(None)
            result.append(nodes.copy_location(nodes.expr_stmt(
                nodes.call(nodes.attribute(out, 'append'), item)), stmt))
            continue
        if isinstance(value, ast.YieldFrom):
            each = namer.new('_item')
            loop = nodes.for_(each, value.value, [nodes.expr_stmt(
                nodes.call(nodes.attribute(out, 'append'), nodes.name(each)))])
            result.append(nodes.located(loop, stmt))
            continue
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                raise source.error(stmt, "a generator's return value (return v in a function "
                                         "that yields) is not supported; yield it instead")
            result.append(nodes.copy_location(nodes.return_(nodes.name(out)), stmt))
            continue
        for n in nodes.walk_terms(stmt):
            if isinstance(n, (ast.Yield, ast.YieldFrom)):
                raise source.error(n, 'a yield whose value is read (x = yield v, send()) is not '
                                      'supported; yield as a statement')
        result.append(stmt)
    return result


# ---------------------------------------------------------------- where its list is read

def check_reads(node, source, fn=None):
    """Refuse, located, a generator call whose list could be read otherwise than Python
    reads the generator (see the module's docstring)."""
    if source.filename.startswith('<tapeflow'):
        return                  # generated code: its user's code was checked
    local = {d.name: d for d in _own_nodes(node) if isinstance(d, ast.FunctionDef)
             and d is not node and any(isinstance(n, (ast.Yield, ast.YieldFrom))
                                       for n in _own_nodes(d))}
    calls = [n for n in _own_nodes(node) if _generator_name(n, local)]
    if not calls:
        return
    consumed, loops, partly = set(), [], {}
    for n in _own_nodes(node):
        if isinstance(n, (ast.For, ast.comprehension)):
            it = n.iter
            if _resolved(it, builtins.enumerate) and it.args:
                it = it.args[0]
            if _resolved(it, builtins.zip) and not it.keywords and len(it.args) > 1:
                for k, arg in enumerate(it.args):   # (zip stops at the shortest: the
                    if _generator_name(arg, local):     # others read partly)
                        partly[id(arg)] = (arg, 'zip() stops at its shortest argument')
                        if isinstance(n, ast.For):
                            loops.append((n, arg))
                        it.args[k] = _listed(arg)
            elif _generator_name(it, local):
                consumed.add(id(it))
                if isinstance(n, ast.For):
                    loops.append((n, it))
        elif isinstance(n, ast.Call) and n.args and any(_resolved(n, c) for c in _CONSUMERS) \
                and not any(k.arg == 'key' for k in n.keywords):
            consumed.add(id(n.args[0]))
        elif _resolved(n, builtins.next) and 1 <= len(n.args) <= 2 and not n.keywords \
                and _generator_name(n.args[0], local):
            partly[id(n.args[0])] = (n.args[0], 'next() reads its first item')
            n.args[0] = nodes.copy_location(nodes.call(nodes.builtin('iter'), _listed(
                n.args[0])), n.args[0])         # (the list's first item: `folding`)
    for arg, what in partly.values():   # read partly: exact where the rest changes nothing
        arg = arg.args[0] if _resolved(arg, builtins.list) else arg
        name = _generator_name(arg, local)
        if not _finishes_quietly(_definition(arg, name, local)):
            raise source.error(arg, f'{name}() (a generator) is read partly here ({what}): '
                                    f'tapeflow makes all its items where it is called, Python '
                                    f'only those read, and '
                                    f'making the others could show here (it may not end, '
                                    f'raises, writes, draws, or calls what tapeflow does not '
                                    f'know); read list({name}(...)) instead')
        consumed.add(id(arg))
    for call in calls:
        if id(call) not in consumed:
            name = _generator_name(call, local)
            raise source.error(call, f'{name}() is a generator: tapeflow makes all its items where '
                                     f'it is called, which gives Python\'s numbers only where they '
                                     f'are read there, to the end; read it there (for v in '
                                     f'{name}(...), sum(...), list({name}(...)) to keep them)')
    for loop, call in loops:
        _check_loop(loop, call, _generator_name(call, local), local, source, fn)


def _listed(call):
    """`list(call)`: all the items of a generator read partly where it is made (made so by
    compiled code too; a call that carries no derivative runs the generator itself)."""
    return nodes.copy_location(nodes.call(nodes.builtin('list'), call), call)


def _check_loop(loop, call, name, local, source, fn):
    instead = f'loop over list({name}(...)) to make them all first'
    why = f'tapeflow makes all the items of {name}() (a generator) when the loop starts, ' \
          f'Python one at a time'
    if _leaves_early(loop.body) and not _finishes_quietly(_definition(call, name, local)):
        # (a generator zip() reads partly is quiet: `check_reads`)
        raise source.error(loop, f'this loop may stop before {name}() has made its last item '
                                 f'(break, return): {why}, and would run it further; {instead}')
    if name in local:
        bound = nodes.store_names(loop.body) | {n.id for n in nodes.walk_terms(loop.target)
                                                if isinstance(n, ast.Name)}
        own = nodes.store_names(local[name].body) | {a.id for a in local[name].args.args}
        for var in sorted(nodes.load_names(local[name]) - own):
            if var in bound:
                raise source.error(loop, f'this loop binds {var!r} again, which {name}() reads '
                                         f'when it makes its next item: {why}; pass {var} as an '
                                         f'argument, or {instead}')
    if fn is not None and _draws(fn, call, local.get(name)) and _draws(fn, loop.body):
        raise source.error(loop, f'{name}() and this loop both draw random numbers, which Python '
                                 f'draws in turns: {why}; {instead}')


def _definition(call, name, local):
    """The def of the generator `call` calls, its names resolved; None where it has none."""
    if name in local:
        return local[name]
    fn = getanno(call.func, Key.RESOLVED)
    try:
        node = parse_function(fn).node
    except Exception:           # noqa: BLE001 (no source: not read, not quiet)
        return None
    from tapeflow.syntax.resolve import resolve
    resolve(node, fn)
    return node


_QUIET_CALLS = (builtins.range, builtins.len, builtins.enumerate, builtins.zip, builtins.float,
                builtins.abs, builtins.min, builtins.max, builtins.sum, builtins.reversed)


def _finishes_quietly(gen) -> bool:
    """Whether running the generator `gen` to its end after a loop reading it stopped
    changes nothing Python's run shows: it ends (no `while`, loops over what it is given
    or a range), writes into nothing but names it binds, raises nothing of its own, calls
    only functions with derivative rules and the builtins above (none drawing random
    numbers). Then its later items, made and never read, are all the difference."""
    if gen is None:
        return False
    params = {a.id for a in gen.args.args + gen.args.kwonlyargs + gen.args.posonlyargs} | \
        {a.id for a in (gen.args.vararg, gen.args.kwarg) if a is not None}
    bound = {t.id for n in nodes.walk_terms(gen) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    for n in nodes.walk_terms(gen):
        if n is not gen and isinstance(n, (ast.While, ast.Raise, ast.Assert, ast.Try, ast.With,
                                           ast.FunctionDef, ast.Lambda, ast.Delete,
                                           ast.Global, ast.Nonlocal)):
            return False
        if isinstance(n, ast.Assign) and not all(isinstance(t, (ast.Name, ast.Tuple))
                                                 for t in n.targets):
            return False
        if isinstance(n, ast.AugAssign) and not (isinstance(n.target, ast.Name) and
                                                 n.target.id in bound - params):
            return False
        if isinstance(n, ast.YieldFrom) and not isinstance(n.value, ast.Name):
            return False
        if isinstance(n, ast.Call) and not _quiet_call(getanno(n.func, Key.RESOLVED)):
            return False
    return True


def _quiet_call(fn) -> bool:
    from tapeflow.rules import registry
    if fn is None or 'random' in (getattr(fn, '__module__', None) or ''):
        return False
    try:
        if any(fn is q for q in _QUIET_CALLS):
            return True
    except TypeError:
        return False
    return registry.lookup(fn) is not None and not is_generator(fn)


def _draws(fn, what, body=None) -> bool:
    """Whether the lines of `what` (a call: the function it calls; a block) may draw."""
    if isinstance(what, ast.Call) and body is None:
        return random_plans.plan_of(getanno(what.func, Key.RESOLVED)).draws
    lines = [where[0] for s in ([body] if body is not None else what)
             for n in nodes.walk_terms(s) for where in (getanno(n, Key.ORIGIN),) if where]
    return bool(lines) and random_plans.plan_of(fn, (min(lines), max(lines)), True).draws


def _leaves_early(body, nested=False) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.Return) or isinstance(stmt, ast.Break) and not nested:
            return True
        if isinstance(stmt, ast.FunctionDef):
            continue
        inner = nested or isinstance(stmt, (ast.For, ast.While))
        for field in ('body', 'orelse', 'finalbody'):
            if _leaves_early(getattr(stmt, field, None) or [], inner):
                return True
        for handler in getattr(stmt, 'handlers', None) or ():
            if _leaves_early(handler.body, inner):
                return True
    return False


def _generator_name(node, local):
    """The name of the generator function `node` calls, or None."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id in local \
            and getanno(node.func, Key.RESOLVED) is None:
        return node.func.id
    fn = getanno(node.func, Key.RESOLVED)
    return getattr(fn, '__name__', 'it') if is_generator(fn) else None


def _resolved(call, fn) -> bool:
    return isinstance(call, ast.Call) and getanno(call.func, Key.RESOLVED) is fn


def _own_nodes(node):
    """The nodes of `node`'s body, not those of the defs in it (compiled on their own)."""
    todo = list(node.body) if isinstance(node, ast.FunctionDef) else [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, ast.FunctionDef):
            todo.extend(ast.iter_child_nodes(n))
