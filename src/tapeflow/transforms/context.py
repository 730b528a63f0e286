"""The compile context: what one compilation of one function knows, pass after pass.

Every pass is `run(tree, ctx) -> tree` over one `CompileContext` (the list that runs
them is `transforms.pipeline.PASSES`). The context holds the request (the function,
the differentiated positions, the options), the modes, and what the passes found:
bindings, names, shapes, activity, the sweeps.

The modes are fields, never read off identifiers:

- `order`: 1 + how often `fn` was itself made by differentiation
  (`__tapeflow_order__` on generated functions);
- `tapes`: the names of the tapes in `fn`'s code when `fn` is generated code whose
  tape carries values (`__tapeflow_tapes__`, set on every generated function); empty
  for a user's function, whatever its names (`_tape_x` is a user's variable).
"""
from __future__ import annotations

import dataclasses

from tapeflow.analysis import activity, aliasing
from tapeflow.syntax import nodes, parse
from tapeflow.syntax.naming import Namer
from tapeflow.transforms import callees, mutation, mutation_checks, tape_ops, variants
from tapeflow.transforms.inline import RuleEmitter

# Names generated code uses besides the user's globals; the caller supplies
# their values (`tapeflow.runtime.support`), so this layer does not import it.
RUNTIME_NAMES = ('add_adjoint', 'static_argument', 'keyword_argument', 'setitem_value_adjoint', 'setitem_clear_adjoint',
                 'last_adjoint', 'drop_last_adjoint', 'snapshot', 'old_value', 'old_item', 'restore_item', 'old_entry', 'restore_entry',
                 'getitem_adjoint', 'unbroadcast', 'np', 'math', 'range', 'slice', 'reversed', 'len', 'tuple',
                 'setitem_tangent', 'append_tangent', 'zero_tangent', 'adjoint_stack', 'new_tape',
                 'lift_tangent', 'jvp_over_batch', 'setitem_batched', 'dense',
                 # the forms of the mutation pass
                 'is_array', 'is_list', 'shares', 'inplace_op', 'pop_index', 'insert_adjoint',
                 'remove_tangent', 'insert_tangent', 'index_size', 'as_mask', 'saved_contents', 'restore_contents',
                 'add_at', 'put_index', 'diagonal_index', 'refresh_items', 'reread_item', 'reread_slot',
                 'overlap_value', 'check_overlap', 'insert_index', 'check_apart', 'check_memory', 'to_library', 'cycled',
                 'holds', 'like_layout', 'check_refresh', 'is_mutable',
                 # checkpointed loops (transforms.checkpoint), uniform cotangents (transforms.uniform)
                 'checkpoints', 'uniform_sum', 'uniform_mean', 'kept_sum', 'kept_mean', 'shape_witness',
                 # calls resolved at run time (tapeflow.calls)
                 'call_forward', 'call_backward', 'call_jvp', 'call_plain', 'closure',
                 'receiver_tangent', 'zipped', 'without_key', 'delete_item', 'cotangent_of',
                 'receiver_cotangent', 'call_forward_jvp', 'call_backward_jvp')


def order_of(fn) -> int:
    """The order of the code compiled from `fn`: generated code is of a higher order."""
    return getattr(fn, '__tapeflow_order__', 0) + 1


def tapes_of(fn) -> frozenset:
    """The tapes of `fn`'s code, if `fn` is generated code whose tape carries values."""
    return frozenset(getattr(fn, '__tapeflow_tapes__', ()))


def mark_generated(function, order, tapes) -> None:
    """What a generated function says of itself to the compiler reading it again."""
    function.__tapeflow_order__ = order
    function.__tapeflow_tapes__ = tuple(sorted(tapes))


@dataclasses.dataclass(eq=False)
class CompileContext:
    fn: object
    mode: str = 'reverse'             # or 'forward'
    wrt: tuple = (0,)
    lifted: tuple = ()                # free names turned into extra parameters
    runtime_names: dict = dataclasses.field(default_factory=dict)
    optimize: bool = True
    compile_callee: object = None
    scalar_args: tuple = ()
    arg_shapes: tuple = ()
    kinds: tuple = ()
    checkpoint: object = None
    batched: bool = False
    target: str = 'python'            # or 'numba', 'auto': `transforms.native`
    native_dir: str = None            # where native modules are kept (the disk cache's folder)
    record: list = None               # (pass name, source after it), when asked
    defer_split: bool = False         # reverse mode: the split pair compiled when first asked for
    # the modes
    order: int = 1
    tapes: frozenset = frozenset()
    # what the passes found
    source: object = None
    namer: Namer = None
    user_names: frozenset = frozenset()   # the names the user's own code spells
    bindings: object = None
    params: list = None
    wrt_names: list = None
    written: object = None            # the mutation pass's result (transforms.mutation.Result)
    active: set = None
    shapes: dict = None
    namespace: dict = None
    emitter: object = None
    compiled: object = None           # the `pipeline.Compiled` being filled in
    binder: object = None             # binds a user callee's compiled functions here
    front: object = None              # fn -> (fn in ANF, its bindings): summaries of callees
    link: object = None               # () -> the `pipeline.Compiled` to fill in
    extra: dict = dataclasses.field(default_factory=dict)   # mode-specific state of the passes

    def __post_init__(self):
        self.order = order_of(self.fn)
        self.tapes = tapes_of(self.fn)

    @property
    def generated(self) -> bool:
        """Generated code whose tape carries values (and derivatives)."""
        return bool(self.tapes)

    def start(self, source):
        """After parsing: the tree of `source`, lifted names as extra parameters, the namer."""
        self.source = source
        node = source.node
        for name in self.lifted:
            node.args.args.append(nodes.param(nodes.name(name)))
        self.namer = Namer.for_function(node)
        # (a variant's names for its parameters as they were given, `transforms.variants`)
        self.namer.shown.update(getattr(self.fn, '__tapeflow_shown_as__', {}))
        self.user_names = frozenset(self.namer.taken)
        self.namer.taken |= set(RUNTIME_NAMES)
        return node

    def differentiated(self, node) -> list:
        """The names of the differentiated parameters of `node` in normal form (after `anf`)."""
        if self.wrt_names is None:
            self.params = [a.id for a in node.args.args]
            for i in self.wrt:
                if i >= len(self.params):
                    raise TypeError(f'{self.fn.__name__}() has {len(self.params) - len(self.lifted)} '
                                    f'parameters; cannot differentiate with respect to argument {i}')
            self.wrt_names = [self.params[i] for i in self.wrt]
        return self.wrt_names

    def parameter_kinds(self) -> dict:
        params = self.params
        kinds = {params[i]: k for i, k in enumerate(self.kinds) if k is not None and i < len(params)}
        kinds.update({params[i]: aliasing.SCALAR for i in self.scalar_args if i < len(params)})
        for i, shape in self.arg_shapes:
            if i >= len(params):
                continue
            if tuple(shape) == () and kinds.get(params[i]) != aliasing.ARRAY:
                # shape () is a number's too (forward mode's callees are specialised to
                # their arguments' shapes): which it is shows when the code runs
                kinds[params[i]] = kinds.get(params[i]) or aliasing.NUMERIC
            else:
                kinds[params[i]] = aliasing.ARRAY
        return kinds

    def parameter_shapes(self) -> dict:
        params = self.params
        shapes = {params[i]: () for i in self.scalar_args if i < len(params)}
        shapes.update({params[i]: tuple(shape) for i, shape in self.arg_shapes if i < len(params)})
        return shapes

    def mutation_context(self, node) -> mutation.Context:
        self.differentiated(node)
        summaries = callees.Summaries(self.front)
        return mutation.Context(
            self.source, self.namer, self.parameter_kinds(), summaries,
            lambda f, positions, derived=(): variants.variant(f, positions, parse.parse_function,
                                                              derived),
            self.bindings.computed.__setitem__)

    def active_names(self, node) -> set:
        """The names that carry derivatives; in generated code whose tape carries values,
        from what it pops too, and to what it pushes."""
        wrt = set(self.differentiated(node))
        if not self.generated:
            return activity.active_names(node, wrt)
        popped = tape_ops.popped_names(node, self.tapes)
        pushed = tape_ops.pushed_names(node, self.tapes)
        return activity.active_names(node, wrt | popped, activity.output_names(node.body) | pushed)

    def opaque_names(self, node) -> frozenset:
        """Names whose cotangents (tangents) may be structured though no kind says so
        (`targets.opaque_names`), and parameters a caller passed values of unknown kind."""
        from tapeflow.transforms.targets import opaque_names
        unknown = {p for p, k in zip(self.params or (), self.kinds) if k is None} \
            if self.kinds else set()
        return frozenset(opaque_names(node) | unknown)

    def linked(self) -> None:
        """Before the first pass of a mode: the generated module's namespace (the runtime's
        names, what the user's names resolved to, what the mutation pass made), the rule
        emitter, and the `Compiled` to fill in (`link`)."""
        self.namespace = dict(self.runtime_names)
        self.namespace.update((n, v) for n, v in self.bindings.values.items()
                              if n not in self.bindings.renamed)    # (bound as renamed)
        self.namespace.update(self.bindings.computed)
        self.emitter = RuleEmitter(self.namespace, self.namer)
        self.link()
        if self.written is not None:        # (the caller's arguments: `compilation.entry`)
            self.compiled.written = tuple(i for i, p in enumerate(self.params)
                                          if p in self.written.written_params)

    def check_writes(self, node) -> None:
        """The mutation pass's pending refusals, now that activity is known."""
        if self.written is None:
            return
        varied = None                   # (read for the run-time checks alone)
        if any(pending.runtime is not None for pending in self.written.pending):
            wrt = set(self.wrt_names)
            varied = activity.active_names(node, wrt, nodes.store_names(node.body) | wrt)
        mutation_checks.check(self.written, self.active, self.source, node, varied)

    def saved(self, name, tree) -> None:
        """Record `tree` as the output of the pass `name`, when asked."""
        if self.record is not None:
            from tapeflow.syntax.unparse import unparse
            self.record.append((name, unparse(tree)))


def checks_static(fn, order) -> bool:
    """Whether an argument a primitive has no derivative in, but which counts as moving,
    is checked when the code runs (`runtime.support.static_argument`) rather than refused:
    in generated code differentiated again, where every value popped off the tape
    counts as moving (axes and widths too), and in tapeflow's own rules, whose axes come
    out of the tuples they compute. A user's own code is told when it compiles."""
    return order > 1 or (getattr(fn, '__module__', None) or '').startswith('tapeflow.')
