"""Mutation: every write to memory becomes one the reverse and forward passes differentiate exactly.

Runs on ANF, after `anf` and before `activity`, with the facts of
`analysis.aliasing`. The passes after it reason as if Python had value
semantics: a statement changes the name it assigns and nothing else. This
pass makes that true of the program it hands on:

- a write is lowered to the forms those passes know -- `y[idx] = v` (saved
  and restored in place; NumPy's last-write-wins for repeated indices),
  `ys.append(v)`, `ys.pop(i)`, or an ordinary assignment: `y += v` on an
  array nothing else sees is `y = y + v`; seen by other names it is
  `y[...] = y + v`; `out=`, `np.copyto`, `np.put`, `np.place`,
  `np.putmask`, `np.fill_diagonal`, `ufunc.at`, `.fill()`, `.sort()`,
  `.partition()`, `.put()` are subscript writes of what NumPy computes;
  `ys.extend(xs)` appends in a loop; a call of a user function that writes
  into its arguments calls a variant returning them (`callees`), and the
  caller rebinds them;
- after a write, every other name that sees the memory written and is read
  later is brought up to date from the name written, along the equations of
  `analysis.aliasing` (`v = y[:2]`: a write to `v` is followed by
  `y[:2] = v`; a write to `y` by `v = y[:2]`); where sharing is decided at
  run time (`reshape` copies a non-contiguous array), by a branch on
  `shares(v, y)`;
- a write whose sharing is not known exactly (an alias made in one branch
  only, a global, a method tapeflow does not know) is run as written and
  undone in the reverse sweep (`Key.MUTATES`); it gets a `Pending` refusal,
  raised by `check` after activity if a derivative flows through it.

Guarantees: the returned body computes the same values as the original for
every name it reads; `Result` lists the pending refusals, the parameters
written, and whether aliased memory was written (derivatives of such code
are refused: the restores of the reverse sweep change memory behind names).
"""
from __future__ import annotations

import dataclasses

import gast
import numpy as np

from tapeflow.analysis import aliasing as al
from tapeflow.analysis.liveness import Liveness
from tapeflow.rules import mutation as table
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.operations import index_value, user_function


@dataclasses.dataclass
class Pending:
    """A refusal raised after activity if any of `names` carries a derivative; with
    `runtime`, a check statement in the code that raises it there only where the memory
    is shared when it runs (dropped where no derivative flows)."""
    node: object
    names: frozenset
    reason: str
    runtime: object = None


@dataclasses.dataclass
class Result:
    pending: list
    written_params: frozenset        # parameters whose memory the function writes into
    aliased_writes: list             # statements that wrote memory other names see
    kinds: dict                      # name -> kind, joined over the whole function
    param_kinds: dict


@dataclasses.dataclass
class Context:
    source: object
    namer: object
    param_kinds: dict
    summary: object = None           # (fn, kinds) -> aliasing.Summary
    variant: object = None           # (fn, positions written) -> the function returning them
    bind: object = None              # (name, object): generated code may call it by that name


def transform(node: gast.FunctionDef, ctx: Context) -> Result:
    facts = al.Aliasing(node, ctx.param_kinds, ctx.summary)
    live = Liveness(node.body)
    rewriter = _Rewriter(ctx, facts, live, node)
    node.body = rewriter.views_decided(rewriter.block(node.body))
    return Result(rewriter.pending, frozenset(rewriter.written_params), rewriter.aliased,
                  _kinds(facts), dict(ctx.param_kinds))


def check(result: Result, active: set, source, node) -> None:
    """Raise the first pending refusal a derivative flows through; keep the run-time
    checks a derivative flows through, and drop the others from `node`."""
    unneeded = set()
    for pending in result.pending:
        if pending.runtime is not None:
            if not pending.names & active:
                unneeded.add(id(pending.runtime))
        elif pending.names & active:
            raise source.error(pending.node, pending.reason)
    if unneeded:
        _drop(node, unneeded)


def _drop(node, ids):
    for stmt in [node] + list(nodes.statements(node.body)):
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and any(id(s) in ids for s in block):
                setattr(stmt, field, [s for s in block if id(s) not in ids]
                        or ([] if field == 'orelse' else [nodes.pass_()]))


def _kinds(facts) -> dict:
    out = {}
    for state in list(facts.after.values()) + [facts.entry]:
        for name, kind in state.kinds.items():
            out[name] = kind if name not in out else al.join_kinds(out[name], kind)
    return out


# ---------------------------------------------------------------- helpers for emitted code

def _assign(target, value):
    return nodes.assign(target, value)


def _runtime(name):
    """A helper of generated code the rewrites call, resolved (its rules are found)."""
    from tapeflow.rules import array_ops
    ref = nodes.name(name)
    setanno(ref, Key.RESOLVED, getattr(table, name, None) or getattr(array_ops, name))
    return ref


def _whole():
    return nodes.const(Ellipsis)


class _Rewriter:
    def __init__(self, ctx, facts, live, fdef):
        self.ctx = ctx
        self.facts = facts
        self.live = live
        self.fdef = fdef
        self.pending = []
        self.written_params = set()
        self.aliased = []
        self.params = [a.id for a in fdef.args.args]
        self.flags = {}           # id(statement making a view) -> {(derived, source): flag}
        self._holders = None      # object -> names that may reach it somewhere (`holders`)
        self.passed = self._passed_to_callees(fdef)

    def _passed_to_callees(self, fdef) -> set:
        """Objects the arguments of a user call may reach: its forward may keep them on the
        tape, and its backward reads them then, as the memory holds them."""
        passed = set()
        for stmt in nodes.statements(fdef.body):
            call = stmt.value if isinstance(stmt, (gast.Assign, gast.Expr)) else None
            state = self.facts.before.get(id(stmt))
            if state is None or not isinstance(call, gast.Call) or user_function(call) is None:
                continue
            for a in call.args:
                if isinstance(a, gast.Name):
                    passed |= set(al.reach(state, a.id))
        return passed

    def new(self, base):
        return self.ctx.namer.new(base)

    def view_flag(self, e) -> str:
        """The name holding whether `e.derived` was made a view of `e.source` (NumPy decides,
        at run time); set right after the statement that made it (`views_decided`)."""
        flags = self.flags.setdefault(e.origin, {})
        key = e.made or (e.derived, e.source)      # the names at the statement that made it
        if key not in flags:
            flags[key] = self.new('_is_view')
        return flags[key]

    def views_decided(self, body):
        """`body` with each flag of `view_flag` set after its statement (False before)."""
        if not self.flags:
            return body
        def insert(stmts):
            out = []
            for stmt in stmts:
                for field in ('body', 'orelse'):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list) and inner and not isinstance(stmt, gast.FunctionDef):
                        setattr(stmt, field, insert(inner))
                out.append(stmt)
                for (derived, source), flag in self.flags.get(id(stmt), {}).items():
                    out.append(nodes.located(nodes.assign(flag, nodes.call(
                        _runtime('shares'), derived, source)), stmt))
            return out
        prologue = [nodes.located(nodes.assign(flag, False), self.fdef)
                    for flags in self.flags.values() for flag in flags.values()]
        return prologue + insert(body)

    def error(self, node, reason):
        return self.ctx.source.error(node, reason)

    # ---------------------------------------------------------------- blocks

    def block(self, stmts):
        out = []
        for stmt in stmts:
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and not isinstance(stmt, gast.FunctionDef):
                    setattr(stmt, field, self.block(inner))
            new = self.statement(stmt) if id(stmt) in self.facts.before else [stmt]
            nodes.located(new, stmt)
            out.extend(new)
        return out

    def statement(self, stmt):
        state = self.facts.before[id(stmt)]
        call = stmt.value if isinstance(stmt, (gast.Assign, gast.Expr)) else None
        if isinstance(call, gast.Call) and user_function(call) is not None:
            setanno(call, Key.ARG_KINDS, tuple(state.kinds.get(a.id) if isinstance(a, gast.Name)
                                               else _atom_kind(a) for a in call.args))
        return self.write(stmt, state)

    def discarded_call(self, stmt, call, state):
        """`h(x)` as a statement: nothing flows from its result; if `h` writes into a global,
        a derivative that flows through it would be lost."""
        fn = user_function(call)
        kinds = tuple(state.kinds.get(a.id) if isinstance(a, gast.Name) else _atom_kind(a)
                      for a in call.args)
        if self.ctx.summary is not None and self.ctx.summary(fn, kinds).outer:
            self.pending.append(Pending(stmt, frozenset(nodes.load_names(call)),
                                        f'{fn.__name__}() writes into a global or closure value; '
                                        f'a derivative through it is not followed -- return the '
                                        f'value instead'))

    def write(self, stmt, state):
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
                return self.setitem(stmt, target, state)
            if isinstance(target, gast.Name) and getanno(stmt, Key.IN_PLACE) \
                    and isinstance(stmt.value, gast.BinOp):
                return self.in_place(stmt, target.id, state)
            if isinstance(stmt.value, gast.Call):
                return self.call(stmt, stmt.value, target.id if isinstance(target, gast.Name)
                                 else None, state)
            if isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.Add) \
                    and isinstance(target, gast.Name) and _kind_of(stmt.value.left, state) == al.LIST \
                    and _kind_of(stmt.value.right, state) == al.LIST:
                return self.concatenation(target.id, stmt.value)
            return [stmt]
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
            if user_function(stmt.value) is not None:
                self.discarded_call(stmt, stmt.value, state)
            return self.call(stmt, stmt.value, None, state)
        return [stmt]

    # ---------------------------------------------------------------- who else sees a write

    def written_objects(self, name, state, deep=False):
        """The objects whose memory a write into `name` changes (views and viewed ones too);
        `deep`: into what its slots hold too (a callee writing into a list's arrays)."""
        objects = al.overlapping(state, al.reach(state, name) if deep
                                 else state.pts.get(name, frozenset()))
        for p in self.params:
            if objects & {(al.PARAM, p), (al.PARAM_ITEMS, p)}:
                self.written_params.add(p)
        return objects

    def affected(self, stmt, name, state, deep=False):
        """Names read after `stmt` that may see the memory `name` holds (besides `name`)."""
        objects = self.written_objects(name, state, deep)
        if not objects:
            return set(), False
        after = self.live.live_after.get(id(stmt), set())
        seen = {n for n in after if n != name and n in state.kinds
                and al.reach(state, n) & objects}
        outer = any(o[0] == al.OUTER for o in objects)
        return seen, outer

    # ---------------------------------------------------------------- the writes

    def setitem(self, stmt, target, state):
        name = target.value.id
        if getanno(target.value, Key.RESOLVED) is not None and name not in state.kinds:
            return self.outer_write(stmt, name, stmt, state)
        if state.kinds.get(name) == al.TUPLE:
            return [stmt]
        return self.after_write(stmt, self.overlap_checked(stmt, stmt, state), name, state,
                                values=nodes.load_names(stmt.value),
                                structural=state.kinds.get(name) in (al.LIST, al.DICT))

    def overlap_checked(self, stmt, write, state):
        """`y[i] = v` where `v` may share memory with `y`: NumPy copies element by element,
        so what it writes is `v`'s old value only where no element read was written
        before; checked at run time (`check_overlap`), a located refusal where it is not."""
        value, target = write.value, write.targets[0]
        if not isinstance(target, gast.Subscript) or not isinstance(value, gast.Name):
            return [write]
        name = target.value.id
        if state.kinds.get(name) not in (al.ARRAY, al.NUMERIC, None):
            return [write]
        mine = al.overlapping(state, state.pts.get(name, frozenset()))
        if not mine & al.overlapping(state, state.pts.get(value.id, frozenset())):
            return [write]
        expected = self.new('_expected')
        into = name if not name.startswith('_') else 'the array it writes into'
        where = self.error(stmt, f'the value this writes shares memory with {into}, and NumPy '
                                 f'changed elements of it before reading them -- write a .copy() '
                                 f'of the value')
        index = index_value(nodes.clone(target.slice))
        return [nodes.assign(expected, nodes.call(_runtime('overlap_value'), name, value.id)),
                write,
                nodes.expr_stmt(nodes.call(_runtime('check_overlap'), name, index, expected,
                                           nodes.const(where.reason), nodes.const(where.filename),
                                           nodes.const(where.lineno),
                                           nodes.const(where.offset - 1)))]

    def in_place(self, stmt, name, state):
        """`name = name <op> value`, written `name <op>= value`."""
        kind = state.kinds.get(name)
        if kind in (al.SCALAR, al.TUPLE):
            return [stmt]                            # immutable: a new object, nobody else changes
        base = getanno(stmt, Key.IN_PLACE)
        if isinstance(base, str) and state.kinds.get(base) in (al.ARRAY, al.NUMERIC):
            return [stmt]        # `y[i] += v` of an array: `y[i] = t` writes it back next
        binop = stmt.value
        values = nodes.load_names(binop.right)
        adds = isinstance(binop.op, gast.Add)
        affected, outer = self.affected(stmt, name, state)
        if not affected and not outer and kind != al.LIST:
            # nothing else sees it: value semantics are exact, in the dtype and memory
            # layout the write would have kept (a later reshape views it, or copies, as then)
            computed = self.new('_' + name)
            return [nodes.assign(computed, binop),
                    nodes.assign(name, nodes.call(_runtime('like_layout'), computed, name))]
        if kind == al.LIST:
            if adds:
                return self.after_write(stmt, self.extend(name, binop.right), name, state, values,
                                        structural=True)
            run = nodes.assign(name, nodes.call(_runtime('inplace_op'), name, binop.right,
                                                _symbol(binop.op)))
            return self.opaque(stmt, [run], name, state, values,
                               f'{name} {_symbol(binop.op)}= ... changes the list {name} in '
                               f'place and is not differentiated; build a new list instead')
        if kind == al.ARRAY:
            return self.after_write(stmt, self.array_update(name, binop), name, state, values)
        # a number or an array (or, unknown, a list): which shows at run time
        physical = self.after_write(stmt, self.array_update(name, nodes.clone(binop)), name,
                                    state, values)
        other = [nodes.assign(name, binop)]
        if kind is None and adds:
            is_list = self.new('_is_list')
            extended = self.after_write(stmt, self.extend(name, nodes.clone(binop.right)), name,
                                        state, values, structural=True)
            other = [nodes.assign(is_list, nodes.call(_runtime('is_list'), name)),
                     nodes.if_(is_list, extended, other)]
        flag = self.new('_is_array')
        return [nodes.assign(flag, nodes.call(_runtime('is_array'), name)),
                nodes.if_(flag, physical, other)]

    def concatenation(self, name, binop):
        """`name = a + b` of two lists: a new list, each item appended (and differentiated)."""
        made = self.new('_list')
        out = [nodes.assign(made, nodes.list_())]
        for part in (binop.left, binop.right):
            out += self.extend(made, part)
        return out + [nodes.assign(name, made)]

    def array_update(self, name, binop):
        tmp = self.new('_' + name)
        return [nodes.assign(tmp, binop),
                nodes.assign(nodes.subscript(name, _whole(), store=True), tmp)]

    def extend(self, name, items):
        """`name.extend(items)`, one append per item (each is differentiated)."""
        if not isinstance(items, gast.Name):
            seq = self.new('_items')
            head = [nodes.assign(seq, items)]
        else:
            seq, head = items.id, []
        index, item = self.new('_i'), self.new('_item')
        length = nodes.call(_builtin('len'), seq)
        loop = nodes.for_(index, nodes.call(_builtin('range'), length),
                          [nodes.assign(item, nodes.subscript(seq, index)),
                           nodes.expr_stmt(nodes.call(nodes.attribute(name, 'append'), item))])
        return head + [loop]

    def call(self, stmt, call, target, state):
        writes = al.writes_of_call(call, state, self.ctx.summary or (lambda f, k: al.OPAQUE_SUMMARY))
        if not writes:
            return [stmt]
        form, written, _ = writes[0]
        if form == 'call':
            return self.user_call(stmt, call, target, state, writes)
        if not isinstance(written, gast.Name):
            return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                               'this call writes into a value that is not a variable; '
                               'assign it to a variable first')
        name = written.id
        if name not in state.kinds:
            return self.outer_write(stmt, name, stmt, state)
        values = nodes.load_names(call) - {name}
        lowered = self.lowering(form, call, name, target, state)
        if lowered is None:
            return self.opaque(stmt, [stmt], name, state, values, _opaque_reason(call, name))
        if form == 'copyto':                 # `np.copyto(y, x)`: `y[...] = x`, as NumPy copies
            lowered = self.overlap_checked(stmt, lowered[0], state) + lowered[1:]
        return self.after_write(stmt, lowered, name, state, values,
                                structural=form in ('append', 'extend', 'insert', 'pop'))

    def lowering(self, form, call, name, target, state):
        """The statements of a known write, as subscript writes and appends; None: run as written."""
        build = getattr(self, 'lower_' + form, None)
        if build is None:
            return None
        args = _arguments(call, form)
        if args is None:
            return None
        out = build(call, name, args)
        if out is None or form == 'pop':
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
        computed = gast.Call(func=call.func, args=list(args), keywords=keywords)
        return [nodes.assign(value, computed), self.write_all(name, value)]

    def lower_copyto(self, call, name, args):
        src = args.get('src')
        if src is None or args.get('casting') is not None and not _is_const(args['casting']):
            return None
        where = args.get('where')
        if where is None or _is_const(where, True):
            return [nodes.assign(nodes.subscript(name, _whole(), store=True), src)]
        chosen = self.new('_where')
        return [nodes.assign(chosen, nodes.call(_numpy('where'), where, src, name)),
                self.write_all(name, chosen)]

    def lower_put(self, call, name, args):
        if 'ind' not in args or 'v' not in args:
            return None
        index = self.new('_index')
        mode = args.get('mode', nodes.const('raise'))
        return [nodes.assign(index, nodes.call(_runtime('put_index'), name, args['ind'], mode))
                ] + self.write_cycled(name, index, args['v'])

    def lower_place(self, call, name, args):
        if 'mask' not in args or 'vals' not in args:
            return None
        shape, mask = self.new('_shape'), self.new('_mask')
        return [nodes.assign(shape, nodes.call(_numpy('shape'), name)),
                nodes.assign(mask, nodes.call(_runtime('as_mask'), args['mask'], shape))
                ] + self.write_cycled(name, mask, args['vals'])

    def write_cycled(self, name, where, values):
        """`name[where] = values`, `values` repeated or cut to as many as `where` selects
        (how `np.put`, `np.place` and `np.fill_diagonal` read their values)."""
        count, cycled = self.new('_count'), self.new('_values')
        return [nodes.assign(count, nodes.call(_runtime('index_size'), where)),
                nodes.assign(cycled, nodes.call(_numpy('resize'), values, count)),
                nodes.assign(nodes.subscript(name, where, store=True), cycled)]

    def lower_putmask(self, call, name, args):
        if 'mask' not in args or 'values' not in args:
            return None
        shape, mask, values, chosen = (self.new('_shape'), self.new('_mask'), self.new('_values'),
                                       self.new('_where'))
        return [nodes.assign(shape, nodes.call(_numpy('shape'), name)),
                nodes.assign(mask, nodes.call(_runtime('as_mask'), args['mask'], shape)),
                nodes.assign(values, nodes.call(_numpy('resize'), args['values'], shape)),
                nodes.assign(chosen, nodes.call(_numpy('where'), mask, values, name)),
                self.write_all(name, chosen)]

    def lower_fill_diagonal(self, call, name, args):
        if 'val' not in args:
            return None
        index = self.new('_index')
        wrap = args.get('wrap', nodes.const(False))
        return [nodes.assign(index, nodes.call(_runtime('diagonal_index'), name, wrap))
                ] + self.write_cycled(name, index, args['val'])

    def lower_at(self, call, name, args):
        ufunc = getanno(call.func.value, Key.RESOLVED)
        if ufunc not in (np.add, np.subtract) or 'b' not in args or 'indices' not in args:
            return None
        out, value = [], args['b']
        if ufunc is np.subtract:
            negated = self.new('_neg')
            out.append(nodes.assign(negated, nodes.call(_numpy('negative'), value)))
            value = nodes.name(negated)
        added = self.new('_add_at')
        return out + [nodes.assign(added, nodes.call(_runtime('add_at'), name, args['indices'], value)),
                      self.write_all(name, added)]

    def lower_fill(self, call, name, args):
        if 'value' not in args:
            return None
        return [nodes.assign(nodes.subscript(name, _whole(), store=True), args['value'])]

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
        return [nodes.assign(result, nodes.call(_numpy(fn), name, *leading, keywords=keywords)),
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
        return [nodes.assign(at, nodes.call(_runtime('insert_index'), name, args['index'])),
                nodes.expr_stmt(nodes.call(nodes.attribute(name, 'insert'), at, args['object']))]

    def write_all(self, name, value):
        return nodes.assign(nodes.subscript(name, _whole(), store=True), value)

    # ---------------------------------------------------------------- calls of user functions

    def user_call(self, stmt, call, target, state, writes):
        fn = user_function(call)
        positions = [i for i, a in enumerate(call.args) if any(a is w for _, w, _ in writes)]
        for i in positions:
            arg = call.args[i]
            if not isinstance(arg, gast.Name) or arg.id not in state.kinds:
                return self.opaque(stmt, [stmt], None, state, nodes.load_names(call),
                                   f'{fn.__name__}() writes into its argument {i} '
                                   f'({_text(arg)}), which is not a local variable; '
                                   f'pass a local copy')
        derived, unrelated = _derivations(state, call.args, positions)
        checks = [self.apart(stmt, first, other,      # compiled as apart: checked when it runs
                             f'{fn.__name__}() writes into its arguments, and its argument '
                             f'{first} shares memory with its argument {other} in a way not '
                             f'known here; pass a copy of one of them', deep=True)
                  for first, other in unrelated]
        variant = self.ctx.variant(fn, tuple(positions), derived)
        result = self.new('_' + fn.__name__)
        func = nodes.name(self.new(variant.__name__))
        self.ctx.bind(func.id, variant)
        setanno(func, Key.RESOLVED, variant)
        new_call = nodes.copy_location(gast.Call(func=func, args=list(call.args),
                                                 keywords=list(call.keywords)), call)
        setanno(new_call, Key.ARG_KINDS, getanno(call, Key.ARG_KINDS))
        out = checks + [nodes.assign(result, new_call)]
        if target is not None:
            out.append(nodes.assign(target, nodes.subscript(result, nodes.const(0))))
        for k, i in enumerate(positions):
            name = call.args[i].id
            rebind = [nodes.assign(name, nodes.subscript(result, nodes.const(k + 1)))]
            out += self.after_write(stmt, rebind, name, state, frozenset(), exclude={target},
                                    deep=True)
        return out

    # ---------------------------------------------------------------- bringing the others up to date

    def after_write(self, stmt, lowered, name, state, values, exclude=(), deep=False,
                    structural=False):
        """`lowered` writes the memory of `name` (`deep`: and of what its slots hold;
        `structural`: its slots, of a list or dict): add what brings every other reader up
        to date."""
        affected, outer = self.affected(stmt, name, state, deep)
        affected -= set(exclude)
        self.mark_shared(lowered, name, state)
        if outer:
            return self.opaque(stmt, lowered, name, state, values,
                               f'{name} is a global or closure array; writing into it is not '
                               f'differentiated -- copy it into a local first '
                               f'({name} = {name}.copy())', mark=False)
        if not affected:
            return lowered
        captures, updates, unresolved = _Propagation(self, state, name, affected, stmt,
                                                     deep, structural).run()
        self.aliased.append(stmt)
        checks = []
        for alias in sorted(unresolved):      # apart when it runs: nothing to bring up to date
            reason = (f'{name} shares memory with {alias}{self.made_at(alias, stmt)} in a way '
                      f'not known here; writing into {name} changes {alias} -- write '
                      f'{name} = {name}.copy() before writing, or avoid the in-place write')
            checks.append(self.apart(stmt, name, alias, reason, deep))
            self.pending.append(Pending(stmt, frozenset({name}) | frozenset(values)
                                        | frozenset(unresolved), reason, checks[-1]))
        return checks + captures + lowered + updates

    def apart(self, stmt, name, other, reason, deep=False):
        """A statement raising the located refusal `reason` where, when it runs, `name` (or
        with `deep`, what it holds too) shares memory with `other`."""
        where = self.error(stmt, reason)
        return nodes.located(nodes.expr_stmt(nodes.call(
            _runtime('check_apart'), name, other, nodes.const(bool(deep)),
            nodes.const(where.reason), nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1))), stmt)

    def mark_shared(self, lowered, name, state):
        """Tell the reverse sweep which other names held the memory `lowered` writes
        (`Key.SHARES`): its restore of that memory then stays, since a value the tape
        gives back to one of them may be that memory."""
        objects = al.overlapping(state, state.pts.get(name, frozenset()))
        shared = frozenset(n for n in self.holders(objects) if n != name)
        if self.passed & set(objects):
            shared |= {'<callee>'}                 # a callee's tape may hold it
        if shared:
            for s in nodes.statements(lowered):
                setanno(s, Key.SHARES, shared)

    def holders(self, objects) -> set:
        """Every name that, somewhere in the function, may reach one of `objects`."""
        if self._holders is None:
            self._holders = {}
            for state in list(self.facts.before.values()) + list(self.facts.after.values()):
                for n in state.kinds:
                    for o in al.reach(state, n):
                        self._holders.setdefault(o, set()).add(n)
        return set().union(*(self._holders.get(o, set()) for o in objects)) if objects else set()

    def opaque(self, stmt, lowered, name, state, values, reason, mark=True):
        """Run `lowered` as written, undone in the reverse sweep; refused if derivatives flow."""
        involved = frozenset(values) | ({name} if name else frozenset())
        if name is not None:
            affected, _ = self.affected(stmt, name, state)
            involved |= frozenset(affected)
            if mark:
                setanno(lowered[-1], Key.MUTATES, name)
        self.pending.append(Pending(stmt, involved, reason))
        return lowered

    def outer_write(self, stmt, name, lowered_stmt, state):
        reason = (f'{name} is a global or closure value; writing into it is not differentiated '
                  f'-- copy it into a local first ({name.lower()} = {name}.copy())')
        self.pending.append(Pending(stmt, frozenset(nodes.load_names(stmt)) - {name}, reason))
        return [lowered_stmt]

    def made_at(self, alias, before):
        line = _assigned_line(self.fdef, alias, before)
        return f' (line {line})' if line else ''


class _Propagation:
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
            if self.structural and e.source == self.start and e.op == 'index' \
                    and e.container in (al.LIST, al.DICT):
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
            for container in sorted(self.affected - set(parent)):
                holders = self.held_in(container, order)
                if holders:
                    parent[container] = (holders[-1], 'refresh', holders)
                    order.append(container)
            if done < len(order):
                continue
            for item in sorted(self.affected - set(parent)):
                holder = self.holding(item, order)
                if holder is not None:                # read again from the slot holding it
                    parent[item] = (holder, 'reread', None)
                    order.append(item)
            if done == len(order):
                return self.finish(parent)

    def finish(self, parent):
        """The statements that bring the names reached up to date, in the order reached."""
        needed = set()
        for n in self.affected:
            while n in parent and n not in needed and n != self.start:
                needed.add(n)
                n = parent[n][0]
        unresolved = {n for n in self.affected if n not in parent}
        self.held = {}                 # holder -> the name keeping its object from before the write
        self.inside = []               # whether an item was held, from before the write
        updates = self.emit(self.start, parent, needed)
        captures = [nodes.assign(kept, holder) for holder, kept in self.held.items()] + self.inside
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
        where = self.rw.error(self.stmt, f'no slot of {holder} holds {item} after this write, '
                                         f'so what {item} became is not known -- pass a copy')
        inside = self.rw.new('_inside')            # held in `holder` before the write?
        self.inside.append(nodes.assign(inside, nodes.call(_runtime('holds'), holder, item)))
        return [nodes.assign(item, nodes.call(
            _runtime('reread_item'), holder, item, inside, nodes.const(where.reason),
            nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1)))]

    def emit(self, node, parent, needed):
        out = []
        for child in [c for c, p in parent.items() if p is not None and p[0] == node and c in needed]:
            holder, direction, e = parent[child]
            if direction == 'reread':
                out += self.reread(child, holder) + self.emit(child, parent, needed)
                continue
            if direction == 'refresh':
                # the slots hold the objects from before the write (a view made anew is another)
                out += [nodes.assign(child, nodes.call(_runtime('refresh_items'), child, h,
                                                       self.kept(h)))
                        for h in e] + self.emit(child, parent, needed)
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
            out += [nodes.assign(shape, nodes.call(_numpy('shape'), e.source)),
                    nodes.assign(back, nodes.call(_numpy('reshape'), e.derived, shape))]
        elif inverse == 'transpose':
            axes = args.get('axes')
            if axes is None:
                out.append(nodes.assign(back, nodes.call(_numpy('transpose'), e.derived)))
            else:
                order = new('_order')
                out += [nodes.assign(order, nodes.call(_numpy('argsort'), axes)),
                        nodes.assign(back, nodes.call(_numpy('transpose'), e.derived, order))]
        elif inverse == 'swapaxes':
            out.append(nodes.assign(back, nodes.call(_numpy('swapaxes'), e.derived,
                                                     args['axis1'], args['axis2'])))
        elif inverse == 'moveaxis':
            out.append(nodes.assign(back, nodes.call(_numpy('moveaxis'), e.derived,
                                                     args['destination'], args['source'])))
        elif inverse == 'matrix_transpose':
            out.append(nodes.assign(back, nodes.call(_numpy('swapaxes'), e.derived, -1, -2)))
        elif inverse == 'flip':
            out.append(nodes.assign(back, gast.Call(func=nodes.clone(e.value.func),
                                                    args=[nodes.name(e.derived)] + [
                                                        nodes.clone(a) for a in e.value.args[1:]],
                                                    keywords=[nodes.clone(k) for k in
                                                              e.value.keywords])))
        return out + [nodes.assign(nodes.subscript(e.source, _whole(), store=True), back)]


SOURCE = '__source__'     # the name a derivation step reads, in `_derivations`


def _derivations(state, args, written):
    """How arguments that share memory with a written one follow from one of them.

    A callee is compiled as if its parameters were apart. Where the caller
    passes `x` and `x[::-1]` (or `x` twice), the callee's variant starts by
    deriving the second parameter from the first (`q = p[::-1]`), so its own
    analysis sees the sharing. Returns ((j, i, steps), ...): parameter j is
    parameter i through `steps`, expressions of `SOURCE` (() for the same
    object), and [(a name, another)]: arguments not related so, to be checked
    apart when the call runs (the variant is compiled as if they were).
    """
    names = [a.id if isinstance(a, gast.Name) and a.id in state.kinds else None for a in args]
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
            elif e.source == current and e.names <= {current} and e.op in ('index', 'view'):
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
    if isinstance(value, gast.Attribute):
        return {}
    if not isinstance(value, gast.Call):
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


def _arguments(call, form):
    """The arguments of a known writing call by parameter name, or None if they cannot be read."""
    if form == 'out':
        return {}
    if form == 'at':
        params = table.UFUNC_METHODS['at'].params
        args = call.args
    elif isinstance(call.func, gast.Attribute) and getanno(call.func, Key.RESOLVED) is None:
        mutator = (table.LIST_METHODS.get(call.func.attr) if form in ('append', 'pop', 'insert') else
                   table.ARRAY_METHODS.get(call.func.attr))
        params, args = mutator.params, call.args
    else:
        mutator = table.mutator_of_function(getanno(call.func, Key.RESOLVED))
        params, args = mutator.params[1:], call.args[1:]
    if len(args) > len(params):
        return None
    out = dict(zip(params, args))
    for k in call.keywords:
        if k.arg not in params or k.arg in out:
            return None
        out[k.arg] = k.value
    return out


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_const(node, value=None) -> bool:
    return isinstance(node, gast.Constant) and (value is None or node.value is value)


def _kind_of(atom, state):
    if isinstance(atom, gast.Name) and atom.id in state.kinds:
        return state.kinds[atom.id]
    return _atom_kind(atom)


def _atom_kind(node):
    if isinstance(node, gast.Constant):
        return al.kind_of_value(node.value)
    resolved = getanno(node, Key.RESOLVED)
    return al.kind_of_value(resolved) if resolved is not None else None


def _is_int_atom(node) -> bool:
    return isinstance(node, gast.Name) or (isinstance(node, gast.Constant)
                                           and isinstance(node.value, int))


def _numpy(name):
    ref = nodes.attribute(nodes.name('np'), name)
    setanno(ref.value, Key.RESOLVED, np)
    setanno(ref, Key.RESOLVED, getattr(np, name))
    return ref


def _builtin(name):
    import builtins
    ref = nodes.name(name)
    setanno(ref, Key.RESOLVED, getattr(builtins, name))
    return ref


def _callee_label(call):
    func = call.func
    return func.attr if isinstance(func, gast.Attribute) else getattr(func, 'id', 'out')


def _symbol(op) -> str:
    return {gast.Add: '+', gast.Sub: '-', gast.Mult: '*', gast.Div: '/', gast.Pow: '**',
            gast.MatMult: '@', gast.FloorDiv: '//', gast.Mod: '%'}.get(type(op), '?')


def _text(node) -> str:
    return al.text(node)


def _opaque_reason(call, name) -> str:
    what = f'.{call.func.attr}()' if isinstance(call.func, gast.Attribute) else f'{_text(call.func)}()'
    return (f'{what} changes {name} in place and is not differentiated; '
            f'compute a new value instead of writing into {name}')


def _assigned_line(fdef, name, before):
    """The line of the last assignment to `name` before `before` (or its parameter's)."""
    limit = (getanno(before, Key.ORIGIN) or (10 ** 9, 0))[0]
    best = None
    for stmt in nodes.statements(fdef.body):
        where = getanno(stmt, Key.ORIGIN)
        if where is None or where[0] >= limit:
            continue
        if isinstance(stmt, gast.Assign) and any(isinstance(t, gast.Name) and t.id == name
                                                 for t in stmt.targets):
            best = where[0] if best is None or where[0] > best else best
    if best is None and name in {a.id for a in fdef.args.args}:
        where = getanno(fdef, Key.ORIGIN)
        best = where[0] if where else None
    return best
