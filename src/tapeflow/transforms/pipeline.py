"""The passes, in order, and the one loop that runs them: every function compiles here.

    parse -> resolve -> fence -> desugar -> anf -> [native_calls] -> mutation -> activity -> shapes
          -> reverse -> optimize -> fold -> assemble -> fusion -> uniform -> factor
          -> checkpoint -> tape -> witness -> slots -> nest -> tape_check -> codegen
          -> native

Each pass is `run(tree, ctx) -> tree`, one entry point of its own module, over one
compile context (`transforms.context`: reverse mode's is `assemble.ReverseCompile`,
forward mode's `forward.ForwardCompile`). `PASSES` (reverse mode) and
`FORWARD_PASSES` share their front; `compile_with` runs one list, recording each pass's
output when asked (`tapeflow show --passes`). Reverse mode makes three functions of
the user's function (`transforms.assemble`), forward mode one (`f_jvp`).
"""
from __future__ import annotations

import dataclasses
import threading
import typing

from tapeflow.analysis import activity, shapes
from tapeflow.syntax import fence, parse, resolve
from tapeflow.syntax import ast
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.naming import identifier as _id
from tapeflow.transforms import (anf, assemble, checkpoint, codegen, desugar, factor, fold,
                                 forward, fusion, mutation, native, native_calls, nest, optimize,
                                 reverse, slots, tape_check, uniform, witness)
from tapeflow.transforms.context import CompileContext


class Pass(typing.NamedTuple):
    name: str
    run: object          # run(tree, ctx) -> tree
    why: str             # why it stands where it does
    when: object = None  # when(ctx) -> whether it runs (None: always)


FRONT = (
    Pass('parse', parse.run, "source text -> gast, nodes located in the user's file"),
    Pass('resolve', resolve.run, 'free names -> objects: calls must be told apart (rule, user function)'),
    Pass('fence', fence.run, 'reject what later passes do not understand, before touching anything'),
    Pass('desugar', desugar.run, 'jumps to flags, loops to range: reverse knows only these forms'),
    Pass('anf', anf.run, 'one operation per statement: one rule per adjoint statement'),
    Pass('native_calls', native_calls.run, "compile='numba': the user's helpers put in line, "
                                           'so that Numba compiles one function',
         lambda ctx: ctx.target != 'python'),
    Pass('mutation', mutation.run, 'writes to shared memory made explicit: later passes assume '
                                   'value semantics (not in generated code: its writes are its tape)'),
    Pass('activity', activity.run, 'which names carry derivatives: only those get adjoints'),
    Pass('shapes', shapes.run, 'static shapes: unbroadcast dropped where nothing was broadcast'),
)

PASSES = FRONT + (
    Pass('reverse', reverse.run, 'forward sweep with pushes, reverse sweep with pops'),
    Pass('optimize', optimize.run, 'drop dead adjoints and unneeded push/pop pairs'),
    Pass('fold', fold.run, "the rules' arithmetic on literals done once (`_slope_exponent(2) - 1` -> 1)"),
    Pass('assemble', assemble.run, 'the forward, backward and combined functions from the sweeps'),
    Pass('defer', assemble.defer, 'the split pair set aside: `grad` runs the combined function alone, and '
                         'the pair gets the passes below when a caller or a tape first asks for it',
         lambda ctx: ctx.defer_split),
    Pass('fusion', fusion.run, 'single-use temporaries into their one reader: fewer interpreter steps'),
    Pass('uniform', uniform.run, 'sum/mean cotangents kept as one number (or row) where they broadcast'),
    Pass('factor', factor.run, 'a common factor out of a cotangent sum: `bx * (0.5 + _sin)`'),
    Pass('checkpoint', checkpoint.run, 'with checkpoint=: loops keep snapshots instead of a tape of every trip'),
    Pass('tape', assemble.bind_tapes, 'each function binds the tape operations it uses, and no more'),
    Pass('witness', witness.run, "a value the reverse reads only as `unbroadcast`'s shape is pushed as a witness"),
    Pass('slots', slots.run, "a top-level range loop's saved values in lists indexed by the trip, "
                             'not on the tape: a store and a load instead of two calls',
         lambda ctx: ctx.target == 'python'),
    Pass('nest', nest.run, 'shape arithmetic back in one expression: `range(xs.shape[0])`'),
    Pass('tape_check', tape_check.run, 'under __debug__, each function checks it left the tape as it found it'),
    Pass('codegen', codegen.run, 'unparse and load, registered with linecache'),
    Pass('native', native.run, "compile='numba': the combined function made Numba's, last "
                               '(the Python unit stays for callers under a tape)',
         lambda ctx: ctx.target != 'python'),
)

# What the split pair set aside gets (Numba compiles the combined function alone).
_SPLIT_PASSES = tuple(p for p in PASSES[[p.name for p in PASSES].index('defer') + 1:]
                      if p.name != 'native')

FORWARD_PASSES = FRONT + (
    Pass('forward', forward.run, 'each statement followed by its tangent'),
    Pass('optimize', optimize.run, 'drop tangents nothing reads'),
    Pass('fold', fold.run, 'arithmetic on literals done once'),
    Pass('nest', nest.run, 'shape arithmetic back in one expression'),
    Pass('codegen', codegen.run, 'unparse and load, registered with linecache'),
    Pass('native', native.run, "compile='numba': the jvp made Numba's, last",
         lambda ctx: ctx.target != 'python'),
)


def run_passes(ctx, passes, tree=None):
    """Run `passes` in order on `tree` (None: the first, `parse`, reads `ctx.fn`)."""
    for step in passes:
        if step.when is not None and not step.when(ctx):
            continue
        tree = step.run(tree, ctx)
        ctx.saved(step.name, tree)
    return tree


def front(fn, upto='anf', **options):
    """`fn` after the front passes up to `upto`, and its context: for summaries of callees
    and for tests of one pass at a time."""
    ctx = CompileContext(fn, **options)
    ctx.front = anf_of
    names = [p.name for p in FRONT]
    return run_passes(ctx, FRONT[:names.index(upto) + 1]), ctx


def anf_of(fn):
    """`fn` in ANF (what the analyses read), and what its names resolved to: for
    summaries of callees."""
    node, ctx = front(fn, 'anf')
    return node, ctx.bindings


def compile_with(ctx, passes):
    """Run `passes` on `ctx.fn`; the `Compiled` they filled in."""
    ctx.front = ctx.front or anf_of
    ctx.link = ctx.link or (lambda: link(ctx))
    run_passes(ctx, passes)
    ctx.compiled.passes = ctx.record if ctx.record is not None else []
    return ctx.compiled


def compile_reverse(fn, wrt=(0,), lifted=(), *, runtime_names: dict, optimize_code=True,
                    record_passes=False, compile_callee=None, scalar_args=(),
                    arg_shapes=(), kinds=(), checkpoint=None, target='python',
                    native_dir=None, defer_split=False) -> Compiled:
    """Run `PASSES` on `fn`, differentiating the parameters at `wrt`.

    `scalar_args`: positions whose arguments are scalars in the calls this
    compilation serves; `arg_shapes`: (position, shape) of array arguments.
    The caller keys its cache on both; the code drops `unbroadcast` where they
    show nothing was broadcast. `checkpoint` (True, or a number of snapshots):
    the combined function's top-level loops keep snapshots instead of a tape
    (`transforms.checkpoint`); the split pair keeps the tape. `target`: 'numba' or
    'auto' makes the combined function native (`transforms.native`), kept as a module
    file under `native_dir` where one is given. `defer_split`: the forward and backward
    functions get the passes after `assemble` when first asked for (`Compiled.forward`).
    """
    ctx = assemble.ReverseCompile(
        fn, 'reverse', wrt=tuple(wrt), lifted=tuple(lifted), runtime_names=runtime_names,
        optimize=optimize_code, compile_callee=compile_callee, scalar_args=tuple(scalar_args),
        arg_shapes=tuple(arg_shapes), kinds=tuple(kinds), checkpoint=checkpoint,
        target=target, native_dir=native_dir, defer_split=defer_split and not record_passes,
        record=[] if record_passes else None)
    return compile_with(ctx, PASSES)


def compile_forward(fn, wrt=(0,), *, runtime_names: dict, optimize_code=True,
                    record_passes=False, compile_callee=None, scalar_args=(),
                    arg_shapes=(), batched=False, kinds=(), target='python',
                    native_dir=None) -> Compiled:
    """Run `FORWARD_PASSES`: `jvp_f(*args, *tangents) -> (value, tangent)` for the parameters at `wrt`.

    `batched`: the tangents carry a leading batch axis, one row per direction
    (see `tapeflow.rules.batching`); user functions called are compiled so too.
    `target`, `native_dir`: as `compile_reverse`'s, for the jvp.
    """
    ctx = forward.ForwardCompile(
        fn, 'forward', wrt=tuple(wrt), runtime_names=runtime_names, optimize=optimize_code,
        compile_callee=compile_callee, scalar_args=tuple(scalar_args),
        arg_shapes=tuple(arg_shapes), kinds=tuple(kinds), batched=batched,
        target=target, native_dir=native_dir, record=[] if record_passes else None)
    _COMPILING_FORWARD.add(fn.__code__)
    try:
        return compile_with(ctx, FORWARD_PASSES)
    finally:
        _COMPILING_FORWARD.discard(fn.__code__)


def link(ctx):
    """Once the front has run: the `Compiled` to fill in, and how callees bind into it."""
    compiled = ctx.compiled = Compiled(ctx.fn, ctx.wrt, ctx.lifted, ctx.params, '', '',
                                       ctx.namespace, bindings=ctx.bindings)
    if ctx.mode == 'reverse':
        ctx.binder = _callee_binder(compiled, ctx.namespace, ctx.namer, ctx.compile_callee)
    else:
        ctx.namer.reserve(f'{_id(ctx.fn)}_jvp')        # a callee bound here must not shadow it
        ctx.binder = _jvp_binder(compiled, ctx.namespace, ctx.namer, ctx.compile_callee)
    return compiled


class _Split:
    """A field of `Compiled` that the split pair fills in: reading it completes a split
    that `defer` set aside."""

    def __set_name__(self, owner, name):
        self.slot = '_' + name

    def __get__(self, compiled, owner=None):
        if compiled is None:
            return self
        if compiled.split_later is not None or compiled.splitting:
            complete_split(compiled)        # (or wait for the thread completing it)
        return getattr(compiled, self.slot)

    def __set__(self, compiled, value):
        setattr(compiled, self.slot, value)


@dataclasses.dataclass
class Compiled:
    """A compiled adjoint of one function for one set of differentiated inputs."""
    fn: object
    wrt: tuple                 # positions of differentiated parameters
    lifted: tuple              # free names turned into extra parameters
    params: list               # parameter names of the primal, lifted ones last
    source: str                # the combined function, as shown to users
    _module_source: str        # `module_source`: everything generated for this function
    namespace: dict
    _split_source: str = ''    # `split_source`: the forward and backward functions alone
    combined: object = None
    _forward: object = None
    _backward: object = None
    passes: list = dataclasses.field(default_factory=list)   # (pass name, source)
    callees: list = dataclasses.field(default_factory=list)
    bindings: object = None
    in_place: bool = False     # the reverse sweep restores arrays in place
    written: tuple = ()        # positions of the parameters whose memory the function writes
    _trees: dict = dataclasses.field(default_factory=dict)   # `trees`: role -> final gast FunctionDef
    # (namespace, name, role): callers that bound this function while it was
    # still compiling (recursion); `bind_pending` fills them in at the end.
    pending: list = dataclasses.field(default_factory=list)
    # One per callee, in order: the call `compile_callee(fn, wrt, **keywords)` that
    # made it, as (fn, wrt, keywords, {role: name bound here}); `disk_cache` replays it.
    links: list = dataclasses.field(default_factory=list)
    disk_key: object = None    # `disk_cache`'s key of this entry, or None (not cacheable)
    native_source: str = ''    # the combined function Numba compiles (`transforms.native`)
    split_later: tuple = None  # (context, the split pair's unit) that `defer` set aside
    splitting: bool = False    # a thread is completing the split (`complete_split`)
    code: object = None        # `fn.__code__` when compiled
    # (object, attribute, value): what must still hold for the code to be the code that
    # runs (`cache.freshness`: the function's code, how callees were reached)
    fresh: tuple = ()

    module_source = _Split()
    split_source = _Split()
    forward = _Split()
    backward = _Split()
    trees = _Split()


_SPLITTING = threading.RLock()       # one thread completes a split; the others wait for it


def complete_split(compiled):
    """Run the passes after `defer` on the split pair it set aside for `compiled` (the
    first time a caller, a tape or a display asks for the pair)."""
    with _SPLITTING:            # another thread asking meanwhile waits here (`_Split`)
        if compiled.split_later is None:
            return                  # done, or being done by this thread (codegen reads
        ctx, tree = compiled.split_later        # the fields it fills in)
        compiled.splitting = True   # (first: a reader sees one or the other set)
        compiled.split_later = None
        try:
            ctx.compiled = compiled
            run_passes(ctx, _SPLIT_PASSES, tree)
        finally:
            compiled.splitting = False


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
