"""Forward mode's calls resolved at run time (`tapeflow.calls.call_jvp`).

A part of `forward._Forward` (a mixin): it uses its `tangent`, `is_active`, `d` and
context.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.operations import dynamic, dynamic_active, plain_dynamic


def mark(stmt):
    """Tangent statements are the optimizer's to remove; primal ones never are."""
    setanno(stmt, Key.SYNTHETIC, 'tangent')
    return stmt


class DynamicCalls:
    def dynamic_call(self, stmt, y, call, op):
        """`y = f(x)` with `f` known only when it runs (`tapeflow.calls.call_jvp`)."""
        active = dynamic_active(op, self.is_active)
        if y not in self.ctx.active or not active:
            plain = [plain_dynamic(stmt, call, op, self.ctx.varied)]
            return plain + ([mark(nodes.assign(self.d[y], 0.0))] if y in self.ctx.active else [])
        tangents = self._dynamic_tangents(call, op, active)
        result = self.ctx.namer.new('_jcall')
        given = _keywords(call)
        jvp = nodes.call('call_jvp', nodes.const(tuple(active)), nodes.const(self.ctx.batched),
                         call.func, nodes.tuple_(*call.args), given, nodes.tuple_(*tangents))
        return [nodes.assign(result, jvp),
                nodes.assign(y, nodes.subscript(result, nodes.const(0))),
                mark(nodes.assign(self.d[y], nodes.subscript(result, nodes.const(1))))]

    def _dynamic_tangents(self, call, op, active):
        """The tangents of what `active` names of a dynamic call, in its order."""
        keywords = {name: value for name, value in op.keywords}
        tangents = []
        for key in active:
            if key == 0:
                callee = call.func
                if isinstance(callee, ast.Attribute):
                    tangents.append(nodes.call('receiver_tangent', self.tangent(callee.value),
                                               callee.value, nodes.const(callee.attr)))
                else:
                    tangents.append(self.tangent(callee))
            elif isinstance(key, tuple):            # f(**d): the dict's tangent
                tangents.append(self.tangent(next(k.value for k in call.keywords
                                                  if k.arg is None)))
            elif isinstance(key, str) and key[:1] == '*':
                tangents.append(self.tangent(call.args[int(key[1:])].value))
            else:
                tangents.append(self.tangent(keywords[key] if isinstance(key, str)
                                             else call.args[key - 1]))
        return tangents

    # ---------------------------------------------------------------- the dispatcher, again

    def dispatcher_call(self, stmt, y, call):
        """Generated code's `call_forward`, `call_backward` or `call_plain`, in forward mode
        (`tapeflow.calls_higher`); None for another call."""
        fn = getanno(call.func, Key.RESOLVED)
        name = getattr(fn, '__name__', None) if getattr(fn, '__tapeflow_dispatcher__', False) \
            else None
        if name not in ('call_forward', 'call_backward', 'call_plain'):
            return None
        result = self.ctx.namer.new('_jcall')
        batched = nodes.const(self.ctx.batched)
        if name == 'call_backward':
            tape, g = call.args
            made = nodes.call('call_backward_jvp', batched, tape, g, self.tangent(g))
        else:
            inner = call.args[2:] if name == 'call_forward' else call.args
            inner_call = nodes.call(inner[0], *inner[1:], keywords=call.keywords)
            op = dynamic(inner_call, [(k.arg, k.value) for k in call.keywords], name)
            active = dynamic_active(op, self.is_active)
            tangents = nodes.tuple_(*self._dynamic_tangents(inner_call, op, active))
            given = _keywords(call)
            if name == 'call_plain':
                made = nodes.call('call_jvp', nodes.const(tuple(active)), batched, inner[0],
                                  nodes.tuple_(*inner[1:]), given, tangents)
            else:
                made = nodes.call('call_forward_jvp', nodes.const(tuple(active)), batched,
                                  call.args[0], call.args[1], inner[0], nodes.tuple_(*inner[1:]),
                                  given, tangents)
        out = [nodes.assign(result, made)]
        if y is None:
            return out
        out.append(nodes.assign(y, nodes.subscript(result, nodes.const(0))))
        if y in self.ctx.active:
            out.append(mark(nodes.assign(self.d[y], nodes.subscript(result, nodes.const(1)))))
        return out


def _keywords(call):
    """The call's keywords as a dict display (`**d` spread into it)."""
    return nodes.dict_([None if k.arg is None else nodes.const(k.arg) for k in call.keywords],
                       [k.value for k in call.keywords])
