"""Desugar, generator functions: read whole, a generator is the list of what it yields.

`def gen(xs): for x in xs: yield f(x)` compiles as `def gen(xs): _yielded = []; for x in
xs: _yielded.append(f(x)); return _yielded`: the same calls, in the same order, their
values read into a list. That is what a loop consuming the generator (`for w in gen(xs)`),
`list(gen(...))` or `sum(gen(...))` reads, where the consumer does not change what the
generator reads between its items (it runs first, whole, here). `yield from it` appends
what `it` gives. A `yield` whose value is read (`x = yield v`: `send`) and a generator's
`return v` are refused. Runs first among desugar's rewrites (the function's own body; a
nested generator is compiled as its own function).
"""
from __future__ import annotations

import inspect

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.parse import parse_function


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
