"""Rules for scipy.integrate.odeint, registered only when scipy.integrate is imported.

    odeint(func, y0, t, args=(), ..., rtol=None, atol=None, tfirst=False, ...)

solves y' = func(y, t, *args) from y(t[0]) = y0 and returns y at each time of t, an
array (len(t), size(y0)). It has a VJP and a JVP in y0, t (every output time, t[0]
too), args, a tuple (a pytree: `args=(params,)` with params a list of (W, b) pairs, as
autograd's ode_net.py passes it) whose float leaves move, and func where it is a
`rules.closures.Closure` (a lambda or nested def reading the enclosing function's locals:
in those values). Writing D = size(y0), f = func:

* VJP, by the adjoint method (as autograd's, after Froehlich et al. 2017): from the
  last output time back to the first, [y, a, b] is integrated backward (odeint again)
  with y' = f, a' = -a df/dy, b' = -a df/dargs, starting at each output time from the
  forward solution there, that time's cotangent added to a. Then y0's cotangent is a at
  t[0], args' (and the closure's) is b, t[i]'s is g[i] . f(y(t[i]), t[i]) and t[0]'s
  -a(t[0]) . f(y0, t[0]), a without g[0] (the trajectory moves with its start). Each
  evaluation calls `tapeflow.vjp` of func (its compiled adjoint, cached after the first).
  The rules of one call's arguments share one backward pass (`_adjoint`).
* JVP, by the forward sensitivity equations: [y, s] with s' = df/dy s + df/dargs dargs
  (`tapeflow.jvp` of func), from s(t[0]) = dy0 - f(y0, t[0]) dt[0]; y(t[i])'s tangent is
  s(t[i]) + f(y(t[i]), t[i]) dt[i].

The keyword `args=` carries derivatives as the 4th positional argument does
(`registry.positional_keywords`), and so do `y0=` and `t=`. A func that is neither a
closure nor constant (a bound method of an object being differentiated) is refused when
the rule runs.

The added systems are integrated with the call's options (rtol, atol, mxstep, h0, hmax,
hmin, mxordn, mxords, ixpr, mxhnil, printmessg, tfirst; a per-component atol or rtol is
extended to the added components; tcrit, its points inside each interval), but Dfun,
col_deriv, ml and mu, which describe the original system's Jacobian alone: derivatives
are as accurate as rtol and atol make the solution. full_output=True is refused. The
rules are primitives linear in their first argument (tf.jacrev sweeps a pullback
forward); odeint has no second derivative. The eager tape cannot record odeint (SciPy
converts Tensors with np.asarray): call it in compiled code (`tf.grad`, `tf.function`).
"""
import threading

import numpy as np

from tapeflow.rules.closures import Closure
from tapeflow.rules.entries import entry
from tapeflow.rules.registry import (RULES_OF_RULES, MissingRule, defjvp, defvjp,
                                     positional_keywords)
from tapeflow.rules.scipy_integrate_system import Field, carries_numbers, is_zero, same, snapshot
from tapeflow.rules.sequences import dense as plain
from tapeflow.rules.shapes import zeros_like_value

try:
    import scipy.integrate as si
except ImportError:  # pragma: no cover - SciPy is optional
    si = None

# odeint's parameters after args, for a call that passes some of them by position
_AFTER_ARGS = ('Dfun', 'col_deriv', 'full_output', 'ml', 'mu', 'rtol', 'atol', 'tcrit', 'h0',
               'hmax', 'hmin', 'ixpr', 'mxstep', 'mxhnil', 'mxordn', 'mxords', 'printmessg',
               'tfirst')
# what describes the original system's Jacobian alone: not passed to the added systems
_JACOBIAN_ONLY = ('Dfun', 'col_deriv', 'ml', 'mu')


def _problem(func, y0, t, args, more, options):
    """(the field, t as floats, the options of the added systems) of a call of odeint."""
    options = dict(zip(_AFTER_ARGS, more), **options)
    if options.get('full_output'):
        raise NotImplementedError('no derivative rule for scipy.integrate.odeint with '
                                  'full_output=True: differentiate the solution alone')
    field = Field(func, y0, args, options.pop('tfirst', False))
    for name in _JACOBIAN_ONLY + ('full_output',):
        options.pop(name, None)
    return field, np.asarray(plain(t), dtype=float).ravel(), options


def _extended(options, dim, blocks):
    """`options` for a system of [y, then `blocks` more numbers]: a per component atol or
    rtol is given to each block of y's size again, its smallest to the others."""
    out = dict(options)
    for name in ('atol', 'rtol'):
        value = out.get(name)
        if value is not None and np.size(value) > 1:
            value = np.ravel(value).astype(float)
            out[name] = np.concatenate([value] + [value if n == dim else np.full(n, value.min())
                                                  for n in blocks])
    return out


def _within(options, start, stop):
    """`options` for one interval: tcrit, its points strictly inside it, in its direction."""
    tcrit = options.get('tcrit')
    if tcrit is None:
        return options
    low, high = min(start, stop), max(start, stop)
    inside = sorted((c for c in np.ravel(tcrit) if low < c < high), reverse=stop < start)
    out = dict(options)
    if inside:
        out['tcrit'] = np.array(inside)
    else:
        out.pop('tcrit')
    return out


def _solve(rhs, x0, times, options):
    return si.odeint(rhs, x0, times, **options)


# ---------------------------------------------------------------- reverse: the adjoint method

_LAST = threading.local()       # the last backward pass, shared by the rules of one call


def _adjoint(g, ans, func, y0, t, args, more, options):
    """(y0's, t's and args' cotangents) of odeint's output cotangent `g`: the last pass
    again for the same call (the very output `ans`, kept alive so that no other takes its
    id, the same func and the same numbers), as the rules of its arguments ask in turn."""
    given = (g, y0, t, args, more, options, getattr(func, 'values', ()))
    last = getattr(_LAST, 'pass_', None)
    if last is not None and last[0] is ans and last[1] is func and same(last[2], given):
        return last[3]
    result = _backward(g, ans, func, y0, t, args, more, options)
    _LAST.pass_ = (ans, func, snapshot(given), result)
    return result


def _backward(g, ans, func, y0, t, args, more, options):
    field, times, options = _problem(func, y0, t, args, more, options)
    ys = np.asarray(ans, dtype=float)
    steps, dim, size = ys.shape[0], field.dim, field.numbers.size
    g = np.zeros(ys.shape) if is_zero(g) else \
        np.broadcast_to(np.asarray(plain(g), dtype=float), ys.shape)
    dt = np.zeros(steps)
    a, b = g[-1].copy(), np.zeros(size)
    if np.any(g):
        added = _extended(options, dim, (dim, size))

        def augmented(x, s):
            f, ay, ap = field.pullback(x[:dim], s, x[dim:2 * dim])
            return np.concatenate([f, -ay, -ap])
        for i in range(steps - 1, 0, -1):
            dt[i] = g[i] @ field.value(ys[i], times[i])
            x = _solve(augmented, np.concatenate([ys[i], a, b]), times[[i, i - 1]],
                       _within(added, times[i], times[i - 1]))[1]
            a, b = x[dim:2 * dim], x[2 * dim:]
            if i == 1:
                dt[0] = -(a @ field.value(ys[0], times[0]))
            a = a + g[i - 1]
    return a, dt, b, field


def _as(vector, like):
    """A cotangent `vector` in the type and shape of the argument `like` (a copy: the
    backward pass it comes from is kept)."""
    if isinstance(like, float) or (isinstance(like, (int, np.number)) and np.ndim(like) == 0):
        return float(vector[0])
    if isinstance(like, list):
        return [float(v) for v in vector] if all(np.ndim(x) == 0 for x in like) else \
            np.reshape(vector, np.shape(like))
    dtype = getattr(like, 'dtype', None)
    dtype = dtype if dtype is not None and np.issubdtype(dtype, np.floating) else float
    return np.reshape(vector, np.shape(like)).astype(dtype)


def _closure(func):
    if not isinstance(func, Closure):
        raise NotImplementedError(f'no derivative rule for scipy.integrate.odeint in its function '
                                  f'{func!r}: pass what it reads through args')
    return func


def odeint_vjp_func(g, ans, func, y0, t, args=(), *more, **options):
    _, _, b, field = _adjoint(g, ans, _closure(func), y0, t, args, more, options)
    return field.closure_value(func, field.split(b)[1])


def odeint_vjp_y0(g, ans, func, y0, t, args=(), *more, **options):
    return _as(_adjoint(g, ans, func, y0, t, args, more, options)[0], y0)


def odeint_vjp_t(g, ans, func, y0, t, args=(), *more, **options):
    return _as(_adjoint(g, ans, func, y0, t, args, more, options)[1], t)


def odeint_vjp_args(g, ans, func, y0, t, args=(), *more, **options):
    _, _, b, field = _adjoint(g, ans, func, y0, t, args, more, options)
    return field.split(b)[0]


# ---------------------------------------------------------------- forward: sensitivities

def _sensitivity(field, ys, times, options, s0, dp):
    """s(t[i]) for each output time: [y, s] integrated from [y0, s0], args moving by `dp`."""
    dim = field.dim
    if not np.any(s0) and not np.any(dp):
        return np.zeros(ys.shape)

    def augmented(x, s):
        return np.concatenate(field.push(x[:dim], s, x[dim:], dp))
    x0 = np.concatenate([ys[0], s0])
    return _solve(augmented, x0, times, _extended(options, dim, (dim,)))[:, dim:]


def odeint_jvp_y0(dy0, ans, func, y0, t, args=(), *more, **options):
    field, times, options = _problem(func, y0, t, args, more, options)
    ys = np.asarray(ans, dtype=float)
    s0 = np.zeros(field.dim) if is_zero(dy0) else \
        np.broadcast_to(np.asarray(plain(dy0), dtype=float), np.shape(y0)).ravel()
    return _sensitivity(field, ys, times, options, s0, np.zeros(field.numbers.size))


def odeint_jvp_t(dt, ans, func, y0, t, args=(), *more, **options):
    field, times, options = _problem(func, y0, t, args, more, options)
    ys = np.asarray(ans, dtype=float)
    dt = np.zeros(len(times)) if is_zero(dt) else \
        np.broadcast_to(np.asarray(plain(dt), dtype=float), times.shape)
    s0 = -dt[0] * field.value(ys[0], times[0])
    out = _sensitivity(field, ys, times, options, s0, np.zeros(field.numbers.size))
    moved = [dt[i] * field.value(ys[i], times[i]) if dt[i] else np.zeros(field.dim)
             for i in range(len(times))]
    return out + np.array(moved)


def odeint_jvp_args(dargs, ans, func, y0, t, args=(), *more, **options):
    field, times, options = _problem(func, y0, t, args, more, options)
    dargs = (None,) * len(field.args) if is_zero(dargs) else tuple(dargs)
    dp = field.numbers.vector(dargs + (None,) * len(field.extra))
    return _sensitivity(field, np.asarray(ans, dtype=float), times, options,
                        np.zeros(field.dim), dp)


def odeint_jvp_func(dfunc, ans, func, y0, t, args=(), *more, **options):
    field, times, options = _problem(_closure(func), y0, t, args, more, options)
    dp = field.numbers.vector((None,) * len(field.args) + field.extra_of(func, dfunc))
    return _sensitivity(field, np.asarray(ans, dtype=float), times, options,
                        np.zeros(field.dim), dp)


# ---------------------------------------------------------------- the rules' own rules

def _linear_in_first(rule, transpose):
    """`rule(g, ans, func, y0, t, args, ...)`, linear in g, a primitive of its own: in g its
    derivative is itself, its transpose `transpose` (a VJP's is the JVP of the same
    argument), so the compiler sweeps a pullback forward (tf.jacrev, tf.jacobian). In the
    rest it has none (odeint has no second derivative here): a tangent there that is not
    zero is refused when it runs, and so is a cotangent (`operations.rules_for`'s guard)."""
    def in_g(tangent, ans2, g, *operands, **options):
        return rule(tangent, *operands, **options)

    def transposed(cotangent, ans2, g, *operands, **options):
        return transpose(cotangent, *operands, **options)

    def refused(tangent, ans2, *operands, **options):
        if carries_numbers(tangent):
            raise MissingRule(f'scipy.integrate.odeint has no second derivative: its rule '
                              f'{rule.__name__} has one in its first argument alone (tf.jacrev '
                              'of odeint works; tf.hessian and grad of grad do not)')
        return zeros_like_value(ans2)
    defjvp(rule, in_g, *[refused] * 12,
           name=f'{rule.__name__} (a rule of scipy.integrate.odeint: no second derivative)')
    defvjp(rule, transposed)
    RULES_OF_RULES.add(rule)


# ---------------------------------------------------------------- registering

if si is not None:
    entry(si.odeint, (odeint_vjp_func, odeint_vjp_y0, odeint_vjp_t, odeint_vjp_args),
          (odeint_jvp_func, odeint_jvp_y0, odeint_jvp_t, odeint_jvp_args),
          name='scipy.integrate.odeint',
          forms='y0 a number or a vector; t increasing or decreasing; args a tuple (a pytree: '
                'its float leaves move), by position or args=; func in the values a lambda or '
                'nested def reads from its enclosing function; the adjoint method (reverse) and '
                'the sensitivity equations (forward), integrated by odeint with the options '
                'given; no full_output')
    positional_keywords(si.odeint, y0=1, t=2, args=3)
    for _rule, _transpose in ((odeint_vjp_func, odeint_jvp_func), (odeint_vjp_y0, odeint_jvp_y0),
                              (odeint_vjp_t, odeint_jvp_t), (odeint_vjp_args, odeint_jvp_args)):
        _linear_in_first(_rule, _transpose)
        _linear_in_first(_transpose, _rule)
