"""The reverse transformation: a forward sweep with pushes, a reverse sweep with pops.

Runs on ANF with activity known (`analysis.activity`). For every statement it
emits the primal statement (forward) and, mirrored, its adjoint (reverse):

- an assignment `y = op(a, b)` pushes the old `y` before it runs; its adjoint
  accumulates the rule of `op` into `ba`, `bb`, zeroes `by`, and pops `y`
  back, so the reverse sweep always sees the values the forward sweep saw;
- `if` pushes its decision after the branch, the reverse pops it to choose;
- loops push their trip count (and the loop variable each trip), the reverse
  runs that many trips backwards;
- `y[i] = v` pushes what it overwrites and restores it in place;
- `ys.append(v)` is undone by dropping the last element;
- a call to a user function calls that function's own forward and backward,
  which share the tape.

Every push and its pop carry the same `Key.TAPE_PAIR`; this pass pushes
generously and `optimize` removes every pair whose popped value nothing reads.
The adjoint of `x` is named `bx`; the symbolic zero of an adjoint is `0.0`.
"""
from __future__ import annotations

import builtins
import dataclasses
import itertools
import operator
import types

import gast

from tapeflow.analysis.activity import NONDIFF_ATTRIBUTES
from tapeflow.rules import registry
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.syntax.naming import AdjointNames, Namer

PUSH, POP = '_push', '_pop'

BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.Pow: operator.pow, gast.MatMult: operator.matmul,
          gast.Mod: operator.mod, gast.FloorDiv: operator.floordiv}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos}


@dataclasses.dataclass
class Adjoint:
    """What the reverse transformation made of one function."""
    forward: list            # the forward sweep
    reverse: list            # the reverse sweep
    output: gast.AST         # the returned atom (or tuple of atoms)
    seed: list               # statements that start the reverse sweep from `bout`
    adjoints: AdjointNames
    active: set


class ReverseContext:
    """What the transformation needs from outside: rules, callees, errors."""

    def __init__(self, source, namer: Namer, emitter, active: set, compile_callee, scalars=()):
        self.source = source
        self.namer = namer
        self.emitter = emitter
        self.active = active
        self.compile_callee = compile_callee
        self.adjoints = AdjointNames(namer, 'b')
        self.pairs = itertools.count(1)
        self.containers = set()
        self.scalars = set(scalars)   # names that always hold scalars (analysis.kinds)


def transform(node: gast.FunctionDef, ctx: ReverseContext) -> Adjoint:
    ctx.containers = _container_names(node.body)
    body = node.body
    ret = body[-1] if body and isinstance(body[-1], gast.Return) else None
    if ret is not None:
        body = body[:-1]
    output = ret.value if ret is not None and ret.value is not None else nodes.const(None)
    forward, reverse = _Reverse(ctx).block(body)
    seed = _seed(output, ctx)
    return Adjoint(forward, reverse, output, seed, ctx.adjoints, ctx.active)


def _seed(output, ctx):
    """Start the reverse sweep: the output's adjoint is `bout`."""
    if isinstance(output, gast.Name) and output.id in ctx.active:
        return [nodes.assign(ctx.adjoints[output.id], 'bout')]
    if isinstance(output, gast.Tuple):
        out = []
        for k, elt in enumerate(output.elts):
            if isinstance(elt, gast.Name) and elt.id in ctx.active:
                b = ctx.adjoints[elt.id]
                out.append(nodes.assign(b, nodes.call('add_adjoint', b, nodes.subscript('bout', nodes.const(k)))))
        return out
    return []


def _container_names(body) -> set:
    """Names that may hold lists or tuples: their adjoints accumulate by structure."""
    names = set()
    for n in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
            if isinstance(n.value, (gast.Tuple, gast.List, gast.ListComp)):
                names.add(n.targets[0].id)
            if isinstance(n.value, gast.Subscript) and isinstance(n.value.value, gast.Name):
                names.add(n.value.value.id)
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == 'append' \
                and isinstance(n.func.value, gast.Name):
            names.add(n.func.value.id)
    return names


class _Reverse:
    def __init__(self, ctx: ReverseContext):
        self.ctx = ctx
        self.adj = ctx.adjoints

    # ---------------------------------------------------------------- helpers

    def error(self, node, reason):
        return self.ctx.source.error(node, reason)

    def is_active(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.ctx.active

    def pair(self, value_node, restore_target=None, in_place=False):
        """A push of `value_node` and the pop that undoes it."""
        k = next(self.ctx.pairs)
        push = nodes.expr_stmt(nodes.call(PUSH, value_node))
        if restore_target is None:
            pop = nodes.expr_stmt(nodes.call(POP))
        else:
            pop = nodes.assign(restore_target, nodes.call(POP))
        setanno(push, Key.TAPE_PAIR, k)
        setanno(pop, Key.TAPE_PAIR, k)
        setanno(push, Key.SYNTHETIC, True)
        if in_place:
            setanno(pop, Key.RESTORES_IN_PLACE, True)
        return push, pop

    def accumulate(self, name, contribution):
        """`bname = bname + contribution`, by structure for containers."""
        b = self.adj[name]
        if name in self.ctx.containers:
            return nodes.assign(b, nodes.call('add_adjoint', b, contribution))
        return nodes.assign(b, nodes.binop(b, gast.Add(), contribution))

    # ---------------------------------------------------------------- blocks

    def block(self, stmts):
        forward, reverse = [], []
        for stmt in stmts:
            fwd, rev = self.statement(stmt)
            nodes.located(fwd, stmt)
            nodes.located(rev, stmt)
            forward.extend(fwd)
            reverse[:0] = rev
        return forward, reverse

    def statement(self, stmt):
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                return self.setitem(stmt, target)
            return self.assign(stmt, target.id, stmt.value)
        if getanno(stmt, Key.LOOP_EXIT):
            return [stmt], []             # the trip count already records the exit
        if isinstance(stmt, gast.If):
            return self.if_(stmt)
        if isinstance(stmt, gast.For):
            return self.for_(stmt)
        if isinstance(stmt, gast.While):
            return self.while_(stmt)
        if isinstance(stmt, gast.Expr):
            return self.expr(stmt)
        if isinstance(stmt, gast.Return):
            raise self.error(stmt, 'return is only supported as the last statement here')
        return [stmt], []                 # pass, assert, nested def, loop exit

    # ---------------------------------------------------------------- assignment

    def assign(self, stmt, y, value):
        push, pop = self.pair(nodes.name(y), restore_target=y)
        if y not in self.ctx.active:
            if isinstance(value, gast.Call) and self._user_function(value) is not None \
                    and self._active_args(value):
                pass                        # an inactive result of a call with active inputs
            return [push, stmt], [pop]
        contributions = self.contributions(stmt, y, value)
        if contributions is None:           # a call to a user function: it pushes too
            return self.user_call(stmt, y, value, push, pop)
        reads = _names(value)
        by = self.adj[y]
        if y in reads:
            g = self.ctx.namer.new('_' + by)
            ans = self.ctx.namer.new('_' + y)
            rev = [nodes.assign(g, by), nodes.assign(by, 0.0), nodes.assign(ans, y), pop]
            rev += [c(g, ans) for c in contributions]
        else:
            rev = [c(by, y) for c in contributions] + [nodes.assign(by, 0.0), pop]
        return [push, stmt], rev

    def contributions(self, stmt, y, value):
        """Functions (g, ans) -> adjoint statement, one per active operand.

        None for a call to a user function (handled by `user_call`).
        """
        if isinstance(value, gast.Name):
            if self.is_active(value):
                return [lambda g, ans: self.accumulate(value.id, nodes.name(g))]
            return []
        if isinstance(value, (gast.Constant, gast.Compare, gast.BoolOp)):
            return []
        if isinstance(value, gast.Attribute) and getanno(value, Key.RESOLVED) is not None:
            return []
        if isinstance(value, gast.BinOp):
            fn = BINOPS.get(type(value.op))
            return self.primitive(stmt, fn, [value.left, value.right], [], _op_name(value.op))
        if isinstance(value, gast.UnaryOp):
            fn = UNARYOPS.get(type(value.op))
            if fn is None:
                return []
            return self.primitive(stmt, fn, [value.operand], [], _op_name(value.op))
        if isinstance(value, (gast.Tuple, gast.List)):
            out = []
            for k, elt in enumerate(value.elts):
                if self.is_active(elt):
                    out.append(lambda g, ans, k=k, elt=elt: self.accumulate(
                        elt.id, nodes.call('getitem_adjoint', g, nodes.const(k))))
            return out
        if isinstance(value, gast.Subscript):
            index = _index_value(value.slice)
            return self.primitive(stmt, operator.getitem, [value.value, index], [], 'subscript',
                                  static=(1,))
        if isinstance(value, gast.Attribute):
            if value.attr in NONDIFF_ATTRIBUTES:
                return []
            fn = registry.ATTRIBUTES.get(value.attr)
            if fn is None:
                raise self.error(stmt, f'no derivative rule for the attribute .{value.attr}')
            return self.primitive(stmt, fn, [value.value], [], f'.{value.attr}')
        if isinstance(value, gast.Call):
            return self.call(stmt, value)
        raise self.error(stmt, f'cannot differentiate a {type(value).__name__} expression')

    def call(self, stmt, call):
        fn = getanno(call.func, Key.RESOLVED)
        keywords = [(k.arg, k.value) for k in call.keywords]
        if fn is None and isinstance(call.func, gast.Attribute):      # x.method(...)
            method = call.func.attr
            entry = registry.METHODS.get(method)
            if entry is None:
                raise self.error(stmt, f'no derivative rule for the method .{method}()')
            fn, varargs = entry
            args = list(call.args)
            if varargs and len(args) > 1:
                args = [nodes.tuple_(*args)]
            return self.primitive(stmt, fn, [call.func.value] + args, keywords, f'.{method}()')
        if fn is None:
            raise self.error(stmt, 'cannot differentiate a call of a value computed at run time')
        if self._user_function(call) is not None and registry.lookup(fn) is None:
            return None
        return self.primitive(stmt, fn, list(call.args), keywords, _callable_name(fn))

    def primitive(self, stmt, fn, args, keywords, label, static=()):
        entry = registry.lookup(fn) if fn is not None else None
        static = set(static) | (entry.static_argnums if entry is not None else set())
        active = [i for i, a in enumerate(args) if self.is_active(a) and i not in static]
        for name, value in keywords:
            if self.is_active(value):
                raise self.error(stmt, f'differentiating {label} with respect to its keyword '
                                       f'argument {name!r} is not supported')
        if not active:
            return []
        if entry is None:
            raise self.error(stmt, f'no derivative rule for {label} (argument {active[0]})')
        if entry.nondiff:
            return []
        out = []
        for i in active:
            rule = entry.vjps.get(i)
            if rule is None:
                raise self.error(stmt, f'no derivative rule for argument {i} of {entry.name}')
            same = _target_name(stmt) in self.ctx.scalars
            out.append(lambda g, ans, rule=rule, i=i: self.accumulate(
                args[i].id, self.ctx.emitter.emit(rule, g, ans, args, keywords, same_shapes=same,
                                                 label=_rule_label(entry, i, 'vjp'))))
        return out

    # ---------------------------------------------------------------- user calls

    def _user_function(self, call):
        fn = getanno(call.func, Key.RESOLVED)
        if isinstance(fn, types.FunctionType) and registry.lookup(fn) is None:
            return fn
        return None

    def _active_args(self, call):
        return [i for i, a in enumerate(call.args) if self.is_active(a)]

    def user_call(self, stmt, y, call, push, pop):
        fn = self._user_function(call)
        active = self._active_args(call)
        for k in call.keywords:
            if self.is_active(k.value):
                raise self.error(stmt, f'differentiating {fn.__name__}() with respect to the keyword '
                                       f'argument {k.arg!r} is not supported; pass it by position')
        if not active:
            return [push, stmt], [pop]
        fwd_name, bwd_name = self.ctx.compile_callee(fn, tuple(active), stmt)
        call_fwd = gast.Call(func=nodes.name(fwd_name), args=[nodes.name('_tape')] + list(call.args),
                             keywords=call.keywords)
        forward = [push, nodes.assign(y, call_fwd)]
        by = self.adj[y]
        grads = self.ctx.namer.new('_b' + fn.__name__)
        rev = [nodes.assign(grads, nodes.call(bwd_name, '_tape', by)),
               nodes.assign(by, 0.0), pop]
        for k, i in enumerate(active):
            part = nodes.subscript(grads, nodes.const(k)) if len(active) > 1 else nodes.name(grads)
            rev.append(self.accumulate(call.args[i].id, part))
        return forward, rev

    # ---------------------------------------------------------------- mutation

    def setitem(self, stmt, target):
        y = target.value.id
        index = target.slice
        old = nodes.call('old_value', y, _index_value(index))
        push, pop = self.pair(old, restore_target=nodes.subscript(y, index, store=True), in_place=True)
        rev = []
        if y in self.ctx.active:
            by = self.adj[y]
            v = stmt.value
            if self.is_active(v):
                rev.append(self.accumulate(v.id, nodes.call('setitem_value_adjoint', by,
                                                            _index_value(index), v)))
            rev.append(nodes.assign(by, nodes.call('setitem_clear_adjoint', by, _index_value(index))))
        rev.append(pop)
        return [push, stmt], rev

    def expr(self, stmt):
        call = stmt.value
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and isinstance(call.func.value, gast.Name) and getanno(call.func, Key.RESOLVED) is None:
            ys = call.func.value.id
            if call.func.attr == 'append':
                rev = []
                if ys in self.ctx.active:
                    bys = self.adj[ys]
                    if call.args and self.is_active(call.args[0]):
                        rev.append(self.accumulate(call.args[0].id, nodes.call('last_adjoint', bys)))
                    rev.append(nodes.assign(bys, nodes.call('drop_last_adjoint', bys)))
                restore = nodes.assign(ys, nodes.subscript(ys, gast.Slice(None, nodes.const(-1), None)))
                return [stmt], rev + [restore]
            if ys in self.ctx.active or any(self.is_active(a) for a in call.args):
                raise self.error(stmt, f'the method .{call.func.attr}() changes its object in place; '
                                       f'only .append() is supported on differentiated lists')
        if isinstance(call, gast.Call) and (any(self.is_active(a) for a in call.args) and
                                            self._user_function(call) is not None):
            raise self.error(stmt, 'the result of this call is discarded; assign it to a name')
        return [stmt], []

    # ---------------------------------------------------------------- control flow

    def if_(self, stmt):
        test = stmt.test
        body_fwd, body_rev = self.block(stmt.body)
        else_fwd, else_rev = self.block(stmt.orelse)
        pre = []
        if isinstance(test, gast.Name) and test.id in _assigned(stmt):
            cond = self.ctx.namer.new('_cond')
            pre.append(nodes.assign(cond, test))
            test = nodes.name(cond)
        push, pop = self.pair(test)
        decision = pop.value if isinstance(pop, gast.Expr) else pop
        fwd_if = nodes.if_(test, body_fwd, else_fwd)
        rev_if = nodes.if_(decision, body_rev, else_rev)
        setanno(rev_if, Key.TAPE_PAIR, getanno(push, Key.TAPE_PAIR))
        return pre + [fwd_if, push], [rev_if]

    def _counted_loop(self, stmt, body_fwd, body_rev, per_trip=(), per_trip_restore=()):
        trips = self.ctx.namer.new('_trips')
        exit_stmt = body_fwd.pop() if body_fwd and getanno(body_fwd[-1], Key.LOOP_EXIT) else None
        body_fwd = body_fwd + list(per_trip) + [nodes.assign(trips, nodes.binop(trips, gast.Add(), 1))]
        if exit_stmt is not None:
            body_fwd.append(exit_stmt)
        push, pop = self.pair(nodes.name(trips))
        counter = nodes.call(POP)
        rev_loop = nodes.for_(self.ctx.namer.new('_'), nodes.call('range', counter),
                              list(per_trip_restore) + body_rev)
        setanno(rev_loop, Key.TAPE_PAIR, getanno(push, Key.TAPE_PAIR))
        return [nodes.assign(trips, 0)], body_fwd, push, rev_loop

    def for_(self, stmt):
        body_fwd, body_rev = self.block(stmt.body)
        target = stmt.target.id
        before_push, before_pop = self.pair(nodes.name(target), restore_target=target)
        trip_push, trip_pop = self.pair(nodes.name(target), restore_target=target)
        exits = bool(body_fwd) and getanno(body_fwd[-1], Key.LOOP_EXIT)
        if _is_range(stmt.iter) and not exits:
            # Every trip of the range runs: its length is the trip count, no counting.
            iterations = self.ctx.namer.new('_range')
            push, pop = self.pair(nodes.call('len', iterations))
            prologue = [nodes.assign(iterations, stmt.iter)]
            stmt.iter = nodes.name(iterations)
            stmt.body = body_fwd + [trip_push]
            rev_loop = nodes.for_(self.ctx.namer.new('_'), nodes.call('range', pop.value),
                                  [trip_pop] + body_rev)
            setanno(rev_loop, Key.TAPE_PAIR, getanno(push, Key.TAPE_PAIR))
            return [before_push] + prologue + [stmt, push], [rev_loop, before_pop]
        init, body_fwd, push, rev_loop = self._counted_loop(stmt, body_fwd, body_rev,
                                                            [trip_push], [trip_pop])
        stmt.body = body_fwd
        return [before_push] + init + [stmt, push], [rev_loop, before_pop]

    def while_(self, stmt):
        body_fwd, body_rev = self.block(stmt.body)
        init, body_fwd, push, rev_loop = self._counted_loop(stmt, body_fwd, body_rev)
        stmt.body = body_fwd
        return init + [stmt, push], [rev_loop]


# -------------------------------------------------------------------- utilities

def _rule_label(entry, argnum, kind) -> str:
    """A readable name for a called (not inlined) rule: `_sin_vjp`, `_where_jvp2`."""
    base = entry.name.rsplit('.', 1)[-1]
    base = ''.join(c if c.isalnum() else '_' for c in base).strip('_') or 'rule'
    return f'_{base}_{kind}' + (str(argnum) if argnum else '')


def _is_range(node) -> bool:
    return isinstance(node, gast.Call) and getanno(node.func, Key.RESOLVED) is builtins.range


def _target_name(stmt):
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    return None


def _names(node) -> set:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _assigned(stmt) -> set:
    return {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _index_value(index):
    """The index of a subscript as a value expression (`1:n` is `slice(1, n, None)`)."""
    if isinstance(index, gast.Slice):
        return nodes.call('slice', *(nodes.const(None) if p is None else p
                                     for p in (index.lower, index.upper, index.step)))
    if isinstance(index, gast.Tuple):
        return nodes.tuple_(*(_index_value(i) for i in index.elts))
    return index


def _op_name(op) -> str:
    return {gast.Add: '+', gast.Sub: '-', gast.Mult: '*', gast.Div: '/', gast.Pow: '**',
            gast.MatMult: '@', gast.Mod: '%', gast.FloorDiv: '//', gast.USub: 'unary -',
            gast.UAdd: 'unary +'}.get(type(op), type(op).__name__)


def _callable_name(fn) -> str:
    entry = registry.lookup(fn)
    if entry is not None:
        return entry.name
    module = getattr(fn, '__module__', None) or ''
    name = getattr(fn, '__qualname__', None) or getattr(fn, '__name__', repr(fn))
    if isinstance(fn, type(builtins.len)) and module == 'builtins':
        return name
    return f'{module}.{name}' if module else name
