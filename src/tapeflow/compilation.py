"""The one compile path: `compile(function, spec) -> Compiled`, cached.

Every compiled piece of code tapeflow runs is made here: `grad` and its family,
`vjp` and `jvp`, `tf.function`'s fused node, `source`, and `export` (which asks
for a `fresh` compilation, outside the caches, to keep the pipeline's trees).

`Spec` says what a compilation is for; the function is first read as a Python
function (`callables.python_function_of`). A compilation is looked up in the
in-memory cache (`cache.get_or_compile`), then the disk cache (`disk_cache`),
and only then runs the pipeline (`transforms.pipeline`). The protocol that makes
recursion work is here, once:

1. a placeholder `Compiled` is registered under the key before compiling, so a
   function that calls itself (or a callee that calls it back) finds it;
2. the pipeline compiles the function, asking `compile` again for each user
   function it calls (the callee hook, `_callee_hook`), with the same options;
3. the result is moved into the placeholder, and the callers that bound it
   while it was incomplete are bound to the finished functions
   (`pipeline.bind_pending`).
"""
from __future__ import annotations

import dataclasses
import warnings

import tapeflow.cache as cache
import tapeflow.disk_cache as disk_cache
import tapeflow.runtime.support as support
from tapeflow.arguments import compiler_kinds
from tapeflow.callables import python_function_of
from tapeflow.custom_residuals import compiled_rule
from tapeflow.errors import NativeFallbackWarning, TapeflowError, UnsupportedError
from tapeflow.syntax import parse
from tapeflow.transforms import pipeline, variants
from tapeflow.transforms.native import TARGETS
from tapeflow.transforms.sugar.generators import is_generator, refuse_as_entry

__all__ = ['Spec', 'compile', 'compile_adjoint', 'compile_tangent', 'python_only']

# The runtime names generated code reads (`pipeline.RUNTIME_NAMES`), shared by every compilation.
RUNTIME = support.generated_namespace()


@dataclasses.dataclass(frozen=True)
class Spec:
    """What one compilation is for.

    `mode`: 'reverse' (the adjoint: `df(*args, bout)`, the split forward and
    backward sweeps) or 'forward' (the tangent code `f_jvp(*args, *tangents)`).
    `wrt`: the positions of the differentiated parameters; `lifted`: free names
    made extra, differentiated parameters after them (reverse mode, the eager
    tape's Variables). `scalar_args`, `arg_shapes`, `kinds`: what the arguments
    are (`arguments.scalar_positions`, `array_shapes`, `argument_kinds`): the code
    is specialised to them. `optimize`: run the optimizing passes (the callees
    too). `checkpoint`: bound the tape of loops (reverse mode, `grad`'s option).
    `batched`: tangents with a leading batch axis (forward mode, Jacobians).
    `compile`: the target of the combined function (reverse mode) or of the jvp
    (forward mode, not batched): 'python' (the NumPy path), 'numba'
    (`transforms.native`), or 'auto' (Numba where it compiles, else the NumPy path
    with a warning); the functions it calls stay 'python'.
    """
    mode: str = 'reverse'
    wrt: tuple = (0,)
    lifted: tuple = ()
    scalar_args: tuple = ()
    arg_shapes: tuple = ()
    kinds: tuple = ()
    optimize: bool = True
    checkpoint: object = None
    batched: bool = False
    compile: str = 'python'

    def __post_init__(self):
        if self.compile not in TARGETS:
            raise ValueError(f'compile= takes one of {", ".join(map(repr, TARGETS))}, '
                             f'not {self.compile!r}')
        for field in ('wrt', 'lifted', 'scalar_args', 'arg_shapes', 'kinds'):
            value = getattr(self, field)
            if value.__class__ is not tuple:            # a list given: keyed as a tuple
                object.__setattr__(self, field, tuple(value))

    def key(self) -> tuple:
        """The cache's key of this spec (the disk cache's too: stable across processes)."""
        if self.mode == 'forward':
            key = ('forward', self.wrt, self.optimize, self.scalar_args, self.arg_shapes,
                   self.batched, self.kinds)
            return key if self.compile == 'python' else key + (('compile', self.compile),)
        key = (self.wrt, self.lifted, self.optimize, self.scalar_args, self.arg_shapes, self.kinds)
        if self.checkpoint:
            key += (('checkpoint', self.checkpoint),)
        return key if self.compile == 'python' else key + (('compile', self.compile),)


def python_only(what, target, why):
    """The `compile=` of an API whose code does not compile natively (`why`): 'python'
    passes, 'numba' is an error saying so, 'auto' one `NativeFallbackWarning` (the
    NumPy path runs)."""
    Spec(compile=target)                # its check: compile= names a target
    if target == 'numba':
        raise TapeflowError(f"{what} does not take compile='numba' yet: {why}; use "
                            f"compile='python' (or 'auto')")
    if target == 'auto':
        warnings.warn(f"{what}: {why} (compile='auto': the NumPy path runs)",
                      NativeFallbackWarning, stacklevel=3)


def compile(function, spec: Spec, *, fresh=False, record_passes=False) -> pipeline.Compiled:
    """The compiled code of `function` for `spec` (cached).

    `fresh`: compiled anew, with every user function it calls, outside the
    caches (what `export` shows keeps the pipeline's trees); `record_passes`:
    also keep the code after each pass (`Compiled.passes`; implies `fresh`).
    """
    if spec.mode not in ('reverse', 'forward'):
        raise ValueError(f"mode must be 'reverse' or 'forward', not {spec.mode!r}")
    fn = python_function_of(function, spec.kinds)
    if is_generator(fn):
        refuse_as_entry(fn)
    if fresh or record_passes:
        return _compile_fresh(fn, spec, {}, record_passes)
    return _compile_cached(fn, spec)


def entry(function, spec: Spec):
    """(`function`'s compiled code, the compiled code a transform runs for it, the
    positions of the arguments it writes into). Where it writes into its arguments, what
    runs is its variant returning `(value, *those arguments as the call leaves them)`
    (`transforms.variants`), seeded `(seed, 0.0, ...)`: the transform then leaves them as
    the plain call does (`runtime.helpers.write_back`), whatever its reverse sweep
    restored in place. The first is what tells whether the code is still `function`'s.
    Where the variant is refused (what an argument became cannot be followed to the end,
    though the function's own code needs it no further), the positions are None: the
    transform runs `function`'s code, and then the plain call on a copy of the arguments
    taken before (`caller_arguments.left_as_plain`).
    Not yet on the native path (`compile='numba'`: its variant's checks have no twins)."""
    compiled = compile(function, spec)
    if not compiled.written or spec.compile != 'python':    # (natively: not yet)
        return compiled, compiled, ()
    fn = python_function_of(function, spec.kinds)
    made = variants.variant(fn, compiled.written, parse.parse_function)
    try:
        return compiled, compile(made, spec), compiled.written
    except UnsupportedError:    # (it cannot follow what the argument became: the plain
        return compiled, compiled, None     # call runs again on a copy, `left_as_plain`)


def compile_adjoint(fn, wrt=(0,), lifted=(), optimize=True, scalar_args=(), arg_shapes=(),
                    kinds=(), checkpoint=None):
    """`compile(fn, Spec('reverse', ...))`, its fields as keywords."""
    return compile(fn, Spec('reverse', wrt, lifted, scalar_args, arg_shapes, kinds, optimize,
                            checkpoint))


def compile_tangent(fn, wrt=(0,), optimize=True, scalar_args=(), arg_shapes=(), batched=False,
                    kinds=()):
    """`compile(fn, Spec('forward', ...))`, its fields as keywords."""
    return compile(fn, Spec('forward', wrt, (), scalar_args, arg_shapes, kinds, optimize, None,
                            batched))


def _custom_rule(fn, spec):
    """A `custom_vjp` function in reverse mode: its rule keeps `fwd`'s residuals for `bwd`
    (`custom_residuals`), or None."""
    custom = getattr(fn, '__tapeflow_custom__', None)
    if spec.mode != 'reverse' or getattr(custom, 'kind', None) != 'custom_vjp':
        return None
    made = compiled_rule(custom, spec)
    if made is not None:
        python_only('a custom_vjp function', spec.compile, 'its rule runs as Python')
    return made


def _compile_cached(fn, spec):
    """Through the in-memory cache, then the disk cache, then the pipeline."""
    made = _custom_rule(fn, spec)
    if made is not None:
        return made
    hook = _callee_hook(spec, _compile_cached)
    return cache.get_or_compile(fn, spec.key(), lambda cell: _build(
        fn, spec, hook, lambda placeholder: setattr(cell, 'compiled', placeholder), True))


def _compile_fresh(fn, spec, made, record_passes=False):
    """Compiled by the pipeline, with its callees; `made`: what this request compiled,
    by (code, key), so recursion finds its placeholder."""
    key = (fn.__code__, spec.key())
    if key in made:
        return made[key]
    rule = _custom_rule(fn, spec)
    if rule is not None:
        return rule
    hook = _callee_hook(spec, lambda f, s: _compile_fresh(f, s, made))
    return _build(fn, spec, hook, lambda placeholder: made.__setitem__(key, placeholder), False,
                  record_passes)


def _callee_hook(spec, compile_one):
    """What the pipeline calls for a user function `fn` called with arguments of `kinds`
    (and, in forward mode, of `arg_shapes`), differentiated at `wrt`: its own
    compilation, with this one's options. The disk cache replays these calls."""
    if spec.mode == 'forward':
        def compile_callee(fn, wrt, kinds=(), arg_shapes=()):
            callee = Spec('forward', wrt, (), (), arg_shapes, kinds, spec.optimize, None,
                          spec.batched)
            return compile_one(python_function_of(fn, callee.kinds), callee)
    else:
        def compile_callee(fn, wrt, kinds=()):
            callee = Spec('reverse', wrt, kinds=kinds, optimize=spec.optimize)
            return compile_one(python_function_of(fn, callee.kinds), callee)
    return compile_callee


def _build(fn, spec, hook, register, cached, record_passes=False):
    """Steps 1-3 of the protocol (see the module's docstring); `cached`: read the disk
    cache first, and write it after."""
    placeholder = pipeline.Compiled(fn, spec.wrt, spec.lifted, [], '', '', {})
    codes = cache.codes_of(fn)            # (the code read: the one the text compiles to)
    register(placeholder)
    if cached:
        compiled = _load_or_compile(placeholder, spec, hook)
    else:
        compiled = _run_pipeline(fn, spec, hook, record_passes)
    pending = placeholder.pending
    placeholder.__dict__.update(compiled.__dict__)
    placeholder.pending = pending
    placeholder.code = fn.__code__
    placeholder.fresh = cache.freshness(placeholder, codes)
    pipeline.bind_pending(placeholder)
    return placeholder


def _run_pipeline(fn, spec, hook, record_passes=False, defer_split=False):
    options = dict(runtime_names=RUNTIME, optimize_code=spec.optimize, compile_callee=hook,
                   record_passes=record_passes, scalar_args=spec.scalar_args,
                   arg_shapes=spec.arg_shapes, kinds=compiler_kinds(spec.kinds))
    folder = disk_cache.cache_dir()
    if spec.mode == 'forward':
        return pipeline.compile_forward(fn, spec.wrt, batched=spec.batched,
                                        target=spec.compile, native_dir=folder, **options)
    return pipeline.compile_reverse(fn, spec.wrt, spec.lifted, checkpoint=spec.checkpoint,
                                    target=spec.compile, native_dir=folder,
                                    defer_split=defer_split, **options)


def _load_or_compile(placeholder, spec, hook):
    """The entry read from the disk cache, or compiled (and then written there)."""
    stats = cache.stats
    # (a native compilation is kept by Numba's own cache: the disk cache keeps Python code)
    found = disk_cache.entry(placeholder.fn, spec.key()) if spec.compile == 'python' else None
    placeholder.disk_key = found.digest if found is not None else None    # seen by recursion
    if found is not None:
        compiled = found.load(placeholder, RUNTIME, hook)
        if compiled is not None:
            stats['disk_hits'] += 1
            return compiled
        stats['disk_misses'] += 1
    stats['compiles'] += 1
    # The split pair is compiled when first asked for, unless the disk keeps the unit whole.
    compiled = _run_pipeline(placeholder.fn, spec, hook, defer_split=found is None)
    compiled.disk_key = placeholder.disk_key
    if found is not None and found.store(compiled, RUNTIME):
        stats['disk_writes'] += 1
    return compiled
