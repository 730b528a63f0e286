"""Dense Jacobians and Hessians: `jacfwd`, `jacrev`, `hessian`, `hvp`.

Each carries every direction at once as a batch (a leading axis on the tangents
or cotangents, `rules.batching`), so the primal runs once; a Jacobian of a
Jacobian, and a gradient of one, is forward over reverse
(`jacobian_of_jacobian`). JAX's shapes: `out.shape + in.shape` per leaf.
"""
from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

import tapeflow.runtime.pytree as pytree
import tapeflow.wrappers as wrappers
from tapeflow.arguments import (argument_kinds, call_flat, array_shapes, check_differentiable,
                                check_holomorphic_input, check_not_structured, check_scalar,
                                dtype_of, parameter_name, parse_argnums, scalar_positions,
                                split_aux)
from tapeflow.callables import (adjoint_caller, call_binder, python_function_of,
                                signature_function)
from tapeflow.compilation import Spec, compile, entry, python_only
from tapeflow.conversions import like_argument
from tapeflow.custom_residuals import forward_mode
from tapeflow.gradients import grad
from tapeflow.caller_arguments import bring_back, contract_call, left_as_plain, owned, plain_point
from tapeflow.products import first_tangent, jvp
from tapeflow.rules.registry import MissingRule
from tapeflow.rules.sequences import dense
from tapeflow.runtime.randomness import function_sources, replaying
from tapeflow.runtime.support import is_zero
from tapeflow.syntax import sourcemap
from tapeflow.syntax.errors import UnsupportedError

__all__ = ['jacfwd', 'jacrev', 'jacobian', 'hessian', 'hvp', 'basis_batch']


def gradient_of_jacobian(jacobian_f, argnums, kind):
    """`grad` of a Jacobian function whose value is a scalar (a scalar function of a
    scalar argument): the second derivative, forward over reverse."""
    fname = getattr(jacobian_f, '__name__', 'f')

    @functools.wraps(jacobian_f)
    def differentiated(*args):
        value = jacobian_f(*args)
        check_scalar(value, fname)
        check_differentiable(args[argnums], argnums, fname)
        grads = jacobian_of_jacobian(*jacobian_f.__tapeflow_jacobian__, argnums, args)
        grads = like_argument(grads.reshape(np.shape(args[argnums])), args[argnums])
        return (value, grads) if kind == 'value_and_grad' else grads
    differentiated.__dict__.pop('__tapeflow_jacobian__', None)   # wraps copied it
    return differentiated


# ------------------------------------------------------------------ jacobians


def basis_batch(x):
    """Every unit direction of the argument `x` at once: shape `(x.size,) + x.shape`."""
    dtype = dtype_of(x)
    dtype = dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64
    size = int(np.size(x))
    return np.eye(size, dtype=dtype).reshape((size,) + np.shape(x))


def _float_leaf(leaf) -> bool:
    dtype = dtype_of(leaf)
    return (dtype is None and isinstance(leaf, numbers.Number)) or \
        (dtype is not None and np.issubdtype(dtype, np.inexact))


def _parts_at_leaves(t, like):
    """The pieces of `t` (a tangent or cotangent of `like`, kept as generated code keeps it)
    at the leaves of `like`, in `pytree.leaves` order; 0.0 where it is zero."""
    kids = pytree.children(like)
    if kids is None:
        return [t]
    out = []
    for part, (_, child) in zip(pytree.child_cotangents(t, like, kids), kids):
        out.extend(_parts_at_leaves(part, child))
    return out


def _rows(part, leaf, n):
    """`part`, a batch of `n` tangents of `leaf` or one for all, as `(n, leaf.size)`."""
    if is_zero(part) or part is None:
        return np.zeros((n, int(np.size(leaf))), np.result_type(leaf, float))
    part = np.asarray(part)
    if part.ndim != np.ndim(leaf) + 1:
        part = np.broadcast_to(part, (n,) + np.shape(leaf))
    return part.reshape((n, int(np.size(leaf))))


def _basis(leaves, total, start=0):
    """For each leaf, its unit directions among `total` (one row each), the float leaves
    numbered from `start` on: `(total,) + leaf.shape`, or 0.0 for a leaf that does not move."""
    parts, offset = [], start
    for leaf in leaves:
        if not _float_leaf(leaf):
            parts.append(0.0)
            continue
        size = int(np.size(leaf))
        dtype = dtype_of(leaf) if dtype_of(leaf) is not None else np.float64
        if size == total:                   # the one moving leaf (the common case)
            rows = np.eye(size, dtype=dtype)
        else:
            rows = np.zeros((total, size), dtype)
            rows[offset:offset + size] = np.eye(size, dtype=dtype)
        parts.append(rows.reshape((total,) + np.shape(leaf)))
        offset += size
    return parts


def _sizes(leaves):
    return [int(np.size(leaf)) if _float_leaf(leaf) else 0 for leaf in leaves]


def _assemble(out, ins, block, single):
    """The Jacobian of the output `out` (a pytree) with respect to the inputs `ins` (one
    pytree per differentiated argument), JAX's shapes: the output's structure outside, the
    input's inside (a tuple of inputs for a tuple of argnums), each leaf of
    `out_leaf.shape + in_leaf.shape`. `block(o, k, l)` gives the `(out size, in size)`
    matrix of output leaf `o` and leaf `l` of input `k`."""
    out_leaves, out_def = pytree.flatten(out)
    in_flat = [pytree.flatten(x) for x in ins]
    results = []
    for o, ol in enumerate(out_leaves):
        per_input = []
        for k, (leaves, treedef) in enumerate(in_flat):
            blocks = []
            for l, leaf in enumerate(leaves):
                m = block(o, k, l)
                shape = np.shape(ol) + np.shape(leaf)
                blocks.append(np.zeros(shape, np.result_type(ol, float)) if m is None
                              else np.ascontiguousarray(m).reshape(shape))
            per_input.append(treedef.unflatten(blocks))
        results.append(per_input[0] if single else tuple(per_input))
    return out_def.unflatten(results)


def _argnums(argnums, f, kind):
    if not callable(f):
        raise TypeError(f'{kind}(f) takes a function to differentiate, not {type(f).__name__} '
                        f'{f!r:.60}')
    return parse_argnums(argnums, f, kind)


def _is_complex(leaf) -> bool:
    dtype = np.dtype(complex) if isinstance(leaf, complex) else dtype_of(leaf)
    return dtype is not None and np.issubdtype(dtype, np.complexfloating)


def _check_inputs(f, args, wrt, holomorphic, kind):
    """JAX's rule for `jacfwd` (and `hessian`): real inputs, or with `holomorphic=True`
    complex ones (a real tangent direction alone is not the derivative of a function of a
    complex argument unless it is holomorphic)."""
    fname = getattr(f, '__name__', 'f')
    try:
        signature = signature_function(f)
    except TypeError:
        signature = None
    for i in wrt:
        name = parameter_name(signature, i)
        check_differentiable(args[i], i, fname, name)
        if holomorphic:
            check_holomorphic_input(args[i], i, fname, name, kind)
        elif kind != 'jacrev' and any(_is_complex(leaf) for leaf in pytree.leaves(args[i])):
            raise TypeError(f'{kind} requires real-valued inputs (input dtype that is a sub-dtype '
                            f'of np.floating), but got complex for argument {i} of {fname}(). '
                            f'For holomorphic differentiation, pass holomorphic=True. For '
                            f'differentiating non-holomorphic functions involving complex '
                            f'inputs, use tf.jvp directly')


def _check_outputs(out_leaves, fname, holomorphic, kind):
    """JAX's rule for `jacrev`: real outputs, or with `holomorphic=True` complex ones; and
    with `holomorphic=True` (any Jacobian) complex outputs."""
    for leaf in out_leaves:
        complex_ = _is_complex(leaf)
        if holomorphic and not complex_:
            got = type(leaf).__name__ if dtype_of(leaf) is None else dtype_of(leaf)
            raise TypeError(f'{kind} with holomorphic=True requires outputs with complex dtype, '
                            f'but {fname}() returned {got}')
        if kind != 'jacfwd' and complex_ and not holomorphic:
            raise TypeError(f'{kind} requires real-valued outputs (output dtype that is a '
                            f'sub-dtype of np.floating), but {fname}() returned complex. For '
                            f'holomorphic differentiation, pass holomorphic=True. For '
                            f'differentiating non-holomorphic functions involving complex '
                            f'outputs, use tf.vjp directly')


def _marked(jacobian_f, kind, f, position):
    """`jacobian_f`, made by `kind` from `f`: opaque to the compiler; with `position`
    (one argument, no aux), what a Jacobian of it differentiates again."""
    jacobian_f.__tapeflow_opaque__ = wrappers.JACOBIAN_OPAQUE.format(kind)
    jacobian_f.__dict__.pop('__tapeflow_jacobian__', None)      # wraps copied f's
    if position is not None:
        jacobian_f.__tapeflow_jacobian__ = (f, position)
    return jacobian_f


def jacfwd(f, argnums=0, has_aux=False, holomorphic=False):
    """Dense Jacobian by forward mode, JAX's shapes (`out.shape + in.shape` per leaf; pytrees
    in and out; a tuple for a tuple of argnums); `(jacobian, aux)` with has_aux. Real
    inputs, as in JAX; complex ones with `holomorphic=True` (then the outputs are complex
    too, and the Jacobian is the complex derivative).

    One forward sweep carries every input direction at once: the tangent of
    the arguments is the identity, with a leading batch axis (see
    `tapeflow.rules.batching`), so the primal is computed once.
    """
    single, wrt = _argnums(argnums, f, 'jacfwd')
    fname = getattr(f, '__name__', 'f')
    bind = call_binder(f, wrt)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        args = bind(args, kwargs)
        _check_inputs(f, args, wrt, holomorphic, 'jacfwd')
        if single and not has_aux and hasattr(f, '__tapeflow_jacobian__'):
            return jacobian_of_jacobian(*f.__tapeflow_jacobian__, wrt[0], args)
        in_leaves = [pytree.leaves(args[i]) for i in wrt]
        sizes = [_sizes(leaves) for leaves in in_leaves]
        total = sum(map(sum, sizes))
        tangents, start = [], 0
        for i, leaves in zip(wrt, in_leaves):
            tangents.append(pytree.flatten(args[i])[1].unflatten(_basis(leaves, total, start)))
            start += sum(_sizes(leaves))
        own, compiled, written = entry(f, Spec('forward', wrt, scalar_args=scalar_positions(args),
                                               arg_shapes=array_shapes(args),
                                               kinds=argument_kinds(args), batched=True))

        def run(code):
            with forward_mode():
                return code.combined(*args, *tangents)
        try:
            value, tangent, args, _ = contract_call(f, args, written, lambda: run(compiled),
                                                    lambda: run(own), first_tangent)
        except Exception as error:
            transform = wrappers.own(f, '__tapeflow_transform__')
            if transform is not None and not transform[3]:     # a gradient, without aux
                check_not_structured(python_function_of(transform[1]), args, transform[0])
            sourcemap.reraise(error)
        value = dense(value)
        out, aux = split_aux(value, has_aux, fname)
        if has_aux:
            tangent = 0.0 if is_zero(tangent) else tangent[0]
        out_leaves = pytree.leaves(out)
        _check_outputs(out_leaves, fname, holomorphic, 'jacfwd')
        rows = [_rows(part, leaf, total) for part, leaf in
                zip(_parts_at_leaves(tangent, out), out_leaves)]
        offsets = [[sum(map(sum, sizes[:k])) + sum(sizes[k][:l]) for l in range(len(sizes[k]))]
                   for k in range(len(wrt))]

        def block(o, k, l):
            if not sizes[k][l]:
                return None
            return rows[o][offsets[k][l]:offsets[k][l] + sizes[k][l]].T

        jac = _assemble(out, [args[i] for i in wrt], block, single)
        return (jac, aux) if has_aux else jac
    return _marked(jacobian_f, 'jacfwd', f, wrt[0] if single and not has_aux else None)


def jacrev(f, argnums=0, has_aux=False, holomorphic=False):
    """Dense Jacobian by reverse mode, JAX's shapes (as `jacfwd`); `(jacobian, aux)` with
    has_aux. Real outputs, as in JAX; complex ones with `holomorphic=True` (then the
    inputs are complex too).

    The reverse sweep is linear in its cotangent, so it carries every output
    direction at once: the pullback of `vjp` is swept forward with the
    identity as a batch of cotangents (one row per output element), and the
    primal runs once.
    """
    single, wrt = _argnums(argnums, f, 'jacrev')
    fname = getattr(f, '__name__', 'f')
    moving = tuple(sorted(set(wrt)))
    bind = call_binder(f, wrt)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        args = bind(args, kwargs)
        _check_inputs(f, args, wrt, holomorphic, 'jacrev')
        if single and not has_aux:
            if hasattr(f, '__tapeflow_jacobian__'):
                return jacobian_of_jacobian(*f.__tapeflow_jacobian__, wrt[0], args)
            kind, inner_f, inner_wrt, inner_aux = getattr(f, '__tapeflow_transform__', (None,) * 4)
            if kind == 'grad' and len(inner_wrt) == 1 and not inner_aux:
                # the Jacobian of a gradient: forward over reverse, as `hessian`
                return jacobian_of_jacobian(inner_f, inner_wrt[0], wrt[0], args)
        drawn = function_sources(f, args)     # the sweeps below run `f` again: its draws
        value, point, after = plain_on_a_copy(f, args)
        out, aux = split_aux(value, has_aux, fname)
        out_leaves, out_def = pytree.flatten(out)
        _check_outputs(out_leaves, fname, holomorphic, 'jacrev')
        for leaf in out_leaves:
            if not _float_leaf(leaf):
                raise TypeError(f'jacrev requires real-valued outputs (output dtype that is a '
                                f'sub-dtype of np.floating), but {fname}() returned '
                                f'{type(leaf).__name__ if dtype_of(leaf) is None else dtype_of(leaf)}')
        out_sizes = _sizes(out_leaves)
        total = sum(out_sizes)
        seed = out_def.unflatten([np.zeros(np.shape(leaf), np.result_type(leaf, float))
                                  if np.ndim(leaf) else 0.0 for leaf in out_leaves])
        basis = out_def.unflatten(_basis(out_leaves, total))
        if has_aux:
            seed, basis = (seed, 0.0), (basis, 0.0)
        pullback = adjoint_caller(f, moving, len(args), argument_kinds(args))
        inputs = owned(point) + (seed,)
        try:
            compiled = compile(pullback, Spec('forward', (len(args),),
                                              scalar_args=scalar_positions(inputs),
                                              arg_shapes=array_shapes(inputs),
                                              kinds=argument_kinds(inputs), batched=True))
            try:
                with replaying(drawn):
                    _, tangents = compiled.combined(*inputs, basis)
            except (UnsupportedError, MissingRule):
                raise
            except Exception as error:
                sourcemap.reraise(error)
            if not isinstance(tangents, (tuple, list)):
                tangents = (tangents,)
            grads = {i: [_rows(part, leaf, total) for part, leaf in
                         zip(_parts_at_leaves(tangents[i], args[i]), pytree.leaves(args[i]))]
                     for i in moving}
        except (UnsupportedError, MissingRule):
            # the adjoint cannot be swept forward (a user rule written as a lambda,
            # say): one reverse sweep per output element instead
            per_row = []
            for m in range(total):
                ct = out_def.unflatten([np.asarray(part[m]) if not is_zero(part) else 0.0
                                        for part in _basis(out_leaves, total)])
                with replaying(drawn):
                    per_row.append(pullback(*owned(point), (ct, 0.0) if has_aux else ct))
            grads = {i: [np.stack([np.reshape(np.asarray(dense(part)) if not is_zero(part)
                                              else np.zeros(np.shape(leaf)), np.size(leaf))
                                   for part in column])
                         for column, leaf in zip(zip(*[_parts_at_leaves(row[i], args[i])
                                                       for row in per_row]),
                                                 pytree.leaves(args[i]))]
                     for i in moving}
        out_offsets = [sum(out_sizes[:o]) for o in range(len(out_sizes))]

        def block(o, k, l):
            leaf = pytree.leaves(args[wrt[k]])[l]
            if not _float_leaf(leaf):
                return None
            return grads[wrt[k]][l][out_offsets[o]:out_offsets[o] + out_sizes[o]]

        jac = _assemble(out, [args[i] for i in wrt], block, single)
        bring_back(*after)     # (the caller's, as the plain call left its copy)
        return (jac, aux) if has_aux else jac
    return _marked(jacobian_f, 'jacrev', f, wrt[0] if single and not has_aux else None)


def plain_on_a_copy(f, args):
    """(`f`'s value, the point `args` before the call, the arguments after it and their
    pairs with the caller's), `f` called on a copy: the sweeps that follow run at the
    point given (the plain call on `args` themselves would leave what `f` writes into them
    there: a Jacobian at the wrong point), each on a copy of it."""
    memo = {}
    point, work = owned(args), owned(args, memo)
    return call_flat(f, work), point, (work, memo)


jacobian = jacrev


def jacobian_of_jacobian(f, inner, outer, args):
    """The Jacobian, in `args[outer]`, of the Jacobian of `f` in `args[inner]`; shape
    `out.shape + inner.shape + outer.shape`, whichever modes were asked for (they
    agree): forward over reverse, one sweep per element of `f`'s output, each
    carrying every direction of `args[outer]` at once."""
    drawn = function_sources(f, args)         # each row runs `f` again: its draws
    out, point, after = plain_on_a_copy(f, args)
    if isinstance(out, (tuple, list, dict)):
        raise TypeError('a Jacobian of a Jacobian: the function must return one array or scalar')
    for position in (inner, outer):
        if pytree.is_node(args[position]):
            raise TypeError(f'a Jacobian of a Jacobian in argument {position}, a '
                            f'{type(args[position]).__name__}: nested Jacobians take arrays and '
                            f'scalars; for structured arguments, write hessian(f)')
        dtype = dtype_of(args[position])
        if dtype is not None and not np.issubdtype(dtype, np.inexact):
            raise TypeError(f'a Jacobian of a Jacobian in argument {position}, which holds '
                            f'{dtype} values: only float and complex arguments are differentiated')
    wrt = tuple(sorted({inner, outer}))
    row = adjoint_caller(f, wrt, len(args), argument_kinds(args), position=inner)
    column = jacfwd(row, argnums=outer)
    seeds = basis_batch(out) if np.ndim(out) else [np.ones((), np.result_type(out, float))[()]]
    rows = []
    for seed in seeds:
        with replaying(drawn):
            rows.append(np.asarray(column(*owned(point), seed)))
    shape = np.shape(out) + np.shape(args[inner]) + np.shape(args[outer])
    bring_back(*after)     # (the caller's, as the plain call left its copy)
    return np.stack(rows).reshape(shape)


def hessian(f, argnums=0, has_aux=False, compile='python', holomorphic=False):
    """Dense Hessian: forward over reverse (the Jacobian of the compiled gradient); for a
    tuple of argnums a tuple of tuples, for pytree arguments JAX's nesting. `compile=`:
    'python' only ('auto' warns once and runs it; see `compilation.python_only`). Real
    inputs and a real output, as in JAX; complex ones with `holomorphic=True`."""
    python_only('hessian', compile, 'forward over reverse runs the gradient in batched '
                'forward mode, which the native path does not compile')
    _argnums(argnums, f, 'hessian')
    inner = jacfwd(grad(f, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                   has_aux=has_aux, holomorphic=holomorphic)

    def hessian_f(*args, **kwargs):
        if kwargs:
            return inner(*args, **kwargs)
        taken = plain_point(f, args)        # (the arguments, as the plain call leaves them:
        out = inner(*owned(args))           # the Hessian at a copy, then the plain call on
        left_as_plain(f, args, *taken)      # another, `caller_arguments`)
        return out
    hessian_f.__name__, hessian_f.__qualname__ = inner.__name__, inner.__qualname__
    hessian_f.__doc__ = inner.__doc__
    try:
        hessian_f.__signature__ = inspect.signature(inner)      # (f's, as jacfwd's)
    except (TypeError, ValueError):
        pass
    marks = getattr(inner, '__tapeflow_jacobian__', None)
    return _marked(hessian_f, 'jacfwd', *(marks if marks is not None else (None, None)))


def hvp(f, primals, vectors):
    """Hessian-vector product without forming the Hessian: `jvp` of the gradient."""
    return jvp(grad(f), primals, vectors)[1]


# Inside compiled code they are computed while compiling, as `grad` (`transforms.desugar`).
jacfwd.__tapeflow_fold__ = jacrev.__tapeflow_fold__ = hessian.__tapeflow_fold__ = True
