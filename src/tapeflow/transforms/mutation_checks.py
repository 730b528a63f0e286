"""What the mutation pass leaves to run time, and the refusals it leaves pending.

`Checks` is a mixin of the rewriter of `transforms.mutation` (which gives it
`ctx`, `facts`, `fdef`, `params`, `pending`, `checked`, `flags`, `lowered_as`,
`new` and `error`): the statements it emits decide at run time what the
analysis could not (`shares(v, y)`: did this reshape make a view?, set after
the statement that made it by `views_decided`) and raise located refusals
where memory turns out shared (`check_overlap`, `check_memory`,
`check_apart`). `opaque` and `outer_write` run a write as written and leave a
`Pending` refusal, raised by `check` if a derivative flows through it.
"""
from __future__ import annotations

import dataclasses

from tapeflow.analysis import aliasing as al
from tapeflow.rules.mutation import ARRAY_METHODS, DICT_METHODS, LIST_METHODS
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno
from tapeflow.transforms.lowering import runtime_ref
from tapeflow.transforms.operations import index_value


@dataclasses.dataclass
class Pending:
    """A refusal raised after activity if any of `names` carries a derivative; with
    `runtime`, a check statement in the code that raises it there only where the memory
    is shared when it runs (dropped where no derivative flows)."""
    node: object
    names: frozenset
    reason: str
    runtime: object = None


class Checks:
    """The run-time checks and pending refusals of the mutation rewriter (a mixin)."""

    def view_flag(self, e) -> str:
        """The name holding whether `e.derived` was made a view of `e.source` (NumPy decides,
        at run time); set right after the statement that made it (`views_decided`)."""
        flags = self.flags.setdefault(e.origin, {})
        key = e.made or (e.derived, e.source)      # the names at the statement that made it
        if key not in flags:
            flags[key] = self.new('_is_view')
        return flags[key]

    def flag_of(self, e):
        """The flag of `view_flag(e)`, if a write reads it."""
        return self.flags.get(e.origin, {}).get(e.made or (e.derived, e.source))

    def path_settings(self, stmt, where) -> list:
        """`flag = True` (or `= <the path's flag>`) for each flag a join after the path
        ending at `where` of `stmt` reads, that the path decides otherwise (`memory.fixes`:
        `y = a` on one branch, `y /= 2.0` on the other: after both, `y` is `a`'s alias
        where the first ran)."""
        out = []
        for joined, path in self.facts.fixes.get((id(stmt), where), ()):
            flag = self.flag_of(joined)
            if flag is not None:
                value = nodes.const(True) if path is None else nodes.name(self.flag_of(path))
                out.append(nodes.located(nodes.assign(flag, value), stmt))
        return out

    def views_decided(self, body):
        """`body` with each flag of `view_flag` set after its statement (False before),
        and by the paths into a join that decide it otherwise (`path_settings`)."""
        if not self.flags and not self.checked:
            return body
        read = True
        while read:                    # a path's own flag, where it sets a flag read later
            read = False
            for found in self.facts.fixes.values():
                for joined, path in found:
                    if path is not None and self.flag_of(joined) is not None \
                            and self.flag_of(path) is None:
                        self.view_flag(path)
                        read = True

        def insert(stmts):
            out = []
            for stmt in stmts:
                for field in ('body', 'orelse'):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list) and not isinstance(stmt, ast.FunctionDef):
                        settings = self.path_settings(stmt, field)
                        if inner or settings:
                            setattr(stmt, field, insert(inner) + settings)
                out.extend(self.path_settings(stmt, 'before'))
                out.append(stmt)
                made = self.flags.get(id(stmt), {}) or self.flags.get(
                    self.lowered_as.get(id(stmt)), {})
                for (derived, source), flag in made.items():
                    test = nodes.call(runtime_ref('shares'), derived, source) if source is not None \
                        else nodes.call(runtime_ref('is_mutable'), derived)  # `+=` kept it the same
                    out.append(nodes.located(nodes.assign(flag, test), stmt))
            return out
        prologue = [nodes.located(nodes.assign(flag, False), self.fdef)
                    for flags in self.flags.values() for flag in flags.values()]
        # a run-time check may read a local a loop binds only later: unbound, it shares nothing
        local = nodes.store_names(self.fdef.body) - set(self.params)
        read = self.checked.union(*(set(pair) - {None} for flags in self.flags.values()
                                    for pair in flags))
        prologue += [nodes.located(nodes.assign(n, None), self.fdef)
                     for n in sorted(read & local)]
        return prologue + insert(body)

    def overlap_checked(self, stmt, write, state):
        """`y[i] = v` where `v` may share memory with `y`: NumPy copies element by element,
        so what it writes is `v`'s old value only where no element read was written
        before; checked at run time (`check_overlap`), a located refusal where it is not."""
        value, target = write.value, write.targets[0]
        if not isinstance(target, ast.Subscript) or not isinstance(value, ast.Name):
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
        return [nodes.assign(expected, nodes.call(runtime_ref('overlap_value'), name, value.id)),
                write,
                nodes.expr_stmt(nodes.call(runtime_ref('check_overlap'), name, index, expected,
                                           nodes.const(where.reason), nodes.const(where.filename),
                                           nodes.const(where.lineno),
                                           nodes.const(where.offset - 1)))]

    def memory_model(self, stmt, name, reason=None):
        """A statement raising a located refusal where, when it runs, `name` is an array
        whose views are not its memory (Dask): the updates after this write are NumPy's
        (or, with `reason`, so is the write itself)."""
        where = self.error(stmt, reason or (
            f'writing into {name} here changes other names that see its memory (views, '
            f'aliases) on NumPy and CuPy, not on Dask, whose views are copies -- write '
            f'{name} = {name}.copy() first, or compute the new value without writing into {name}'))
        return nodes.located(nodes.expr_stmt(nodes.call(
            runtime_ref('check_memory'), name, nodes.const(where.reason),
            nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1))), stmt)

    def apart(self, stmt, name, other, reason, deep=False, unless=None):
        """A statement raising the located refusal `reason` where, when it runs, `name` (or
        with `deep`, what it holds too) shares memory with `other` (and the flag named
        `unless` is false)."""
        where = self.error(stmt, reason)
        self.checked.update({name, other})
        check = nodes.located(nodes.expr_stmt(nodes.call(
            runtime_ref('check_apart'), name, other, nodes.const(bool(deep)),
            nodes.const(where.reason), nodes.const(where.filename), nodes.const(where.lineno),
            nodes.const(where.offset - 1))), stmt)
        return check if unless is None else nodes.located(
            nodes.if_(nodes.not_(unless), [check]), stmt)

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

    def shares_reason(self, name, other, stmt) -> str:
        """Why a write into `name` is refused where `other` shares its memory in a way the
        analysis does not know; a name the compiler made (a part of a value, a loop's item)
        said as what it is, one it made for one of the user's (`Namer.shown`) as that."""
        made, shown = getattr(self.ctx.namer, 'made', ()), getattr(self.ctx.namer, 'shown', {})
        name, other = shown.get(name, name), shown.get(other, other)
        line = self.made_at(other, stmt)
        if name in made:
            subject, fix = 'the value this writes into', 'copy it first (.copy())'
        else:
            subject, fix = name, f'write {name} = {name}.copy() before writing'
        shown = 'a value made here' if other in made else f'{other}{line}'
        return (f'{subject} shares memory with {shown} in a way not known here; writing into '
                f'{"it" if name in made else name} changes '
                f'{"that value" if other in made else other} -- {fix}, or avoid the in-place '
                f'write')


def _assigned_line(fdef, name, before):
    """The line of the last assignment to `name` before `before` (or its parameter's)."""
    limit = (getanno(before, Key.ORIGIN) or (10 ** 9, 0))[0]
    best = None
    for stmt in nodes.statements(fdef.body):
        where = getanno(stmt, Key.ORIGIN)
        if where is None or where[0] >= limit:
            continue
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                 for t in stmt.targets):
            best = where[0] if best is None or where[0] > best else best
    if best is None and name in {a.id for a in fdef.args.args}:
        where = getanno(fdef, Key.ORIGIN)
        best = where[0] if where else None
    return best


_WRITING_METHODS = frozenset(ARRAY_METHODS) | frozenset(LIST_METHODS) | frozenset(DICT_METHODS)


def refuse_detached_writers(fdef, source):
    """A method that writes into its object (`t.append`, `a.fill`) taken as a value
    (`add = t.append`), not called where it is read, writes where no pass sees it: refused."""
    called, taken = set(), []
    for n in nodes.walk_terms(fdef):
        if n.__class__ is ast.Call:
            called.add(id(n.func))
        elif n.__class__ is ast.Attribute and n.attr in _WRITING_METHODS \
                and isinstance(n.ctx, ast.Load):
            taken.append(n)
    for n in taken:
        if id(n) not in called:
            raise source.error(n, f'.{n.attr} is taken as a value here: a write through it '
                                  f'cannot be followed; call it where it is used (obj.{n.attr}(...))')


def check(result, active: set, source, node, varied=None) -> None:
    """Raise the first pending refusal a derivative flows through; keep the run-time
    checks a derivative may flow through (`varied`: the names a differentiated input
    reaches, by names alone -- a write not known here may carry it further, as into an
    object's field), and drop the others from `node`."""
    unneeded = set()
    varied = active if varied is None else varied | active
    for pending in result.pending:
        if pending.runtime is not None:
            if not pending.names & varied:
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
