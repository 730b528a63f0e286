"""Desugar, nested defs: a def inside the function becomes a function of its own.

`lift_nested_defs(node, source, fn, namer, bindings)` compiles each nested def
on its own, its free locals passed as extra parameters and its defaults
hoisted to names assigned where the def stands; every call of it passes all
its arguments by position. A lambda is a nested def first (`hoist_lambdas`).
A nested def used as a value (stored, passed, returned) becomes, where it
stood, `closure(lifted, nparams, ndefaults, *defaults, *free)`: its values as
they are there (`rules.closures`), which a call through the dispatcher reads.
Runs after `syntax.resolve`.
"""
from __future__ import annotations

import copy
import dataclasses
import functools

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.sugar import nonlocals
from tapeflow.transforms.sugar.lifted_calls import (default, default_of, hoist_defaults,
                                                     keyword_arguments, positional_arguments,
                                                     shaped, star_parameters, take_defaults)


def lift_nested_defs(node, source, fn, namer=None, bindings=None):
    """A nested def gets the enclosing locals it reads as extra parameters.

    `def inner(v): return v * k` inside `f` (with `k` a local of `f`) becomes
    `def inner(v, k)`, and each call `inner(x)` becomes `inner(x, k)`. Calls
    are then ordinary calls of a user function: `inner` is compiled on its own
    (from this node, located in the user's file).

    Defaults are values the def statement computes where it stands (`def
    inner(v, k=k)` in a loop keeps each trip's `k`): each becomes a name
    assigned just before the def (`_inner_k = k`), and a call that leaves the
    parameter out passes that name. Calls pass every argument by position.
    """
    from tapeflow.syntax.resolve import local_names
    hoist_lambdas(node, source, namer)
    if any(isinstance(n, ast.Lambda) for n in nodes.walk_terms(node)):
        lambda_values(node, source, fn, namer, bindings, local_names(node))
    if not any(isinstance(s, ast.FunctionDef) for s in nodes.statements(node.body)):
        return                      # (most functions; `fence` let no other block hold a def)
    outer_locals = None             # the function's locals, read before any def is lifted
    lifted = {}
    places = {}                     # def name -> (its block, its hoisted defaults)
    for stmt in [node] + _own_statements(node.body):    # (a def's own defs: lifted with it)
        if isinstance(stmt, ast.FunctionDef) and stmt is not node:
            continue
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if not isinstance(block, list):
                continue
            for child in list(block):
                if isinstance(child, ast.FunctionDef) and child is not node:
                    if outer_locals is None:
                        outer_locals = local_names(node)
                    hoisted = hoist_defaults(child, namer, outer_locals, bindings)
                    at = block.index(child)
                    block[at:at] = nodes.located(hoisted, child)
                    lifted[child.name] = _lift(child, source, fn, outer_locals, hoisted,
                                               bindings)
                    places[child.name] = (block, hoisted)
    if not lifted:
        return
    called_at, direct, binding = set(), {}, {}
    inside = {id(n) for d in nodes.walk_terms(node) if isinstance(d, ast.FunctionDef)
              and d is not node for n in nodes.walk_terms(d) if n is not d}
    for call in nodes.walk_terms(node):
        called = ast.called_name(call)
        written = lifted[called][0].__tapeflow_nonlocal__ if called in lifted else ()
        if written and id(call) in inside:
            raise source.error(call, f'{called}() binds {written[0]} of the function around it '
                                     f'(nonlocal), and is called here from another def: '
                                     f'tapeflow follows those writes where the function it '
                                     f'compiles calls it; call it there')
        if written:
            binding[id(call)] = (called, written)
        if called in lifted and id(call) not in inside:
            inner_fn, params, defaults, free = lifted[called]
            if shaped(inner_fn):
                keyword_arguments(call, called, inner_fn, defaults, source)
                call.args = _free_names(free, outer_locals, bindings) + call.args
            else:
                call.args = positional_arguments(call, called, params, defaults, source) + \
                    _free_names(free, outer_locals, bindings)
                call.keywords = []
            setanno(call.func, Key.RESOLVED, inner_fn)
            called_at.add(id(call.func))
            direct.setdefault(called, []).append(call)
    if binding:
        nonlocals.rewrite_calls(node, binding, namer, source)
    used = {}
    for n in nodes.walk_terms(node):
        if isinstance(n, ast.Name) and n.id in lifted and isinstance(n.ctx, ast.Load) \
                and id(n) not in called_at:
            used.setdefault(n.id, n)
    for name, use in used.items():
        if lifted[name][0].__tapeflow_nonlocal__:
            nonlocals.refuse_as_value(name, lifted[name][0].__tapeflow_nonlocal__, use, source)
        block, hoisted = places[name]
        made = _as_closure(node, name, lifted[name], block, hoisted, use, source, namer,
                           bindings)
        for call in direct.get(name, ()):     # `name` is now the closure: they call the def
            fn_ref = nodes.copy_location(nodes.name(made.args[0].id), call.func)
            setanno(fn_ref, Key.RESOLVED, getanno(call.func, Key.RESOLVED))
            call.func = fn_ref


def _lift(child, source, fn, outer_locals, hoisted, bindings=None):
    """(the lifted function, its parameters, {parameter: name of its hoisted default}, the
    enclosing locals it reads). A def with `*args`, keyword-only parameters or `**kwargs`
    keeps them (calls are bound as Python binds them, `sugar.folding`), and takes the
    locals first, positional-only, where no keyword can reach them."""
    from tapeflow.syntax.resolve import local_names
    from tapeflow.syntax.unparse import load_module, unparse
    params = [a.id for a in child.args.args]
    defaults = {default_of(h): h.targets[0].id for h in hoisted}
    starred = star_parameters(child)
    written = nonlocals.prepare(child, outer_locals, source)    # (it gives them back)
    inner_locals = local_names(child) - set(written)
    # the enclosing function's locals it reads, and its closure's names (two scopes up)
    enclosing = outer_locals | set(getattr(getattr(fn, '__code__', None), 'co_freevars', ()))
    free = sorted(_loads(child) - inner_locals - {child.name} & enclosing | set(written))
    if starred:
        child.args.posonlyargs = [nodes.param(nodes.name(name)) for name in free]
    else:
        child.args.args.extend(nodes.param(nodes.name(name)) for name in free)
    for call in nodes.walk_terms(child):            # it calls itself: its free names passed on
        if ast.called_name(call) != child.name:
            continue
        if starred:
            call.args = [nodes.name(n) for n in free] + call.args
        elif not any(isinstance(a, ast.Starred) for a in call.args) and not call.keywords \
                and len(call.args) == len(params):
            call.args = call.args + [nodes.name(n) for n in free]
    namespace = dict(fn.__globals__)
    if bindings is not None:        # the objects earlier lowerings named (`_attempt`)
        namespace.update(bindings.computed)
    load_module(unparse(child), namespace, child.name)
    inner_fn = namespace[child.name]            # (its own name, read in its namespace, is itself)
    inner_fn.__tapeflow_source__ = dataclasses.replace(source, node=copy.deepcopy(child))
    if starred:     # (`closures.Closure` passes the defaults by name, the locals first)
        inner_fn.__tapeflow_defaults_named__ = tuple(default_of(h) for h in hoisted)
    inner_fn.__tapeflow_nonlocal__ = written
    if getanno(child, Key.CALLED_AT_ONCE):          # a guarded body (`try`, `with`)
        inner_fn.__tapeflow_guarded_body__ = True
        inner_fn.__tapeflow_kept__ = getanno(child, Key.KEPT)
    return inner_fn, params, defaults, free


def _loads(node, bound=frozenset()) -> set:
    """The names `node` reads, but a nested lambda's or def's reads of its own parameters
    and locals (`lambda v, c=k: v + c` reads k here, not c; a def's `for k in kw` binds its
    own k: fuzzer seed 5401 index 2945, an UnboundLocalError where the function around it
    binds a k of its own later; a def in a def's body reads its own parameters: fuzzer seed
    5420 index 4742, a NameError)."""
    return set().union(*(_read(child, bound) for child in ast.iter_child_nodes(node)))


def _read(node, bound) -> set:
    """The names `node` itself reads (`_loads`, `node` included)."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in bound else set()
    if not isinstance(node, (ast.Lambda, ast.FunctionDef)):
        return _loads(node, bound)
    args = node.args
    out = set().union(*(_read(d, bound) for d in args.defaults + [
        d for d in args.kw_defaults if d is not None] + getattr(node, 'decorator_list', [])))
    own = {a.id for a in args.args + args.kwonlyargs + args.posonlyargs} | \
        {a.id for a in (args.vararg, args.kwarg) if a is not None}
    if isinstance(node, ast.FunctionDef):
        from tapeflow.syntax.resolve import local_names
        own |= local_names(node) - _declared_nonlocal(node)
    for part in [node.body] if isinstance(node, ast.Lambda) else node.body:
        out |= _read(part, bound | own)
    return out


def _declared_nonlocal(fdef) -> set:
    """The names `fdef` binds in the function around it (`nonlocal`): read there too."""
    return {name for n in _own_statements(fdef.body) if isinstance(n, ast.Nonlocal)
            for name in n.names}


def _free_names(free, outer_locals, bindings):
    """The names passed for a lifted def's free names: a local of the enclosing function,
    or a name of its closure (resolved there, as its own reads are)."""
    from tapeflow.syntax.resolve import resolve_expression
    out = []
    for name in free:
        ref = nodes.name(name)
        if bindings is not None and name not in outer_locals:
            resolve_expression(ref, outer_locals, bindings)
        out.append(ref)
    return out


# ------------------------------------------------------------------ values

def _as_closure(node, name, lifted, block, hoisted, use, source, namer, bindings):
    """The def `name`, used as a value at `use`, replaced where it stands by
    `name = closure(lifted, nparams, ndefaults, *defaults, *free)`. A free local bound
    again after the def (or in a loop around it) is refused: Python's closure reads it
    when called, the value made here would not."""
    from tapeflow.syntax.resolve import local_names
    inner_fn, params, defaults, free = lifted
    child = next(s for s in block if isinstance(s, ast.FunctionDef) and s.name == name)
    for var in () if getanno(child, Key.CALLED_AT_ONCE) else free:
        line = _bound_again(node, child, var)
        if line is not None:
            where = use if getattr(use, 'lineno', None) else child   # (a use desugar made)
            raise source.error(where, f'the function {name}() is used as a value here and reads '
                                    f'{var!r}, which line {line} binds again after {name}() is '
                                    f'made: Python would read its later value; pass {var} as an '
                                    f'argument, or as a default ({var}={var})')
    made = _closure_call(inner_fn, len(params), [nodes.name(h.targets[0].id) for h in hoisted],
                         _free_names(free, local_names(node), bindings), namer, bindings, name)
    block[block.index(child)] = nodes.located(nodes.assign(name, made), child)
    return made


def _bound_again(node, child, var):
    """The line of an assignment of `var` after the def `child`, or in a loop that holds
    both, else None."""
    order = {}
    loops = {}

    def walk(stmts, around):
        for stmt in stmts:
            order[id(stmt)] = len(order)
            loops[id(stmt)] = around
            inner = around + (id(stmt),) if isinstance(stmt, (ast.For, ast.While)) else around
            for field in ('body', 'orelse'):
                block = getattr(stmt, field, None)
                if isinstance(block, list) and not isinstance(stmt, ast.FunctionDef):
                    walk(block, inner)
    walk(node.body, ())
    at, around = order[id(child)], set(loops[id(child)])
    for stmt in _own_statements(node.body):
        if id(stmt) not in order or stmt is child or _gives_back_written(stmt):
            continue
        if var in _binds(stmt) and (order[id(stmt)] > at or around & set(loops[id(stmt)])
                                    or id(stmt) in around):
            return (nodes.origin(stmt) or (getattr(stmt, 'lineno', '?'),))[0]
    return None


def _binds(stmt) -> set:
    """The names a statement binds itself (not its nested blocks)."""
    if isinstance(stmt, ast.FunctionDef):
        return {stmt.name}
    targets = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For)):
        targets = [stmt.target]
    out = set()
    for target in targets:
        for n in nodes.walk_terms(target):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


# ------------------------------------------------------------------ lambdas

def hoist_lambdas(node, source, namer):
    """`f = lambda x: ...`, with `f` bound once in the function, becomes `def f(x)`: its
    calls are then direct (`lift_nested_defs`). Other lambdas are values, made where they
    stand (`lambda_values`)."""
    if not any(isinstance(n, ast.Lambda) for n in nodes.walk_terms(node)):
        return
    counts = {}
    for stmt in _own_statements(node.body):
        for name in _binds(stmt):
            counts[name] = counts.get(name, 0) + 1
    for arg in node.args.args:
        counts[arg.id] = counts.get(arg.id, 0) + 1
    for stmt in _own_statements(node.body):
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and not isinstance(stmt, ast.FunctionDef):
                _defs_of_lambdas(block, counts)
    _defs_of_lambdas(node.body, counts)


def _gives_back_written(stmt) -> bool:
    """`y = written_value(_run, k, y)` after a try/with body (`sugar.exceptions`): y is the
    object it was, written in place, not bound to another value."""
    from tapeflow.rules import guards
    value = getattr(stmt, 'value', None)
    return isinstance(stmt, ast.Assign) and isinstance(value, ast.Call) and \
        getanno(value.func, Key.RESOLVED) is guards.written_value


def _own_statements(body):
    """Every statement of `body` and its nested blocks, not inside nested defs."""
    out = []
    for stmt in body:
        out.append(stmt)
        if not isinstance(stmt, ast.FunctionDef):
            for field in ('body', 'orelse', 'finalbody'):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    out.extend(_own_statements(block))
            for handler in getattr(stmt, 'handlers', None) or ():
                out.extend(_own_statements(handler.body))
    return out


def _defs_of_lambdas(block, counts):
    for k, stmt in enumerate(block):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Lambda) \
                and counts.get(stmt.targets[0].id) == 1:
            block[k] = nodes.located(_lambda_def(stmt.value, stmt.targets[0].id), stmt)


def lambda_values(node, source, fn, namer, bindings, outer_locals):
    """Every other lambda of the function, in place: `closure(lifted, n, d, *defaults,
    *free)`, its defaults evaluated there, its free locals' values taken there."""
    for stmt in _own_statements(node.body):
        if isinstance(stmt, ast.FunctionDef):
            continue
        for lam, holder in _lambdas(stmt, source):
            name = namer.new('_lambda') if namer is not None else '_lambda'
            child = nodes.copy_location(_lambda_def(lam, name), lam)
            pairs = take_defaults(child)
            defaults = [d for _, d in pairs]
            hoisted = [default(f'_{name}_{k}', p, d) for k, (p, d) in enumerate(pairs)]
            inner_fn, params, _, free = _lift(child, source, fn, outer_locals, hoisted,
                                             bindings)
            for var in free:
                line = None if _called_at_once(stmt, lam) else _bound_again(node, stmt, var)
                if line is not None:
                    raise source.error(lam, f'this lambda reads {var!r}, which line {line} binds '
                                            f'again after the lambda is made: Python would read '
                                            f'its later value; pass {var} as an argument, or as '
                                            f'a default ({var}={var})')
            made = _closure_call(inner_fn, len(params), defaults,
                                 _free_names(free, outer_locals, bindings), namer, bindings, name)
            _replace(holder, lam, nodes.copy_location(made, lam))


_CALLING = (sorted, min, max, functools.reduce)        # call a function they are given
_LAZY = (map, filter)                                   # ... when iterated
_DRAINING = (list, tuple, set, sum, sorted, min, max, any, all, dict)   # iterate at once


def _called_at_once(stmt, lam) -> bool:
    """Whether `stmt` is done with `lam` when it completes: `lam` is given to a builtin
    that calls it there and keeps nothing (`sorted(xs, key=lam)`, `reduce(lam, xs)`), or to
    `map`/`filter` drained there (`list(map(lam, xs))`). Then a name it reads bound again
    after `stmt` is never read by it."""
    parents = {}
    for n in nodes.walk_terms(stmt):
        for child in nodes.children(n):
            parents[id(child)] = n
    call = parents.get(id(lam))
    if isinstance(call, ast.keyword):
        call = parents.get(id(call))
    if not isinstance(call, ast.Call) or call.func is lam:
        return False
    fn = getanno(call.func, Key.RESOLVED)
    if any(fn is f for f in _CALLING):
        return True
    if not any(fn is f for f in _LAZY):
        return False
    outer = parents.get(id(call))
    return isinstance(outer, ast.Call) and call in outer.args and \
        any(getanno(outer.func, Key.RESOLVED) is f for f in _DRAINING)


def _closure_call(inner_fn, nparams, defaults, free, namer, bindings, name):
    from tapeflow.rules.closures import closure
    fn_name = namer.new(f'_{name}_fn') if namer is not None else f'_{name}_fn'
    made_name = namer.new('closure') if namer is not None else 'closure'
    bindings.computed[fn_name] = inner_fn
    bindings.computed[made_name] = closure
    fn_ref, make = nodes.name(fn_name), nodes.name(made_name)
    setanno(fn_ref, Key.RESOLVED, inner_fn)
    setanno(make, Key.RESOLVED, closure)
    return nodes.call(make, fn_ref, nodes.const(nparams), nodes.const(len(defaults)),
                      *defaults, *free)


def _lambdas(stmt, source):
    """(lambda, its parent node) for the outermost lambdas of `stmt`'s own expressions;
    one whose body reads a comprehension's variable is refused (Python's lambda reads the
    variable's last value when called)."""
    found = []
    stack = [(child, stmt, frozenset()) for child in _own_children(stmt)]
    while stack:
        n, parent, bound = stack.pop()
        if isinstance(n, ast.Lambda):
            read = {m.id for m in nodes.walk_terms(n.body) if isinstance(m, ast.Name)}
            clash = read & bound - {a.id for a in n.args.args}
            if clash:
                raise source.error(n, f'a lambda in a comprehension reads its variable '
                                      f'{sorted(clash)[0]!r}, whose last value Python gives it '
                                      f'when it is called; pass it as a default '
                                      f'({sorted(clash)[0]}={sorted(clash)[0]})')
            found.append((n, parent))
            continue
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            bound = bound | {m.id for g in n.generators for m in nodes.walk_terms(g.target)
                             if isinstance(m, ast.Name)}
        stack.extend((child, n, bound) for child in nodes.children(n))
    return found


def _own_children(stmt):
    """The expressions of `stmt` itself, not of its nested blocks."""
    out = []
    for field, value in ast.iter_fields(stmt):
        if field in ('body', 'orelse', 'finalbody', 'handlers'):
            continue
        if isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def _lambda_def(lam, name):
    body = [nodes.copy_location(nodes.return_(lam.body), lam)]
    made = nodes.function_def(name, [a.id for a in lam.args.args], body,
                              defaults=list(lam.args.defaults))
    made.args.vararg, made.args.kwarg = lam.args.vararg, lam.args.kwarg
    made.args.kwonlyargs, made.args.kw_defaults = lam.args.kwonlyargs, lam.args.kw_defaults
    return nodes.copy_location(made, lam)


def _replace(parent, old, new):
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, v in enumerate(value):
                if v is old:
                    value[i] = new
                    return
