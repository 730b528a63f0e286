"""Native loops: array statements of static shapes written as loops over their elements.

Part of the native pass (`transforms.native`, before the tapes are split). Numba
computes each array operation into an array of its own, at a cost per operation that
dominates on small arrays (W8: 16 x 3); written as explicit loops, each statement is
one nest of scalar code. A statement `name = value` is lowered where every array it
reads is a float64 array whose shape is known when the function is compiled
(`_Shapes`: the arguments' shapes, `ctx.shapes`, and what each binding computes),
and `value` is one of:

- elementwise: numbers, arrays (broadcast by NumPy's rules), `+ - * / **`, unary
  `-`, `np.exp`/`log`/`sin`/`cos`/`tanh`/`sqrt`, basic indexing (`a[None, :, :]`,
  full slices, `None`, integers), and the helpers that move an adjoint without
  arithmetic: `unbroadcast(g, x)` where nothing was broadcast, `grad_of_sum(g, x,
  axis)`, `untake(g, x, idx)` of full slices and `None`, `add_adjoint(a, b)`:

      d = np.empty((16, 16, 3))
      for _i in range(16):
          for _j in range(16):
              for _k in range(3):
                  d[_i, _j, _k] = _item[0, _j, _k] - _item2[_i, 0, _k]

- a reduction of an elementwise value: `np.sum(v, axis=k)` and `unbroadcast(v, x)`
  that sums: one nest over the result, an inner one over what is summed, each
  element starting from -0.0 (`-0.0 + a` is `a`, signed zeros included) and adding
  in index order. NumPy adds a contiguous axis of 8 or more elements pairwise
  (`docs/native.md`): the last bits may differ there.

Each element is computed by the same operations in the same order as NumPy computes
it (`x ** 2` as `x * x`, `x ** 0.5` as `np.sqrt(x)`, `x ** -1` as `1.0 / x`, as
NumPy's power does for those exponents), so the numbers are NumPy's. A statement
that reads an array of unknown shape or dtype, or anything else, is left as it is
(Numba computes it as before): nothing is guessed. The array arguments are float64
by `float64_array(x)`, a Numba typing error (told at the user's line) for another.

Then (`_fusions`) an array that one later nest of the same block reads once, each
element once (or a view, `a[None, :, :]`, read anyhow), is computed there instead of
kept, round by round; and a list tape of a name the reverse sweep no longer reads
(it read `x` for its shape: `unbroadcast(g, x)`) is dropped (`_drop_unread`).
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes
from tapeflow.transforms.native_shapes import (Shapes, axis_keyword, axis_number, calls,
                                               constant, index_parts, popped,
                                               summed_axes)


def lower(fdef, ctx, tapes=()):
    """Lower `fdef`'s array statements in place (the module's docstring); `tapes`: the
    names of its tapes (`transforms.native`: what is popped is what was pushed). Then
    again with each array that one loop reads once, element by element, computed there
    (`_fusions`), until none is left."""
    taken, unfused, gone = set(ctx.namer.taken), nodes.clone(fdef), {}
    while True:
        ctx.namer.taken = set(taken)            # (each round names its loops afresh)
        tree = nodes.clone(fdef)
        originals = dict(zip(map(id, nodes.statements(tree.body)), nodes.statements(fdef.body)))
        lowering = _lower_once(tree, ctx, tapes, gone)
        fused = _fusions(tree, lowering)
        if not fused:
            break
        for producer, consumer in fused:
            gone[producer.targets[0].id] = lowering.shapes.shapes[producer.targets[0].id]
            producer, consumer = originals[id(producer)], originals[id(consumer)]
            name = producer.targets[0].id
            consumer.value = nodes.substitute(consumer.value, {name: producer.value})
            _remove(fdef, {id(producer)})
    if set(gone) & _loaded(tree):        # (a fused array read for its shape: none fused)
        ctx.namer.taken = set(taken)
        tree = unfused
        _lower_once(tree, ctx, tapes, {})
    read, undefined = _loaded(tree), getattr(ctx, 'undefined', ())   # (the jvp: none)
    fdef.body = [stmt for stmt in tree.body if not (      # placeholders nothing reads now
        isinstance(stmt, ast.Assign) and ast.name_id(stmt.targets[0]) in undefined and
        (constant(stmt.value, None) or calls(stmt.value, 'np.full')) and
        ast.name_id(stmt.targets[0]) not in read)]


def _loaded(tree):
    return {n.id for n in nodes.walk(tree) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)}


def _lower_once(fdef, ctx, tapes, gone):
    """One round: `gone`, the shapes of the arrays fused into their one reader (read for
    their shapes alone elsewhere, which the loops no longer read)."""
    shapes = Shapes(fdef, ctx, tapes, gone)
    lowering = _Lowering(shapes, ctx)
    fdef.body = lowering.block(fdef.body)
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and constant(stmt.value, None) and \
                ast.name_id(stmt.targets[0]) in getattr(ctx, 'undefined', ()) and lowering.groups:
            shape = shapes.shapes.get(ast.name_id(stmt.targets[0]))
            if shape:           # its tape's placeholder, as `transforms.native` writes it
                stmt.value = _np('full', nodes.tuple_(*map(nodes.const, shape)),
                                 nodes.attribute(nodes.name('math'), 'nan'))
    if tapes:
        _drop_unread(fdef, ctx.names.value, tapes)
    guards = [nodes.expr_stmt(nodes.call('float64_array', nodes.name(p)))
              for p in sorted(shapes.params) if p in shapes.shapes and lowering.groups]
    fdef.body[:0] = guards
    return lowering


def _fusions(fdef, lowering):
    """(producer, consumer) statements (before lowering): `t = E` elementwise, where `t`
    is read once, by one element of a later loop nest in the same block that visits
    each of `t`'s elements once (or `E` only reads another array's elements,
    `_indexing`: by any such nests), nothing bound between reads what `E` reads, and
    nothing else binds `t` but its placeholder. One link of a chain a round."""
    blocks = {}
    for block in _blocks(fdef.body):
        blocks.update({id(stmt): (block, k) for k, stmt in enumerate(block)})
    inside = {}                         # statement in a nest -> its group
    for group in lowering.groups:
        inside.update({id(s): group for s in nodes.statements([group[2][1]])})
    loads, binds = {}, {}
    for stmt in nodes.statements(fdef.body):
        for node in nodes.own_nodes(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loads.setdefault(node.id, []).append(stmt)
        if isinstance(stmt, ast.Assign) and not constant(stmt.value, None) and \
                not calls(stmt.value, 'np.full'):
            for target in stmt.targets:
                binds[ast.name_id(target)] = binds.get(ast.name_id(target), 0) + 1
    fused, consumers = [], set()
    for stmt, target, made, elementwise in lowering.groups:
        if not elementwise or made[0].targets[0].id != target or binds.get(target) != 1 or \
                id(stmt) in consumers:
            continue
        own = {id(x) for x in nodes.statements([made[1]])}
        reads = [s for s in loads.get(target, ()) if id(s) not in own]
        view = _indexing(stmt.value)            # (computed again at each read: no cost)
        if not reads or any(id(s) not in inside for s in reads) or len(reads) > 1 and not view:
            continue
        found = list({id(inside[id(s)][0]): inside[id(s)] for s in reads}.values())
        read = {n.id for n in nodes.walk(stmt.value) if isinstance(n, ast.Name)}
        if all(_fusible(consumer, view, target, read, blocks, made) for consumer in found):
            fused.extend((stmt, consumer[0]) for consumer in found)
            consumers.update(id(consumer[0]) for consumer in found)
    return fused


def _fusible(consumer, view, target, read, blocks, made):
    """Whether the nest of `consumer` (a group) can compute `target`'s elements itself:
    later in the same block, each element read once (or `view`), and nothing that the
    value of `target` reads bound in between."""
    (block, start), (other, end) = blocks[id(made[0])], blocks[id(consumer[2][0])]
    if other is not block or end <= start or not view and not _visits_once(consumer[2][1],
                                                                             target):
        return False
    return not any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in read
                   for s in block[start + len(made):end] for n in nodes.walk(s))


def _indexing(value):
    """A value that only reads another array's elements: `a[None, :, :]`,
    `grad_of_sum(g, x, axis)`, `untake(g, x, idx)` of a name `g` (or of
    `unbroadcast(g, y)`)."""
    if isinstance(value, ast.Subscript):
        return isinstance(value.value, ast.Name)
    if not (calls(value, 'grad_of_sum') or calls(value, 'untake')):
        return False
    g = value.args[0]       # (an elementwise value: an `unbroadcast` in it sums nothing)
    return isinstance(g, ast.Name) or calls(g, 'unbroadcast') and isinstance(g.args[0], ast.Name)


def _visits_once(nest, name):
    """Whether the one read of `name` in `nest` is at an index of all the loops around it
    (of more than one trip): each element read once."""
    def find(stmt, loops):
        if isinstance(stmt, ast.For):
            for inner in stmt.body:
                yield from find(inner, loops + [stmt])
            return
        for node in nodes.own_nodes(stmt):
            if isinstance(node, ast.Subscript) and ast.name_id(node.value) == name:
                yield node, loops
    for node, loops in find(nest, []):
        used = {n.id for n in nodes.walk(node.slice) if isinstance(n, ast.Name)}
        return all(loop.target.id in used or loop.iter.args[0].value == 1 for loop in loops)
    return False


def _blocks(body):
    yield body
    for stmt in body:
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                yield from _blocks(inner)


def _drop_unread(fdef, value, tapes):
    """The list tapes of names the reverse sweep (from `_value = ...` on) never reads,
    dropped: `_x_tape = []`, `_x_tape.append(x)`, `x = _x_tape.pop()` (after lowering,
    many values are taped for their shapes alone)."""
    start = next((k for k, stmt in enumerate(fdef.body) if isinstance(stmt, ast.Assign)
                  and ast.name_id(stmt.targets[0]) == value), None)
    if start is None:
        return
    read = set()
    for stmt in nodes.statements(fdef.body[start:]):
        if not popped(getattr(stmt, 'value', None), tapes):
            read |= {n.id for n in nodes.own_nodes(stmt) if isinstance(n, ast.Name) and
                     isinstance(n.ctx, ast.Load)}
    uses = {}               # tape -> its statements: [] or .append(x) or x = .pop()
    for stmt in nodes.statements(fdef.body):
        for node in nodes.own_nodes(stmt):
            if isinstance(node, ast.Name) and node.id in tapes:
                uses.setdefault(node.id, []).append((stmt, _tape_use(stmt, node.id)))
    dead = set()
    for tape, found in uses.items():
        names = {name for _, name in found}
        if None not in names and len(names - {''}) == 1 and not names & read:
            dead |= {id(stmt) for stmt, _ in found}
    _remove(fdef, dead)


def _tape_use(stmt, tape):
    """'' for `tape = []`, `x` for `tape.append(x)` or `x = tape.pop()`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        if ast.name_id(stmt.targets[0]) == tape and isinstance(stmt.value, ast.List) and \
                not stmt.value.elts:
            return ''
        value = stmt.value
        if isinstance(value, ast.Call) and not value.args and \
                isinstance(value.func, ast.Attribute) and value.func.attr == 'pop' and \
                ast.name_id(value.func.value) == tape:
            return ast.name_id(stmt.targets[0])
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
            isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == 'append' \
            and ast.name_id(stmt.value.func.value) == tape and len(stmt.value.args) == 1:
        return ast.name_id(stmt.value.args[0])
    return None


def _remove(fdef, dead):
    def block(body):
        out = [stmt for stmt in body if id(stmt) not in dead]
        for stmt in out:
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, block(inner) or [nodes.pass_()])
        return out
    fdef.body = block(fdef.body)


# ------------------------------------------------------------------ loops

class _Lowering:
    """The loop nests of the statements `Shapes` knows."""

    def __init__(self, shapes, ctx):
        self.shapes, self.ctx = shapes, ctx
        self.groups = []            # (statement, target, what it became, elementwise)
        self.indices = []           # the loop variables, by depth

    def block(self, body):
        out = []
        for stmt in body:
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, self.block(inner))
            out.extend(self.statement(stmt) or [stmt])
        return out

    def statement(self, stmt):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
                not isinstance(stmt.targets[0], ast.Name):
            return None
        value, target = stmt.value, stmt.targets[0].id
        shape = self.shapes.of(value)
        if shape and calls(value, 'unbroadcast') and isinstance(value.args[0], ast.Name) and \
                self.shapes.of(value.args[0]) == shape:
            stmt.value = value.args[0]      # (as its twin: `g` itself, nothing broadcast)
            return [stmt]
        if shape and calls(value, 'zeros_like_adjoint'):
            stmt.value = _np('zeros', nodes.tuple_(*map(nodes.const, shape)))   # (as its twin)
            return [stmt]
        if not shape or isinstance(value, ast.Name):
            return None             # a number, unknown, or another name's array
        summed = self._summed(value)
        if summed is None and not self._elementwise(value, shape):
            return None
        loaded = {n.id for n in nodes.walk(value) if isinstance(n, ast.Name)}
        out = self.ctx.namer.new(f'_{target.lstrip("_")}_new') if target in loaded else target
        index = self._indices(len(shape))
        if summed is None:
            element = self.element(value, index, shape)
            body = [nodes.assign(self._at(out, index, store=True), element)]
        else:
            body = self._reduction(out, summed, index, shape)
        made = [nodes.assign(out, _np('empty', nodes.tuple_(*map(nodes.const, shape))))]
        made.append(self._nest(index, shape, body))
        if out != target:
            made.append(nodes.assign(target, nodes.name(out)))
        made = [nodes.located(s, stmt) for s in made]
        self.groups.append((stmt, target, made, summed is None))
        return made

    def _summed(self, value):
        """(the value summed, the axes of it summed, those kept) of a reduction, or None."""
        if calls(value, 'np.sum'):
            inner = value.args[0]
            shape = self.shapes.of(inner, False)
            axis = axis_number(axis_keyword(value), len(shape))
            return inner, (axis,), ()
        if calls(value, 'unbroadcast'):
            g, x = (self.shapes.of(a, False) for a in value.args)
            if g != x:         # (summed where `x` has 1: kept, of length 1)
                axes = summed_axes(g, x)
                return value.args[0], axes, tuple(a for a in axes if a >= len(g) - len(x))
        return None

    def _elementwise(self, value, shape):
        return self.shapes.of(value, False) == shape

    def _reduction(self, out, summed, index, shape):
        inner, axes, kept = summed
        whole = self.shapes.of(inner, False)
        total = self.ctx.namer.new(f'_{out.lstrip("_")}_sum')
        full, k, loops = [], 0, []
        for axis in range(len(whole)):
            if axis in axes:
                var = self._index(len(index) + len(loops))
                loops.append((var, whole[axis]))
                full.append(nodes.name(var))
                k += axis in kept
            else:
                full.append(index[k])
                k += 1
        add = nodes.assign(total, nodes.binop(nodes.name(total), ast.Add(),
                                              self.element(inner, full, whole)))
        nest = self._nest([nodes.name(v) for v, _ in loops], [n for _, n in loops], [add])
        return [nodes.assign(total, nodes.unary(ast.USub(), nodes.const(0.0))), nest,
                nodes.assign(self._at(out, index, store=True), nodes.name(total))]

    def _index(self, depth):
        while len(self.indices) <= depth:
            self.indices.append(self.ctx.namer.new('_' + 'ijklmnopqrst'[len(self.indices)]))
        return self.indices[depth]

    def _indices(self, ndim):
        return [nodes.name(self._index(k)) for k in range(ndim)]

    @staticmethod
    def _nest(index, shape, body):
        for var, n in reversed(list(zip(index, shape))):
            body = [nodes.for_(nodes.name(var.id, store=True),
                               nodes.call('range', nodes.const(n)), body)]
        return body[0]

    @staticmethod
    def _at(name, index, store=False):
        part = index[0] if len(index) == 1 else nodes.tuple_(*index)
        return nodes.subscript(nodes.name(name), part, store=store)

    def element(self, node, index, shape):
        """The element of `node` (of static shape broadcasting to `shape`) at `index`
        (one expression a loop variable or 0 per axis of `shape`)."""
        own = self.shapes.of(node, False)
        if own == ():
            return nodes.clone(node)
        mine = [nodes.const(0) if n == 1 else nodes.clone(i)
                for i, n in zip(index[len(index) - len(own):], own)]
        if isinstance(node, ast.Name):
            return self._at(node.id, mine)
        if isinstance(node, ast.Subscript):
            return self.element(node.value, _through(index_parts(node.slice), mine),
                                self.shapes.of(node.value, False))
        if isinstance(node, ast.BinOp):
            return self._binop(node, mine, own)
        if isinstance(node, ast.UnaryOp):
            return nodes.unary(node.op.__class__(), self.element(node.operand, mine, own))
        if calls(node, 'add_adjoint'):
            a, b = (self.element(arg, mine, own) for arg in node.args)
            return nodes.binop(a, ast.Add(), b)
        if calls(node, 'unbroadcast'):
            return self.element(node.args[0], mine, own)
        if calls(node, 'grad_of_sum'):
            if len(node.args) == 2:     # (a number: `Shapes.of`)
                return nodes.clone(node.args[0])
            axis = axis_number(node.args[2], len(own))
            return self.element(node.args[0], mine[:axis] + mine[axis + 1:],
                                own[:axis] + own[axis + 1:])
        if calls(node, 'untake'):
            kinds = index_parts(node.args[2])
            spread = iter(mine)
            inner = [nodes.const(0) if k is None else next(spread) for k in kinds]
            return self.element(node.args[0], inner, self.shapes.of(node.args[0], False))
        return nodes.call(nodes.clone(node.func), self.element(node.args[0], mine, own))

    def _binop(self, node, index, shape):
        left = self.element(node.left, index, shape)
        power = node.right.value if isinstance(node.op, ast.Pow) and \
            isinstance(node.right, ast.Constant) else None
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.UnaryOp) and \
                isinstance(node.right.op, ast.USub) and \
                isinstance(node.right.operand, ast.Constant):
            power = -node.right.operand.value
        if power == 2:              # as NumPy's power computes these exponents
            return nodes.binop(left, ast.Mult(), self.element(node.left, index, shape))
        if power == 0.5:
            return _np('sqrt', left)
        if power == -1:
            return _np('divide', nodes.const(1.0), left)
        right = self.element(node.right, index, shape)
        if isinstance(node.op, (ast.Div, ast.Pow)):     # NumPy's: inf or nan, never an error
            return _np('divide' if isinstance(node.op, ast.Div) else 'power', left, right)
        return nodes.binop(left, node.op.__class__(), right)


def _np(function, *args):
    return nodes.call(nodes.attribute(nodes.name('np'), function), *args)


def _through(kinds, index):
    """The index of `a` that `a[kinds]` at `index` reads."""
    out, spread = [], iter(index)
    for kind in kinds:
        at = next(spread) if kind is None or kind == ':' else None
        if kind == ':':
            out.append(at)
        elif kind is not None:
            out.append(nodes.const(kind))
    return out
