"""Propagation: after a write, every other name that sees the memory written, brought up to date.

`Propagation(rewriter, state, name, affected, stmt).run()` gives the
statements that re-derive each of `affected` from `name` just written,
along the equations of `analysis.aliasing`: down an equation (`v = y[:2]`
again), or up it, through its inverse (`y[:2] = v`, a view undone: reshape,
transpose, swapaxes, moveaxis, flip); where sharing is decided at run time,
under the view's flag. A list, tuple or dict holding written memory is
refreshed from the names holding it (`refresh_items`), an item held in one
read again from its slot (`reread_item`). The names it cannot bring up to
date it returns, for the caller to check apart when the code runs.

`derivations` says how arguments of a user call that share memory with a
written one follow from one another (the callee's variant re-derives them).
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.analysis import aliasing as al
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.lowering import numpy_ref, runtime_ref, whole


class Propagation:
    """The statements that re-derive every affected name from the one written, along equations."""

    def __init__(self, rewriter, state, name, affected, stmt, deep=False, structural=False):
        self.rw = rewriter
        self.state = state
        self.start = name
        self.affected = affected
        self.stmt = stmt
        self.deep = deep
        self.structural = structural
        self.written = rewriter.written_objects(name, state, deep)

    def run(self):
        """(statements, names not brought up to date) for the write to `self.start`.

        Views and aliases follow their equations; a list, tuple or dict that
        holds written memory (in slots of its own, however many) is refreshed
        from the name holding it (`refresh_items`), then its elements followed.
        """
        edges = {}
        for e in self.state.eqs:
            if self.deep and e.op == 'index' and e.container in (al.LIST, al.DICT, None):
                continue        # a callee may have moved the slots: read again by identity
            if self.structural and e.op == 'index' and e.container in (al.LIST, al.DICT) \
                    and not self.state.pts.get(e.source, frozenset()).isdisjoint(
                        self.state.pts.get(self.start, frozenset())):
                continue        # its slots moved or were replaced: what was read stays
            edges.setdefault(e.source, []).append(('down', e))
            if not (e.op == 'index' and e.container in (al.LIST, al.TUPLE, al.DICT)):
                edges.setdefault(e.derived, []).append(('up', e))
        parent = {self.start: None}
        order, done = [self.start], 0
        while True:
            while done < len(order):                  # equations first, as far as they go
                node = order[done]
                done += 1
                for direction, e in edges.get(node, ()):
                    other = e.derived if direction == 'down' else e.source
                    if other in parent or (direction == 'up' and not _invertible(e)):
                        continue
                    parent[other] = (node, direction, e)
                    order.append(other)
            for container in self.users_first(self.affected - set(parent)):
                holders = self.held_in(container, order)
                if holders:
                    parent[container] = (holders[-1], 'refresh', holders)
                    order.append(container)
            if done < len(order):
                continue
            for item in self.users_first(self.affected - set(parent)):
                holder = self.holding(item, order)
                if holder is not None:                # read again from the slot holding it
                    parent[item] = (holder, 'reread', None)
                    order.append(item)
            if done == len(order):
                return self.finish(parent)

    def finish(self, parent):
        """The statements that bring the names reached up to date, in the order reached."""
        needed, todo = set(), list(self.affected)
        while todo:
            n = todo.pop()
            if n not in parent or n in needed or n == self.start:
                continue
            needed.add(n)
            holder, direction, e = parent[n]
            todo.append(holder)
            if direction == 'refresh':
                todo.extend(e)                # every holder it is refreshed from is brought up to date
        unresolved = {n for n in self.affected if n not in parent}
        self.held = {}                 # holder -> the name keeping its object from before the write
        self.before = []               # run before the write: was an item held, may it share
        self.deferred = []             # containers refreshed once the names are up to date
        updates = self.emit(self.start, parent, needed)
        while self.deferred:
            child = self.deferred.pop(0)
            updates += [nodes.assign(child, nodes.call(runtime_ref('refresh_items'), child, h,
                                                       self.kept(h)))
                        for h in parent[child][2]] + self.emit(child, parent, needed)
        captures = [nodes.assign(kept, holder) for holder, kept in self.held.items()] + self.before
        self.rw.checked.update(self.held)      # read before the write: maybe not bound yet
        return captures, updates, unresolved

    def kept(self, holder):
        if holder not in self.held:
            self.held[holder] = self.rw.new('_held_' + holder.lstrip('_'))
        return self.held[holder]

    def held_in(self, container, reached):
        """The names among `reached` whose objects are what `container` holds of the memory
        written, slot for slot (a slot holding a view of it is not one of them), or None."""
        if self.state.kinds.get(container) not in (al.LIST, al.TUPLE, al.DICT, None):
            return None
        slots = al.elements(self.state, self.state.pts.get(container, frozenset())) & self.written
        holders, covered = [], set()
        for n in reached:    # each is one object when it runs, whichever of its `pts`
            mine = self.state.pts.get(n, frozenset())
            if mine and mine <= slots and not mine <= covered and self.distinct(mine):
                holders.append(n)
                covered |= mine
        return holders if slots and covered == slots else None

    def users_first(self, names) -> list:
        """`names` in order, the user's own before those the compiler made: a refusal
        names what the user wrote."""
        namer = self.rw.ctx.namer
        return sorted(names, key=lambda n: (n in namer.made or n in namer.shown, n))

    def distinct(self, objects) -> bool:
        """No two of `objects` share memory: a name that may be any of them is one when
        it runs, and the others are untouched by a write into it."""
        return all(al.overlapping(self.state, {o}) & objects == {o} for o in objects)

    def holding(self, item, reached):
        """A name among `reached` holding a list, tuple or dict one of whose slots surely
        holds the very object `item` names (written memory), or None."""
        mine = self.state.pts.get(item, frozenset())
        if not mine:
            return None
        for n in reached:
            if self.state.kinds.get(n) in (al.LIST, al.TUPLE, al.DICT) \
                    and mine <= al.elements(self.state, self.state.pts.get(n, frozenset())):
                return n
        return None

    def reread(self, item, holder):
        """`item = holder[k]`, `k` the slot holding that very object now (`reread_item`)."""
        shown = self.rw.ctx.namer.shown
        item_, holder_ = shown.get(item, item), shown.get(holder, holder)
        where = self.rw.error(self.stmt, f'no slot of {holder_} holds {item_} after this write, '
                                         f'so what {item_} became is not known -- pass a copy')
        inside = self.rw.new('_inside')            # held in `holder` before the write?
        self.rw.checked.update({holder, item})
        self.before.append(nodes.assign(inside, nodes.call(runtime_ref('holds'), holder, item)))
        # not held there, it is itself only where the write did not reach it some other way
        self.before.append(self.rw.apart(
            self.stmt, self.start, item, self.rw.shares_reason(self.start, item, self.stmt),
            self.deep, unless=inside))
        return [nodes.assign(item, nodes.call(
            runtime_ref('reread_item'), holder, item, inside, nodes.const(where.reason),
            nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1)))]

    def refresh_check(self, child, holders):
        """Before the write: `child`, refreshed as a list holding `holders`, must, if an
        array (its kind was not known), be one of them or apart from the memory written,
        and its slots that share that memory must be those objects."""
        where = self.rw.error(self.stmt, self.rw.shares_reason(self.start, child, self.stmt))
        self.rw.checked.update({child, self.start})
        return nodes.located(nodes.expr_stmt(nodes.call(
            runtime_ref('check_refresh'), child, self.start, nodes.tuple_(*holders),
            nodes.const(where.reason), nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1))), self.stmt)

    def emit(self, node, parent, needed):
        out = []
        for child in [c for c, p in parent.items() if p is not None and p[0] == node and c in needed]:
            holder, direction, e = parent[child]
            if direction == 'reread':
                out += self.reread(child, holder) + self.emit(child, parent, needed)
                continue
            if direction == 'refresh':
                # the slots hold the objects from before the write (a view made anew is
                # another); after every holder is brought up to date, wherever it was reached
                # an array after all, or a slot holding a view a call made there: checked
                self.before.append(self.refresh_check(child, e))
                self.deferred.append(child)
                continue
            body = self.edge(direction, e) + self.emit(child, parent, needed)
            if e.maybe:
                out.append(nodes.if_(self.rw.view_flag(e), body))
            else:
                out += body
        return out

    def edge(self, direction, e):
        if e.op == 'ident':
            src, dst = (e.source, e.derived) if direction == 'down' else (e.derived, e.source)
            return [nodes.assign(dst, src)]
        if direction == 'down':
            if e.op == 'index' and e.container in (al.LIST, al.DICT):
                # the object read from a slot, still held by the list: Python's name still
                # binds it, though the slot may have moved (`ys.append` after `a = ys[-1]`)
                return [nodes.assign(e.derived, nodes.call(
                    runtime_ref('reread_slot'), e.source, nodes.clone(e.value.slice), e.derived))]
            return [nodes.assign(e.derived, nodes.clone(e.value))]
        if e.op == 'index':
            if e.container == al.TUPLE:
                return self.repack(e)
            return [nodes.assign(nodes.subscript(e.source, nodes.clone(e.value.slice), store=True),
                                 e.derived)]
        return self.rw_inverse(e)

    def repack(self, e):
        out, items = [], []
        for k in range(e.length):
            if k == e.value.slice.value:
                items.append(nodes.name(e.derived))
                continue
            item = self.rw.new('_item')
            out.append(nodes.assign(item, nodes.subscript(e.source, nodes.const(k))))
            items.append(nodes.name(item))
        return out + [nodes.assign(e.source, nodes.tuple_(*items))]

    def rw_inverse(self, e):
        """`source[...] = <the view undone>(derived)`."""
        new = self.rw.new
        back = new('_' + e.source)
        out = []
        inverse = e.view.inverse
        args = _view_arguments(e.value)
        if inverse == 'reshape':
            shape = new('_shape')
            out += [nodes.assign(shape, nodes.call(numpy_ref('shape'), e.source)),
                    nodes.assign(back, nodes.call(numpy_ref('reshape'), e.derived, shape))]
        elif inverse == 'transpose':
            axes = args.get('axes')
            if axes is None:
                out.append(nodes.assign(back, nodes.call(numpy_ref('transpose'), e.derived)))
            else:
                order = new('_order')
                out += [nodes.assign(order, nodes.call(numpy_ref('argsort'), axes)),
                        nodes.assign(back, nodes.call(numpy_ref('transpose'), e.derived, order))]
        elif inverse == 'swapaxes':
            out.append(nodes.assign(back, nodes.call(numpy_ref('swapaxes'), e.derived,
                                                     args['axis1'], args['axis2'])))
        elif inverse == 'moveaxis':
            out.append(nodes.assign(back, nodes.call(numpy_ref('moveaxis'), e.derived,
                                                     args['destination'], args['source'])))
        elif inverse == 'matrix_transpose':
            out.append(nodes.assign(back, nodes.call(numpy_ref('swapaxes'), e.derived, -1, -2)))
        elif inverse == 'flip':
            flipped = nodes.call(nodes.clone(e.value.func), e.derived,
                                 *[nodes.clone(a) for a in e.value.args[1:]],
                                 keywords=[nodes.clone(k) for k in e.value.keywords])
            out.append(nodes.assign(back, flipped))
        return out + [nodes.assign(nodes.subscript(e.source, whole(), store=True), back)]


SOURCE = '__source__'     # the name a derivation step reads, in `derivations`


def derivations(state, args, written):
    """How arguments that share memory with a written one follow from one of them.

    A callee is compiled as if its parameters were apart. Where the caller
    passes `x` and `x[::-1]` (or `x` twice), the callee's variant starts by
    deriving the second parameter from the first (`q = p[::-1]`), so its own
    analysis sees the sharing. Returns ((j, i, steps), ...): parameter j is
    parameter i through `steps`, expressions of `SOURCE` (() for the same
    object), and [(a name, another)]: arguments not related so, to be checked
    apart when the call runs (the variant is compiled as if they were).
    """
    names = [a.id if isinstance(a, ast.Name) and a.id in state.kinds else None for a in args]
    sharing = set()
    for i in written:
        mine = al.overlapping(state, al.reach(state, names[i]))
        others = {j for j, n in enumerate(names) if n is not None and j != i
                  and al.reach(state, n) & mine}
        if others:
            sharing |= others | {i}
    if not sharing:
        return (), []
    remaining, derived, components = set(sharing), [], []
    while remaining:                  # a root each, deriving as many of the others as it can
        best = None
        for root in sorted(remaining):
            steps = {j: _steps_from(state, names[root], names[j]) for j in sorted(remaining)
                     if j != root}
            found = {j: s for j, s in steps.items() if s is not None}
            if best is None or len(found) > len(best[1]):
                best = root, found
        root, found = best
        derived += [(j, root, s) for j, s in found.items()]
        components.append((root, {root} | set(found)))
        remaining -= {root} | set(found)
    unrelated = [(names[a], names[b]) for k, (a, mine) in enumerate(components)
                 for b, theirs in components[k + 1:] if (mine | theirs) & set(written)]
    return tuple(derived), unrelated


def _steps_from(state, root, name):
    """`name` as a chain of views of `root` reading nothing else: the chain, or None."""
    if root == name:
        return ()
    paths, todo = {root: ()}, [root]
    while todo:
        current = todo.pop(0)
        for e in state.eqs:
            if e.op == 'ident' and current in (e.derived, e.source):
                other, step = (e.source if current == e.derived else e.derived), None
            elif e.source == current and e.names <= {current} and e.op in ('index', 'view') \
                    and not e.maybe and not (e.container in (al.LIST, al.TUPLE, al.DICT)
                                             and state.kinds.get(e.derived) not in al.MUTABLE):
                # not a copy NumPy may have made, nor a number `+=` may have made anew
                other = e.derived
                step = al.text(nodes.substitute(e.value, {current: SOURCE}))
            else:
                continue
            if other not in paths:
                paths[other] = paths[current] + ((step,) if step else ())
                todo.append(other)
    return paths.get(name)


def _invertible(e) -> bool:
    """Whether a write to `e.derived` can be written back into `e.source`."""
    if e.op == 'ident':
        return True
    if e.op == 'index':
        return e.container != al.TUPLE or e.length is not None
    inverse = e.view.inverse if e.view is not None else None
    if inverse in ('reshape', 'matrix_transpose', 'flip'):
        return True
    if inverse not in ('transpose', 'swapaxes', 'moveaxis'):
        return False
    args = _view_arguments(e.value)
    need = {'swapaxes': ('axis1', 'axis2'), 'moveaxis': ('source', 'destination')}.get(inverse, ())
    return args is not None and all(a in args for a in need)


# ---------------------------------------------------------------- reading calls

_VIEW_PARAMS = {'transpose': ('a', 'axes'), 'permute_dims': ('a', 'axes'),
                'swapaxes': ('a', 'axis1', 'axis2'), 'moveaxis': ('a', 'source', 'destination'),
                'flip': ('m', 'axis')}


def _view_arguments(value):
    """The arguments of a view call by parameter name (the viewed array excluded)."""
    if isinstance(value, ast.Attribute):
        return {}
    if not isinstance(value, ast.Call):
        return None
    fn = getanno(value.func, Key.RESOLVED)
    if fn is None:                                   # a method: x.transpose(1, 0), x.swapaxes(0, 1)
        name, args = value.func.attr, list(value.args)
        if name == 'transpose':
            if not args:
                return {}
            return {'axes': args[0] if len(args) == 1 else nodes.tuple_(*args)}
        params = _VIEW_PARAMS.get(name, ())[1:]
    else:
        params = _VIEW_PARAMS.get(getattr(fn, '__name__', ''), ('a',))[1:]
        args = list(value.args[1:])
    if len(args) > len(params):
        return None
    out = dict(zip(params, args))
    for k in value.keywords:
        if k.arg not in params:
            return None
        out[k.arg] = k.value
    return out
