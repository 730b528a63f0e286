"""The reverse sweep of calls: user functions (their own forward and backward, sharing
the tape) and the tape operations of generated code differentiated again.

A part of `reverse._Reverse` (a mixin): it uses its `pair`, `accumulate`,
`is_active`, `error` and context.
"""
from __future__ import annotations

from tapeflow.analysis.call_writes import writes_given_values
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.syntax.naming import identifier as _id
from tapeflow.transforms import draws, tape_ops
from tapeflow.transforms.operations import dynamic_active, index_value, plain_dynamic, user_function


def listed(stmts):
    return stmts if isinstance(stmts, list) else [stmts]


class CallsSweep:
    # ---------------------------------------------------------------- user calls

    def _user_function(self, call):
        return user_function(call)

    def _active_args(self, call):
        return [i for i, a in enumerate(call.args) if self.is_active(a)]

    def user_call(self, stmt, y, call, push, pop):
        fn = self._user_function(call)
        active = self._active_args(call)
        checks = self.keyword_checks(stmt, call, fn)
        push = nodes.located(checks, stmt) + [push] if checks else push
        if not active and not self._carries_inner_tape(call):
            # nothing flows into the result, but it replaces `y`: `y`'s adjoint ends here;
            # what it writes into its arguments (a variant) the reverse sweep puts back
            kill = [nodes.assign(self.adj[y], 0.0)] if y in self.ctx.active else []
            saves, restores = self.saved_arguments(fn, call)
            return listed(push) + saves + [stmt], kill + restores + [pop]
        fwd_name, bwd_name = self.ctx.compile_callee(fn, tuple(active), stmt)
        call_fwd = nodes.call(fwd_name, self.ctx.names.tape, *call.args, keywords=call.keywords)
        forward = listed(push) + [setanno(nodes.assign(y, call_fwd), Key.PRIMAL, stmt)]
        by = self.adj[y] if y in self.ctx.active else nodes.const(0.0)
        grads = self.ctx.namer.new('_b' + _id(fn))
        backward = nodes.assign(grads, nodes.call(bwd_name, self.ctx.names.tape, by))
        result = y
        if getattr(getattr(fn, '__tapeflow_variant_of__', (None,))[0], '__tapeflow_checkpoint__', False):
            raise self.error(stmt, f'{fn.__name__[:-len("_inplace")]}() is checkpointed '
                                   f'(tf.checkpoint) and writes into its arguments: running it '
                                   f'again would write twice; return the new value instead')
        if getattr(fn, '__tapeflow_checkpoint__', False):
            # `tf.checkpoint(fn)`: called plainly; the reverse sweep, once `y` is popped
            # (the arguments as they were), calls its forward again, then its backward
            result = self.ctx.namer.new('_' + y)
            forward = listed(push) + [stmt]
            backward = [pop, nodes.assign(result, call_fwd), backward]
            replayed = draws.replayed_call(fn, call, self.pair, self.ctx.namer)
            if replayed is not None:        # the rerun draws what the call drew
                forward = [replayed[0]] + forward
                backward = [pop] + replayed[1] + [backward[1], replayed[2], backward[2]]
        # the callee's rules do not all take the symbolic zero: where `by` may be it,
        # `optimize.zero_cotangents` gives it `dense(by, y)` (the call is never dropped)
        setanno(listed(backward)[-1], Key.COTANGENT, (by if isinstance(by, str) else None, result,
                                                        listed(backward)[-1].value, 'keep'))
        rev = listed(backward)
        rev += [nodes.assign(by, 0.0)] * isinstance(by, str) + [pop] * (result is y)
        for k, i in enumerate(active):
            part = nodes.subscript(grads, nodes.const(k)) if len(active) > 1 else nodes.name(grads)
            rev.append(self.accumulate(call.args[i].id, part))
        return forward, rev

    # ---------------------------------------------------------------- calls resolved at run time

    def saved_by_body(self, call):
        """A try/with body run as written (nothing flows through it) that writes into what
        it is given: their contents saved before it and put back in the reverse sweep, as
        a user function's (`saved_arguments`)."""
        from tapeflow.rules import guards
        if not writes_given_values(call):
            return [], []
        at = 2 if getanno(call.func, Key.RESOLVED) is guards.attempt_within else 1
        marked = guards.written_positions([k.value for k in call.args[at].elts])
        saves, restores = [], []
        for k in sorted(marked):
            arg = call.args[at + 2 + k]
            if isinstance(arg, ast.Name):
                push, restore = self.contents_pair(arg.id)
                saves.append(push)
                restores.insert(0, restore)
        return saves, restores

    def dynamic_call(self, stmt, y, call, op, push, pop):
        """`y = f(x)` with `f` known only when it runs (`tapeflow.calls`): the dispatcher's
        forward sweep pushes on the tape, its backward gives the cotangents of what is
        active (the callee's object first)."""
        active = dynamic_active(op, self.is_active)
        if y not in self.ctx.active or not active:
            kill = [nodes.assign(self.adj[y], 0.0)] if y in self.ctx.active else []
            saves, restores = self.saved_by_body(call)
            return [push] + saves + [plain_dynamic(stmt, call, op, self.ctx.varied)], \
                kill + restores + [pop]
        tape = self.ctx.names.tape
        forward_call = nodes.call('call_forward', tape, nodes.const(tuple(active)), call.func,
                                  *call.args, keywords=call.keywords)
        forward = [push, setanno(nodes.assign(y, forward_call), Key.PRIMAL, stmt)]
        by = self.adj[y]
        grads = self.ctx.namer.new('_bcall')
        rev = [nodes.assign(grads, nodes.call('call_backward', tape, by)),
               nodes.assign(by, 0.0), pop]
        if writes_given_values(call):     # a try/with body's: it gives that memory back
            setanno(rev[0], Key.RESTORES_IN_PLACE, True)
        keywords = {name: value for name, value in op.keywords}
        for key in active:
            if key == 0:
                callee = call.func
                if isinstance(callee, ast.Attribute):
                    name = callee.value.id
                    part = nodes.call('receiver_cotangent', grads, nodes.const(callee.attr))
                else:
                    name = callee.id
                    part = nodes.call('cotangent_of', grads, nodes.const(0))
                b = self.adj[name]
                rev.append(nodes.assign(b, nodes.call('add_adjoint', b, part)))
                continue
            if isinstance(key, tuple):                      # f(**d): the dict's cotangent
                spread = next(k.value for k in call.keywords if k.arg is None)
                rev.append(self.accumulate(spread.id, nodes.call('cotangent_of', grads,
                                                                 nodes.const(key))))
                continue
            if isinstance(key, str) and key[:1] == '*':     # f(a, *rest): the tuple's cotangent
                b = self.adj[call.args[int(key[1:])].value.id]
                rev.append(nodes.assign(b, nodes.call('add_adjoint', b, nodes.call(
                    'cotangent_of', grads, nodes.const(key)))))
                continue
            arg = keywords[key] if isinstance(key, str) else call.args[key - 1]
            rev.append(self.accumulate(arg.id, nodes.call('cotangent_of', grads, nodes.const(key))))
        return forward, rev

    # ---------------------------------------------------------------- generated code's tape
    # Differentiating generated code again: a value pushed on its tape comes
    # back at the pop. The cotangent of the popped value goes on an adjoint
    # stack kept beside that tape (`adjoint_stack`), and the reverse of the
    # push takes it off. Every pop pushes one (0.0 when inactive) and every
    # push takes one, so the stack stays in step across function boundaries.

    def _inner_op(self, value):
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return self.ctx.inner.get(value.func.id, (None,))[0]
        return None

    def _carries_inner_tape(self, call) -> bool:
        """A call given generated code's own tape (its callee pushes or pops on it)."""
        return tape_ops.carries_tape(call.args, self.ctx.tapes)

    def _adjoint_stack(self, call, kind):
        """The name of the push/pop of the adjoint stack beside the tape `call` uses."""
        tape = self.ctx.inner[call.func.id][1]
        return self.ctx.adjoint_stacks(tape)[kind]

    def inner_push(self, stmt):
        value = stmt.value.args[0]
        take = nodes.call(self._adjoint_stack(stmt.value, 'pop'))
        if self.is_active(value):
            return [stmt], [self.accumulate(value.id, take)]
        return [stmt], [nodes.expr_stmt(take)]

    def inner_pop(self, stmt, y, push, pop):
        give = self._adjoint_stack(stmt.value, 'push')
        if y in self.ctx.active:
            by = self.adj[y]
            return [push, stmt], [nodes.expr_stmt(nodes.call(give, by)), nodes.assign(by, 0.0), pop]
        return [push, stmt], [nodes.expr_stmt(nodes.call(give, 0.0)), pop]

    def inner_pop_in_place(self, stmt, target):
        y = target.value.id
        index = target.slice
        give = self._adjoint_stack(stmt.value, 'push')
        push, pop = self.pair(nodes.call('old_value', y, index_value(index)),
                              restore_target=nodes.subscript(y, index, store=True), in_place=True)
        if y in self.ctx.active:
            by = self.adj[y]
            popped = nodes.subscript(y, index)
            rev = [nodes.expr_stmt(nodes.call(give, nodes.call('setitem_value_adjoint', by,
                                                                 index_value(index), popped))),
                   nodes.assign(by, nodes.call('setitem_clear_adjoint', by, index_value(index))), pop]
        else:
            rev = [nodes.expr_stmt(nodes.call(give, 0.0)), pop]
        return [push, stmt], rev
