"""Reverse mode's compile context, and the assembly of the three generated functions.

From the two sweeps `reverse` makes (and `optimize` trims), the `assemble` pass builds
the unit of three functions of the user's function `f`:

    f_forward(_tape, x, ...)    the forward sweep alone: pushes, returns the value
    f_backward(_tape, bout)     the reverse sweep alone: pops, returns the gradients
    df(x, ..., bout=1.0)        value and gradient in one body (what `grad` runs
                                and `source` shows)

`fusion` then fuses each, `checkpoint` rewrites the combined function's loops, and
the `tape` pass gives each function the tape operations it uses (the combined
function makes its own tape). The seed parameter is `b<name>` when the function
returns a user's name, else `bout`. Must run after `activity`; the unit is a
`Module` of the three, in that order (`ROLES`).
"""
from __future__ import annotations

import dataclasses

from tapeflow.analysis.liveness import Liveness
from tapeflow.rules.numpy_reductions import grad_of_mean, grad_of_sum
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.naming import identifier as _id
from tapeflow.transforms import checkpoint as checkpointing
from tapeflow.transforms import optimize, reverse
from tapeflow.transforms.context import CompileContext, checks_static

ROLES = ('forward', 'backward', 'combined')
REDUCTIONS = {'grad_of_sum': grad_of_sum, 'grad_of_mean': grad_of_mean}


def _dispatched(stmt) -> bool:
    """`call_backward(...)`: the reverse sweep of a call resolved when it ran, whose callee
    may give memory back in place (it is not known here)."""
    value = getattr(stmt, 'value', None)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id == 'call_backward'


@dataclasses.dataclass(eq=False)
class ReverseCompile(CompileContext):
    """What the reverse passes add to the context: the tape's names, the seed, the sweeps."""
    names: reverse.TapeNames = None
    seed: str = None                  # the seed parameter of the combined and backward functions
    output: ast.AST = None            # the returned atom (or tuple of atoms)
    grads: list = None                # the adjoint of each differentiated parameter (or None)
    forward: list = None              # the forward sweep
    reverse: list = None              # the reverse sweep, its start (inits, seed) included
    undefined: set = frozenset()      # locals a push may read unbound (`n = None` first)
    unbound: set = frozenset()        # the same, of checkpointed loops
    effects: dict = dataclasses.field(default_factory=dict)   # `Liveness` memo, shared
    value: ast.AST = None             # `_value = <output>` in the combined function
    seed_of_tuple: str = None         # `bout`, named before `reverse` (a tuple's parts read it)
    sweep_context: reverse.ReverseContext = None
    own: set = frozenset()            # adjoints of locals: fusion may fuse them away
    cotangent_names: frozenset = frozenset()   # every adjoint (`factor` rewrites their sums)
    primal_of: dict = None            # adjoint -> the name it is the adjoint of
    loops_checkpointed: bool = False  # `checkpoint` rewrote loops of the combined function
    user_defaults: list = None        # the user's defaults, bound in the namespace (`tape`)
    inexact_locals: frozenset = None  # names the combined function shows inexact (`factor`)
    factored_from: ast.FunctionDef = None   # the combined function as `factor` found it
    tape_reads: dict = None           # `trim_tape`'s memo of the names statements read

    def reverse_context(self, node) -> reverse.ReverseContext:
        """The context of `reverse.transform`, the seed named first."""
        self.linked()
        for own in (f'd{self.name}', f'{self.name}_forward', f'{self.name}_backward'):
            self.namer.reserve(own)              # a callee bound here must not shadow these
        self.names = reverse.TapeNames.fresh(self.namer)
        ctx = reverse.ReverseContext(self.source, self.namer, self.emitter, self.active,
                                     self.binder, self.shapes, self.names)
        ctx.order, ctx.tapes = self.order, self.tapes
        ctx.check_static = checks_static(self.fn, self.order)
        ctx.kinds = self.written.kinds if self.written is not None else {}
        ctx.varied = self.extra.get('varied', frozenset())
        ctx.opaque = self.opaque_names(node)
        # cheap values computed again (transforms.remat); natively a float64 store and load
        # cost less than a `sin` again, so the native path tapes them
        ctx.rematerialise = self.optimize and self.target == 'python'
        ret = node.body[-1] if node.body and isinstance(node.body[-1], ast.Return) else None
        output = ret.value if ret is not None else None
        if isinstance(output, ast.Name) and output.id in self.active:
            if output.id not in self.user_names:             # a temporary: `bout`
                ctx.adjoints.names[output.id] = self.namer.new('bout')
            # else `return y`: `by`, named where `reverse` first needs it (`reversed`)
        else:
            ctx.seed = self.seed_of_tuple = self.namer.new('bout')
        self.sweep_context = ctx
        return ctx

    @property
    def name(self) -> str:
        return _id(self.fn)

    def reversed(self, adjoint) -> ast.FunctionDef:
        """Keep the sweeps `reverse.transform` made; both as one function, to show."""
        adj, active = adjoint.adjoints, self.active
        self.output = adjoint.output
        named = isinstance(self.output, ast.Name) and self.output.id in active
        self.seed = adj[self.output.id] if named else self.seed_of_tuple
        self.grads = [adj[n] if n in active else None for n in self.wrt_names]
        inits = [nodes.assign(adj[n], 0.0) for n in sorted(active)
                 if not (isinstance(self.output, ast.Name) and n == self.output.id)]
        self.forward = adjoint.forward
        self.reverse = inits + adjoint.seed + adjoint.reverse
        self.own = {adj[n] for n in active if n not in self.params}     # adjoints of locals
        self.cotangent_names = frozenset(adj[n] for n in active)
        self.primal_of = {adj[n]: n for n in active}
        return nodes.function_def(self.name, self.params, self.forward + self.reverse)

    def optimized(self) -> ast.FunctionDef:
        """`optimize`: dead adjoints and unneeded push/pop pairs dropped."""
        rev = optimize.zero_cotangents(self.reverse)    # rules never given 0.0 they cannot take
        if self.optimize:
            self.forward, self.reverse, self.undefined = optimize.transform(
                self.forward, rev, set(self.grad_names) | {self.names.value}, self.params,
                self.effects)
        else:
            self.reverse = rev
            self.undefined = optimize.undefined_at_push(self.forward, set(self.params))
        self.compiled.in_place = any(getanno(s, Key.RESTORES_IN_PLACE) or _dispatched(s)
                                     for s in nodes.statements(self.reverse)) or any(
            getattr(c, 'in_place', False) for c in self.compiled.callees)  # (their records)
        return nodes.function_def(self.name, self.params, self.forward + self.reverse)

    @property
    def grad_names(self) -> list:
        return [g for g in self.grads if g is not None]

    def grad_value(self):
        grads = self.grads
        if len(grads) != 1:
            return nodes.tuple_(*[g if g else nodes.const(0.0) for g in grads])
        return nodes.name(grads[0]) if grads[0] else nodes.const(0.0)

    def fusion_options(self) -> dict:
        own = self.own
        return dict(push={self.names.push}, pop={self.names.pop},
                    keep={self.names.value, *self.grad_names},
                    temporary=lambda n: n[0] == '_' or n in own, namespace=self.namespace)

    def checkpointed(self, tree) -> ast.Module:
        """`checkpoint`: with checkpoint= (or a loop marked `tf.checkpoint`), the combined
        function's top-level loops keep snapshots instead of a tape; the split pair keeps it."""
        combined = unit_roles(tree, self).get('combined')
        if combined is None:
            return tree                 # (the split pair keeps its tape)
        body = combined.body
        at = next(k for k, stmt in enumerate(body) if isinstance(stmt, ast.Assign)   # (a copy,
                  and getattr(stmt.targets[0], 'id', None) == self.names.value)   # if fused into)
        self.value = body[at]
        forward, rev = body[:at], body[at + 1:-1]
        self.loops_checkpointed = bool(self.checkpoint) or any(getanno(stmt, Key.CHECKPOINT)
                                                               for stmt in forward)
        if self.loops_checkpointed:
            forward, rev, self.unbound = checkpointing.transform(
                nodes.clone(forward), nodes.clone(rev),
                checkpointing.Context(self.names, self.namer, self.params, self.source, self.order,
                                      self.fn, self.bindings, self.namespace),
                self.checkpoint)
            combined.body = forward + [self.value] + rev + body[-1:]
        return tree

    reductions = REDUCTIONS      # what `uniform` may rewrite


def run(tree, ctx: ReverseCompile) -> ast.Module:
    """The unit of three functions (`ROLES`) from the sweeps; no tape bindings yet."""
    name, params, names = ctx.name, ctx.params, ctx.names
    forward, rev = ctx.forward, ctx.reverse
    capture = nodes.call('snapshot', ctx.output) if ctx.compiled.in_place else ctx.output
    ctx.value = nodes.assign(names.value, capture)
    combined = nodes.function_def('d' + name, params + [ctx.seed], forward + [ctx.value] + rev
                                  + [nodes.return_(ctx.grad_value())])
    # The split pair: the forward saves the locals the reverse reads at its start.
    local = set(params) | nodes.store_names(forward)
    entry_live = sorted((Liveness(rev, set(ctx.grad_names), ctx.effects).live_in & local)
                        - {ctx.seed})
    maybe_unset = sorted(set(entry_live) - optimize.definitely_assigned(forward, set(params)))
    prologue = [nodes.assign(n, None) for n in sorted(set(ctx.undefined) | set(maybe_unset))]
    save = [nodes.expr_stmt(nodes.call(names.push, nodes.tuple_(*entry_live)))] if entry_live else []
    fwd_fn = nodes.function_def(f'{name}_forward', [names.tape] + params,
                                prologue + forward + save + [nodes.return_(ctx.output)])
    if len(entry_live) > 1:
        restore = [nodes.assign(nodes.tuple_(*entry_live, store=True), nodes.call(names.pop))]
    elif entry_live:
        restore = [nodes.assign(entry_live[0], nodes.subscript(nodes.call(names.pop), nodes.const(0)))]
    else:
        restore = []
    bwd_fn = nodes.function_def(f'{name}_backward', [names.tape, ctx.seed],
                                restore + rev + [nodes.return_(ctx.grad_value())])
    return nodes.module([fwd_fn, bwd_fn, combined])


def unit_roles(tree, ctx: ReverseCompile) -> dict:
    """The functions of the unit `tree` by role, in `ROLES`' order: all three, or, once
    `defer` set the split pair aside, the combined function alone or the pair alone."""
    name = ctx.name
    by_name = {f'{name}_forward': 'forward', f'{name}_backward': 'backward', f'd{name}': 'combined'}
    found = {by_name[fdef.name]: fdef for fdef in tree.body}
    return {role: found[role] for role in ROLES if role in found}


def defer(tree, ctx: ReverseCompile) -> ast.Module:
    """`defer`: the split pair set aside (`Compiled.split_later`); the passes after this
    one run on it when it is first asked for (`pipeline.complete_split`)."""
    unit = unit_roles(tree, ctx)
    ctx.compiled.split_later = ctx, nodes.module([unit['forward'], unit['backward']])
    tree.body = [unit['combined']]
    return tree


def bind_tapes(tree, ctx: ReverseCompile) -> ast.Module:
    """`tape`: the combined function makes its tape and returns (value, gradients); each
    function binds the tape's push and pop it uses, and nothing else of it."""
    names = ctx.names
    unit = unit_roles(tree, ctx)
    if 'combined' in unit:
        unit['combined'] = _with_own_tape(unit['combined'], ctx)
    if 'forward' in unit:
        fwd_fn, bwd_fn = unit['forward'], unit['backward']
        fwd_fn.body = [nodes.assign(names.push, nodes.attribute(names.tape, 'append'))] + fwd_fn.body
        fwd_fn.args.defaults = list(_user_defaults(ctx))
        bwd_fn.body = [nodes.assign(names.pop, nodes.attribute(names.tape, 'pop'))] + bwd_fn.body
    read = ctx.tape_reads = ctx.tape_reads or {}      # (`slots` trims the tape again)
    for role in ('combined', 'forward', 'backward'):
        if role in unit:
            trim_tape(unit[role], names, read)
    if ctx.tapes:
        for fdef in unit.values():
            _tapes_made_for_adjoints(fdef, ctx.tapes)
    return nodes.module(unit.values())


def _with_own_tape(combined, ctx):
    """The combined function making its tape, returning (value, gradients)."""
    names = ctx.names
    prologue = [nodes.assign(n, None) for n in sorted(set(ctx.undefined) | set(ctx.unbound))]
    return nodes.function_def(
        combined.name, ctx.params + [ctx.seed],
        [nodes.assign(names.tape, nodes.list_()),
         nodes.assign(names.push, nodes.attribute(names.tape, 'append')),
         nodes.assign(names.pop, nodes.attribute(names.tape, 'pop'))]
        + prologue + combined.body[:-1]
        + [nodes.return_(nodes.tuple_(names.value, ctx.grad_value()))],
        defaults=_user_defaults(ctx) + [1.0])


def _tapes_made_for_adjoints(fdef, tapes):
    """In generated code differentiated again, the tapes its code makes (`_tape = []`)
    become `new_tape()`: a tape that carries the adjoint stacks kept beside it."""
    for stmt in nodes.statements(fdef.body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id in tapes and isinstance(stmt.value, ast.List) \
                and not stmt.value.elts:
            stmt.value = nodes.call('new_tape')


def tapes_made(ctx: ReverseCompile) -> set:
    """The tapes of the generated code: the code's own, those of the code it was made from,
    and the adjoint stacks kept beside those (third order pushes on them)."""
    out = set(ctx.tapes) | {ctx.names.tape}
    for stmt in ctx.sweep_context.stack_prologue:      # `_tape_adjoints = adjoint_stack(...)`
        if isinstance(stmt.value, ast.Call) and getattr(stmt.value.func, 'id', None) == 'adjoint_stack':
            out.add(stmt.targets[0].id)
    return out


def _user_defaults(ctx) -> list:
    """The user's defaults, as the functions of the unit declare them (lifted free
    variables come last and have none): bound once, for all three."""
    if ctx.user_defaults is None:
        ctx.user_defaults = [] if ctx.lifted else _bound_defaults(ctx)
    return ctx.user_defaults


def _bound_defaults(ctx):
    """`fn`'s defaults as the values they were bound to when `fn` was made, not
    their expressions evaluated again in the generated module (which may not see
    them: `lambda x, k=k: ...` in a loop, or a global rebound since)."""
    node = ctx.source.node
    values = getattr(ctx.fn, '__defaults__', None) or ()
    if len(values) != len(node.args.defaults):
        return list(node.args.defaults)
    bound = []
    for value in values:
        if _plain_literal(value):
            # written as itself: tf.source shows it; Numba and an exported module need no name
            bound.append(nodes.const(value))
            continue
        name = ctx.namer.new('_default')
        ctx.namespace[name] = value
        bound.append(nodes.name(name))
    return bound


def _plain_literal(value) -> bool:
    """A default that reads back as itself from its repr (finite floats, ints, bools, None,
    short strings)."""
    if value is None or value.__class__ in (bool, int):
        return True
    if value.__class__ is float:
        return value == value and abs(value) != float('inf')
    return value.__class__ is str and len(value) <= 40


def trim_tape(fdef, names, read=None):
    """Drop the push/pop bindings (and the tape) a function does not use.

    `read`: id(statement) -> (statement, names it reads), shared by the functions of
    one compilation, which share their statements (trimming changes no statement)."""
    bindings = {names.push, names.pop, names.tape}
    read = {} if read is None else read

    def binding(stmt):
        return isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
            and stmt.targets[0].id in bindings

    used = set()
    for stmt in fdef.body:
        if not binding(stmt):
            known = read.get(id(stmt))
            if known is None or known[0] is not stmt:
                known = read[id(stmt)] = stmt, nodes.load_names(stmt)
            used |= known[1]
    if names.push in used or names.pop in used:
        used.add(names.tape)
    fdef.body = [s for s in fdef.body if not binding(s) or s.targets[0].id in used]
