"""Desugar, what a `try`/`with` body may write into without binding it (`sugar.exceptions`):
the names its state gives back marked written, which the caller reads as written by the
call (`analysis.call_writes.guarded_writes`) and the dispatcher lets the body write.
Read from the syntax, and from the summaries of the user's functions it calls; a function
known only when the call runs is checked then (`tapeflow.calls.check_writes`).
"""
from __future__ import annotations

import types

import numpy as np

from tapeflow.rules import guards, mutation, registry
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno


def own_statements(body):
    """The statements of `body` and of its blocks, handlers' and cases' too; a nested def,
    not its body."""
    out = []
    for stmt in body:
        out.append(stmt)
        for block in blocks(stmt):
            out.extend(own_statements(block))
    return out


def blocks(stmt) -> list:
    """The statement lists `stmt` holds that run as the function's own: its bodies, its
    handlers' and its cases'; none of a nested def."""
    if isinstance(stmt, ast.FunctionDef):
        return []
    out = [getattr(stmt, f) for f in ('body', 'orelse', 'finalbody')
           if isinstance(getattr(stmt, f, None), list)]
    return out + [part.body for part in (getattr(stmt, 'handlers', None) or []) +
                  (getattr(stmt, 'cases', None) or [])]


def replace_returns(block, make):
    """`block`, each `return v` of its function (not of nested defs) replaced in place by
    `make(v)` (`v` None as `return None`): the lists are kept, as passes hold some."""
    for k, stmt in enumerate(block):
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else nodes.const(None)
            block[k] = nodes.located(make(value), stmt)
        else:
            for inner in blocks(stmt):
                replace_returns(inner, make)
    return block


def written_in_place(stmts) -> set:
    """The names a block may write into without binding them: `y[i] = v`, `del y[i]`,
    `y += v`, a method call `y.m(...)` but of a method known to read only, a name passed
    to a call that may write into it (`_arguments_written`), and what a written name was
    bound to in the block read from (`_through_bindings`)."""
    out, deep = set(), set()
    for stmt in own_statements(stmts):
        if isinstance(stmt, ast.FunctionDef):
            continue
        targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else \
            [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for t in nodes.walk_terms(target):
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    out.add(t.value.id)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            out.add(stmt.target.id)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript) and \
                isinstance(stmt.target.value, ast.Name):
            deep.add(stmt.target.value.id)      # `y[k] += v`: y[k]'s own memory, in place
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.Try, ast.With)):
            parts = [stmt.iter, stmt.target] if isinstance(stmt, ast.For) else \
                [stmt.test] if isinstance(stmt, (ast.While, ast.If)) else \
                [item.context_expr for item in stmt.items] if isinstance(stmt, ast.With) else []
        else:
            parts = [stmt]
        for call in (n for part in parts for n in nodes.walk_terms(part)):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    getanno(func, Key.RESOLVED) is None and _may_write(func.attr):
                out.add(func.value.id)
            out |= _arguments_written(call)
    return _through_bindings(stmts, out, deep)


def _through_bindings(stmts, written, deep=()) -> set:
    """`written` and every name read where a written name is bound in the block (`c = y[1:]`
    then `c[0] = v` may write into y; `a = rows[0]`, `b = y` alike), to a fixed point; and
    what is stored into a slot of a container whose items are written in place (`deep`:
    `y[k] += v`, or `c = y[k]` then c written): `o.w = x; o.w /= 2` writes into x."""
    assigns = [stmt for stmt in own_statements(stmts) if isinstance(stmt, ast.Assign)]
    binds = [(t.id, _outer_reads(stmt.value), _item_of(stmt.value))
             for stmt in assigns for t in stmt.targets if isinstance(t, ast.Name)]
    stores = [(t.value.id, _outer_reads(stmt.value))
              for stmt in assigns for t in stmt.targets
              if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)]
    out, deep, grown = set(written), set(deep), True
    while grown:
        size = (len(out), len(deep))
        for name, read, container in binds:
            if name in out:
                out |= read
                deep |= {container} - {None}
        for container, read in stores:
            if container in deep:
                out |= read
                deep |= read
        grown = (len(out), len(deep)) != size
    return out


def _item_of(value):
    """`y` of a value `y[k]` (an item of a container), else None."""
    return value.value.id if isinstance(value, ast.Subscript) and \
        isinstance(value.value, ast.Name) else None


def _outer_reads(value) -> set:
    """The names `value` reads, but a comprehension's own (`i` of `{i: v for i in r}`)."""
    terms = list(nodes.walk_terms(value))
    own = {n.id for c in terms if isinstance(c, ast.comprehension)
           for n in nodes.walk_terms(c.target) if isinstance(n, ast.Name)}
    return {n.id for n in terms if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id not in own}


def _arguments_written(call) -> set:
    """The names passed to `call` that it may write into: a nested body's marked ones, a
    NumPy writer's (`np.copyto(y, v)`, `out=y`), a user function's by its summary (every
    one where it cannot be read). A function known only when the call runs is checked
    then, and refused if it writes (`tapeflow.calls.check_writes`)."""
    fn = getanno(call.func, Key.RESOLVED)
    if isinstance(call.func, ast.Attribute) and call.func.attr == 'at' and \
            isinstance(getanno(call.func.value, Key.RESOLVED), np.ufunc):
        return {call.args[0].id} if call.args and isinstance(call.args[0], ast.Name) else set()
    values = list(call.args) + [k.value for k in call.keywords]
    named = [v.value if isinstance(v, ast.Starred) else v for v in values]
    if fn is guards.attempt or fn is guards.attempt_within:
        at = 2 if fn is guards.attempt_within else 1
        marked = guards.written_positions([k.value for k in call.args[at].elts])
        return {call.args[at + 2 + k].id for k in marked}
    if fn is None or isinstance(call.func, ast.Attribute) and \
            getanno(call.func, Key.RESOLVED) is None:
        return set()
    out = {k.value.id for k in call.keywords if k.arg == 'out' and isinstance(k.value, ast.Name)}
    nin = getattr(fn, 'nin', None)
    if nin is not None:
        out |= {a.id for a in call.args[nin:] if isinstance(a, ast.Name)}
    mutator = mutation.mutator_of_function(fn)
    if mutator is not None and isinstance(mutator.writes, int) and \
            mutator.writes < len(call.args) and isinstance(call.args[mutator.writes], ast.Name):
        out.add(call.args[mutator.writes].id)
    if registry.lookup(fn) is not None or not isinstance(fn, types.FunctionType):
        return out
    positions = _written_parameters(fn, len(call.args))
    if positions is None:
        return out | {v.id for v in named if isinstance(v, ast.Name)}
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    for k, a in enumerate(call.args):
        if k in positions and isinstance(a, ast.Name):
            out.add(a.id)
    for k in call.keywords:
        if k.arg in params and params.index(k.arg) in positions and \
                isinstance(k.value, ast.Name):
            out.add(k.value.id)
    return out


def _written_parameters(fn, count):
    """The positions of the parameters the user function `fn` may write into (None: not
    known: every one)."""
    from tapeflow.transforms.callees import Summaries
    from tapeflow.transforms.pipeline import anf_of
    if fn.__code__.co_flags & 0x0C:             # (*args, **kwargs: read per call)
        return None
    try:
        summary = Summaries(anf_of)(fn, (None,) * fn.__code__.co_argcount)
    except Exception:           # noqa: BLE001  (compiled where it is called, located)
        return None
    return summary.writes


def _may_write(method) -> bool:
    """Whether a method call of this name may write into its object."""
    return method in mutation.ARRAY_METHODS or method in mutation.LIST_METHODS or \
        method in mutation.DICT_METHODS or (method not in registry.METHODS and
                                            method not in mutation.READING_METHODS)


def bound_plainly(body) -> set:
    """The names `body` binds to another value somewhere (`y = ...`, a loop's or a
    manager's target, `:=`), but for a nested body's giving back a name it writes into
    (`y = kept_value(_run, k)` of a marked `y`: the same value, written)."""
    out = set()
    for stmt in own_statements(body):
        if isinstance(stmt, ast.FunctionDef):
            out.add(stmt.name)
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.For, ast.AnnAssign)) else \
            [item.optional_vars for item in stmt.items if item.optional_vars] \
            if isinstance(stmt, ast.With) else []
        if isinstance(stmt, ast.Assign) and _gives_back_written(stmt.value, body):
            continue
        for target in targets:
            out |= {n.id for n in nodes.walk_terms(target) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
        for n in nodes.walk_terms(stmt) if not isinstance(stmt, (ast.For, ast.While, ast.If,
                                                                  ast.Try, ast.With)) else ():
            if isinstance(n, ast.NamedExpr):
                out.add(n.target.id)
    return out


def _gives_back_written(value, body) -> bool:
    """`kept_value(_run, k)` where `_run`'s attempt marks its k-th name written."""
    if not isinstance(value, ast.Call) or \
            not _one_of(getanno(value.func, Key.RESOLVED), guards.kept_value, guards.written_value,
                        *guards.KEPT_OF_KIND.values()):
        return False
    run, k = value.args[0].id, value.args[1].value
    for stmt in own_statements(body):
        call = getattr(stmt, 'value', None)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and \
                stmt.targets[0].id == run and isinstance(call, ast.Call) and \
                _one_of(getanno(call.func, Key.RESOLVED), guards.attempt, guards.attempt_within):
            at = 2 if getanno(call.func, Key.RESOLVED) is guards.attempt_within else 1
            return k in guards.written_positions([e.value for e in call.args[at].elts])
    return False


def _one_of(value, *functions) -> bool:
    """`value` is one of `functions` (by identity: a resolved name may be an array)."""
    return any(value is f for f in functions)


def written_through(stmts, names, skip=frozenset()) -> set:
    """Of `names` (containers a body gives back), those whose held values the statements
    `stmts` (but those whose ids are in `skip`) may write into in place: through a name
    bound to what one holds (`c = rows[0]; c *= 2`), a store or write into an item
    (`rows[0][1] = v`, `rows[0] += v`), a method that may write, a call of a function
    that may write into an argument reading it, or a def or lambda reading it. A slot of
    the container itself written (`rows[0] = v`, `rows.append(v)`) is not such a write.
    Conservative: where it cannot tell, it may write."""
    statements = [s for s in own_statements(stmts) if id(s) not in skip]
    return {name for name in names if _writes_through(statements, name)}


def _writes_through(statements, origin) -> bool:
    derived, grown = {origin}, True
    while grown:
        size = len(derived)
        for stmt in statements:
            if _writes_held(stmt, origin, derived):
                return True
        grown = len(derived) != size
    return False


def _header(stmt) -> list:
    """The expressions of `stmt` itself (a compound statement's head, not its blocks)."""
    if isinstance(stmt, ast.For):
        return [stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, ast.With):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Try):
        return []
    return [stmt]


def _root(target):
    while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _reads_any(node, names) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in nodes.walk_terms(node))


def _may_hold(value, names) -> bool:
    """Whether the value of the expression `value` may be, or hold, what one of `names`
    holds: a name, an item or field of one, a display or an operation holding one (`rows +
    [v]` holds rows' items), a call given one; not the new array a NumPy ufunc or
    reduction makes of it (`np.mean(st.w)`), nor a number Python makes (`len`, `float`)."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Call):
        fn = getanno(value.func, Key.RESOLVED)
        if _makes_new(fn) and not any(k.arg == 'out' for k in value.keywords):
            return False
        parts = list(value.args) + [k.value for k in value.keywords] + \
            ([value.func.value] if isinstance(value.func, ast.Attribute) else [])
        return any(_may_hold(p, names) for p in parts) or \
            isinstance(value.func, ast.Lambda) or _reads_any(value.func, names)
    if isinstance(value, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                          ast.GeneratorExp)):
        return _reads_any(value, names)
    return any(_may_hold(child, names) for child in nodes.children(value)
               if isinstance(child, ast.expr))


def _makes_new(fn) -> bool:
    """A function whose value is new, holding nothing of its arguments: a ufunc, a NumPy
    reduction or product, a number of Python's."""
    try:
        if isinstance(fn, np.ufunc) or fn in _NEW_VALUES:
            return True
    except TypeError:
        return False
    return False


_NEW_VALUES = frozenset({np.mean, np.sum, np.prod, np.std, np.var, np.dot, np.matmul,
                         np.max, np.min, np.amax, np.amin, np.copy, np.stack, np.concatenate,
                         np.linalg.norm, np.outer, np.inner, np.trace, np.cumsum, np.cumprod,
                         len, float, int, abs, bool, round, isinstance, str, repr})
# (not `sum`: `sum(rows, [])` is a new list of the same items)


def _stored_names(target) -> set:
    return {n.id for n in nodes.walk_terms(target) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _writes_held(stmt, origin, derived) -> bool:
    """Whether `stmt` may write into what `origin` holds, `derived` the names that may hold
    it (grown here: what is bound to, or stored into, something reading them)."""
    if isinstance(stmt, ast.FunctionDef):
        return _reads_any(stmt, derived)
    if isinstance(stmt, ast.For) and _may_hold(stmt.iter, derived):
        derived |= _stored_names(stmt.target)
    if isinstance(stmt, ast.With):
        for item in stmt.items:
            if item.optional_vars is not None and _may_hold(item.context_expr, derived):
                derived |= _stored_names(item.optional_vars)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        for target in targets:
            root = _root(target)
            if isinstance(stmt, ast.AugAssign) and root in derived:
                return True             # `c += v`, `rows[0] += v`: in place, maybe
            if not isinstance(target, (ast.Name, ast.Tuple, ast.List)) and root in derived \
                    and not (isinstance(target, ast.Subscript) and
                             isinstance(target.value, ast.Name) and target.value.id == origin):
                return True             # a store into an item (`rows[0][1] = v`)
            if value is not None and _may_hold(value, derived):
                derived |= _stored_names(target) | ({root} - {None})
    if isinstance(stmt, ast.Delete) and any(
            _root(t) in derived and not isinstance(t, ast.Name) and
            not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and
                 t.value.id == origin) for t in stmt.targets):
        return True
    for part in _header(stmt):
        for n in nodes.walk_terms(part):
            if isinstance(n, ast.Lambda) and _reads_any(n, derived):
                return True
            if isinstance(n, ast.comprehension) and _may_hold(n.iter, derived):
                derived |= _stored_names(n.target)
            if isinstance(n, ast.NamedExpr) and _may_hold(n.value, derived):
                derived.add(n.target.id)
            if isinstance(n, ast.Call) and _call_writes_held(n, origin, derived):
                return True
    return False


def _call_writes_held(call, origin, derived) -> bool:
    func = call.func
    values = list(call.args) + [k.value for k in call.keywords]
    passed = any(_may_hold(v, derived) for v in values)
    if isinstance(func, ast.Attribute) and getanno(func, Key.RESOLVED) is None:
        receiver = _root(func.value)
        if receiver in derived and not (func.attr in registry.METHODS or
                                        func.attr in mutation.READING_METHODS):
            if not (isinstance(func.value, ast.Name) and func.value.id == origin):
                return True             # `rows[0].fill(v)`, `c.sort()`
        if passed:
            if func.attr in mutation.LIST_METHODS or func.attr in mutation.DICT_METHODS:
                derived.add(receiver)   # (`memo.append(rows[0])`: memo holds it now)
                return False
            return not (func.attr in registry.METHODS or func.attr in mutation.READING_METHODS)
        return False
    if not passed:
        return False
    fn = getanno(func, Key.RESOLVED)
    if fn is None:
        return True
    if any(k.arg == 'out' for k in call.keywords) or getattr(fn, 'nin', None) is not None \
            and len(call.args) > fn.nin:
        return True
    if mutation.mutator_of_function(fn) is not None:
        return True
    if fn is guards.attempt or fn is guards.attempt_within:
        return bool(_arguments_written(call) & derived)
    if registry.lookup(fn) is not None:
        return False
    if isinstance(fn, types.BuiltinFunctionType):
        return getattr(fn, '__module__', None) not in _PURE_MODULES or \
            fn.__name__ in ('setattr', 'delattr', 'exec', 'eval')
    if isinstance(fn, type):
        init = getattr(fn, '__init__', None)
        fn = init if isinstance(init, types.FunctionType) else None
        if fn is None:
            return False                # a builtin type's: list(...), tuple(...), dict(...)
    if isinstance(fn, types.FunctionType):
        positions = _written_parameters(fn, fn.__code__.co_argcount)
        return positions is None or bool(positions)
    return True


_PURE_MODULES = ('builtins', 'math', 'cmath')      # their functions write into no argument
