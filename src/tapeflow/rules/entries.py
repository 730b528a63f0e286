"""One entry per function: the helpers that register all of a primitive's rules at once.

    elementwise(np.sin, lambda g, ans, x: g * np.cos(x), forms=HOLOMORPHIC, scalar=math.sin)

is np.sin's VJP, its JVP (the same formula: the derivative of a function of one number
multiplies the cotangent and the tangent alike), its description in
docs/numpy-support.md, and math.sin's rules: the same formula with `math`'s functions
in NumPy's place (`math.cos(x)`), so that a Python float stays a float and the numbers
are those `math` gives. The compiler inlines the lambda (`bx = by * np.cos(x)`), as it
inlines a `def` whose body is one `return`: keep such a formula free of side effects,
and let it read only its parameters and module-level names.

A batch of tangents (rules/batching.py) meets a ufunc's JVP lifted; any other function
says `batched=True` when its JVP takes the batch as it stands.

Any other function's rules are one `entry`: the VJP and the JVP (one rule per
positional argument, as a tuple, None for an argument without a derivative), the JVP
taking a batch of tangents where there is one, the arguments that never carry a
derivative, and the docs' line:

    entry(np.interp, (interp_vjp_x, interp_vjp_xp, interp_vjp_fp),
          (interp_jvp_x, interp_jvp_xp, interp_jvp_fp),
          forms='derivative in x, xp and fp')
"""
from __future__ import annotations

import math
import types

from tapeflow.rules.batching import defjvp_batched
from tapeflow.rules.registry import alias, defjvp, defvjp, describe, nondifferentiable, primitive
from tapeflow.rules.registry import static as declare_static
from tapeflow.rules.shapes import fit

__all__ = ['entry', 'elementwise', 'inlinable', 'scalar_twin', 'StandIn', 'MATH_FOR_NUMPY',
           'binary', 'def_elementwise', 'def_linear', 'def_nondiff',
           'HOLOMORPHIC', 'REAL', 'REAL_OR_COMPLEX', 'PYTHON_FLOATS']

HOLOMORPHIC = 'any shape, float or complex (holomorphic)'
REAL = 'any shape, real'
REAL_OR_COMPLEX = 'any shape, real or complex'
PYTHON_FLOATS = 'Python floats'
SCALAR_MODULE = 'tapeflow.rules.math_rules'     # where docs/numpy-support.md lists twins


def inlinable(rule):
    """Mark a lambda rule for the compiler to inline (a plain `lambda` given to
    `defvjp` is called by name): the rule helpers mark the formulas they are given."""
    rule.__tapeflow_inline__ = True
    return rule


def entry(fn, vjp, jvp, *, forms, batched=None, static=(), also=(), name=None):
    """Register all the rules of `fn` at once; returns its table entry.

    `vjp`, `jvp`, `batched`: a rule for argument 0, or a tuple of rules, one per
    positional argument (None skips one): the VJP `vjp(g, ans, *args, **kwargs)`, the
    JVP `jvp(t, ans, *args, **kwargs)` and the JVP of a batch of tangents
    (rules/batching.py). The rules are registered as given (a lambda is called, not
    inlined: `elementwise` and `binary` inline their formulas). `static`: positional
    arguments that never carry a derivative (axes, shapes). `forms`: the argument forms
    the rules support, the line docs/numpy-support.md shows (None: no line, as for the
    helpers generated code calls). `also`: other functions with the same rules, each
    registered and described alike (np.amax of np.max; each its own entry, not an
    `alias`: a rule added later to one is not the other's). `name`: the name errors give.
    """
    for target in (fn, *also):
        defvjp(target, *_per_argument(vjp), name=name if target is fn else None)
        defjvp(target, *_per_argument(jvp))
        if batched is not None:
            defjvp_batched(target, *_per_argument(batched))
        if static:
            declare_static(target, *static)
        if forms is not None:
            describe(forms, target)
    return primitive(fn)


def _per_argument(rules):
    return rules if isinstance(rules, tuple) else (rules,)


def elementwise(fn, rule, jvp=None, *, forms, scalar=None, also=(), batched=False):
    """Register the rules of `fn`, a function of one array applied number by number.

    `rule(g, ans, x)`: the VJP, and the JVP too unless `jvp(t, ans, x)` is given.
    `forms`: the argument forms the rules support, for the docs. `scalar`: the same
    function on Python floats (`math.sin`), given `rule` with `math`'s functions for
    NumPy's (`scalar_twin`). `also`: other names of `fn` with their own ufunc
    (np.radians of np.deg2rad). `batched`: the JVP takes a batch of tangents as it
    stands. Returns `rule`.
    """
    jvp = rule if jvp is None else jvp
    for formula in {rule, jvp}:
        _mark(formula)
    defvjp(fn, rule)
    defjvp(fn, jvp)
    if batched:
        defjvp_batched(fn, jvp)
    describe(forms, fn)
    for other in also:
        alias(other, fn)
        describe(forms, other)
    if scalar is not None:
        twins = {formula: scalar_twin(formula) for formula in {rule, jvp}}
        defvjp(scalar, twins[rule])
        defjvp(scalar, twins[jvp])
        describe(PYTHON_FLOATS, scalar)
    return rule


def binary(fn, *partials, forms):
    """Register the rules of `fn(x, y)`, a function of two broadcasting arrays applied
    number by number: one formula per argument, `partial(g, ans, x, y)`, linear in its
    first parameter. It is the JVP as it stands (the tangent `t` in `g`'s place: the
    output's shape by broadcasting) and, summed back to the argument's shape by
    `fit`, the VJP: `fit(partial(g, ans, x, y), x)`, which the compiler inlines as
    `fit(<the formula>, x)`. None skips an argument.
    """
    for argnum, partial in enumerate(partials):
        if partial is None:
            continue
        _mark(partial)

        def vjp(g, ans, *args, _partial=partial, _i=argnum):
            return fit(_partial(g, ans, *args), args[_i])
        vjp.__tapeflow_inline__ = ('fit', partial, argnum)
        defvjp(fn, vjp, argnums=[argnum])
        defjvp(fn, partial, argnums=[argnum])
    describe(forms, fn)


def _mark(rule):
    if getattr(rule, '__name__', '') == '<lambda>':
        inlinable(rule)
    return rule


def def_elementwise(fn, derivative, name=None):
    """A unary elementwise function with pointwise `derivative(ans, x)` (autograd's
    shape of rule): VJP `g * derivative(ans, x)`, JVP `t * derivative(ans, x)`. The
    compiler inlines `g *` the derivative's expression."""
    _mark(derivative)

    def rule(g, ans, x, *args, **kwargs):
        return g * derivative(ans, x)
    rule.__tapeflow_inline__ = ('scale', derivative)
    defvjp(fn, rule, name=name)
    defjvp(fn, rule, name=name)


def def_linear(fn, argnums=(0,), transpose=None):
    """`fn` is linear in each argument of `argnums` (the others held fixed).

    JVP: `fn` applied to the tangent in that position (the compiler writes the call,
    `np.flip(dx, axis)`). VJP: `transpose(g, ans, *args, **kwargs)` when given (per
    argnum if a dict).
    """
    for argnum in argnums:
        def jvp(t, ans, *args, _i=argnum, **kwargs):
            args = list(args)
            args[_i] = t
            return fn(*args, **kwargs)
        jvp.__tapeflow_inline__ = ('apply', fn, argnum)
        defjvp(fn, jvp, argnums=[argnum])
        if transpose is not None:
            rule = transpose[argnum] if isinstance(transpose, dict) else transpose
            defvjp(fn, _mark(rule), argnums=[argnum])


def def_nondiff(*fns):
    """Functions whose outputs carry no derivative."""
    nondifferentiable(*fns)


class StandIn:
    """Functions of one module standing in for another's in a rule's globals:
    `StandIn(math, cos='cos')` in the place of `np` makes `np.cos(x)` call `math.cos`,
    and the compiler inlines it written `math.cos(x)` (`spelling`)."""

    def __init__(self, module, **names):
        self._module = module
        self._names = dict(names)
        for attr, name in names.items():
            setattr(self, attr, getattr(module, name))

    def spelling(self, attr):
        """(name, object, attribute) the compiler writes `<stand-in>.attr` as."""
        if attr not in self._names:
            raise KeyError(attr)
        return self._module.__name__, self._module, self._names[attr]


# NumPy's functions that `math` has under the same formula (the derivatives of the
# elementwise family, on Python floats).
MATH_FOR_NUMPY = StandIn(math, cos='cos', sin='sin', cosh='cosh', sinh='sinh', sqrt='sqrt',
                         exp='exp')


def scalar_twin(rule):
    """`rule` over Python floats: its own code, `np` in its globals being `math`'s
    functions (`MATH_FOR_NUMPY`); listed with the math module's rules."""
    globals_ = dict(rule.__globals__, np=MATH_FOR_NUMPY, __name__=SCALAR_MODULE)
    twin = types.FunctionType(rule.__code__, globals_, rule.__name__, rule.__defaults__,
                              rule.__closure__)
    twin.__kwdefaults__ = rule.__kwdefaults__
    twin.__dict__.update(rule.__dict__)
    return twin
