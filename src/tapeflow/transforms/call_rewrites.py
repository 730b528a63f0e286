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

    def bound_again(self, stmt) -> bool:
        """Whether `stmt` is desugar's `y = written_value(_run, k, y)` of a name
        `guarded_call` bound at the call already (dropped: it is bound there)."""
        from tapeflow.rules import guards
        value = getattr(stmt, 'value', None)
        if not isinstance(stmt, ast.Assign) or not isinstance(value, ast.Call) or \
                not any(getanno(value.func, Key.RESOLVED) is f
                        for f in (guards.kept_value, guards.written_value,
                                  *guards.KEPT_OF_KIND.values())) or \
                len(value.args) < 2 or not isinstance(value.args[0], ast.Name) or \
                not isinstance(value.args[1], ast.Constant):
            return False
        return (value.args[0].id, value.args[1].value) in self.bound_by_body

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
        updates = []                # (after every written name is bound again: `guarded_call`)
        if target is not None:
            after.append(nodes.assign(target, nodes.subscript(result, nodes.const(0))))
        for k, i in enumerate(positions):
            name = call.args[i].id
            rebind = [nodes.assign(name, nodes.subscript(result, nodes.const(k + 1)))]
            first, then = self.after_write(stmt, rebind, name, state, frozenset(),
                                           exclude={target}, deep=True, split=True)
            before += first
            after += rebind
            updates += _updates(then, rebind)
        return checks + before + [nodes.assign(result, new_call)] + after + updates

    def guarded_call(self, stmt, call, target, state, writes):
        """`_run = attempt(kept, body, ..., y, ...)` whose body may write into `y` (a `try`
        or `with`, `transforms.sugar.exceptions`): `y` bound at once to the value the body
        gives back (`kept_value(_run, k)`); where that is the object it was given (written
        in place), every other name that holds its memory brought up to date, as after a
        user function's write."""
        from tapeflow.rules import guards
        values = [i for i, a in enumerate(call.args) if any(a is w for _, w, _ in writes)]
        start = 4 if getanno(call.func, Key.RESOLVED) is guards.attempt_within else 3
        if target is None:
            return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                               'a guarded body whose state is not kept')
        kept_value, written_in_place = self.new('_kept_value'), self.new('_written_in_place')
        written_value = self.new('_written_value')
        self.ctx.bind(kept_value, guards.kept_value)
        self.ctx.bind(written_in_place, guards.written_in_place)
        self.ctx.bind(written_value, guards.written_value)
        before, after, updates = [], [], []
        # (every name bound again before any is brought up to date: the body wrote them all
        #  at once, and an update reads the others as it left them, their tangents too)
        for i in values:
            arg = call.args[i]
            if not isinstance(arg, ast.Name) or arg.id not in state.kinds:
                return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                                   f'the guarded body (try, with) writes into '
                                   f'{al.text(arg)}, which is not a local variable; copy '
                                   f'it into one before the try or with')
            func = nodes.name(kept_value)
            setanno(func, Key.RESOLVED, guards.kept_value)
            plain = [nodes.assign(arg.id, nodes.call(func, target, nodes.const(i - start)))]
            same = nodes.name(written_value)
            setanno(same, Key.RESOLVED, guards.written_value)
            rebind = [nodes.assign(arg.id, nodes.call(same, target, nodes.const(i - start),
                                                      arg.id))]
            self.bound_by_body.add((target, i - start))
            kind = state.kinds.get(arg.id)
            if kind in (al.SCALAR, al.TUPLE):    # `s += 1.0` bound s to another value
                after += plain
                continue
            first, then = self.after_write(stmt, rebind, arg.id, state, frozenset(),
                                           exclude={target}, deep=True, split=True)
            before += first
            if kind in (al.ARRAY, al.LIST, al.DICT):
                after += rebind             # written in place: its other readers updated
                updates += _updates(then, rebind)
                continue
            # either, known when it runs (`rules.guards.written_in_place`)
            test = nodes.name(written_in_place)
            setanno(test, Key.RESOLVED, guards.written_in_place)
            flag = self.new('_in_place')
            after += [nodes.assign(flag, nodes.call(test, arg.id)),
                      nodes.if_(nodes.name(flag), rebind, plain)]
            if _updates(then, rebind):
                updates.append(nodes.if_(nodes.name(flag), _updates(then, rebind), []))
        return before + [stmt] + after + updates


def _updates(then, rebind) -> list:
    """What `after_write` brings the other readers up to date with, after `rebind` in `then`:
    a call writing several names binds each again before any update reads them (an update
    reads a name written too, its tangent as well, as the call left it)."""
    assert then[:len(rebind)] == rebind
    return then[len(rebind):]
