"""A-normal form: one operation per statement.

Runs after `desugar`. Guarantees on its output, which the analyses and the
reverse transform rely on:

- an assignment has one target, a name or `name[index]`, and its value is an
  *atom* (a name, a constant, a resolved reference such as `np.pi`) or one
  operation whose operands are atoms: a binary or unary operator, a single
  comparison, a call, an attribute, a subscript (indices are atoms, slices of
  atoms, or tuples of those), a tuple or list display;
- tuple targets are unpacked element by element;
- the tests of `if` and `while`, the iterable of `for`, the value of `return`
  and the arguments of expression statements are atoms (`range(...)` keeps its
  call, with atom arguments);
- conditional expressions, `and`/`or` whose operands need statements, chained
  comparisons and list comprehensions (and generator expressions, which become
  lists) are statements;
- every new statement carries the user location of the expression it came from.
"""
from __future__ import annotations

import builtins
import copy

from tapeflow.syntax import ast

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, copyanno, getanno, hasanno
from tapeflow.syntax.naming import Namer
from tapeflow.transforms import fold
from tapeflow.transforms.anf_comprehensions import Comprehensions

_OP_NAMES = {ast.Add: 'add', ast.Sub: 'sub', ast.Mult: 'mul', ast.Div: 'div',
             ast.Pow: 'pow', ast.MatMult: 'matmul', ast.FloorDiv: 'floordiv',
             ast.Mod: 'mod', ast.USub: 'neg', ast.UAdd: 'pos', ast.Not: 'not',
             ast.Invert: 'inv'}


def transform(node: ast.FunctionDef, namer: Namer) -> ast.FunctionDef:
    node.body = _ANF(namer).block(node.body)
    return node


def is_atom(node) -> bool:
    """A name, a constant (a tuple of constants too: `(32, 128)`), a resolved reference."""
    return isinstance(node, (ast.Name, ast.Constant)) or (
        isinstance(node, ast.Attribute) and hasanno(node, Key.RESOLVED)) or (
        isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts))


class _ANF(Comprehensions):
    def __init__(self, namer: Namer):
        self.namer = namer
        self.testing = False

    # ---------------------------------------------------------------- statements

    def block(self, stmts):
        out = []
        for stmt in stmts:
            new = self.statement(stmt)
            for s in new:
                if getanno(s, Key.ORIGIN) is None:
                    nodes.located(s, stmt)
            out.extend(new)
        return out or [nodes.pass_()]

    def statement(self, stmt):
        method = getattr(self, 'stmt_' + type(stmt).__name__, None)
        if method is None:
            return [stmt]            # pass, break (loop exit), nested def, assert...
        return method(stmt)

    def stmt_Assign(self, stmt):
        pre = []
        if len(stmt.targets) > 1:                   # a = b = expr
            value = self.atom(stmt.value, pre, 'value')
            for target in stmt.targets:
                pre.extend(self.assign_to(target, value))
            return pre
        target = stmt.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)):
            value = self.atom(stmt.value, pre, 'tuple')
            return pre + self.assign_to(target, value)
        if isinstance(target, ast.Subscript):
            index = self.index(target.slice, pre)
            base = self.atom(target.value, pre, 'base')
            value = self.atom(stmt.value, pre, 'value')
            return pre + [nodes.assign(nodes.subscript(base, index, store=True), value)]
        # A value that reads its target is computed into a new name: written in place
        # (a comprehension's list, a chained comparison) it would clobber what it reads.
        reads_target = any(isinstance(n, ast.Name) and n.id == target.id
                           for n in nodes.walk(stmt.value))
        value = self.operation(stmt.value, pre, None if reads_target else target.id)
        if isinstance(value, ast.Name) and value.id == target.id and pre:
            return pre                              # the statements assigned it already
        return pre + [copyanno(stmt, nodes.assign(target.id, value), Key.IN_PLACE)]

    def assign_to(self, target, atom):
        if isinstance(target, ast.Name):
            return [nodes.assign(target.id, atom)]
        if isinstance(target, (ast.Tuple, ast.List)):
            out = []
            for k, elt in enumerate(target.elts):
                if isinstance(elt, ast.Name):
                    out.append(nodes.assign(elt.id, nodes.subscript(atom, nodes.const(k))))
                else:
                    tmp = self.namer.new('_item')
                    out.append(nodes.assign(tmp, nodes.subscript(atom, nodes.const(k))))
                    out.extend(self.assign_to(elt, nodes.name(tmp)))
            return out
        pre = []
        index = self.index(target.slice, pre)
        base = self.atom(target.value, pre, 'base')
        return pre + [nodes.assign(nodes.subscript(base, index, store=True), atom)]

    def stmt_Expr(self, stmt):
        pre = []
        value = stmt.value
        if isinstance(value, ast.Constant):         # a docstring
            return []
        if isinstance(value, ast.Call):
            return pre + [nodes.expr_stmt(self.call(value, pre))]
        self.atom(value, pre, 'unused')
        return pre

    def stmt_Return(self, stmt):
        pre = []
        if stmt.value is None:
            return [stmt]
        if isinstance(stmt.value, ast.Tuple):
            elts = [self.atom(e, pre, 'out') for e in stmt.value.elts]
            return pre + [nodes.return_(nodes.tuple_(*elts))]
        return pre + [nodes.return_(self.atom(stmt.value, pre, 'out'))]

    def test(self, expr, pre):
        """The atom of a condition: only its truth is read, so `a and b` may stay an expression."""
        outer, self.testing = self.testing, True
        try:
            return self.atom(expr, pre, 'cond')
        finally:
            self.testing = outer

    def stmt_If(self, stmt):
        pre = []
        test = self.test(stmt.test, pre)
        stmt.test = test
        stmt.body = self.block(stmt.body)
        stmt.orelse = self.block(stmt.orelse) if stmt.orelse else []
        return pre + [stmt]

    def stmt_While(self, stmt):
        if is_atom(stmt.test):
            stmt.body = self.block(stmt.body)
            return [stmt]
        # The test's statements run before the loop and again after each body.
        cond = self.namer.new('_cond')
        original = copy.deepcopy(stmt.test)
        pre, again = [], []
        outer, self.testing = self.testing, True
        try:
            self.assign_operation(cond, stmt.test, pre)
            self.assign_operation(cond, original, again)
        finally:
            self.testing = outer
        stmt.test = nodes.name(cond)
        body = self.block(stmt.body)
        exit_stmt = body.pop() if body and getanno(body[-1], Key.LOOP_EXIT) else None
        stmt.body = body + again + ([exit_stmt] if exit_stmt else [])
        return pre + [stmt]

    def assign_operation(self, name, expr, pre):
        value = self.operation(expr, pre, name)
        if not (isinstance(value, ast.Name) and value.id == name):
            pre.append(nodes.located(nodes.assign(name, value), expr))

    def stmt_For(self, stmt):
        pre = []
        iterable = stmt.iter
        if isinstance(iterable, ast.Call) and getanno(iterable.func, Key.RESOLVED) is builtins.range:
            iterable.args = [a if _is_len_of_atom(a) else self.atom(a, pre, 'n') for a in iterable.args]
        else:
            iterable = self.atom(iterable, pre, 'iterable')
        stmt.iter = iterable
        stmt.body = self.block(stmt.body)
        return pre + [stmt]

    def stmt_Assert(self, stmt):
        return [stmt]

    # ---------------------------------------------------------------- expressions

    def atom(self, expr, pre, hint):
        """An atom holding the value of `expr`; its statements go to `pre`."""
        expr = _folded(expr)
        if is_atom(expr):
            return expr
        value = self.folded_operation(expr, pre, None)
        if is_atom(value):
            return value
        tmp = self.namer.new(_temp_name(expr, hint))
        stmt = nodes.assign(tmp, value)
        nodes.located(stmt, expr)
        pre.append(stmt)
        return nodes.name(tmp)

    def operation(self, expr, pre, target):
        """`expr` as one operation on atoms (or an atom)."""
        return self.folded_operation(_folded(expr), pre, target)

    def folded_operation(self, expr, pre, target):
        """`operation` of an `expr` folded already (a second fold finds nothing)."""
        if is_atom(expr):
            return expr
        kind = type(expr).__name__
        method = getattr(self, 'expr_' + kind, None)
        if method is None:
            return expr                              # opaque: f-strings and the like
        return method(expr, pre, target)

    def expr_BinOp(self, e, pre, target):
        return nodes.copy_location(nodes.binop(self.atom(e.left, pre, 'x'), e.op,
                                               self.atom(e.right, pre, 'y')), e)

    def expr_UnaryOp(self, e, pre, target):
        return nodes.copy_location(nodes.unary(e.op, self.atom(e.operand, pre, 'x')), e)

    def expr_Compare(self, e, pre, target):
        left = self.atom(e.left, pre, 'x')
        if len(e.ops) == 1:
            return nodes.compare(left, e.ops[0], self.atom(e.comparators[0], pre, 'y'))
        # a < b < c: b is evaluated once; c only when a < b.
        result = nodes.name(target) if target else nodes.name(self.namer.new('_cmp'))
        cur = left
        guard_body = pre
        for k, (op, right) in enumerate(zip(e.ops, e.comparators)):
            inner = []
            right_atom = self.atom(right, inner, 'y')
            inner.append(nodes.assign(result.id, nodes.compare(cur, op, right_atom)))
            guard_body.extend(inner)
            if k < len(e.ops) - 1:
                nxt = nodes.if_(result.id, [])
                nxt.body = []
                guard_body.append(nxt)
                guard_body = nxt.body
            cur = right_atom
        _fill_empty(pre)
        return nodes.name(result.id)

    def expr_BoolOp(self, e, pre, target):
        # `a or b` is the value of `a` or of `b`: where it is used as a value (not a
        # condition), the one Python returns must carry its derivative, so it becomes
        # statements unless every operand is a truth value already.
        if all(_is_simple_test(v, value=not self.testing) for v in e.values):
            return e
        # Operands that need statements keep their short circuit.
        result = target or self.namer.new('_and' if isinstance(e.op, ast.And) else '_or')
        first = self.atom(e.values[0], pre, 'x')
        pre.append(nodes.assign(result, first))
        block = pre
        for value in e.values[1:]:
            test = nodes.name(result) if isinstance(e.op, ast.And) else \
                nodes.not_(nodes.name(result))
            if isinstance(test, ast.UnaryOp):
                neg = self.namer.new('_not')
                block.append(nodes.assign(neg, test))
                test = nodes.name(neg)
            branch = nodes.if_(test, [])
            branch.body = []
            block.append(branch)
            block = branch.body
            atom = self.atom(value, block, 'x')
            block.append(nodes.assign(result, atom))
        return nodes.name(result)

    def expr_IfExp(self, e, pre, target):
        result = target or self.namer.new('_ifexp')
        test = self.test(e.test, pre)
        body, orelse = [], []
        body.append(nodes.assign(result, self.operation(e.body, body, result)))
        orelse.append(nodes.assign(result, self.operation(e.orelse, orelse, result)))
        pre.append(nodes.located(nodes.if_(test, body, orelse), e))
        return nodes.name(result)

    def expr_Call(self, e, pre, target):
        return self.call(e, pre)

    def call(self, e, pre):
        func = e.func
        if isinstance(func, ast.Attribute) and not hasanno(func, Key.RESOLVED):
            func = nodes.attribute(self.atom(func.value, pre, 'obj'), func.attr)
        elif not is_atom(func):
            func = self.atom(func, pre, 'fn')
        if len(e.args) == 1 and isinstance(e.args[0], ast.GeneratorExp):
            e.args = [nodes.list_comp(e.args[0].elt, e.args[0].generators)]
        if any(isinstance(a, ast.Starred) for a in e.args):
            first = next(k for k, a in enumerate(e.args) if isinstance(a, ast.Starred))
            args = [self.atom(a, pre, 'arg') for a in e.args[:first]] + \
                [nodes.starred(self.star_arguments(e.args[first:], pre))]
        else:
            args = [self.atom(a, pre, 'arg') for a in e.args]
        keywords = [nodes.keyword(k.arg, self.atom(k.value, pre, k.arg or 'kw')) for k in e.keywords]
        return nodes.copy_location(nodes.call(func, *args, keywords=keywords), e)

    def star_arguments(self, args, pre):
        """`f(a, *s, b)`: the one tuple of its positional arguments from the first spread one
        on, `tuple(s) + (b,)` (one operation a statement), which the call spreads:
        `f(a, *_args)`."""
        parts, plain = [], []
        for a in args:
            if isinstance(a, ast.Starred):
                if plain:
                    parts.append(self.atom(nodes.tuple_(*plain), pre, 'args'))
                    plain = []
                made = nodes.call(nodes.builtin('tuple'), a.value)
                parts.append(self.atom(nodes.copy_location(made, a), pre, 'args'))
            else:
                plain.append(a)
        if plain:
            parts.append(self.atom(nodes.tuple_(*plain), pre, 'args'))
        whole = parts[0]
        for part in parts[1:]:
            whole = self.atom(nodes.binop(whole, ast.Add(), part), pre, 'args')
        return whole

    def expr_Attribute(self, e, pre, target):
        return nodes.copy_location(nodes.attribute(self.atom(e.value, pre, 'obj'), e.attr), e)

    def expr_Subscript(self, e, pre, target):
        index = self.index(e.slice, pre)
        return nodes.copy_location(nodes.subscript(self.atom(e.value, pre, 'seq'), index), e)

    def index(self, index, pre):
        if isinstance(index, ast.Slice):
            return nodes.slice_(*(None if part is None else self.atom(part, pre, 'bound')
                                  for part in (index.lower, index.upper, index.step)))
        if isinstance(index, ast.Tuple):
            return nodes.tuple_(*[self.index(i, pre) for i in index.elts])
        return self.atom(index, pre, 'index')

    def expr_Tuple(self, e, pre, target):
        return nodes.tuple_(*[self.atom(x, pre, 'elt') for x in e.elts])

    def expr_List(self, e, pre, target):
        return nodes.list_(*[self.atom(x, pre, 'elt') for x in e.elts])

def _folded(expr):
    """`-1` (a negated number literal) and `2 - 1` (arithmetic on literals) as the
    constants they are (`transforms.fold`)."""
    if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        expr = fold.expression(expr)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)) \
            and isinstance(expr.operand, ast.Constant) \
            and type(expr.operand.value) in (int, float, complex):
        value = expr.operand.value
        return nodes.copy_location(nodes.const(-value if isinstance(expr.op, ast.USub)
                                               else value), expr)
    return expr


def _temp_name(expr, hint):
    if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        return '_' + _OP_NAMES.get(type(expr.op), hint)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute):
            return '_' + func.attr
        if isinstance(func, ast.Name):
            return '_' + func.id
    if isinstance(expr, ast.Subscript):
        return '_item'
    if isinstance(expr, ast.Attribute):
        return '_' + expr.attr
    if isinstance(expr, ast.Compare):
        return '_cond'
    return '_' + hint


def _is_len_of_atom(expr) -> bool:
    """`len(xs)` in `range(len(xs))` stays: it reads well and is never differentiated."""
    return isinstance(expr, ast.Call) and getanno(expr.func, Key.RESOLVED) is builtins.len \
        and len(expr.args) == 1 and is_atom(expr.args[0]) and not expr.keywords


def _is_simple_test(expr, value=False) -> bool:
    """An operand of `and`/`or` cheap and safe to evaluate eagerly. With `value` (the
    result is used, not only its truth), one that is a bool already: a comparison,
    `not`, a constant -- otherwise the operand Python returns must carry its derivative."""
    if is_atom(expr):
        return not value or isinstance(expr, ast.Constant) and (
            isinstance(expr.value, bool) or expr.value is None)
    if isinstance(expr, ast.Compare):
        return is_atom(expr.left) and all(is_atom(c) for c in expr.comparators)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return _is_simple_test(expr.operand)
    if isinstance(expr, ast.BoolOp):
        return all(_is_simple_test(v, value) for v in expr.values)
    return False


def _fill_empty(stmts):
    for s in stmts:
        if isinstance(s, ast.If) and not s.body:
            s.body = [nodes.pass_()]


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`)."""
    return transform(tree, ctx.namer)
