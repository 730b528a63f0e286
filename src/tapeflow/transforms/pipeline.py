"""The one ordered pipeline from a Python function to its compiled adjoint.

    parse -> resolve -> fence -> desugar -> anf -> activity -> reverse -> optimize
          -> checkpoint -> fusion -> uniform -> codegen

Each pass is its own module with one entry point; the order is fixed here and
nowhere else. `compile_reverse` runs it and loads the result. The generated
module holds three functions of the user's function `f`:

    df(x, ..., bout=1.0)        value and gradient in one body (what `grad` runs
                                and `source` shows)
    f_forward(_tape, x, ...)    the forward sweep alone: pushes, returns the value
    f_backward(_tape, bout)     the reverse sweep alone: pops, returns the gradients

The split pair serves calls from other compiled functions and the eager tape.
"""
from __future__ import annotations

import dataclasses

from tapeflow.syntax import ast

from tapeflow.syntax.naming import identifier as _id
from tapeflow.analysis import activity, aliasing, shapes as shape_analysis
from tapeflow.analysis.liveness import Liveness
from tapeflow.syntax import fence, nodes, parse, resolve, sourcemap
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.naming import Namer
from tapeflow.syntax.unparse import (annotate, line_origins, load_module, origins, unparse,
                                     unparse_together)
from tapeflow.rules.numpy_reductions import grad_of_mean, grad_of_sum
from tapeflow.transforms import (anf, callees, checkpoint as checkpointing, desugar, forward,
                                 fusion, mutation, optimize, reverse, tape_check, tape_ops, uniform,
                                 variants)
from tapeflow.transforms.inline import RuleEmitter

# The passes, in order, with why each stands where it does.
PASSES = (
    'parse',      # source text -> gast, nodes located in the user's file
    'resolve',    # free names -> objects: calls must be told apart (rule, user function)
    'fence',      # reject what later passes do not understand, before touching anything
    'desugar',    # jumps to flags, loops to range: reverse knows only these forms
    'anf',        # one operation per statement: one rule per adjoint statement
    'mutation',   # writes to shared memory made explicit: later passes assume value semantics
    'activity',   # which names carry derivatives: only those get adjoints
    'reverse',    # forward sweep with pushes, reverse sweep with pops
    'optimize',   # drop dead adjoints and unneeded push/pop pairs
    'checkpoint', # with checkpoint=: loops keep snapshots instead of a tape of every trip
    'fusion',     # single-use temporaries into their one reader: fewer interpreter steps
    'uniform',    # whole-array sum/mean cotangents kept as one number where they broadcast
    'codegen',    # unparse and load, registered with linecache
)

# Names generated code uses besides the user's globals; the caller supplies
# their values (`tapeflow.runtime.support`), so this layer does not import it.
RUNTIME_NAMES = ('add_adjoint', 'static_argument', 'setitem_value_adjoint', 'setitem_clear_adjoint',
                 'last_adjoint', 'drop_last_adjoint', 'snapshot', 'old_value',
                 'getitem_adjoint', 'unbroadcast', 'np', 'math', 'range', 'slice', 'reversed', 'len',
                 'setitem_tangent', 'append_tangent', 'zero_tangent', 'adjoint_stack',
                 'lift_tangent', 'jvp_over_batch', 'setitem_batched', 'dense',
                 # the forms of the mutation pass
                 'is_array', 'is_list', 'shares', 'inplace_op', 'pop_index', 'insert_adjoint',
                 'remove_tangent', 'insert_tangent', 'index_size', 'as_mask', 'saved_contents', 'restore_contents',
                 'add_at', 'put_index', 'diagonal_index', 'refresh_items', 'reread_item', 'reread_slot',
                 'overlap_value', 'check_overlap', 'insert_index', 'check_apart', 'check_memory', 'to_library', 'cycled',
                 'holds', 'like_layout', 'check_refresh', 'is_mutable',
                 # checkpointed loops (transforms.checkpoint), uniform cotangents (transforms.uniform)
                 'checkpoints', 'uniform_sum', 'uniform_mean')


@dataclasses.dataclass
class Compiled:
    """A compiled adjoint of one function for one set of differentiated inputs."""
    fn: object
    wrt: tuple                 # positions of differentiated parameters
    lifted: tuple              # free names turned into extra parameters
    params: list               # parameter names of the primal, lifted ones last
    source: str                # the combined function, as shown to users
    module_source: str         # everything generated for this function
    namespace: dict
    split_source: str = ''     # the forward and backward functions alone
    combined: object = None
    forward: object = None
    backward: object = None
    passes: list = dataclasses.field(default_factory=list)   # (pass name, source)
    callees: list = dataclasses.field(default_factory=list)
    bindings: object = None
    in_place: bool = False     # the reverse sweep restores arrays in place
    trees: dict = dataclasses.field(default_factory=dict)    # role -> final gast FunctionDef
    # (namespace, name, role): callers that bound this function while it was
    # still compiling (recursion); `bind_pending` fills them in at the end.
    pending: list = dataclasses.field(default_factory=list)
    # One per callee, in order: the call `compile_callee(fn, wrt, **keywords)` that
    # made it, as (fn, wrt, keywords, {role: name bound here}); `disk_cache` replays it.
    links: list = dataclasses.field(default_factory=list)
    disk_key: object = None    # `disk_cache`'s key of this entry, or None (not cacheable)


def _checks_static(fn, order) -> bool:
    """Whether an argument a primitive has no derivative in, but which counts as moving,
    is checked when the code runs (`runtime.support.static_argument`) rather than refused:
    in generated code differentiated again, where every value popped off the tape
    counts as moving (axes and widths too), and in tapeflow's own rules, whose axes come
    out of the tuples they compute. A user's own code is told when it compiles."""
    return order > 1 or (getattr(fn, '__module__', None) or '').startswith('tapeflow.')


def _bound_defaults(fn, node, namer, namespace):
    """`fn`'s defaults as the values they were bound to when `fn` was made, not
    their expressions evaluated again in the generated module (which may not see
    them: `lambda x, k=k: ...` in a loop, or a global rebound since)."""
    values = getattr(fn, '__defaults__', None) or ()
    if len(values) != len(node.args.defaults):
        return list(node.args.defaults)
    bound = []
    for value in values:
        name = namer.new('_default')
        namespace[name] = value
        bound.append(nodes.name(name))
    return bound


def bind_role(callee, namespace, name, role):
    """Bind `name` to the `role` function of `callee`; while `callee` is still compiling
    (recursion), to a forwarding lambda that `bind_pending` replaces when it is done."""
    if getattr(callee, role) is not None:
        namespace[name] = getattr(callee, role)
        return
    namespace[name] = lambda *a: getattr(callee, role)(*a)       # until it is done
    callee.pending.append((namespace, name, role))


def bind_pending(compiled):
    """Once `compiled` is complete, bind the functions themselves where callers
    bound forwarding lambdas: the compiler reads generated code again."""
    for namespace, name, role in compiled.pending:
        namespace[name] = getattr(compiled, role)
    compiled.pending.clear()


def compile_reverse(fn, wrt=(0,), lifted=(), *, runtime_names: dict, optimize_code=True,
                    record_passes=False, compile_callee=None, scalar_args=(),
                    arg_shapes=(), kinds=(), checkpoint=None) -> Compiled:
    """Run the pipeline on `fn`, differentiating the parameters at `wrt`.

    `scalar_args`: positions whose arguments are scalars in the calls this
    compilation serves; `arg_shapes`: (position, shape) of array arguments.
    The caller keys its cache on both; the code drops `unbroadcast` where they
    show nothing was broadcast. `checkpoint` (True, or a number of snapshots):
    the combined function's top-level loops keep snapshots instead of a tape
    (`transforms.checkpoint`); the split pair keeps the tape.
    """
    passes = []
    front = _front(fn, wrt, lifted, scalar_args, arg_shapes, runtime_names,
                   passes if record_passes else None, kinds)
    source, node, namer, params, active = front.source, front.node, front.namer, front.params, front.active
    wrt_names, shapes, namespace, emitter = front.wrt_names, front.shapes, front.namespace, front.emitter
    record = front.record
    compiled = Compiled(fn, tuple(wrt), tuple(lifted), params, '', '', namespace,
                        bindings=front.bindings)
    for own in (f'd{_id(fn)}', f'{_id(fn)}_forward', f'{_id(fn)}_backward'):
        namer.reserve(own)                       # a callee bound here must not shadow these
    names = reverse.TapeNames.fresh(namer)
    ctx = reverse.ReverseContext(source, namer, emitter, active,
                                 _callee_binder(compiled, namespace, namer, compile_callee),
                                 shapes, names)
    order = getattr(fn, '__tapeflow_order__', 0) + 1     # generated code is of a higher order
    ctx.order = order
    ctx.check_static = _checks_static(fn, order)
    ctx.kinds = front.written.kinds if front.written is not None else {}
    ctx.rematerialise = optimize_code
    adjoint = reverse.transform(node, ctx)                              # reverse

    adj = adjoint.adjoints
    output = adjoint.output
    seed_name = adj[output.id] if isinstance(output, ast.Name) and output.id in active \
        else namer.new('bout')
    seed = [s for s in adjoint.seed if not (isinstance(s.value, ast.Name) and s.value.id == reverse.SEED)]
    if isinstance(output, ast.Tuple):
        seed = [nodes.substitute(s, {reverse.SEED: seed_name}) for s in seed]
    grads = [adj[n] if n in active else None for n in wrt_names]
    inits = [nodes.assign(adj[n], 0.0) for n in sorted(active)
             if not (isinstance(output, ast.Name) and n == output.id)]
    grad_names = [g for g in grads if g is not None]
    rev_body = inits + seed + adjoint.reverse
    record('reverse', nodes.function_def(_id(fn), params, adjoint.forward + rev_body))

    forward = adjoint.forward
    rev_body = optimize.zero_cotangents(rev_body)       # rules never given 0.0 they cannot take
    effects = {}                  # what statements read and write (`Liveness`), reused below
    if optimize_code:                                                   # optimize
        forward, rev_body, undefined = optimize.transform(
            forward, rev_body, set(grad_names) | {names.value}, params, effects)
    else:
        undefined = optimize._undefined_at_push(forward, set(params))
    record('optimize', nodes.function_def(_id(fn), params, forward + rev_body))
    compiled.in_place = any(getanno(s, Key.RESTORES_IN_PLACE) for s in nodes.statements(rev_body))
    prologue = [nodes.assign(n, None) for n in sorted(undefined)]
    grad_value = nodes.tuple_(*[g if g else nodes.const(0.0) for g in grads]) if len(grads) != 1 \
        else (nodes.name(grads[0]) if grads[0] else nodes.const(0.0))
    capture = nodes.call('snapshot', output) if compiled.in_place else output
    own = {adj[n] for n in active if n.startswith('_')}          # adjoints of temporaries

    def fuse(fdef):                                                     # fusion
        if not optimize_code:
            return fdef
        return fusion.transform(fdef, push={names.push}, pop={names.pop},
                                keep={names.value, *grad_names},
                                temporary=lambda n: n[0] == '_' or n in own)

    # the combined function's sweeps, fused (as one function; what fusion rewrites it
    # copies, the rest the split pair shares) before checkpointing
    value = nodes.assign(names.value, capture)
    body = fuse(nodes.function_def('d', params + [seed_name], forward + [value] + rev_body
                                   + [nodes.return_(grad_value)])).body
    at = next(k for k, stmt in enumerate(body) if isinstance(stmt, ast.Assign)   # (a copy,
              and getattr(stmt.targets[0], 'id', None) == names.value)   # if fused into)
    value, combined_forward, combined_reverse = body[at], body[:at], body[at + 1:-1]
    if checkpoint or any(getanno(stmt, Key.CHECKPOINT) for stmt in combined_forward):
        combined_forward, combined_reverse, unbound = checkpointing.transform(   # checkpoint
            nodes.clone(combined_forward), nodes.clone(combined_reverse),
            checkpointing.Context(names, namer, params, source, order), checkpoint)
        prologue = [nodes.assign(n, None) for n in sorted(set(undefined) | unbound)]
    # The user's defaults stay (lifted free variables come last and have none).
    user_defaults = [] if lifted else _bound_defaults(fn, front.node, namer, namespace)
    name = _id(fn)
    combined = nodes.function_def(
        'd' + name, params + [seed_name],
        [nodes.assign(names.tape, nodes.list_()),
         nodes.assign(names.push, nodes.attribute(names.tape, 'append')),
         nodes.assign(names.pop, nodes.attribute(names.tape, 'pop'))]
        + prologue + combined_forward
        + [value] + combined_reverse
        + [nodes.return_(nodes.tuple_(names.value, grad_value))],
        defaults=user_defaults + [1.0])
    read = {}
    _trim_tape(combined, names, read)

    # The split pair: the forward saves the locals the reverse reads at its start.
    local = set(params) | nodes.store_names(forward)
    entry_live = sorted((Liveness(rev_body, set(grad_names), effects).live_in & local) - {seed_name})
    maybe_unset = sorted(set(entry_live) - optimize.definitely_assigned(forward, set(params)))
    split_prologue = [nodes.assign(n, None) for n in sorted(set(undefined) | set(maybe_unset))]
    fwd_fn = nodes.function_def(
        f'{name}_forward', [names.tape] + params,
        [nodes.assign(names.push, nodes.attribute(names.tape, 'append'))]
        + split_prologue + forward
        + ([nodes.expr_stmt(nodes.call(names.push, nodes.tuple_(*entry_live)))] if entry_live else [])
        + [nodes.return_(output)], defaults=user_defaults)
    if len(entry_live) > 1:
        restore = [nodes.assign(nodes.tuple_(*entry_live, store=True), nodes.call(names.pop))]
    elif entry_live:
        restore = [nodes.assign(entry_live[0], nodes.subscript(nodes.call(names.pop), nodes.const(0)))]
    else:
        restore = []
    bwd_fn = nodes.function_def(
        f'{name}_backward', [names.tape, seed_name],
        [nodes.assign(names.pop, nodes.attribute(names.tape, 'pop'))] + restore
        + rev_body + [nodes.return_(grad_value)])
    fwd_fn, bwd_fn = fuse(fwd_fn), fuse(bwd_fn)     # (fusion copies what it rewrites)
    _trim_tape(fwd_fn, names, read)
    _trim_tape(bwd_fn, names, read)
    if optimize_code:                                                   # uniform
        for fdef in (combined, fwd_fn, bwd_fn):
            uniform.transform(fdef, shapes, namespace, _REDUCTIONS)
    tape_check.transform(combined, fwd_fn, bwd_fn, names, namer)        # tape depth, __debug__

    filename = front.source.filename                                    # codegen
    plain = unparse_together((fwd_fn, bwd_fn, combined))
    located = [origins(tree) for tree in (fwd_fn, bwd_fn, combined)]     # of each line
    rendered = [annotate(text, tree, filename, origins=where)
                for text, tree, where in zip(plain, (fwd_fn, bwd_fn, combined), located)]
    text = plain[2]
    split_text = '\n\n'.join(plain[:2])
    module_text = split_text + '\n\n' + text
    record('codegen', combined)
    load_module(module_text, namespace, name, display='\n\n'.join(r[0] for r in rendered))
    _register_lines(namespace, filename, plain, (fwd_fn, bwd_fn, combined), located)
    compiled.source = text
    compiled.module_source = module_text
    compiled.split_source = split_text
    compiled.trees = {'forward': fwd_fn, 'backward': bwd_fn, 'combined': combined}
    compiled.combined = namespace['d' + name]
    compiled.forward = namespace[f'{name}_forward']
    compiled.backward = namespace[f'{name}_backward']
    for generated in (compiled.combined, compiled.forward, compiled.backward):
        generated.__tapeflow_order__ = order
    compiled.passes = passes
    return compiled


_REDUCTIONS = {'grad_of_sum': grad_of_sum, 'grad_of_mean': grad_of_mean}


def _register_lines(namespace, filename, texts, trees, located=None):
    """Errors in the module just loaded (`texts` joined by blank lines) speak of the user's
    lines; `located`: `origins` of each tree, where the caller has them."""
    lines, first = {}, 1
    for k, (text, tree) in enumerate(zip(texts, trees)):
        lines.update(line_origins(text, tree, first, located[k] if located else None))
        first += text.count('\n') + 2
    sourcemap.register(namespace['__tapeflow_filename__'], filename, lines)


@dataclasses.dataclass
class _Front:
    source: object
    node: ast.FunctionDef
    namer: Namer
    params: list
    wrt_names: list
    active: set
    shapes: dict             # name -> static shape (analysis.shapes)
    bindings: object
    namespace: dict
    emitter: RuleEmitter
    record: object
    written: object = None   # what the mutation pass found (transforms.mutation.Result)


def _front(fn, wrt, lifted, scalar_args, arg_shapes, runtime_names, passes, kinds=()) -> _Front:
    """parse -> resolve -> fence -> desugar -> anf -> mutation -> activity: what both modes share."""
    def record(name, node):
        if passes is not None:
            passes.append((name, unparse(node)))

    source, node, bindings, namer = _syntax(fn, lifted, record)
    params = [a.id for a in node.args.args]
    for i in wrt:
        if i >= len(params):
            raise TypeError(f'{fn.__name__}() has {len(params) - len(lifted)} parameters; '
                            f'cannot differentiate with respect to argument {i}')
    wrt_names = [params[i] for i in wrt]
    generated = any(n.startswith('_tape') for n in namer.taken)
    written = None
    if not generated:                                                   # mutation
        param_kinds = {params[i]: k for i, k in enumerate(kinds) if k is not None and i < len(params)}
        param_kinds.update({params[i]: aliasing.SCALAR for i in scalar_args if i < len(params)})
        param_kinds.update({params[i]: aliasing.ARRAY for i, _ in arg_shapes if i < len(params)})
        summaries = callees.Summaries(anf_of)
        written = mutation.transform(node, mutation.Context(
            source, namer, param_kinds, summaries,
            lambda f, positions, derived=(): variants.variant(f, positions, parse.parse_function,
                                                              derived),
            bindings.computed.__setitem__))
        record('mutation', node)
    active = activity.active_names(node, set(wrt_names))                # activity
    if generated:
        # generated code: its tape carries values (and derivatives)
        popped, pushed = tape_ops.popped_names(node), tape_ops.pushed_names(node)
        outputs = activity.output_names(node.body) | pushed
        active = activity.active_names(node, set(wrt_names) | popped, outputs)
    else:
        varied = activity.active_names(node, set(wrt_names), nodes.store_names(node.body)
                                       | set(wrt_names))
        mutation.check(written, active, source, node, varied)
    param_shapes = {params[i]: () for i in scalar_args if i < len(params)}
    param_shapes.update({params[i]: tuple(shape) for i, shape in arg_shapes if i < len(params)})
    shapes = shape_analysis.infer(node, param_shapes)
    namespace = dict(runtime_names)
    namespace.update(bindings.values)
    namespace.update(bindings.computed)
    emitter = RuleEmitter(namespace, namer)
    return _Front(source, node, namer, params, wrt_names, active, shapes, bindings,
                  namespace, emitter, record, written)


def _syntax(fn, lifted=(), record=None):
    """parse -> resolve -> fence -> desugar -> anf: the function in the compiler's normal form."""
    source = parse.parse_function(fn)                                   # parse
    node = source.node
    if record:
        record('parse', node)
    for name in lifted:
        node.args.args.append(nodes.name(name))
        node.args.args[-1].ctx = ast.Param()
    bindings = resolve.resolve(node, fn)                                # resolve
    fence.check(source)                                                 # fence
    namer = Namer.for_function(node)
    namer.taken |= set(RUNTIME_NAMES)
    desugar.transform(node, namer, source, fn, bindings)                # desugar
    if record:
        record('desugar', node)
    anf.transform(node, namer)                                          # anf
    if record:
        record('anf', node)
    return source, node, bindings, namer


def anf_of(fn):
    """`fn` in ANF (what the analyses read), and what its names resolved to: for
    summaries of callees."""
    _, node, bindings, _ = _syntax(fn)
    return node, bindings


def compile_forward(fn, wrt=(0,), *, runtime_names: dict, optimize_code=True,
                    record_passes=False, compile_callee=None, scalar_args=(),
                    arg_shapes=(), batched=False, kinds=()) -> Compiled:
    """Forward mode: `jvp_f(*args, *tangents) -> (value, tangent)` for the parameters at `wrt`.

    `batched`: the tangents carry a leading batch axis, one row per direction
    (see `tapeflow.rules.batching`); user functions called are compiled so too.
    """
    _COMPILING_FORWARD.add(fn.__code__)
    try:
        return _compile_forward(fn, wrt, runtime_names, optimize_code, record_passes,
                                compile_callee, scalar_args, arg_shapes, batched, kinds)
    finally:
        _COMPILING_FORWARD.discard(fn.__code__)


def _compile_forward(fn, wrt, runtime_names, optimize_code, record_passes, compile_callee,
                     scalar_args, arg_shapes, batched, kinds) -> Compiled:
    passes = []
    front = _front(fn, wrt, (), scalar_args, arg_shapes, runtime_names,
                   passes if record_passes else None, kinds)
    params, active, namer = front.params, front.active, front.namer

    compiled = Compiled(fn, tuple(wrt), (), params, '', '', front.namespace, bindings=front.bindings)
    namer.reserve(f'{_id(fn)}_jvp')        # a callee bound here must not shadow it
    binder = _jvp_binder(compiled, front.namespace, namer, compile_callee)
    ctx = forward.ForwardContext(front.source, namer, front.emitter, active, binder, front.shapes)
    ctx.order = getattr(fn, '__tapeflow_order__', 0) + 1
    ctx.check_static = _checks_static(fn, ctx.order)
    ctx.batched = batched
    ctx.kinds = front.written.kinds if front.written is not None else {}
    body, output, tangent_out = forward.transform(front.node, ctx)     # forward
    tangent_params = [ctx.tangents[n] for n in front.wrt_names]
    inits = [nodes.assign(ctx.tangents[p], nodes.call('zero_tangent', p)) for p in params
             if p in active and p not in front.wrt_names]
    tail = [nodes.return_(nodes.tuple_(output, tangent_out))]
    if optimize_code:                                                   # optimize
        body = optimize.drop_dead_tangents(inits + body, tail)
    else:
        body = inits + body
    fdef = nodes.function_def(f'{_id(fn)}_jvp', params + tangent_params, body + tail)
    text = unparse(fdef)                                                # codegen
    front.record('forward', fdef)
    load_module(text, front.namespace, _id(fn) + ' jvp',
                display=annotate(text, fdef, front.source.filename)[0])
    _register_lines(front.namespace, front.source.filename, [text], [fdef])
    compiled.trees = {'jvp': fdef}
    compiled.source = compiled.module_source = compiled.split_source = text
    compiled.combined = front.namespace[f'{_id(fn)}_jvp']
    compiled.combined.__tapeflow_order__ = getattr(fn, '__tapeflow_order__', 0) + 1
    compiled.passes = passes
    return compiled


# Code objects whose forward mode is being compiled: a recursive call is not
# specialised to its arguments' shapes (they may change at every level).
_COMPILING_FORWARD: set = set()


def _jvp_binder(compiled, namespace, namer, compile_callee):
    bound = {}

    def bind(fn, wrt, stmt, arg_shapes=()):
        if getattr(fn, '__code__', None) in _COMPILING_FORWARD:
            arg_shapes = ()
        kinds = _argument_kinds(stmt)
        key = fn, wrt, arg_shapes, kinds
        if key not in bound:
            request = dict(arg_shapes=arg_shapes, kinds=kinds)
            callee = compile_callee(fn, wrt, **request)
            compiled.callees.append(callee)
            name = namer.new(f'{_id(callee.fn)}_jvp')
            bind_role(callee, namespace, name, 'combined')
            compiled.links.append((fn, wrt, request, {'combined': name}))
            bound[key] = name
        return bound[key]
    return bind


def _trim_tape(fdef, names, read=None):
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


def _callee_binder(compiled, namespace, namer, compile_callee):
    """Bind a user function's compiled forward/backward into this namespace."""
    bound = {}

    def bind(fn, wrt, stmt):
        kinds = _argument_kinds(stmt)
        if (fn, wrt, kinds) in bound:
            return bound[fn, wrt, kinds]
        if compile_callee is None:
            raise TypeError(f'cannot differentiate the call of {fn.__name__}()')
        callee = compile_callee(fn, wrt, kinds=kinds)
        compiled.callees.append(callee)
        fwd = namer.new(f'{_id(callee.fn)}_forward')     # the name it is printed under
        bwd = namer.new(f'{_id(callee.fn)}_backward')
        bind_role(callee, namespace, fwd, 'forward')
        bind_role(callee, namespace, bwd, 'backward')
        compiled.links.append((fn, wrt, {'kinds': kinds}, {'forward': fwd, 'backward': bwd}))
        bound[fn, wrt, kinds] = fwd, bwd
        return fwd, bwd
    return bind


def _argument_kinds(stmt) -> tuple:
    """What the caller knows of the arguments of the user call in `stmt` (`analysis.aliasing`)."""
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    return getanno(call, Key.ARG_KINDS) or () if isinstance(call, ast.Call) else ()
