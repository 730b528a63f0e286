"""The reverse sweep of writes into memory: `y[i] = v`, `ys.append(v)`, `ys.pop(i)`,
`ys.insert(i, v)`, and statements run as written whose memory is saved and put back.

A part of `reverse._Reverse` (a mixin): it uses its `pair`, `accumulate`,
`is_active`, `error`, `statement` and context.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.rules.dicts import delete_item
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.operations import (index_value, is_dynamic_call, operation_of,
                                            plain_dynamic)


class MemorySweep:
    # ---------------------------------------------------------------- mutation

    def setitem(self, stmt, target):
        if self._inner_op(stmt.value) == 'pop':
            return self.inner_pop_in_place(stmt, target)
        y = target.value.id
        index = target.slice
        if self.ctx.kinds.get(y) == 'dict':         # a new key is removed again
            push, pop = self.pair(nodes.call('old_item', y, index_value(index)))
            pop = nodes.expr_stmt(nodes.call('restore_item', y, index_value(index), pop.value))
            for key in (Key.TAPE_PAIR, Key.SYNTHETIC):
                setanno(pop, key, getanno(push, key))
            setanno(pop, Key.RESTORES_IN_PLACE, True)
            setanno(pop, Key.MUTATES, y)
        else:
            old = nodes.call('old_value', y, index_value(index))
            push, pop = self.pair(old, restore_target=nodes.subscript(y, index, store=True),
                                  in_place=True)
        setanno(pop, Key.SHARES, getanno(stmt, Key.SHARES))
        rev = []
        if y in self.ctx.active:
            by = self.adj[y]
            v = stmt.value
            written = nodes.call('setitem_value_adjoint', by, index_value(index), v)
            if self.is_active(v) and v.id == y:      # `y[i] = y` (np.copyto(y, y)): both from the old by
                part = self.ctx.namer.new('_' + by)
                rev += [nodes.assign(part, written)]
                written = nodes.name(part)
            elif self.is_active(v):
                rev.append(self.accumulate(v.id, written))
            rev.append(nodes.assign(by, nodes.call('setitem_clear_adjoint', by, index_value(index))))
            if self.is_active(v) and v.id == y:
                rev.append(self.accumulate(y, written))
        rev.append(pop)
        return [push, stmt], rev

    def expr(self, stmt):
        call = stmt.value
        if isinstance(call, ast.Call) and getanno(call.func, Key.RESOLVED) is delete_item:
            return self.deletion(stmt, call)
        if self._inner_op(call) == 'push':
            return self.inner_push(stmt)
        if self._inner_op(call) == 'pop':              # popped and dropped: no cotangent
            give = self._adjoint_stack(call, 'push')
            return [stmt], [nodes.expr_stmt(nodes.call(give, 0.0))]
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and getanno(call.func, Key.RESOLVED) is None:
            ys = call.func.value.id
            if call.func.attr == 'append':
                rev = []
                if ys in self.ctx.active:
                    bys = self.adj[ys]
                    if call.args and self.is_active(call.args[0]):
                        rev.append(self.accumulate(call.args[0].id, nodes.call('last_adjoint', bys)))
                    rev.append(nodes.assign(bys, nodes.call('drop_last_adjoint', bys)))
                restore = nodes.expr_stmt(nodes.call(nodes.attribute(ys, 'pop')))
                setanno(restore, Key.RESTORES_IN_PLACE, True)
                return [stmt], rev + [restore]
            if call.func.attr == 'pop' and len(call.args) <= 1 and not call.keywords:
                return self.pop_item(stmt, ys, call)
            if call.func.attr == 'insert' and len(call.args) == 2 and not call.keywords:
                return self.insert_item(stmt, ys, call)
            if ys in self.ctx.active or any(self.is_active(a) for a in call.args):
                raise self.error(stmt, f'the method .{call.func.attr}() changes its object in place; '
                                       f'only .append() is supported on differentiated lists')
        if is_dynamic_call(call):
            op = operation_of(call, lambda reason: self.error(stmt, reason))
            return [plain_dynamic(stmt, call, op, self.ctx.varied)], []
        # A user call whose result is dropped: nothing flows from it (what it writes into
        # its arguments, or globals, transforms.mutation made explicit or refused).
        return [stmt], []

    def deletion(self, stmt, call):
        """`del d[k]` of a dict (`delete_item`): the value and its place kept, put back
        there by the reverse sweep (the slot's cotangent is zero there: nothing read it after the removal)."""
        container, key = call.args
        push, pop = self.pair(nodes.call('old_entry', container, key))
        restore = nodes.expr_stmt(nodes.call('restore_entry', container, key, pop.value))
        for anno in (Key.TAPE_PAIR, Key.SYNTHETIC):
            setanno(restore, anno, getanno(push, anno))
        setanno(restore, Key.RESTORES_IN_PLACE, True)
        setanno(restore, Key.MUTATES, container.id)
        return [push, stmt], [restore]

    def pop_item(self, stmt, ys, call):
        """`ys.pop(i)` (its value read before, by `transforms.mutation`): the reverse sweep
        puts the element back where it was, and its slot's cotangent starts at zero."""
        namer = self.ctx.namer
        index, item = namer.new('_index'), namer.new('_popped')
        at = nodes.call('pop_index', ys, *call.args)
        forward = [nodes.assign(index, at), nodes.assign(item, nodes.subscript(ys, index)),
                   nodes.expr_stmt(nodes.call(nodes.attribute(ys, 'pop'), index))]
        push_index, pop_index = self.pair(nodes.name(index), restore_target=index)
        push_item, pop_item = self.pair(nodes.name(item), restore_target=item)
        restore = nodes.expr_stmt(nodes.call(nodes.attribute(ys, 'insert'), index, item))
        setanno(restore, Key.RESTORES_IN_PLACE, True)
        rev = [pop_item, pop_index, restore]
        if ys in self.ctx.active:
            bys = self.adj[ys]
            rev.insert(2, nodes.assign(bys, nodes.call('insert_adjoint', bys, index)))
        return forward + [push_index, push_item], rev

    def insert_item(self, stmt, ys, call):
        """`ys.insert(i, v)` (the reverse sweep of a `pop`, differentiated again): undone by
        `ys.pop(i)`; `v`'s cotangent is its slot's."""
        index, value = call.args
        forward, rev = [stmt], [nodes.expr_stmt(nodes.call(nodes.attribute(ys, 'pop'), index))]
        setanno(rev[0], Key.RESTORES_IN_PLACE, True)
        if ys in self.ctx.active:
            bys = self.adj[ys]
            rev[:0] = [nodes.assign(bys, nodes.call('remove_tangent', bys, index))]
            if self.is_active(value):
                rev[:0] = [self.accumulate(value.id, nodes.call('getitem_adjoint', bys, index))]
        if isinstance(index, ast.Name):
            push, pop = self.pair(nodes.name(index.id), restore_target=index.id)
            forward.append(push)
            rev.append(pop)
        return forward, rev
