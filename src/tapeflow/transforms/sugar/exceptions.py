"""Desugar, `try` and `with`: the guarded body a function of its own, called by `attempt`.

    try:                              def _try(a, b):           # the names BODY binds
        BODY                              BODY                  # return v -> return (1, v, (a,))
    except E as e:                        return (0, None, (a,))  # break, continue: codes 3, 4
        H                             _run = attempt((E,), ('a',), _try, a, b)
    else:                             a = _run[2][0]            # (2, error, a as the body
        O                             if _run[0] == 0: O        #  left it)
    finally:                          elif _run[0] == 2:
        F                                 if isinstance(_run[1], E): e = _run[1]; H
                                          else: _unhandled = _run[1]
                                      F
                                      if _run[0] == 1: return _run[1]   (3: break, 4: continue)
                                      if _unhandled is not None: raise _unhandled

Whatever the body did (completed, raised, returned, broke out of the loop), the names the
code after it reads (`a`) are bound again from the state it gives back, its third item.
A name the body may write into without binding it (`y[0] = v`, `y.append(v)`, `fill(y)`,
`y += v`) is one of its parameters and of that state, marked `'*y'` in `attempt`'s names:
the caller's mutation pass reads the call as a write into `y` (`analysis.call_writes`), and
the dispatcher lets the body write into such values only (`tapeflow.calls.check_writes`).

`attempt` (`tapeflow.calls`) runs the body; where it raises one of the caught types it
returns the error, and the compiled call takes back what the body pushed on the tape:
the reverse sweep differentiates exactly the body that completed, or, where it raised,
the handler that ran. A value the body computed before it raised cannot be differentiated
(what computed it was undone): `attempt` refuses one that carries a derivative.

`with CM as v: BODY` is `_cm = CM; v = enter_context(_cm)` and the body guarded so that
`exit_context(_cm, error)` runs once, whatever happened (an error it suppresses is caught);
the reverse sweep of the body runs inside the manager again where it governs numerics
(`np.errstate`). The names the body binds start as `UNBOUND` at the function's entry.
Runs before nested defs are lifted (the body's def is one).
"""
from __future__ import annotations

from tapeflow.rules import guards
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno
from tapeflow.syntax.resolve import local_names
from tapeflow.transforms.sugar.kept import binds, kept_of
from tapeflow.transforms.sugar.written import bound_plainly, own_statements, written_in_place, \
    written_through

def lower_guarded(node, namer, source, bindings):
    """Every `try` and `with` of `node`'s own body (not nested defs'), innermost first."""
    if not any(isinstance(s, (ast.Try, ast.With)) for s in _own(node.body)):
        return
    lowering = _Lowering(namer, source, bindings, node)
    node.body = lowering.block(node.body)
    params = {a.id for a in node.args.args}
    unbound = sorted(lowering.bound - params)
    if unbound:
        start = [nodes.located(nodes.assign(name, lowering.ref('UNBOUND')), node)
                 for name in unbound]
        node.body = start + node.body


_own = own_statements


class _Lowering:
    def __init__(self, namer, source, bindings, root):
        self.namer, self.source, self.bindings, self.root = namer, source, bindings, root
        self.bound = set()              # the names guarded bodies bind (UNBOUND at entry)
        self.made = set()               # the names the lowering made
        self.loops = _in_loops(root)    # the ids of the statements inside a loop
        self.locals = local_names(root)     # (a name written in place that is not one:
                                            #  a global or closure value, which is refused)

    def new(self, name):
        made = self.namer.new(name)
        self.made.add(made)
        return made

    def kept(self, origin, body, names):
        """Of the names `body` binds, those the code after it may read: read outside the
        body, or, in a loop, read by the body before it binds them (the next time round)."""
        inside = {id(n) for stmt in body for n in nodes.walk(stmt)}
        read = {n.id for n in nodes.walk(self.root)     # (`del y` needs y bound: a read)
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load, ast.Del))
                and id(n) not in inside}
        read |= {n.target.id for n in nodes.walk(self.root)      # (`u += 1` reads u)
                 if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
                 and id(n) not in inside}
        if id(origin) in self.loops:
            read |= _read_before_bound(body)
        return [name for name in names if name in read and name not in self.made]

    def unbind_deleted(self, body) -> list:
        """`body` with each `del name` in it `name = deleted(name)` (`rules.guards`): the
        body is a def, where `del` would unbind the name in it, not in the function; bound
        to `UNBOUND`, the name is given back unbound, as Python leaves it (and `del` of a
        name not bound raises, as in Python). Other targets stay `del`'s."""
        out = []
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name not in self.made:
                out.append(stmt)        # (a def of the user's: its own body, its own names)
                continue
            if isinstance(stmt, ast.Delete):
                out += [nodes.located(nodes.assign(t.id, nodes.call(self.ref('deleted'),
                                                                     nodes.name(t.id))), stmt)
                        if isinstance(t, ast.Name) else
                        nodes.located(ast.Delete(targets=[t]), stmt) for t in stmt.targets]
                continue
            for field in ('body', 'orelse', 'finalbody'):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    setattr(stmt, field, self.unbind_deleted(block))
            for handler in getattr(stmt, 'handlers', None) or ():
                handler.body = self.unbind_deleted(handler.body)
            out.append(stmt)
        return out

    def ref(self, name):
        """A name for the runtime's object `name` (`rules.guards`), resolved."""
        from tapeflow.rules import guards
        value = getattr(guards, name)
        ref = nodes.name(self.new('_' + name.lower()))
        self.bindings.computed[ref.id] = value
        setanno(ref, Key.RESOLVED, value)
        return ref

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef):
                out.append(stmt)
                continue
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, self.block(inner))
            for handler in getattr(stmt, 'handlers', None) or ():
                self._name_handler(handler)
                handler.body = self.block(handler.body)
            if isinstance(stmt, ast.Try):
                out.extend(nodes.located(self.try_(stmt), stmt))
            elif isinstance(stmt, ast.With):
                out.extend(nodes.located(self.with_(stmt), stmt))
            else:
                out.append(stmt)
        return out

    def _name_handler(self, handler):
        """`except E:` as `except E as _caught:`, its bare `raise`s `raise _caught` (the
        handler becomes an if: no exception is being handled there any more)."""
        caught = self.new('_caught')
        if handler.name is not None:
            name = handler.name.id if isinstance(handler.name, ast.Name) else handler.name
            handler.body = [nodes.assign(name, nodes.name(caught))] + handler.body
        handler.name = nodes.name(caught, store=True)

        def rewrite(stmts):
            for k, stmt in enumerate(stmts):
                if isinstance(stmt, ast.Raise) and stmt.exc is None:
                    stmts[k] = nodes.copy_location(_raise(nodes.name(caught)), stmt)
                    continue
                if isinstance(stmt, ast.FunctionDef):
                    continue
                for field in ('body', 'orelse', 'finalbody'):
                    rewrite(getattr(stmt, field, None) or [])   # not nested handlers' own
        rewrite(handler.body)

    # ---------------------------------------------------------------- try

    def try_(self, stmt, manager=None, origin=None):
        if getattr(stmt, 'handlers', None) is None:
            raise self.source.error(stmt, 'try ... except* is not supported')
        body, handlers, orelse, final = stmt.body, stmt.handlers, stmt.orelse, stmt.finalbody
        if final:
            for part in [orelse] + [h.body for h in handlers]:
                for n in _own(part):
                    if isinstance(n, (ast.Return, ast.Break, ast.Continue)):
                        raise self.source.error(n, 'a return, break or continue in an except '
                                                   'or else block of a try with finally is not '
                                                   'supported; set a flag and act on it after '
                                                   'the try')
        stmt.body = body = self.unbind_deleted(body)
        bound = binds(body) - self.made
        written = written_in_place(body) & self.locals - self.made - bound_plainly(body)
        # (a name the body binds to another value is one of its own: bound again after it)
        self.bound |= bound
        kept = sorted(set(self.kept(origin or stmt, body, sorted(bound))) | written)
        # (what only the else block reads: where the body raised, never read)
        completed = set(kept) - written - set(self.kept(origin or stmt, body + orelse,
                                                         sorted(bound)))
        params = kept + sorted(bound - set(kept))
        fn_name = self.new('_try')
        run, code = self.new('_run'), self.new('_code')
        state = nodes.tuple_(*[nodes.name(n) for n in kept])
        jumps = set()
        raised = self.ref('raised')
        body_def = nodes.function_def(fn_name, params, _jumps_out(body, jumps, state, raised) + [
            nodes.return_(nodes.tuple_(nodes.const(0), nodes.const(None), nodes.clone(state)))])
        nodes.located(body_def, stmt)
        setanno(body_def, Key.CALLED_AT_ONCE, True)
        inside = {id(n) for n in own_statements(body)}
        held = written_through(self.root.body, kept, inside)
        # a container the body writes into may hold, after it, a value the body read (rows
        # .extend([y])): the code around the body writing that value in place (y[0] = v)
        # writes what the container holds, where the caller does not see it (fuzzer seed
        # 5410 index 5556: WRONG, 1.14 for 0); held, as a container the body makes
        outside = [s for s in own_statements(self.root.body) if id(s) not in inside]
        read = set().union(*(nodes.load_names(s) for s in body)) - set(bound)
        if written and written_in_place(outside) & read:
            held |= written
        marked = [(guards.HELD if n in held else '') +
                  (guards.WRITTEN + n if n in written else
                   guards.COMPLETED + n if n in completed else n) for n in kept]
        setanno(body_def, Key.KEPT, tuple(marked))
        caught = self._caught(handlers, bool(final))
        attempt = self.ref('attempt') if manager is None else self.ref('attempt_within')
        head = [manager] if manager is not None else []
        call = nodes.call(attempt, *head, caught, nodes.tuple_(*map(nodes.const, marked)),
                          nodes.name(fn_name),
                          *[nodes.name(n) for n in params])
        out = [body_def, nodes.assign(run, call),
               nodes.assign(code, nodes.subscript(run, nodes.const(0)))]
        out += [nodes.assign(name, nodes.call(self.ref('written_value'), nodes.name(run),
                                              nodes.const(k), nodes.name(name))
                             if name in written else
                             nodes.call(self.ref(kept_of(self.root, name)), nodes.name(run),
                                        nodes.const(k)))
                for k, name in enumerate(kept)]
        # (those it writes into the mutation pass binds at the call, as after a call's
        #  write, and drops these: they bind them where the body runs as Python)
        unhandled = self.new('_unhandled') if final else None
        if unhandled:
            out.append(nodes.assign(unhandled, nodes.const(None)))
        done = orelse
        raised = self._handlers(handlers, nodes.subscript(run, nodes.const(1)), unhandled)
        out.append(nodes.if_(nodes.compare(nodes.name(code), ast.Eq(), nodes.const(0)),
                             done or [nodes.pass_()],
                             [nodes.if_(nodes.compare(nodes.name(code), ast.Eq(), nodes.const(2)),
                                        raised or [nodes.pass_()])]))
        out.extend(final)
        for k, jump in ((1, nodes.return_(nodes.subscript(run, nodes.const(1)))),
                        (3, nodes.break_()), (4, ast.Continue())):
            if k in jumps:
                out.append(nodes.if_(nodes.compare(nodes.name(code), ast.Eq(), nodes.const(k)),
                                     [jump]))
        if unhandled:
            out.append(nodes.if_(nodes.compare(nodes.name(unhandled), ast.IsNot(), nodes.const(None)),
                                 [_raise(nodes.name(unhandled))]))
        return out

    def _caught(self, handlers, catch_all):
        if catch_all or any(h.type is None for h in handlers):
            return nodes.tuple_(nodes.builtin('BaseException'))
        types = []
        for h in handlers:
            types.extend(h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
        return nodes.tuple_(*types)

    def _handlers(self, handlers, error, unhandled):
        """if isinstance(error, E1): e = error; H1 elif ...: ... else: unhandled = error."""
        chain = [nodes.assign(unhandled, error)] if unhandled else [_raise(error)]
        for h in reversed(handlers):
            body = list(h.body)
            if h.name is not None:
                name = h.name.id if isinstance(h.name, ast.Name) else h.name
                body = [nodes.assign(name, nodes.clone(error))] + body
            if h.type is None:
                chain = body
                continue
            test = nodes.call(nodes.builtin('isinstance'), nodes.clone(error), nodes.clone(h.type))
            chain = [nodes.if_(test, body, chain)]
        return chain

    # ---------------------------------------------------------------- with

    def with_(self, stmt):
        items = stmt.items
        body = stmt.body
        if len(items) > 1:          # with A, B: with A: with B
            inner = ast.With(items=items[1:], body=body, type_comment=None)
            nodes.copy_location(inner, stmt)
            body = self.block([inner])
        item = items[0]
        manager = self.new('_manager')
        exited, error = self.new('_exited'), self.new('_error')
        out = [nodes.assign(manager, item.context_expr),
               nodes.assign(exited, nodes.const(False))]
        entered = nodes.call(self.ref('enter_context'), nodes.name(manager))
        if item.optional_vars is not None:
            out.append(nodes.assign(item.optional_vars, entered))
            self.bound |= {n.id for n in nodes.walk_terms(item.optional_vars)
                           if isinstance(n, ast.Name)}
        else:
            out.append(nodes.expr_stmt(entered))
        suppressed = nodes.call(self.ref('exit_context'), nodes.name(manager), nodes.name(error))
        handler = ast.ExceptHandler(type=None, name=nodes.name(error, store=True), body=[
            nodes.assign(exited, nodes.const(True)),
            nodes.if_(nodes.unary(ast.Not(), suppressed), [_raise(nodes.name(error))])])
        final = [nodes.if_(nodes.unary(ast.Not(), nodes.name(exited)), [nodes.expr_stmt(
            nodes.call(self.ref('exit_context'), nodes.name(manager), nodes.const(None)))])]
        guarded = ast.Try(body=body, handlers=[handler], orelse=[], finalbody=final)
        nodes.copy_location(guarded, stmt)
        return out + self.try_(guarded, manager=nodes.name(manager), origin=stmt)


def _jumps_out(body, jumps, state, raised):
    """The body's own `return v`, `break` and `continue` (not inside its loops, for the
    last two) as returns of what happened and of the state it leaves (`(1, v, state)`,
    `(3, None, state)`), for the code after `attempt` to act on; the codes used go to
    `jumps`. Its own `raise E` returns `(2, E, state)`, as `attempt`
    does where the body raises: the body completed, so what it computed until then is
    differentiated."""
    def rewrite(stmts, in_loop):
        out = []
        for stmt in stmts:
            if isinstance(stmt, ast.Raise) and stmt.exc is not None:
                cause = [] if stmt.cause is None else [stmt.cause]
                error = nodes.call(nodes.clone(raised), stmt.exc, *cause)
                out.append(nodes.copy_location(nodes.return_(
                    nodes.tuple_(nodes.const(2), error, nodes.clone(state))), stmt))
                continue
            if isinstance(stmt, ast.Return):
                value = stmt.value if stmt.value is not None else nodes.const(None)
                jumps.add(1)
                out.append(nodes.copy_location(nodes.return_(
                    nodes.tuple_(nodes.const(1), value, nodes.clone(state))), stmt))
                continue
            if isinstance(stmt, (ast.Break, ast.Continue)) and not in_loop:
                code = 3 if isinstance(stmt, ast.Break) else 4
                jumps.add(code)
                out.append(nodes.copy_location(nodes.return_(
                    nodes.tuple_(nodes.const(code), nodes.const(None), nodes.clone(state))), stmt))
                continue
            if not isinstance(stmt, ast.FunctionDef):
                loop = in_loop or isinstance(stmt, (ast.For, ast.While))
                for field in ('body', 'orelse'):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list) and inner:
                        setattr(stmt, field, rewrite(inner, loop))
            out.append(stmt)
        return out
    return rewrite(body, False)


def _in_loops(root):
    """The ids of the statements of `root`'s own body that a loop holds."""
    out = set()

    def walk(stmts, looped):
        for stmt in stmts:
            if looped:
                out.add(id(stmt))
            if isinstance(stmt, ast.FunctionDef):
                continue
            inner = looped or isinstance(stmt, (ast.For, ast.While))
            for field in ('body', 'orelse', 'finalbody'):
                walk(getattr(stmt, field, None) or [], inner)
            for handler in getattr(stmt, 'handlers', None) or ():
                walk(handler.body, inner)
    walk(root.body, False)
    return out


def _read_before_bound(body):
    """The names `body` may read before it binds them: read in a statement no later than
    the first that binds them for sure (an assignment in the body itself)."""
    first = {}
    for k, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign):
            for name in binds([stmt]):
                first.setdefault(name, k)
    out = set()
    for k, stmt in enumerate(body):
        for n in nodes.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and \
                    k <= first.get(n.id, len(body)):
                out.add(n.id)
    return out


def _raise(value):
    return ast.Raise(exc=value, cause=None)

