"""Desugar, assignment expressions (`:=`): each becomes an assignment statement, placed
where Python evaluates it, and the expression reads the name it bound.

    z = f(a) + (y := x * 2.0)      _w = f(a)          # evaluated before the walrus
                                   y = x * 2.0
                                   z = _w + y

What an expression evaluates before a walrus is computed before it too, into a name,
unless evaluating it later gives the same value (a constant, a name the walrus does not
bind, a lambda, a resolved module or function). Evaluation order and short-circuits are
kept: `a and (b := g(x))` is `_b = a; if _b: b = g(x); _b = b` (`or`, `x if c else y`
alike), a `while` whose test binds is `while True:` with the test first in its body
(`if not test: break`; loop `else` blocks are lowered before), and a list, set or dict
comprehension whose items bind is the loop it stands for, its own variables renamed (a
comprehension's `:=` binds in the function). Inside a lambda, a generator expression,
an assignment target, a chained comparison's later operands and the other places
listed in `_where`, one is refused, located. Runs in desugar after `match` statements
and loop `else` blocks are lowered, before anything else.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno

_HINT = 'assign the value on a line of its own before'


def lower_walrus(node, namer, source, refusal=None):
    """`node` (a function, its nested defs too) without assignment expressions.
    `refusal(named, where)`: the error where one cannot be placed (made by another
    lowering: `sugar.operators`); by default, about the `:=` the user wrote."""
    if not any(isinstance(n, ast.NamedExpr) for n in nodes.walk_terms(node)):
        return
    lowering = _Walrus(namer, source, refusal)
    node.body = lowering.block(node.body)


def _has(node) -> bool:
    return node is not None and any(isinstance(n, ast.NamedExpr) for n in nodes.walk_terms(node))


def _bound(stmts) -> set:
    return {n.id for stmt in stmts for n in nodes.walk_terms(stmt)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


class _Walrus:
    def __init__(self, namer, source, refusal=None):
        self.namer, self.source, self.refusal = namer, source, refusal

    def refuse(self, node, where, hint=_HINT):
        found = next(n for n in nodes.walk_terms(node) if isinstance(n, ast.NamedExpr))
        if self.refusal is not None:
            raise self.refusal(found, where)
        raise self.source.error(found, f'an assignment expression (:=) {where} is not '
                                       f'supported; {hint}')

    def temp(self, prelude, value, base='_w'):
        name = self.namer.new(base)
        prelude.append(nodes.assign(name, value))
        return nodes.name(name)

    # ------------------------------------------------------------------ statements

    def block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(nodes.located(self.statement(stmt), stmt))
        return out

    def statement(self, stmt):
        if isinstance(stmt, ast.FunctionDef):
            for part in stmt.decorator_list + stmt.args.defaults + \
                    [d for d in stmt.args.kw_defaults if d is not None]:
                if _has(part):
                    self.refuse(part, "in a nested def's decorators or defaults")
            stmt.body = self.block(stmt.body)
            return [stmt]
        if isinstance(stmt, ast.While):
            return self.while_(stmt)
        for field in ('body', 'orelse', 'finalbody'):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                setattr(stmt, field, self.block(inner))
        for handler in getattr(stmt, 'handlers', None) or ():
            if _has(handler.type):
                self.refuse(handler.type, 'in an except clause')
            handler.body = self.block(handler.body)
        if isinstance(stmt, ast.If):
            prelude, stmt.test = self.expr(stmt.test)
        elif isinstance(stmt, ast.For):
            prelude, stmt.iter = self.expr(stmt.iter)
        elif isinstance(stmt, (ast.Expr, ast.Return)) and stmt.value is not None:
            prelude, stmt.value = self.expr(stmt.value)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if _has(target):
                    self.refuse(target, 'in an assignment target')
            prelude, stmt.value = self.expr(stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            prelude, stmt.value = self.expr(stmt.value)
            if prelude and not (isinstance(stmt.target, ast.Name)
                                and stmt.target.id not in _bound(prelude)):
                self.refuse(stmt.value, 'in the value of an augmented assignment to '
                                        'a subscript, or to the name it binds,')
        elif isinstance(stmt, ast.Assert):
            if _has(stmt.msg):
                self.refuse(stmt.msg, "in an assert's message")
            prelude, stmt.test = self.expr(stmt.test)
        else:
            for part in nodes.own_nodes(stmt):
                if isinstance(part, ast.NamedExpr):
                    self.refuse(part, f'in a {type(stmt).__name__.lower()} statement')
            prelude = []
        return prelude + [stmt]

    def while_(self, stmt):
        stmt.body = self.block(stmt.body)
        prelude, test = self.expr(stmt.test)
        if not prelude:
            stmt.test = test
            return [stmt]
        assert not stmt.orelse, 'loop else blocks are lowered before'
        leave = nodes.if_(nodes.not_(test), [nodes.break_()])
        stmt.test = nodes.const(True)
        stmt.body = nodes.located(prelude + [leave], stmt) + stmt.body
        return [stmt]

    # ------------------------------------------------------------------ expressions

    def expr(self, e):
        """(statements, expression): running the statements, then evaluating the
        expression, is evaluating `e`; no `:=` is left in either (but in what
        `block` lowers again)."""
        if not _has(e):
            return [], e
        if isinstance(e, ast.NamedExpr):
            prelude, value = self.expr(e.value)
            return prelude + [nodes.assign(e.target.id, value)], nodes.name(e.target.id)
        if isinstance(e, ast.BoolOp):
            return self.bool_op(e)
        if isinstance(e, ast.IfExp):
            return self.if_exp(e)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp)):
            return self.comprehension(e)
        if isinstance(e, ast.Compare) and len(e.ops) > 1 and any(map(_has, e.comparators[1:])):
            self.refuse(e, "in a chained comparison's later operands (write the "
                           "comparisons joined by `and`)")
        slots = _slots(e)
        if slots is None:
            self.refuse(e, *_where(e))
        return self.ordered(e, slots)

    def ordered(self, e, slots):
        """Slots (holder, field, index) of children Python evaluates one after the other."""
        prelude, done = [], []
        for slot in slots:
            pre, new = self.expr(_get(slot))
            if pre:
                bound = _bound(pre)
                for k, (held, made) in enumerate(done):
                    if _stable(made, bound):
                        continue
                    if isinstance(made, ast.Starred):
                        self.refuse(_get(slot), 'after a starred argument')
                    done[k] = (held, self.temp(prelude, made))
                prelude += pre
            done.append((slot, new))
        for slot, made in done:
            _set(slot, made)
        return prelude, e

    def bool_op(self, e):
        first_pre, first = self.expr(e.values[0])
        if not any(map(_has, e.values[1:])):
            e.values[0] = first
            return first_pre, e
        result = self.namer.new('_either')
        prelude = first_pre + [nodes.assign(result, first)]
        nested = prelude
        for value in e.values[1:]:
            pre, made = self.expr(value)
            go_on = nodes.name(result) if isinstance(e.op, ast.And) \
                else nodes.not_(nodes.name(result))
            branch = nodes.if_(go_on, pre + [nodes.assign(result, made)])
            nested.append(branch)
            nested = branch.body
        return prelude, nodes.name(result)

    def if_exp(self, e):
        prelude, test = self.expr(e.test)
        if not (_has(e.body) or _has(e.orelse)):
            e.test = test
            return prelude, e
        result = self.namer.new('_chosen')
        body_pre, body = self.expr(e.body)
        else_pre, orelse = self.expr(e.orelse)
        prelude.append(nodes.if_(test, body_pre + [nodes.assign(result, body)],
                                 else_pre + [nodes.assign(result, orelse)]))
        return prelude, nodes.name(result)

    def comprehension(self, e):
        renames = {}
        for gen in e.generators:
            if gen.is_async:
                self.refuse(e, 'in an async comprehension')
            for n in nodes.walk_terms(gen.target):
                if isinstance(n, ast.Name):
                    renames.setdefault(n.id, self.namer.new(f'_{n.id}'))
        e = nodes.clone(e)
        _Renamed(renames).own(e, outer=None)
        result = self.namer.new('_items')
        if isinstance(e, ast.ListComp):
            start, add = nodes.list_(), [nodes.expr_stmt(nodes.call(
                nodes.attribute(result, 'append'), e.elt))]
        elif isinstance(e, ast.SetComp):
            start = nodes.call(nodes.builtin('set'))
            add = [nodes.expr_stmt(nodes.call(nodes.attribute(result, 'add'), e.elt))]
        else:
            key = self.namer.new('_key')
            start = nodes.dict_([], [])
            add = [nodes.assign(key, e.key),
                   nodes.assign(nodes.subscript(result, key, store=True), e.value)]
        body = add
        for gen in reversed(e.generators):
            for test in reversed(gen.ifs):
                body = [nodes.if_(test, body)]
            body = [nodes.for_(gen.target, gen.iter, body)]
        return self.block([nodes.assign(result, start)] + body), nodes.name(result)


def _get(slot):
    holder, field, index = slot
    value = getattr(holder, field)
    return value if index is None else value[index]


def _set(slot, value):
    holder, field, index = slot
    if index is None:
        setattr(holder, field, value)
    else:
        getattr(holder, field)[index] = value


def _stable(e, bound) -> bool:
    """Whether evaluating `e` after statements that bind `bound` gives what it gave before."""
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, ast.Lambda):         # made later, the same (but its defaults)
        return not e.args.defaults and not any(e.args.kw_defaults)
    if isinstance(e, ast.Name):
        return e.id not in bound
    return getanno(e, Key.RESOLVED) is not None


def _slots(e):
    """The children of `e` in the order Python evaluates them, each (holder, field, index),
    or None where `e` is not one whose children are simply evaluated in order."""
    if isinstance(e, ast.BinOp):
        return [(e, 'left', None), (e, 'right', None)]
    if isinstance(e, ast.UnaryOp):
        return [(e, 'operand', None)]
    if isinstance(e, ast.Compare):
        return [(e, 'left', None)] + [(e, 'comparators', k) for k in range(len(e.comparators))]
    if isinstance(e, ast.Call):
        func = e.func
        head = [(func, 'value', None)] if isinstance(func, ast.Attribute) and \
            getanno(func, Key.RESOLVED) is None else [(e, 'func', None)]
        return head + [(e, 'args', k) for k in range(len(e.args))] + \
            [(kw, 'value', None) for kw in e.keywords]
    if isinstance(e, (ast.Attribute, ast.Starred)):
        return [(e, 'value', None)]
    if isinstance(e, ast.Subscript):
        return [(e, 'value', None), (e, 'slice', None)]
    if isinstance(e, ast.Slice):
        return [(e, f, None) for f in ('lower', 'upper', 'step') if getattr(e, f) is not None]
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return [(e, 'elts', k) for k in range(len(e.elts))]
    if isinstance(e, ast.Dict):
        return [slot for k in range(len(e.keys)) for slot in
                ([(e, 'keys', k)] if e.keys[k] is not None else []) + [(e, 'values', k)]]
    return None


def _where(e):
    """(where, what to write instead) for a `:=` inside `e`, which `_slots` does not know."""
    if isinstance(e, ast.Lambda):
        return 'inside a lambda', 'write a nested def that assigns the value'
    if isinstance(e, ast.GeneratorExp):
        return 'inside a generator expression', 'write a list comprehension'
    return f'inside {type(e).__name__}', _HINT


class _Renamed(nodes.Transformer):
    """A comprehension's own variables renamed, where they are its own: not in its first
    iterable (evaluated outside it), nor where a nested lambda or comprehension binds
    the same name again."""

    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        made = self.renames.get(node.id)
        if made is not None:
            node.id = made
        return node

    def own(self, node, outer):
        """`node`'s parts, `outer` renaming its first iterable (None: left alone)."""
        first = node.generators[0]
        if outer is not None:
            first.iter = outer.visit(first.iter)
        for k, gen in enumerate(node.generators):
            if k:
                gen.iter = self.visit(gen.iter)
            gen.target = self.visit(gen.target)
            gen.ifs = [self.visit(test) for test in gen.ifs]
        for field in ('elt', 'key', 'value'):
            if hasattr(node, field):
                setattr(node, field, self.visit(getattr(node, field)))
        return node

    def visit_ListComp(self, node):
        names = {n.id for gen in node.generators for n in nodes.walk_terms(gen.target)
                 if isinstance(n, ast.Name)}
        inner = _Renamed({k: v for k, v in self.renames.items() if k not in names})
        return inner.own(node, outer=self)

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Lambda(self, node):
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        params = {a.id for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        node.body = _Renamed({k: v for k, v in self.renames.items()
                              if k not in params}).visit(node.body)
        return node
