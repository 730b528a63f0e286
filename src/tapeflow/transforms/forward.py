"""The forward (tangent) transformation: each active statement gets its tangent.

Runs on ANF with activity known, like `reverse`. Beside every statement that
assigns an active variable `y` it emits the statement computing `dy` (the
tangent of `y`) from the JVP rules of the operation, through the same control
flow; no tape is needed, tangents flow forward with the primal. Statements:

- `y = op(a, b)`: `dy = jvp_a(da, y, a, b) + jvp_b(db, y, a, b)`, computed
  after the primal (rules may read `y`), or, when `y` is also an operand,
  from a temporary holding the new value;
- an active variable assigned something inactive gets `dy = 0.0` (the
  symbolic zero);
- `y[i] = v` and `ys.append(v)` update the tangent by structure, without
  mutating a tangent another variable may share;
- a call to a user function calls its compiled jvp.

Guarantees: the function returns `(value, tangent of the value)`.
"""
from __future__ import annotations

import gast

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.syntax.naming import AdjointNames
from tapeflow.transforms.tape_ops import tape_ops as _tape_ops
from tapeflow.transforms.operations import (index_value, operation_of, rule_label, rules_for,
                                            user_function)
from tapeflow.transforms.reverse import _container_names, _names, _target_name


class ForwardContext:
    def __init__(self, source, namer, emitter, active, compile_callee, shapes=None):
        self.source = source
        self.namer = namer
        self.emitter = emitter
        self.active = active
        self.compile_callee = compile_callee
        self.tangents = AdjointNames(namer, 'd')
        self.shapes = shapes or {}
        self.containers = set()


def transform(node: gast.FunctionDef, ctx: ForwardContext):
    """(body with tangents, the returned value, the returned tangent expression).

    Generated code (a gradient being differentiated again) pushes and pops its
    tape: an active value pushed is followed by its tangent, popped in the
    opposite order, so tangents travel on the same tape as their values.
    """
    ctx.tape_ops = _tape_ops(node)
    ctx.containers = _container_names(node.body)
    body = node.body
    ret = body[-1] if body and isinstance(body[-1], gast.Return) else None
    if ret is not None:
        body = body[:-1]
    output = ret.value if ret is not None and ret.value is not None else nodes.const(None)
    out = _Forward(ctx).block(body)
    return out, output, _tangent_of(output, ctx)


def _tangent_of(atom, ctx):
    if isinstance(atom, gast.Name):
        return nodes.name(ctx.tangents[atom.id]) if atom.id in ctx.active else nodes.const(0.0)
    if isinstance(atom, gast.Tuple):
        return nodes.tuple_(*[_tangent_of(e, ctx) for e in atom.elts])
    return nodes.const(0.0)


def mark(stmt):
    """Tangent statements are the optimizer's to remove; primal ones never are."""
    setanno(stmt, Key.SYNTHETIC, 'tangent')
    return stmt


class _Forward:
    def __init__(self, ctx: ForwardContext):
        self.ctx = ctx
        self.d = ctx.tangents

    def error(self, node, reason):
        return self.ctx.source.error(node, reason)

    def is_active(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.ctx.active

    def tangent(self, node):
        return nodes.name(self.d[node.id]) if self.is_active(node) else nodes.const(0.0)

    # ---------------------------------------------------------------- blocks

    def block(self, stmts):
        out = []
        for stmt in stmts:
            new = self.statement(stmt)
            nodes.located(new, stmt)
            out.extend(new)
        return out or [nodes.pass_()]

    def statement(self, stmt):
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                return self.setitem(stmt, target)
            return self.assign(stmt, target.id, stmt.value)
        if isinstance(stmt, gast.If):
            stmt.body = self.block(stmt.body)
            stmt.orelse = self.block(stmt.orelse) if stmt.orelse else []
            return [stmt]
        if isinstance(stmt, (gast.For, gast.While)):
            stmt.body = self.block(stmt.body)
            if isinstance(stmt, gast.For) and self.is_active(stmt.target):
                # a loop counter popped from a tape in generated code: no tangent
                stmt.body.insert(0, mark(nodes.assign(self.d[stmt.target.id], 0.0)))
            return [stmt]
        if isinstance(stmt, gast.Expr):
            return self.expr(stmt)
        if isinstance(stmt, gast.Return):
            raise self.error(stmt, 'return is only supported as the last statement here')
        return [stmt]

    # ---------------------------------------------------------------- assignment

    def _tape_op(self, call):
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name):
            return getattr(self.ctx, 'tape_ops', {}).get(call.func.id)
        return None

    def assign(self, stmt, y, value):
        if y not in self.ctx.active:
            if self._tape_op(value) == 'pop':
                return [nodes.expr_stmt(nodes.call(value.func.id)), stmt]   # its tangent
            return [stmt]
        dy = self.d[y]
        if self._tape_op(value) == 'pop':
            # not `mark`ed: a pop is never dead code, it keeps the tape in step
            return [nodes.assign(dy, nodes.call(value.func.id)), stmt]
        if isinstance(value, gast.Call) and self._user_function(value) is not None:
            return self.user_call(stmt, y, value)
        self_update = y in _names(value)
        ans = self.ctx.namer.new('_' + y) if self_update else y
        terms = self.terms(stmt, ans, value)
        # A zero of the value's shape: a scalar 0.0 would not survive `@` and friends.
        if terms:
            structural = y in self.ctx.containers or _calls(value, 'add_adjoint')
            tangent = _sum(terms, structural)
        elif isinstance(value, gast.Constant):
            tangent = nodes.const(0.0)
        else:
            tangent = nodes.call('zero_tangent', ans)
        if self_update:
            return [nodes.assign(ans, value), mark(nodes.assign(dy, tangent)), nodes.assign(y, ans)]
        return [stmt, mark(nodes.assign(dy, tangent))]

    def terms(self, stmt, ans, value):
        """Tangent contributions of the active operands of `value`."""
        op = operation_of(value, lambda reason: self.error(stmt, reason))
        if op.kind == 'none':
            return []
        if op.kind == 'copy':
            return [self.tangent(op.args[0])] if self.is_active(op.args[0]) else []
        if op.kind == 'pack':
            if not any(self.is_active(e) for e in op.args):
                return []
            tangents = [self.tangent(e) for e in op.args]
            if isinstance(value, gast.Dict):
                return [gast.Dict(keys=[nodes.const(k) for k, _ in op.keywords], values=tangents)]
            make = nodes.tuple_ if isinstance(value, gast.Tuple) else nodes.list_
            return [make(*tangents)]
        return self.primitive(stmt, ans, op)

    def primitive(self, stmt, ans, op):
        target_shape = self.ctx.shapes.get(_target_name(stmt))
        rules = rules_for(op, self.is_active, 'jvp', lambda reason: self.error(stmt, reason))
        # `broadcast_tangent(t, ans)` does nothing when the moving operand has ans's shape
        same = target_shape is not None and all(
            isinstance(op.args[i], gast.Name) and self.ctx.shapes.get(op.args[i].id) == target_shape
            for i, _, _ in rules)
        return [self.ctx.emitter.emit(rule, self.tangent(op.args[i]), nodes.name(ans), op.args,
                                      op.keywords, same_shapes=same, label=rule_label(entry, i, 'jvp'))
                for i, rule, entry in rules]

    # ---------------------------------------------------------------- user calls

    def _user_function(self, call):
        return user_function(call)

    def user_call(self, stmt, y, call):
        fn = self._user_function(call)
        active = [i for i, a in enumerate(call.args) if self.is_active(a)]
        for k in call.keywords:
            if self.is_active(k.value):
                raise self.error(stmt, f'differentiating {fn.__name__}() with respect to the keyword '
                                       f'argument {k.arg!r} is not supported; pass it by position')
        carries_tape = any(isinstance(a, gast.Name) and a.id.startswith('_tape') for a in call.args)
        if not active and not carries_tape:
            return [stmt, mark(nodes.assign(self.d[y], 0.0))]
        jvp_name = self.ctx.compile_callee(fn, tuple(active), stmt)
        tangents = [self.tangent(call.args[i]) for i in active]
        result = self.ctx.namer.new('_' + fn.__name__)
        # The tangents follow every parameter: spell out keywords and defaults.
        jvp_call = gast.Call(func=nodes.name(jvp_name),
                             args=self._all_arguments(fn, call, stmt) + tangents, keywords=[])
        return [nodes.assign(result, jvp_call),
                nodes.assign(y, nodes.subscript(result, nodes.const(0))),
                mark(nodes.assign(self.d[y], nodes.subscript(result, nodes.const(1))))]

    def _all_arguments(self, fn, call, stmt):
        """The call's arguments by position, keywords placed and defaults filled in."""
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
        defaults = fn.__defaults__ or ()
        first_default = len(names) - len(defaults)
        keywords = {k.arg: k.value for k in call.keywords}
        args = list(call.args)
        for i in range(len(args), len(names)):
            if names[i] in keywords:
                args.append(keywords.pop(names[i]))
            elif i >= first_default:
                args.append(self.ctx.emitter.constant(defaults[i - first_default], names[i]))
            else:
                raise self.error(stmt, f'{fn.__name__}() is missing its argument {names[i]!r}')
        if keywords:
            raise self.error(stmt, f'{fn.__name__}() got an unexpected keyword argument '
                                   f'{next(iter(keywords))!r}')
        return args

    # ---------------------------------------------------------------- mutation

    def setitem(self, stmt, target):
        y = target.value.id
        if y not in self.ctx.active:
            if self._tape_op(stmt.value) == 'pop':
                return [nodes.expr_stmt(nodes.call(stmt.value.func.id)), stmt]
            return [stmt]
        index = index_value(target.slice)
        if self._tape_op(stmt.value) == 'pop':
            popped = self.ctx.namer.new('_d' + y)
            update = nodes.call('setitem_tangent', self.d[y], index, popped, y)
            return [nodes.assign(popped, nodes.call(stmt.value.func.id)), stmt,
                    mark(nodes.assign(self.d[y], update))]
        update = nodes.call('setitem_tangent', self.d[y], index, self.tangent(stmt.value), y)
        return [stmt, mark(nodes.assign(self.d[y], update))]

    def expr(self, stmt):
        call = stmt.value
        if self._tape_op(call) == 'pop':              # a value popped and dropped: its tangent too
            return [nodes.expr_stmt(nodes.call(call.func.id)), stmt]
        if self._tape_op(call) == 'push':
            # Every push is followed by a tangent (0.0 for an inactive value) and
            # every pop by one: the tape stays in step across function boundaries.
            pushed = call.args[0]
            tangent = nodes.call('zero_tangent', pushed) if isinstance(pushed, gast.Name) \
                else nodes.const(0.0)
            if self.is_active(pushed):
                tangent = self.tangent(pushed)
            elif isinstance(pushed, gast.Call) and any(self.is_active(a) for a in pushed.args):
                op = operation_of(pushed, lambda reason: self.error(stmt, reason))
                tangent = _sum(self.primitive(stmt, '_unused', op))
            return [stmt, nodes.expr_stmt(nodes.call(call.func.id, tangent))]
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and isinstance(call.func.value, gast.Name) and getanno(call.func, Key.RESOLVED) is None:
            ys = call.func.value.id
            if call.func.attr == 'append' and ys in self.ctx.active:
                update = nodes.call('append_tangent', self.d[ys], self.tangent(call.args[0]), ys)
                return [stmt, mark(nodes.assign(self.d[ys], update))]
            if ys in self.ctx.active or any(self.is_active(a) for a in call.args):
                raise self.error(stmt, f'the method .{call.func.attr}() changes its object in place; '
                                       f'only .append() is supported on differentiated lists')
        return [stmt]


def _sum(terms, structural=False):
    """`a + b + ...`; by structure (`add_adjoint`) for lists and tuples."""
    total = terms[0]
    for term in terms[1:]:
        total = nodes.call('add_adjoint', total, term) if structural else \
            nodes.binop(total, gast.Add(), term)
    return total


def _calls(value, name) -> bool:
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id == name
