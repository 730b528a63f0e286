"""Desugar, the `operator` module's writes: `operator.setitem(a, k, v)` is `a[k] = v`,
`operator.delitem(a, k)` is `del a[k]`, and `r = operator.iadd(a, b)` is `_r = a; _r += b;
r = _r` (`a`'s object written where it is mutable, a new value where it is not, `a` itself
never bound again: Python's semantics of `operator.iadd`). The writes are then followed
like any written in place (`transforms.mutation`). Written anywhere else (inside an
expression, passed as a value: `reduce(operator.iadd, ...)`), one is refused, located.
Runs after `syntax.resolve`, before augmented assignments are lowered.
"""
from __future__ import annotations

import operator

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.sugar.walrus import lower_walrus

_IN_PLACE = {operator.iadd: ast.Add, operator.isub: ast.Sub, operator.imul: ast.Mult,
             operator.itruediv: ast.Div, operator.ifloordiv: ast.FloorDiv,
             operator.imod: ast.Mod, operator.ipow: ast.Pow, operator.imatmul: ast.MatMult,
             operator.iand: ast.BitAnd, operator.ior: ast.BitOr, operator.ixor: ast.BitXor,
             operator.ilshift: ast.LShift, operator.irshift: ast.RShift,
             operator.iconcat: ast.Add}
_WRITES = {operator.setitem: 3, operator.delitem: 2, **{fn: 2 for fn in _IN_PLACE}}


def lower_operator_writes(node, namer, source):
    """`node` with its statements that call `operator`'s writers written as the statements
    they are; any other use of one refused."""
    if not any(_writer(n) is not None for n in nodes.walk_terms(node)
               if isinstance(n, (ast.Name, ast.Attribute))):
        return
    _placed(node, namer, source)
    lowered = set()
    _block(node.body, namer, source, lowered)
    for n in nodes.walk_terms(node):
        fn = _writer(n) if isinstance(n, (ast.Name, ast.Attribute)) else None
        if fn is not None and id(n) not in lowered:
            raise source.error(n, f'operator.{fn.__name__}() writes into its first argument; '
                                  f'call it as a statement of its own (operator.'
                                  f'{fn.__name__}(a, ...) or r = operator.{fn.__name__}'
                                  f'(a, ...)) or write the statement it stands for')


def _placed(node, namer, source):
    """Each call of a writer inside a larger expression (`s = operator.iadd(y, v)[0] * 2`)
    made a statement of its own where Python evaluates it, what the expression evaluates
    before it computed before it (`sugar.walrus`: the call is `(_r := operator.iadd(y, v))`
    there): `_r = operator.iadd(y, v); s = _r[0] * 2`."""
    whole = {id(stmt.value) for stmt in nodes.walk_terms(node)
             if isinstance(stmt, ast.Expr) or isinstance(stmt, ast.Assign)
             and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)}
    inner = [n for n in nodes.walk_terms(node) if isinstance(n, ast.Call) and id(n) not in whole
             and _statement_call(n) is not None]
    if not inner:
        return
    ids = {id(n): n for n in inner}
    for parent in nodes.walk_terms(node):
        for field, value in ast.iter_fields(parent):
            items = value if isinstance(value, list) else [value]
            for k, item in enumerate(items):
                if id(item) not in ids:
                    continue
                named = nodes.copy_location(ast.NamedExpr(
                    target=nodes.name(namer.new('_inplace'), store=True), value=item), item)
                if isinstance(value, list):
                    value[k] = named
                else:
                    setattr(parent, field, named)

    def refusal(named, where):
        fn = _writer(named.value.func)
        return source.error(named.value, f'operator.{fn.__name__}() writes into its first '
                                         f'argument, and is called {where} here, where its '
                                         f'write has no place of its own; call it on a line '
                                         f'of its own before')
    lower_walrus(node, namer, source, refusal)


def _statement_call(call):
    """The writer `call` calls as its statement would (`_statement`), or None."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    fn = _writer(call.func)
    return fn if fn is not None and len(call.args) == _WRITES[fn] else None


def _writer(node):
    fn = getanno(node, Key.RESOLVED)
    try:
        return fn if fn in _WRITES else None
    except TypeError:                   # (an unhashable value)
        return None


def _block(stmts, namer, source, lowered):
    at = 0
    while at < len(stmts):
        stmt = stmts[at]
        for field in ('body', 'orelse', 'finalbody'):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _block(inner, namer, source, lowered)
        for handler in getattr(stmt, 'handlers', None) or ():
            _block(handler.body, namer, source, lowered)
        made = _statement(stmt, namer)
        if made is None:
            at += 1
            continue
        lowered.add(id(stmt.value.func))
        stmts[at:at + 1] = nodes.located(made, stmt)
        at += len(made)


def _statement(stmt, namer):
    """The statements `stmt` stands for, where it is `operator.w(...)` or `r = operator.w(...)`."""
    if isinstance(stmt, ast.Expr):
        target = None
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name):
        target = stmt.targets[0].id
    else:
        return None
    call = stmt.value
    if not isinstance(call, ast.Call) or call.keywords or \
            any(isinstance(a, ast.Starred) for a in call.args):
        return None
    fn = _writer(call.func)
    if fn is None or len(call.args) != _WRITES[fn]:
        return None
    if fn is operator.setitem:
        obj, key, value = call.args
        made = [nodes.assign(nodes.subscript(obj, key, store=True), value)]
        result = nodes.const(None)
    elif fn is operator.delitem:
        obj, key = call.args
        made = [ast.Delete(targets=[nodes.subscript(obj, key, store=True)])]
        made[0].targets[0].ctx = ast.Del()
        result = nodes.const(None)
    else:
        obj, value = call.args
        held = namer.new('_inplace')
        made = [nodes.assign(held, obj),
                ast.AugAssign(target=nodes.name(held, store=True), op=_IN_PLACE[fn](),
                              value=value)]
        result = nodes.name(held)
    if target is not None:
        made.append(nodes.assign(target, result))
    return made
