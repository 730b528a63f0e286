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

The lowerings of known writing calls live in `transforms.lowering`, the
bringing up to date of other names in `transforms.propagation`, the checks
left to run time and the pending refusals in `transforms.mutation_checks`.

Guarantees: the returned body computes the same values as the original for
every name it reads; `Result` lists the pending refusals, the parameters
written, and whether aliased memory was written (derivatives of such code
are refused: the restores of the reverse sweep change memory behind names).
"""
from __future__ import annotations

import dataclasses

from tapeflow.syntax import ast

from tapeflow.analysis import aliasing as al
from tapeflow.analysis.liveness import Liveness
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.call_rewrites import CallWrites
from tapeflow.transforms.dict_lowering import DictLowerings
from tapeflow.transforms.generator_reads import refuse_interleaved
from tapeflow.transforms.lowering import Lowerings, runtime_ref
from tapeflow.transforms.mutation_checks import Checks, Pending, refuse_detached_writers
from tapeflow.transforms.operations import user_function
from tapeflow.transforms.propagation import Propagation


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


def transform(node: ast.FunctionDef, ctx: Context) -> Result:
    refuse_detached_writers(node, ctx.source)
    facts = al.Aliasing(node, ctx.param_kinds, ctx.summary)
    refuse_interleaved(node, facts, ctx.summary, ctx.source)    # a loop over a generator
    live = Liveness(node.body)
    rewriter = _Rewriter(ctx, facts, live, node)
    node.body = rewriter.views_decided(rewriter.block(node.body))
    rewriter.share_values()
    return Result(rewriter.pending, frozenset(rewriter.written_params), rewriter.aliased,
                  _kinds(facts), dict(ctx.param_kinds))


def _kinds(facts) -> dict:
    pairs = {}                          # (name, kind), each once, in the order first seen
    for state in list(facts.after.values()) + [facts.entry]:
        pairs.update(dict.fromkeys(state.kinds.items()))
    out = {}
    for name, kind in pairs:            # (the join: idempotent, in any order)
        out[name] = kind if name not in out else al.join_kinds(out[name], kind)
    return out


# ---------------------------------------------------------------- the rewriter

class _Rewriter(Checks, DictLowerings, Lowerings, CallWrites):
    def __init__(self, ctx, facts, live, fdef):
        self.ctx = ctx
        self.facts = facts
        self.live = live
        self.fdef = fdef
        self.pending = []
        self.written_params = set()
        self.aliased = []
        self.params = [a.id for a in fdef.args.args]
        self.checked = set()      # names a run-time check or capture reads (maybe unbound)
        self.lowered_as = {}      # id(last statement of a lowering) -> id(statement lowered)
        self.flags = {}           # id(statement making a view) -> {(derived, source): flag}
        self.passed = self._passed_to_callees(fdef)
        self.values_of = {}       # name -> the temporaries an in-place op made it (`in_place`)
        self.writes = []          # (lowered statements, name) of each write into memory
        self.bound_by_body = set()  # (attempt's result, k): names `guarded_call` bound

    def _passed_to_callees(self, fdef) -> set:
        """Objects the arguments of a user call may reach: its forward may keep them on the
        tape, and its backward reads them then, as the memory holds them."""
        passed = set()
        for stmt in nodes.statements(fdef.body):
            call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
            state = self.facts.before.get(id(stmt))
            if state is None or not isinstance(call, ast.Call) or user_function(call) is None:
                continue
            for a in call.args:
                if isinstance(a, ast.Name):
                    passed |= set(al.reach(state, a.id))
        return passed

    def new(self, base):
        return self.ctx.namer.new(base)

    def error(self, node, reason):
        return self.ctx.source.error(node, reason)

    # ---------------------------------------------------------------- blocks

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.For) and getanno(stmt, Key.ITERATED) and \
                    id(stmt) in self.facts.before:
                self.items_read(stmt, self.facts.before[id(stmt)])
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and not isinstance(stmt, ast.FunctionDef):
                    setattr(stmt, field, self.block(inner))
            new = self.statement(stmt) if id(stmt) in self.facts.before else [stmt]
            nodes.located(new, stmt)
            if new and not any(n is stmt for n in new):
                self.lowered_as[id(new[-1])] = id(stmt)    # its flags go after what replaced it
            out.extend(new)
        return out

    def statement(self, stmt):
        state = self.facts.before[id(stmt)]
        call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if isinstance(call, ast.Call) and user_function(call) is not None:
            setanno(call, Key.ARG_KINDS, tuple(state.kinds.get(a.id) if isinstance(a, ast.Name)
                                               else _atom_kind(a) for a in call.args))
        return self.write(stmt, state)

    def discarded_call(self, stmt, call, state):
        """`h(x)` as a statement: nothing flows from its result; if `h` writes into a global,
        a derivative that flows through it would be lost."""
        fn = user_function(call)
        kinds = tuple(state.kinds.get(a.id) if isinstance(a, ast.Name) else _atom_kind(a)
                      for a in call.args)
        if self.ctx.summary is not None and self.ctx.summary(fn, kinds).outer:
            self.pending.append(Pending(stmt, frozenset(nodes.load_names(call)),
                                        f'{fn.__name__}() writes into a global or closure value; '
                                        f'a derivative through it is not followed -- return the '
                                        f'value instead'))

    def write(self, stmt, state):
        if self.bound_again(stmt):
            return []
        if isinstance(stmt, ast.For) and getanno(stmt, Key.ITERATED):
            return self.iterated_loop(stmt, state)
        if isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                return self.setitem(stmt, target, state)
            if isinstance(target, ast.Name) and getanno(stmt, Key.IN_PLACE) \
                    and isinstance(stmt.value, ast.BinOp):
                return self.in_place(stmt, target.id, state)
            if isinstance(stmt.value, ast.Call):
                call = stmt.value
                if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                        and isinstance(target, ast.Name) and getanno(call.func, Key.RESOLVED) is None \
                        and state.kinds.get(call.func.value.id) == al.DICT:
                    read = self.dict_read(stmt, call, target.id, state)
                    if read is not None:
                        return nodes.located(read, stmt)
                return self.call(stmt, stmt.value, ast.name_id(target), state)
            if isinstance(stmt.value, ast.BinOp) and isinstance(target, ast.Name):
                return self.sequence_op(stmt, target.id, stmt.value, state)
            return [stmt]
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
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

    def in_place(self, stmt, name, state):
        """`name = name <op> value`, written `name <op>= value`."""
        kind = state.kinds.get(name)
        if kind == al.TUPLE:                         # immutable: a new tuple, made of the parts
            return self.sequence_op(stmt, name, stmt.value, state)
        if kind == al.SCALAR:
            return [stmt]                            # immutable: a new object, nobody else changes
        base = getanno(stmt, Key.IN_PLACE)
        if isinstance(base, str) and state.kinds.get(base) in (al.ARRAY, al.NUMERIC):
            return [stmt]        # `y[i] += v` of an array: `y[i] = t` writes it back next
        binop = stmt.value
        values = nodes.load_names(binop.right)
        adds = isinstance(binop.op, ast.Add)
        affected, outer = self.affected(stmt, name, state)
        if not affected and not outer and kind != al.LIST:
            # nothing else sees it: value semantics are exact, in the dtype and memory
            # layout the write would have kept (a later reshape views it, or copies, as then)
            computed = self.new('_' + name)
            self.values_of.setdefault(name, set()).add(computed)
            made = [nodes.assign(computed, binop)]
            if kind is None:        # a tuple, maybe: `+` concatenates where one operand says so
                made = self.sequence_op(made[0], computed, binop, state)
            return made + [nodes.assign(name, nodes.call(runtime_ref('like_layout'), computed,
                                                         name))]
        if kind == al.LIST:
            if adds:
                return self.after_write(stmt, self.extend(name, binop.right), name, state, values,
                                        structural=True)
            if isinstance(binop.op, ast.Mult):
                return self.after_write(stmt, self.repeat(name, binop), name, state,
                                        values, structural=True)
            run = nodes.assign(name, nodes.call(runtime_ref('inplace_op'), name, binop.right,
                                                nodes.const(_symbol(binop.op))))
            return self.opaque(stmt, [run], name, state, values,
                               f'{name} {_symbol(binop.op)}= ... changes the list {name} in '
                               f'place and is not differentiated; build a new list instead')
        if kind == al.ARRAY:
            return self.after_write(stmt, self.array_update(name, binop), name, state, values)
        # a number or an array (or, unknown, a list): which shows at run time
        physical = self.after_write(stmt, self.array_update(name, nodes.clone(binop)), name,
                                    state, values)
        other = self.sequence_op(nodes.assign(name, binop), name, binop, state)
        if kind is None and adds:
            is_list = self.new('_is_list')
            extended = self.after_write(stmt, self.extend(name, nodes.clone(binop.right)), name,
                                        state, values, structural=True)
            other = [nodes.assign(is_list, nodes.call(runtime_ref('is_list'), name)),
                     nodes.if_(is_list, extended, other)]
        flag = self.new('_is_array')
        return [nodes.assign(flag, nodes.call(runtime_ref('is_array'), name)),
                nodes.if_(flag, physical, other)]

    def call(self, stmt, call, target, state):
        writes = al.writes_of_call(call, state, self.ctx.summary or (lambda f, k: al.OPAQUE_SUMMARY))
        if not writes:
            return [stmt]
        form, written, _ = writes[0]
        if form == 'call':
            return self.user_call(stmt, call, target, state, writes)
        if form == 'guarded':
            return self.guarded_call(stmt, call, target, state, writes)
        if not isinstance(written, ast.Name):
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
        if form in _COPYING_ON_DASK:
            lowered = [self.memory_model(stmt, name, (
                f'np.{form} writes into {name} in place on NumPy and CuPy; on a Dask array it '
                f'writes into a NumPy copy and leaves {name} as it was -- write '
                f'{name} = da.where(...) or {name}[...] = ... instead'))] + lowered
        return self.after_write(stmt, lowered, name, state, values,
                                structural=form in _STRUCTURAL)

    # ---------------------------------------------------------------- bringing the others up to date

    def after_write(self, stmt, lowered, name, state, values, exclude=(), deep=False,
                    structural=False, split=False):
        """`lowered` writes the memory of `name` (`deep`: and of what its slots hold;
        `structural`: its slots, of a list or dict): add what brings every other reader up
        to date. `split`: (what must run before the write, `lowered` and what follows it),
        for a write made by a call before `lowered`."""
        affected, outer = self.affected(stmt, name, state, deep)
        affected -= set(exclude)
        self.mark_shared(lowered, name, state)
        if outer:
            out = self.opaque(stmt, lowered, name, state, values,
                              f'{name} is a global or closure array; writing into it is not '
                              f'differentiated -- copy it into a local first '
                              f'({name} = {name}.copy())', mark=False)
            return ([], out) if split else out
        if not affected:
            return ([], lowered) if split else lowered
        captures, updates, unresolved = Propagation(self, state, name, affected, stmt,
                                                    deep, structural).run()
        self.aliased.append(stmt)
        checks = [self.memory_model(stmt, name)] if captures or updates else []
        # (a loop's sequence of a kind not known is read through `_items = iterated(seq)`,
        #  made by this pass, unseen by the analysis: where it is seq, it is one too)
        pairs = [(alias, alias) for alias in sorted(unresolved)] + [
            (items, alias) for alias in sorted(unresolved)
            for items in getattr(self, 'items_of', {}).get(alias, ())]
        for alias, shown in pairs:
            # apart when it runs: nothing to bring up to date; the same object (the two
            # names joined from paths where one was bound to the other, and to another
            # value: `_entry_v = v` before `v *= c` of a number or an array in a loop):
            # `alias = name` after the write, as where the two are known to be one
            reason = self.shares_reason(name, shown, stmt)
            same = self.new('_same')
            checks.append(nodes.located(nodes.assign(same, nodes.compare(
                nodes.name(name), ast.Is(), nodes.name(alias))), stmt))
            checks.append(self.apart(stmt, name, alias, reason, deep, unless=nodes.name(same)))
            self.pending.append(Pending(stmt, frozenset({name}) | frozenset(values)
                                        | frozenset(unresolved), reason, checks[-1]))
            updates = updates + [nodes.located(nodes.if_(nodes.name(same), [
                nodes.assign(alias, nodes.name(name))], []), stmt)]
        if split:
            return checks + captures, lowered + updates
        return checks + captures + lowered + updates

    def mark_shared(self, lowered, name, state):
        """Tell the reverse sweep which other names held the memory `lowered` writes
        (`Key.SHARES`): its restore of that memory then stays, since a value the tape
        gives back to one of them may be that memory."""
        self.writes.append((lowered, name))
        objects = al.overlapping(state, state.pts.get(name, frozenset()))
        shared = frozenset(n for n in self.holders(objects) if n != name)
        if self.passed & set(objects):
            shared |= {'<callee>'}                 # a callee's tape may hold it
        if shared:
            for s in nodes.statements(lowered):
                setanno(s, Key.SHARES, shared)

    def share_values(self):
        """`x <op>= v` made `x` the array `_x = x <op> v` (`in_place`), which the reverse
        sweep reads for the op's derivative: a later write into `x` writes into `_x`, so its
        restore stays (`Key.SHARES`), wherever the write is (a loop's next trip too)."""
        for lowered, name in self.writes:
            temporaries = self.values_of.get(name)
            if temporaries:
                for s in nodes.statements(lowered):
                    setanno(s, Key.SHARES, frozenset(getanno(s, Key.SHARES) or ()) | temporaries)

    def holders(self, objects) -> set:
        """Every name that, somewhere in the function, may reach one of `objects`."""
        if not objects:
            return set()
        return set().union(*(al.holders(state, objects) for state in self.facts.states()))

# ---------------------------------------------------------------- reading calls

# NumPy functions that write in place, which Dask runs on a NumPy copy of its array
# Writes that add, remove or replace a list's or dict's slots, not the memory the slots
# hold: a name bound to an item read before still binds that object (`s = xs[-1]` then
# `del xs[1]` leaves s as it was).
_STRUCTURAL = frozenset({'append', 'extend', 'insert', 'pop', 'delete', 'dict_update',
                         'dict_pop', 'dict_setdefault'})

_COPYING_ON_DASK = ('copyto', 'put', 'place', 'putmask', 'fill_diagonal')


def _kind_of(atom, state):
    if isinstance(atom, ast.Name) and atom.id in state.kinds:
        return state.kinds[atom.id]
    return _atom_kind(atom)


def _atom_kind(node):
    if isinstance(node, ast.Constant):
        return al.kind_of_value(node.value)
    resolved = getanno(node, Key.RESOLVED)
    return al.kind_of_value(resolved) if resolved is not None else None


def _symbol(op) -> str:
    return {ast.Add: '+', ast.Sub: '-', ast.Mult: '*', ast.Div: '/', ast.Pow: '**',
            ast.MatMult: '@', ast.FloorDiv: '//', ast.Mod: '%'}.get(type(op), '?')


def _opaque_reason(call, name) -> str:
    what = f'.{call.func.attr}()' if isinstance(call.func, ast.Attribute) else f'{al.text(call.func)}()'
    return (f'{what} changes {name} in place and is not differentiated; '
            f'compute a new value instead of writing into {name}')


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): not on generated code whose tape carries
    values (its writes are its tape's); `ctx.written` for `check` once activity is known."""
    if not ctx.generated:
        ctx.written = transform(tree, ctx.mutation_context(tree))
    return tree
