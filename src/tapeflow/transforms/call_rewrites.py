"""The mutation pass's rewrites of calls that write into their arguments (`transforms.mutation`):
a user function's call (`h(y)` -> `_h = h_inplace(y); y = _h[1]`, `variants.variant`) and a
guarded body's (`_run = attempt(..., y)` whose body writes into `y`, `sugar.exceptions`):
each written name bound again to the value the call gives back, the same memory written,
and every other name that holds that memory brought up to date (`after_write`).
"""
from __future__ import annotations

from tapeflow.analysis import aliasing as al
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.syntax.naming import identifier as _id
from tapeflow.transforms.operations import user_function
from tapeflow.transforms.propagation import derivations


class CallWrites:
    """Mixed into the mutation pass's rewriter (its `new`, `opaque`, `apart`, `after_write`)."""

    def user_call(self, stmt, call, target, state, writes):
        fn = user_function(call)
        label = getattr(fn, '__name__', 'the callee')
        positions = [i for i, a in enumerate(call.args) if any(a is w for _, w, _ in writes)]
        for i in positions:
            arg = call.args[i]
            if not isinstance(arg, ast.Name) or arg.id not in state.kinds:
                return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                                   f'{label}() writes into its argument {i} '
                                   f'({al.text(arg)}), which is not a local variable; '
                                   f'pass a local copy')
        derived, unrelated = derivations(state, call.args, positions)
        checks = [self.apart(stmt, first, other,      # compiled as apart: checked when it runs
                             f'{fn.__name__}() writes into its arguments, and its argument '
                             f'{first} shares memory with its argument {other} in a way not '
                             f'known here; pass a copy of one of them', deep=True)
                  for first, other in unrelated]
        variant = self.ctx.variant(fn, tuple(positions), derived)
        result = self.new('_' + _id(fn))
        func = nodes.name(self.new(variant.__name__))
        self.ctx.bind(func.id, variant)
        setanno(func, Key.RESOLVED, variant)
        new_call = nodes.copy_location(nodes.call(func, *call.args, keywords=call.keywords), call)
        setanno(new_call, Key.ARG_KINDS, getanno(call, Key.ARG_KINDS))
        before, after = [], []      # (what runs before a write runs before the call making it)
        if target is not None:
            after.append(nodes.assign(target, nodes.subscript(result, nodes.const(0))))
        for k, i in enumerate(positions):
            name = call.args[i].id
            rebind = [nodes.assign(name, nodes.subscript(result, nodes.const(k + 1)))]
            first, then = self.after_write(stmt, rebind, name, state, frozenset(),
                                           exclude={target}, deep=True, split=True)
            before += first
            after += then
        return checks + before + [nodes.assign(result, new_call)] + after

    def guarded_call(self, stmt, call, target, state, writes):
        """`_run = attempt(kept, body, ..., y, ...)` whose body may write into `y` (a `try`
        or `with`, `transforms.sugar.exceptions`): `y` bound at once to the value the body
        gives back (`_run[2][k]`: the same memory, written), and every other name that
        holds that memory brought up to date, as after a user function's write."""
        from tapeflow.rules import guards
        values = [i for i, a in enumerate(call.args) if any(a is w for _, w, _ in writes)]
        start = 4 if getanno(call.func, Key.RESOLVED) is guards.attempt_within else 3
        if target is None:
            return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                               'a guarded body whose state is not kept')
        kept_value = self.new('_kept_value')
        self.ctx.bind(kept_value, guards.kept_value)
        before, after = [], []
        for i in values:
            arg = call.args[i]
            if not isinstance(arg, ast.Name) or arg.id not in state.kinds:
                return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                                   f'the guarded body (try, with) writes into '
                                   f'{al.text(arg)}, which is not a local variable; copy '
                                   f'it into one before the try or with')
            func = nodes.name(kept_value)
            setanno(func, Key.RESOLVED, guards.kept_value)
            rebind = [nodes.assign(arg.id, nodes.call(func, target, nodes.const(i - start)))]
            first, then = self.after_write(stmt, rebind, arg.id, state, frozenset(),
                                           exclude={target}, deep=True, split=True)
            before += first
            after += then
        return before + [stmt] + after
