"""Lowering: the calls known to write, as the writes the sweeps differentiate.

`Lowerings.lowering(form, call, name, target, state)` gives the statements
of a known writing call (`analysis.call_writes`) in forms the reverse and
forward passes handle exactly: subscript writes of what NumPy computes
(`out=`, `np.copyto`, `np.put`, `np.place`, `np.putmask`,
`np.fill_diagonal`, `ufunc.at`, `.fill()`, `.sort()`, `.partition()`),
`ys.append(v)`, `ys.pop(i)` (its value read first), `ys.insert(i, v)` at a
position counted from the start, and `ys.extend(xs)` as one append per
item. The statements compute what the call computes, and bind `target` to
what it returns; None where there is no lowering (a form without one,
arguments that cannot be read, an option such as `where=` not lowered):
the call is then run as written. `Lowerings` is a mixin of the rewriter of
`transforms.mutation`, whose `new(base)` makes fresh names. The helpers
emitted code calls (`runtime_ref`, `numpy_ref`, `whole`) are here too.
"""
from __future__ import annotations

from tapeflow.syntax import ast
import numpy as np

from tapeflow.analysis import aliasing as al
from tapeflow.rules import mutation as table
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.sugar.generators import is_generator


# ---------------------------------------------------------------- helpers for emitted code

def runtime_ref(name):
    """A helper of generated code the rewrites call, resolved (its rules are found)."""
    from tapeflow.rules import array_ops
    ref = nodes.name(name)
    setanno(ref, Key.RESOLVED, getattr(table, name, None) or getattr(array_ops, name))
    return ref


def whole():
    return nodes.const(Ellipsis)


class Lowerings:
    """The statements of the known writes (a mixin: `self.new(base)` makes a fresh name)."""

    def concatenation(self, name, binop):
        """`name = a + b` of two lists: a new list, each item appended (and differentiated)."""
        made = self.new('_list')
        out = [nodes.assign(made, nodes.list_())]
        for part in (binop.left, binop.right):
            out += self.extend(made, part)
        return out + [nodes.assign(name, made)]

    def sequence_op(self, stmt, name, binop, state):
        """`a + b` and `a * n` where an operand is a list or a tuple: concatenation and
        repetition (`rules.sequence_ops`), not arithmetic; where no kind tells, decided when
        the code runs (`add_any`, `mul_any`)."""
        from tapeflow.rules import sequence_ops
        ka, kb = kind_of(binop.left, state), kind_of(binop.right, state)
        sequences = (al.LIST, al.TUPLE)
        if isinstance(binop.op, ast.Add):
            if ka == kb == al.LIST:
                return self.concatenation(name, binop)
            if ka in sequences and kb in sequences:
                fn = sequence_ops.concatenated
            elif ka in sequences or kb in sequences:    # the other an array, maybe: NumPy adds
                fn = sequence_ops.add_any
            elif ka is None and kb is None and self._opaque(binop):
                fn = sequence_ops.add_any
            else:
                return [stmt]
            args = [binop.left, binop.right]
        elif isinstance(binop.op, ast.Mult):
            if ka in sequences:
                fn, args = sequence_ops.repeated, [binop.left, binop.right]
            elif kb in sequences:
                fn, args = sequence_ops.repeated, [binop.right, binop.left]
            elif self._opaque(binop) and ((ka is None and kb is None) or
                                          (ka is None and _is_int(binop.right)) or
                                          (kb is None and _is_int(binop.left))):
                fn, args = sequence_ops.mul_any, [binop.left, binop.right]
            else:
                return [stmt]
        else:
            return [stmt]
        ref = self.new('_' + fn.__name__)
        self.ctx.bind(ref, fn)
        func = nodes.name(ref)
        setanno(func, Key.RESOLVED, fn)
        stmt.value = nodes.copy_location(nodes.call(func, *args), binop)
        return [stmt]

    def _opaque(self, binop) -> bool:
        """Whether an operand of `binop` is a value nothing tells the kind of: what a call
        resolved at run time returned, or an item or a sum of such."""
        if getattr(self, 'opaque_values', None) is None:
            from tapeflow.transforms.targets import opaque_names
            self.opaque_values = opaque_names(self.fdef)
        return any(isinstance(a, ast.Name) and a.id in self.opaque_values
                   for a in (binop.left, binop.right))

    def items_read(self, loop, state) -> dict:
        """{d: _items} for each sequence `d` of `loop` that `iterated_loop` reads through
        `_items = iterated(d)`; named before the loop's body is rewritten, so that a write
        in it into what may be `d` brings `_items` up to date too (`self.items_of`)."""
        planned = getattr(self, 'planned_items', None)
        if planned is None:
            planned = self.planned_items = {}
            self.items_of = {}              # d -> the names its items are read through
        if id(loop) not in planned:
            planned[id(loop)] = {}
            for seq in getanno(loop, Key.ITERATED) or ():
                if kind_of(nodes.name(seq), state) in (al.LIST, al.TUPLE, al.ARRAY,
                                                       al.NUMERIC) \
                        and seq not in self.generator_made():
                    continue
                items = planned[id(loop)][seq] = self.new('_items')
                self.items_of.setdefault(seq, []).append(items)
        return planned[id(loop)]

    def iterated_loop(self, loop, state):
        """`for _i in range(len(d)): v = d[_i]` (a loop over a sequence, `desugar`) where `d`
        may not be one (a dict: its keys; a set, a generator: their items): `d` read once,
        through `iterated`, into what the loop indexes."""
        from tapeflow.rules.iterators import iterated
        pre = []
        origin = nodes.origin(loop)
        index = loop.target.id if isinstance(loop.target, ast.Name) else None
        for seq, items in self.items_read(loop, state).items():
            func = nodes.name(self.new('_iterated'))
            self.ctx.bind(func.id, iterated)
            setanno(func, Key.RESOLVED, iterated)
            pre.append(nodes.assign(items, nodes.call(func, seq)))
            for n in nodes.walk_terms(loop.iter):
                if isinstance(n, ast.Name) and n.id == seq:
                    n.id = items
            for head in loop.body:
                if nodes.origin(head) != origin:
                    break
                for n in nodes.walk_terms(head):
                    if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                            n.value.id == seq and isinstance(n.slice, ast.Name) and \
                            n.slice.id == index:
                        n.value = nodes.name(items)
        return nodes.located(pre, loop) + [loop]

    def generator_made(self) -> set:
        """Names bound to a generator function's call: a list where it is compiled, a
        generator where it runs as written (no derivative flows into it)."""
        if getattr(self, '_generator_made', None) is None:
            self._generator_made = {s.targets[0].id for s in nodes.statements(self.fdef.body)
                                    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                                    and isinstance(s.targets[0], ast.Name)
                                    and is_generator(getanno(s.value.func, Key.RESOLVED))}
        return self._generator_made

    def array_update(self, name, binop):
        tmp = self.new('_' + name)
        return [nodes.assign(tmp, binop),
                nodes.assign(nodes.subscript(name, whole(), store=True), tmp)]

    def extend(self, name, items):
        """`name.extend(items)`, one append per item (each is differentiated)."""
        if not isinstance(items, ast.Name):
            seq = self.new('_items')
            head = [nodes.assign(seq, items)]
        else:
            seq, head = items.id, []
        index, item = self.new('_i'), self.new('_item')
        length = nodes.call(nodes.builtin('len'), seq)
        loop = nodes.for_(index, nodes.call(nodes.builtin('range'), length),
                          [nodes.assign(item, nodes.subscript(seq, index)),
                           nodes.expr_stmt(nodes.call(nodes.attribute(name, 'append'), item))])
        return head + [loop]

    def repeat(self, name, binop):
        """`ys *= n` of a list: its first `len(ys)` slots appended `n - 1` times more (the
        same objects, as Python repeats them), or every slot popped where `n <= 0` -- the
        same list object, as Python keeps it."""
        length, times = self.new('_length'), self.new('_times')
        rnd, index, item = self.new('_round'), self.new('_i'), self.new('_item')

        def loop(target, count, body):
            return nodes.for_(target, nodes.call(nodes.builtin('range'), count), body)
        again = loop(rnd, nodes.binop(nodes.name(times), ast.Sub(), nodes.const(1)), [
            loop(index, nodes.name(length), [
                nodes.assign(item, nodes.subscript(name, index)),
                nodes.expr_stmt(nodes.call(nodes.attribute(name, 'append'), item))])])
        cleared = nodes.if_(nodes.compare(nodes.name(times), ast.LtE(), nodes.const(0)), [
            loop(self.new('_'), nodes.name(length), [
                nodes.expr_stmt(nodes.call(nodes.attribute(name, 'pop')))])])
        return [nodes.assign(length, nodes.call(nodes.builtin('len'), name)),
                nodes.assign(times, binop.right), again, cleared]

    def lowering(self, form, call, name, target, state):
        """The statements of a known write, as subscript writes and appends; None: run as written."""
        build = getattr(self, 'lower_' + form, None)
        if build is None:
            return None
        self.kind_now = state.kinds.get(name)
        args = _arguments(call, form)
        if args is None:
            return None
        out = build(call, name, args)
        if out is None or form in ('pop', 'dict_pop', 'dict_setdefault'):
            return out if out is None else out(target)
        if target is not None:
            out.append(nodes.assign(target, name))      # the call returns what it wrote
        return out

    # Each lower_<form>(call, written name, arguments by parameter name) -> statements.

    def lower_out(self, call, name, args):
        keywords = [k for k in call.keywords if k.arg != 'out']
        if any(k.arg == 'where' for k in keywords):
            return None
        value = self.new('_' + _callee_label(call))
        fn = getanno(call.func, Key.RESOLVED)
        args = call.args[:fn.nin] if isinstance(fn, np.ufunc) else call.args
        if len(al.out_arguments(call)) != 1:
            return None
        computed = nodes.call(call.func, *args, keywords=keywords)
        return [nodes.assign(value, computed), self.write_all(name, value)]

    def lower_copyto(self, call, name, args):
        src = args.get('src')
        if src is None or args.get('casting') is not None and not ast.is_const(args['casting']):
            return None
        where = args.get('where')
        if where is None or ast.is_const(where, True):
            return [nodes.assign(nodes.subscript(name, whole(), store=True), src)]
        chosen, mask, values = self.new('_where'), self.new('_mask'), self.new('_values')
        return [nodes.assign(mask, _like(where, name)), nodes.assign(values, _like(src, name)),
                nodes.assign(chosen, nodes.call(numpy_ref('where'), mask, values, name)),
                self.write_all(name, chosen)]

    def lower_put(self, call, name, args):
        if 'ind' not in args or 'v' not in args:
            return None
        index = self.new('_index')
        mode = args.get('mode', nodes.const('raise'))
        return [nodes.assign(index, nodes.call(runtime_ref('put_index'), name, args['ind'], mode))
                ] + self.write_cycled(name, index, args['v'], call)

    def lower_place(self, call, name, args):
        if 'mask' not in args or 'vals' not in args:
            return None
        shape, mask = self.new('_shape'), self.new('_mask')
        return [nodes.assign(shape, nodes.call(numpy_ref('shape'), name)),
                nodes.assign(mask, nodes.call(runtime_ref('as_mask'), args['mask'], shape))
                ] + self.write_cycled(name, mask, args['vals'], call)

    def write_cycled(self, name, where, values, call):
        """`name[where] = values`, `values` repeated or cut to as many as `where` selects
        (how `np.put`, `np.place` and `np.fill_diagonal` read their values)."""
        count, resized, cycled = self.new('_count'), self.new('_resized'), self.new('_values')
        return self.values_apart(call, name, values) + [
                nodes.assign(count, nodes.call(runtime_ref('index_size'), where)),
                nodes.assign(resized, nodes.call(runtime_ref('cycled'), values, count)),
                nodes.assign(cycled, _like(resized, name)),
                nodes.assign(nodes.subscript(name, where, store=True), cycled)]

    def lower_putmask(self, call, name, args):
        if 'mask' not in args or 'values' not in args:
            return None
        shape, mask, values, chosen = (self.new('_shape'), self.new('_mask'), self.new('_values'),
                                       self.new('_where'))
        flat_mask, resized = self.new('_flat_mask'), self.new('_resized')
        return self.values_apart(call, name, args['values']) + [
                nodes.assign(shape, nodes.call(numpy_ref('shape'), name)),
                nodes.assign(flat_mask, nodes.call(runtime_ref('as_mask'), args['mask'], shape)),
                nodes.assign(mask, _like(flat_mask, name)),
                nodes.assign(resized, nodes.call(runtime_ref('cycled'), args['values'], shape)),
                nodes.assign(values, _like(resized, name)),
                nodes.assign(chosen, nodes.call(numpy_ref('where'), mask, values, name)),
                self.write_all(name, chosen)]

    def values_apart(self, call, name, values) -> list:
        """NumPy's put, place, putmask and fill_diagonal read their values while they write:
        values sharing memory with the array written are read changed (np.place(a, m, v)
        with v a view of a); the lowering reads them first, so such a call is refused
        where it runs (a located refusal), never computed otherwise."""
        if not isinstance(values, ast.Name):
            return []
        into = name if not name.startswith('_') else 'the array it writes'
        return [self.apart(call, values.id, name,
                           f'the values np.{_callee_label(call)}() reads share memory with '
                           f'{into}, which it writes as it reads them -- pass a .copy() of the values')]

    def lower_fill_diagonal(self, call, name, args):
        if 'val' not in args:
            return None
        index = self.new('_index')
        wrap = args.get('wrap', nodes.const(False))
        return [nodes.assign(index, nodes.call(runtime_ref('diagonal_index'), name, wrap))
                ] + self.write_cycled(name, index, args['val'], call)

    def lower_at(self, call, name, args):
        ufunc = getanno(call.func.value, Key.RESOLVED)
        if ufunc not in (np.add, np.subtract) or 'b' not in args or 'indices' not in args:
            return None
        out, value = [], args['b']
        if ufunc is np.subtract:
            negated = self.new('_neg')
            out.append(nodes.assign(negated, nodes.call(numpy_ref('negative'), value)))
            value = nodes.name(negated)
        added = self.new('_add_at')
        return out + [nodes.assign(added, nodes.call(runtime_ref('add_at'), name, args['indices'], value)),
                      self.write_all(name, added)]

    def lower_fill(self, call, name, args):
        if 'value' not in args:
            return None
        # (a CuPy number into a NumPy array: `fill` reads it as a number, a write would not)
        value = self.new('_values')
        return [nodes.assign(value, _like(args['value'], name)),
                nodes.assign(nodes.subscript(name, whole(), store=True), value)]

    def lower_sort(self, call, name, args):
        return self.lower_reorder('sort', call, name, args, ())

    def lower_partition(self, call, name, args):
        if 'kth' not in args:
            return None
        return self.lower_reorder('partition', call, name, args, (args['kth'],))

    def lower_reorder(self, fn, call, name, args, leading):
        if args.get('order') is not None:
            return None
        result = self.new('_' + fn)
        keywords = [(k, args[k]) for k in ('axis', 'kind') if k in args]
        return [nodes.assign(result, nodes.call(numpy_ref(fn), name, *leading, keywords=keywords)),
                self.write_all(name, result)]

    def lower_append(self, call, name, args):
        if call.func.attr == 'extend':
            return self.extend(name, args['iterable']) if 'iterable' in args else None
        return [nodes.expr_stmt(call)] if len(call.args) == 1 and not call.keywords else None

    def lower_pop(self, call, name, args):
        """`v = ys.pop(i)`: `v = ys[i]` then the removal (the reverse sweep puts it back)."""
        index = args.get('index', nodes.const(-1))
        if call.keywords or not _is_int_atom(index):
            return None
        removal = nodes.expr_stmt(nodes.call(nodes.attribute(name, 'pop'), *(
            [index] if 'index' in args else [])))
        return lambda target: ([nodes.assign(target, nodes.subscript(name, nodes.clone(index)))]
                               if target is not None else []) + [removal]

    def lower_insert(self, call, name, args):
        """`ys.insert(i, v)` at the position counted from the start (the reverse sweep pops it)."""
        if call.keywords or 'index' not in args or 'object' not in args:
            return None
        at = self.new('_at')
        return [nodes.assign(at, nodes.call(runtime_ref('insert_index'), name, args['index'])),
                nodes.expr_stmt(nodes.call(nodes.attribute(name, 'insert'), at, args['object']))]

    def write_all(self, name, value):
        return nodes.assign(nodes.subscript(name, whole(), store=True), value)


# ---------------------------------------------------------------- reading calls

def _arguments(call, form):
    """The arguments of a known writing call by parameter name, or None if they cannot be read."""
    if form == 'out':
        return {}
    if form == 'at':
        params = table.UFUNC_METHODS['at'].params
        args = call.args
    elif isinstance(call.func, ast.Attribute) and getanno(call.func, Key.RESOLVED) is None:
        mutator = (table.LIST_METHODS.get(call.func.attr) if form in ('append', 'pop', 'insert') else
                   table.DICT_METHODS.get(call.func.attr) if form.startswith('dict_') else
                   table.ARRAY_METHODS.get(call.func.attr))
        params, args = mutator.params, call.args
    else:
        mutator = table.mutator_of_function(getanno(call.func, Key.RESOLVED))
        params, args = mutator.params[1:], call.args[1:]
    if len(args) > len(params):
        return None
    out = dict(zip(params, args))
    if form == 'dict_update':
        return out                      # (its keywords are the items it writes)
    for k in call.keywords:
        if k.arg not in params or k.arg in out:
            return None
        out[k.arg] = k.value
    return out


def _is_int_atom(node) -> bool:
    return isinstance(node, ast.Name) or (isinstance(node, ast.Constant)
                                           and isinstance(node.value, int))


def numpy_ref(name):
    ref = nodes.attribute(nodes.name('np'), name)
    setanno(ref.value, Key.RESOLVED, np)
    setanno(ref, Key.RESOLVED, getattr(np, name))
    return ref


def _callee_label(call):
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', 'out')


def _like(value, name):
    """`value` (a mask, values a NumPy function reads) in the library of the array `name`
    it is written into: `to_library` (CuPy takes no NumPy operand; NumPy's arrays pass)."""
    return nodes.call(runtime_ref('to_library'), value, nodes.name(name))


def _is_int(atom) -> bool:
    return isinstance(atom, ast.Constant) and type(atom.value) is int


def kind_of(atom, state):
    """What `atom` holds there: its name's kind, a constant's, a resolved object's."""
    if isinstance(atom, ast.Name) and atom.id in state.kinds:
        return state.kinds[atom.id]
    if isinstance(atom, ast.Constant):
        return al.kind_of_value(atom.value)
    resolved = getanno(atom, Key.RESOLVED)
    return al.kind_of_value(resolved) if resolved is not None else None
