"""JAX's `custom_vjp` and `custom_jvp`: your own derivative for a function.

    @tf.custom_vjp
    def f(x, y): ...
    def f_fwd(x, y): return f(x, y), residuals
    def f_bwd(res, g): return (gx, gy)          # one cotangent per argument
    f.defvjp(f_fwd, f_bwd)

    @tf.custom_jvp
    def f(x): ...
    @f.defjvp
    def f_jvp(primals, tangents): return primal_out, tangent_out

`nondiff_argnums` as in JAX: those arguments are passed first to `bwd` (then
`res, g`) and to the JVP rule (then `primals, tangents`, which leave them
out); they never carry a derivative.

How it is wired: the decorated function is a small `def` that calls a
*primitive* (`_Primitive`, an entry of the rule table, `rules.registry`) with
one VJP and one JVP per argument, so the compiler (`grad`, `vjp`, `jvp`,
`jacfwd`, `jacrev`, `function`) applies your rule instead of reading the body.

- custom_vjp, reverse: `fwd` runs once, in the forward sweep, and its
  residuals go on the tape for `bwd` (`custom_residuals`: the compiler is
  given hand-written forward and backward functions), as in JAX.
- custom_vjp, forward: `bwd` is linear in `g`, so the JVP is its transpose,
  computed by tapeflow's reverse mode over `bwd` (or, where the compiler cannot
  read `bwd`, one `bwd` per output element).
- custom_jvp, forward: the JVP rule with every other tangent zero (the rule is
  linear in the tangents, so the compiler's sum over arguments is exact).
- custom_jvp, reverse: the transpose of the JVP rule in its tangents, by
  tapeflow's reverse mode over the rule (or one rule call per input element).
- the eager tape (`GradientTape`): one node, as `custom_gradient` records it.
"""
from __future__ import annotations

import inspect
import threading

from tapeflow.custom_residuals import in_forward_mode, residuals_again
from tapeflow.linear_maps import (Rule, check_shape, checked_transpose, has_float, leaves_of, rebuild,
                                  zero_leaf, zeros_like)
from tapeflow.rules import registry
from tapeflow.rules.registry import MissingRule
from tapeflow.runtime.randomness import function_sources
from tapeflow.runtime.support import is_zero
from tapeflow.syntax.errors import TapeflowError

__all__ = ['custom_vjp', 'custom_jvp']


# ------------------------------------------------------------------ the primitive

class _Primitive:
    """What the decorated function calls: the user's function, with rules in the table."""

    def __init__(self, owner):
        self.owner = owner
        self.__name__ = owner.__name__
        self.running = threading.local()     # inside its own rule on the tape (fwd calls f)

    def __call__(self, *args):
        owner = self.owner
        if _on_tape(args) and not getattr(self.running, 'depth', 0):
            self.running.depth = 1
            try:
                return owner._eager(args)
            finally:
                self.running.depth = 0
        fwd = getattr(owner, 'fwd', None)   # (forward mode runs it next: it replays these draws)
        if fwd is not None and in_forward_mode():
            drawn = function_sources(fwd, args)
            self.running.last = (args, drawn) if drawn is not None else None
        return owner.fun(*args)

    def __repr__(self):
        return f'<{type(self.owner).__name__} {self.__name__}>'


def _on_tape(args) -> bool:
    from tapeflow.runtime.recorders import state
    from tapeflow.runtime.tensor import Tensor
    return bool(state.tapes) and any(isinstance(leaf, Tensor) for leaf in leaves_of(args))


class _Custom:
    """What `custom_vjp` and `custom_jvp` share: the primitive, its caller, the arguments."""

    kind = ''

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(f'{self.kind} decorates a function, not {fun!r}')
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self.__name__ = getattr(fun, '__name__', 'f')
        self.primitive = _Primitive(self)
        registry.primitive(self.primitive, name=self.__name__)
        self.caller = self._make_caller()
        self._register()

    def _make_caller(self):
        """A `def` of `fun`'s positional parameters calling the primitive: what the
        user calls and what the compiler reads."""
        from tapeflow.syntax.unparse import load_module
        try:
            params = list(inspect.signature(self.fun).parameters.values())
        except (TypeError, ValueError):
            params = None
        name = self.__name__ if self.__name__.isidentifier() else 'custom'
        if params is None or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                 for p in params):
            raise TypeError(f'{self.kind}: {name}() must take positional parameters only '
                            f'(no *args, **kwargs or keyword-only parameters)')
        names = [f'_a{k}' for k in range(len(params))]
        text = (f'def {name}({", ".join(names)}):\n'
                f'    return _primitive({", ".join(names)})\n')
        namespace = load_module(text, {'_primitive': self.primitive}, f'{self.kind} {name}')
        caller = namespace[name]
        defaults = tuple(p.default for p in params if p.default is not p.empty)
        caller.__defaults__ = defaults or None
        caller.__doc__ = getattr(self.fun, '__doc__', None)
        caller.__qualname__ = getattr(self.fun, '__qualname__', name)
        caller.__module__ = getattr(self.fun, '__module__', None)
        caller.__tapeflow_custom__ = self
        self.nargs = len(params)
        return caller

    def diff_positions(self, nargs):
        return [i for i in range(nargs) if i not in self.nondiff_argnums]

    def split(self, args):
        """(nondiff arguments, the others), as JAX passes them to the rules."""
        nondiff = [args[i] for i in self.nondiff_argnums]
        return nondiff, [args[i] for i in self.diff_positions(len(args))]

    def _register(self):
        for argnum in self.diff_positions(self.nargs):
            registry.defvjp(self.primitive, Rule(self._vjp, argnum, 'vjp', self.__name__), argnums=[argnum])
            registry.defjvp(self.primitive, Rule(self._jvp, argnum, 'jvp', self.__name__), argnums=[argnum])
        for argnum in self.nondiff_argnums:
            # called only where the argument depends on a differentiated input: a
            # derivative would be lost there, so it is refused (as JAX refuses a tracer)
            registry.defvjp(self.primitive, Rule(self._nondiff, argnum, 'vjp', self.__name__), argnums=[argnum])
            registry.defjvp(self.primitive, Rule(self._nondiff, argnum, 'jvp', self.__name__), argnums=[argnum])

    def nondiff_cotangent(self, argnum, g, args):
        """0.0 for a `nondiff_argnums` argument that carries no derivative; refused else."""
        return self._nondiff(argnum, g, None, *args)

    def _nondiff(self, argnum, g, ans, *args):
        if is_zero(g) or not has_float(args[argnum]):
            return 0.0
        raise TapeflowError(f'argument {argnum} of {self.__name__} is in nondiff_argnums, but it '
                            f'depends on a differentiated input: its derivative would be lost. '
                            f'Pass it as an ordinary argument (and return its cotangent from the '
                            f'rule), or wrap it in tf.stop_gradient')

    def _check_nondiff_on_tape(self, args):
        from tapeflow.runtime.recorders import is_tracked
        from tapeflow.runtime.tensor import Tensor
        for i in self.nondiff_argnums:
            if i < len(args) and any(isinstance(leaf, Tensor) and is_tracked(leaf)
                                     for leaf in leaves_of(args[i])):
                self._nondiff(i, 1.0, None, *args)

    def _eager(self, args):
        """The call on Tensors under a GradientTape: one node (see `custom_gradient`)."""
        from tapeflow.runtime.custom import custom_gradient
        from tapeflow.runtime.structure import pack_sequence_as
        self._check_nondiff_on_tape(args)

        def run(*args):
            out, backward = self._eager_forward(args)

            def grad_fn(*upstream):
                cts = backward(pack_sequence_as(out, list(upstream)))
                full = []
                for i, arg in enumerate(args):
                    ct = cts.get(i)
                    full.extend([None] * len(leaves_of(arg)) if ct is None else leaves_of(ct))
                return full
            return out, grad_fn
        return custom_gradient(run)(*args)


# ------------------------------------------------------------------ custom_vjp

class custom_vjp(_Custom):
    """JAX's `custom_vjp`: `f.defvjp(fwd, bwd)` gives `f` its reverse-mode derivative.

    `fwd(*args) -> (out, residuals)`, `bwd(residuals, g) -> one cotangent per
    argument` (a tuple; None for a zero), with the `nondiff_argnums`
    arguments first in `bwd` and left out of its result. Used by `grad`,
    `value_and_grad`, `vjp`, `jacrev`, by forward mode (`jvp`, `jacfwd`, as
    the transpose of `bwd`) and by the eager `GradientTape`.

    Returns the function to call (a `def` with `fun`'s parameters), which
    has `.defvjp`.
    """

    kind = 'custom_vjp'

    def __new__(cls, fun=None, nondiff_argnums=()):
        if fun is None:         # @custom_vjp(nondiff_argnums=...)
            return lambda f: cls(f, nondiff_argnums)
        self = super().__new__(cls)
        self.__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None
        self.compiled_units = {}    # wrt -> its reverse mode (`custom_residuals`)
        self.caller.defvjp = self.defvjp
        self.caller.fwd = self.caller.bwd = None
        return self.caller

    def defvjp(self, fwd, bwd):
        if not (callable(fwd) and callable(bwd)):
            raise TypeError('defvjp(fwd, bwd) takes two functions')
        self.fwd, self.bwd = fwd, bwd
        self.caller.fwd, self.caller.bwd = fwd, bwd
        self.compiled_units = {}
        self._linear_bwd = _linear_caller(bwd, len(self.nondiff_argnums) + 2, 'bwd')
        self._register()

    def _cotangents(self, g, args, res=None):
        """{argument position: cotangent} from `fwd` (unless `res` is given) and `bwd`."""
        nondiff, _ = self.split(args)
        res = self.fwd(*args)[1] if res is None else res[0]
        cts = self.bwd(*nondiff, res, g)
        positions = self.diff_positions(len(args))
        if not isinstance(cts, (tuple, list)) or len(cts) != len(positions):
            raise TypeError(f'the bwd rule of {self.__name__} must return a tuple of '
                            f'{len(positions)} cotangents (one per differentiable argument), '
                            f'got {cts!r}')
        out = {}
        for i, ct in zip(positions, cts):
            if ct is None:
                ct = zeros_like(args[i])
            check_shape(ct, args[i], f'the bwd rule of {self.__name__}', i)
            out[i] = ct
        return out

    def forward_residuals(self, args):
        """`fwd(*args)`: (the value, the residuals), run once per forward evaluation."""
        found = self.fwd(*args)
        if not isinstance(found, (tuple, list)) or len(found) != 2:
            raise TypeError(f'the fwd rule of {self.__name__} must return a pair (output, '
                            f'residuals), got {found!r}')
        return found[0], found[1]

    def cotangents(self, g, args, residuals):
        """{argument position: cotangent}: `bwd` on the residuals `fwd` gave."""
        return self._cotangents(g, args, (residuals,))

    def _vjp(self, argnum, g, ans, *args):
        if self.bwd is None:
            raise MissingRule(f'{self.__name__} is a custom_vjp function with no rule: '
                              f'call {self.__name__}.defvjp(fwd, bwd)')
        if is_zero(g):
            return zeros_like(args[argnum])
        return self._cotangents(g, args)[argnum]

    def _jvp(self, argnum, t, ans, *args):
        """`J t`: `bwd` is the linear map `g -> J^T g`, so `J t` is its transpose applied
        to `t` (tapeflow's reverse mode over `bwd`; see `transpose`). A `bwd` that is
        not linear in `g` (a clip) has no such `J`: refused."""
        if self.bwd is None:
            raise MissingRule(f'{self.__name__} is a custom_vjp function with no rule: '
                              f'call {self.__name__}.defvjp(fwd, bwd)')
        if is_zero(t):
            return zeros_like(ans)
        nondiff, _ = self.split(args)
        res = residuals_again(self, ans, args)
        positions = self.diff_positions(len(args))
        t_all = tuple(t if i == argnum else zeros_like(args[i]) for i in positions)
        return checked_transpose(
            self._linear_bwd, ans, t_all, [*nondiff, res, ans], len(nondiff) + 1, self.bwd,
            f'the bwd rule of {self.__name__} is not linear in the cotangent g, so forward '
            f'mode (jvp, jacfwd) cannot transpose it: give {self.__name__} a custom_jvp, or '
            f'differentiate it in reverse mode only')

    def _eager_forward(self, args):
        if self.bwd is None:
            raise MissingRule(f'{self.__name__} is a custom_vjp function with no rule: '
                              f'call {self.__name__}.defvjp(fwd, bwd)')
        nondiff, _ = self.split(args)
        out, res = self.fwd(*args)

        def backward(g):
            cts = self.bwd(*nondiff, res, g)
            return dict(zip(self.diff_positions(len(args)), cts))
        return out, backward


def _linear_caller(fn, nargs, label, part=''):
    """`def linear(_a0, ..., _aN): return fn(_a0, ..., _aN)<part>`: a stable function of
    fixed arity for the compiler to read (its closures never change)."""
    from tapeflow.syntax.unparse import load_module
    names = ', '.join(f'_a{k}' for k in range(nargs))
    namespace = load_module(f'def {label}({names}):\n    return _fn({names}){part}\n',
                            {'_fn': fn}, label)
    return namespace[label]


# ------------------------------------------------------------------ custom_jvp

class custom_jvp(_Custom):
    """JAX's `custom_jvp`: `@f.defjvp def f_jvp(primals, tangents): return out, t_out`.

    The rule gets the primals and tangents of the differentiable arguments
    (tuples), after the `nondiff_argnums` arguments; it must be linear in
    the tangents. Used by `jvp`, `jacfwd`, by reverse mode (`grad`, `vjp`,
    `jacrev`, the eager `GradientTape`) as its transpose. `f.defjvps(*rules)`
    gives one rule per argument instead, `rule(t, primal_out, *primals)`.
    """

    kind = 'custom_jvp'

    def __new__(cls, fun=None, nondiff_argnums=()):
        if fun is None:
            return lambda f: cls(f, nondiff_argnums)
        self = super().__new__(cls)
        self.__init__(fun, nondiff_argnums)
        self.jvp = None
        self.caller.defjvp = self.defjvp
        self.caller.defjvps = self.defjvps
        return self.caller

    def defjvp(self, jvp):
        if not callable(jvp):
            raise TypeError(f'defjvp takes a function, not {jvp!r}')
        self.jvp = jvp
        nondiff = len(self.nondiff_argnums)
        self._linear_jvp = _linear_caller(jvp, nondiff + 2, 'tangent_map', '[1]')
        self._register()
        return jvp

    def defjvps(self, *rules):
        """One rule per differentiable argument, `rule(t, primal_out, *primals)`; None
        for an argument whose tangent does not move the output."""
        positions = self.diff_positions(self.nargs)
        if len(rules) != len(positions):
            raise TypeError(f'defjvps takes one rule per differentiable argument '
                            f'({len(positions)}), got {len(rules)}')

        def jvp(*args):
            primals, tangents = args[-2], args[-1]
            nondiff = args[:-2]
            full = _merge(self, nondiff, primals)
            out = self.fun(*full)
            total = zeros_like(out)
            for rule, t in zip(rules, tangents):
                if rule is not None:
                    part = rule(t, out, *primals)
                    total = rebuild(total, iter([a + b for a, b in
                                                  zip(leaves_of(total), leaves_of(part))]))
            return out, total
        jvp.__name__ = f'{self.__name__}_jvps'
        return self.defjvp(jvp)

    def _tangent_out(self, argnum, t, args):
        nondiff, primals = self.split(args)
        positions = self.diff_positions(len(args))
        tangents = tuple(t if i == argnum else zeros_like(args[i]) for i in positions)
        return self.jvp(*nondiff, tuple(primals), tangents)[1]

    def _jvp(self, argnum, t, ans, *args):
        if self.jvp is None:
            raise MissingRule(f'{self.__name__} is a custom_jvp function with no rule: '
                              f'decorate its rule with @{self.__name__}.defjvp')
        if is_zero(t):
            return zeros_like(ans)
        return self._tangent_out(argnum, t, args)

    def _vjp(self, argnum, g, ans, *args):
        """The transpose of the JVP rule in the tangent of `argnum`, applied to `g`."""
        if self.jvp is None:
            raise MissingRule(f'{self.__name__} is a custom_jvp function with no rule: '
                              f'decorate its rule with @{self.__name__}.defjvp')
        if is_zero(g):
            return zeros_like(args[argnum])
        nondiff, primals = self.split(args)
        positions = self.diff_positions(len(args))
        tangents = tuple(zeros_like(args[i]) for i in positions)
        cts = checked_transpose(
            self._linear_jvp, tangents, g, [*nondiff, tuple(primals), tangents],
            len(nondiff) + 1, self.jvp,
            f'the JVP rule of {self.__name__} is not linear in its tangents (reverse mode '
            f'uses its transpose): compute the tangent as a linear function of `tangents`, '
            f'or give {self.__name__} a custom_vjp for reverse mode')
        return cts[positions.index(argnum)]

    def _eager_forward(self, args):
        """On the tape: the transpose of the rule, by a tape of its own over the tangents
        (its primals are the caller's Tensors, so outer tapes see it: higher order)."""
        from tapeflow.runtime import GradientTape, UnconnectedGradients
        from tapeflow.runtime.tensor import to_numpy_value, wrap
        if self.jvp is None:
            raise MissingRule(f'{self.__name__} is a custom_jvp function with no rule: '
                              f'decorate its rule with @{self.__name__}.defjvp')
        raw = [rebuild(a, iter([to_numpy_value(leaf) if hasattr(leaf, 'numpy') else leaf
                                 for leaf in leaves_of(a)])) for a in args]
        out = self.fun(*raw)
        nondiff, primals = self.split(args)

        def backward(g):
            tangents = tuple(rebuild(p, iter([wrap(zero_leaf(to_numpy_value(leaf)
                                                                if hasattr(leaf, 'numpy')
                                                                else leaf))
                                               for leaf in leaves_of(p)])) for p in primals)
            with GradientTape(persistent=True) as tape:
                tape.watch(leaves_of(tangents))
                t_out = self.jvp(*nondiff, tuple(primals), tangents)[1]
            flat = tape.gradient(leaves_of(t_out), leaves_of(tangents),
                                 output_gradients=leaves_of(g),
                                 unconnected_gradients=UnconnectedGradients.ZERO)
            flat = iter(flat)
            cts = [rebuild(t, flat) for t in tangents]
            return dict(zip(self.diff_positions(len(args)), cts))
        return out, backward


def _merge(custom, nondiff, primals):
    """All arguments in order from the nondiff ones and the others."""
    args, nondiff, primals = [], list(nondiff), list(primals)
    for i in range(len(nondiff) + len(primals)):
        args.append(nondiff.pop(0) if i in custom.nondiff_argnums else primals.pop(0))
    return args
