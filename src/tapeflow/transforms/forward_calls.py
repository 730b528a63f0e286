"""Forward mode's calls resolved at run time (`tapeflow.calls.call_jvp`).

A part of `forward._Forward` (a mixin): it uses its `tangent`, `is_active`, `d` and
context.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno
from tapeflow.transforms.operations import dynamic_active, plain_dynamic


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
            elif key == '*':
                tangents.append(self.tangent(call.args[0].value))
            else:
                tangents.append(self.tangent(keywords[key] if isinstance(key, str)
                                             else call.args[key - 1]))
        result = self.ctx.namer.new('_jcall')
        given = nodes.dict_([nodes.const(k.arg) for k in call.keywords],
                            [k.value for k in call.keywords])
        jvp = nodes.call('call_jvp', nodes.const(tuple(active)), nodes.const(self.ctx.batched),
                         call.func, nodes.tuple_(*call.args), given, nodes.tuple_(*tangents))
        return [nodes.assign(result, jvp),
                nodes.assign(y, nodes.subscript(result, nodes.const(0))),
                mark(nodes.assign(self.d[y], nodes.subscript(result, nodes.const(1))))]
