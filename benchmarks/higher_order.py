"""Second derivatives and Jacobians: a dense Hessian and a forward-mode Jacobian.

H1  Hessian of f(x) = sum_i log(1 + exp(a_i . x)), x in R^100, 200 terms, by
    tapeflow.hessian (forward-over-reverse) beside the closed form
    A^T diag(s(1-s)) A, nested GradientTapes, autograd.hessian and jax.hessian.
J1  Jacobian of an elementwise map over 1000 inputs by tapeflow.jacfwd (batched
    tangents) against one tapeflow.jvp sweep per input, the closed-form
    diagonal, autograd.jacobian and jax.jacfwd.

Times are ratios to one plain forward evaluation of the function. The tapeflow
cells run only when `tapeflow.hessian` / `tapeflow.jacfwd` exist.
"""
import numpy as np

from harness import (EXTERNAL, Row, Unavailable, autograd_modules, build, close,
                     import_tapeflow, jax_modules, max_error, measure, rebind)


def softplus_sum(x, A):
    z = A @ x
    return np.sum(np.log(1.0 + np.exp(z)))


def softplus_hessian(x, A):
    s = 1.0 / (1.0 + np.exp(-(A @ x)))
    return (A.T * (s * (1.0 - s))) @ A


def elementwise(x):
    return np.sin(x) * x + np.tanh(x) ** 2


def elementwise_jacobian(x):
    t = np.tanh(x)
    return np.diag(np.cos(x) * x + np.sin(x) + 2.0 * t * (1.0 - t * t))


def _tapeflow_attr(name):
    tapeflow = import_tapeflow()
    fn = getattr(tapeflow, name, None)
    if fn is None:
        raise Unavailable(f'tapeflow.{name} does not exist yet')
    return fn


def _hessian_tape(x, A):
    tapeflow = import_tapeflow()
    if not hasattr(tapeflow, 'GradientTape'):
        raise Unavailable('tapeflow.GradientTape does not exist yet')
    xv = tapeflow.Variable(x)
    Ac = tapeflow.constant(A)
    GradientTape = tapeflow.GradientTape

    def call():
        with GradientTape() as outer:
            with GradientTape() as inner:
                y = softplus_sum(xv, Ac)
            g = inner.gradient(y, xv)
        return np.asarray(outer.jacobian(g, xv))
    return call


def _hessian_rows(settings, log):
    rng = np.random.default_rng(7)
    x = 0.3 * rng.standard_normal(100)
    A = rng.standard_normal((200, 100)) / 10.0
    cols = ('forward', 'hand', 'tf.hessian', 'tape', 'autograd', 'jax')
    row = Row('H1', 'Hessian, sum log(1+exp(a.x)), x in R^100 (200 terms)', cols)

    def tf_hessian():
        h = _tapeflow_attr('hessian')(softplus_sum)
        return lambda: h(x, A)

    def ag_hessian():
        autograd, anp = autograd_modules()
        h = autograd.hessian(rebind(softplus_sum, anp))
        return lambda: h(x, A)

    def jax_hessian():
        jax, jnp = jax_modules()
        h = jax.jit(jax.hessian(rebind(softplus_sum, jnp)))
        xa, Aa = jnp.asarray(x), jnp.asarray(A)
        return lambda: jax.block_until_ready(h(xa, Aa))

    builders = {
        'forward': lambda: (lambda: softplus_sum(x, A)),
        'hand': lambda: (lambda: softplus_hessian(x, A)),
        'tf.hessian': tf_hessian,
        'tape': lambda: _hessian_tape(x, A),
        'autograd': ag_hessian,
        'jax': jax_hessian,
    }
    _build_and_check(row, builders, settings, reference='hand', log=log)
    return row


def _jacfwd_rows(settings, log):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(1000)
    cols = ('forward', 'hand', 'tf.jacfwd', 'jvp/input', 'tf.jacrev', 'autograd', 'jax')
    row = Row('J1', 'jacfwd of an elementwise map, 1000 inputs (1000x1000)', cols)

    def tf_jacfwd():
        j = _tapeflow_attr('jacfwd')(elementwise)
        return lambda: j(x)

    def tf_jacrev():
        j = _tapeflow_attr('jacrev')(elementwise)
        return lambda: j(x)

    def per_input():
        jvp = _tapeflow_attr('jvp')
        eye = np.eye(x.size)

        def call():
            cols_ = [jvp(elementwise, (x,), (eye[i],))[1] for i in range(x.size)]
            return np.stack(cols_, axis=1)
        return call

    def ag_jacobian():
        autograd, anp = autograd_modules()
        j = autograd.jacobian(rebind(elementwise, anp))
        return lambda: j(x)

    def jax_jacfwd():
        jax, jnp = jax_modules()
        j = jax.jit(jax.jacfwd(rebind(elementwise, jnp)))
        xa = jnp.asarray(x)
        return lambda: jax.block_until_ready(j(xa))

    builders = {
        'forward': lambda: (lambda: elementwise(x)),
        'hand': lambda: (lambda: elementwise_jacobian(x)),
        'tf.jacfwd': tf_jacfwd,
        'jvp/input': per_input,
        'tf.jacrev': tf_jacrev,
        'autograd': ag_jacobian,
        'jax': jax_jacfwd,
    }
    _build_and_check(row, builders, settings, reference='hand', log=log)
    return row


def _build_and_check(row, builders, settings, reference, log):
    results = {}
    for name, builder in builders.items():
        if name in EXTERNAL and not settings.external:
            row.cells[name].error = 'external libraries off (--no-external)'
            continue
        results[name] = build(row.cells[name], builder)
    ref = results.get(reference)
    for name, res in results.items():
        if res is None or name in ('forward', reference) or ref is None:
            continue
        if not close(np.asarray(res), ref):
            err = max_error(np.asarray(res), ref)
            row.cells[name].note = f'MISMATCH (max err {err:.3g})'
            msg = f'!!! {row.key} {name}: MISMATCH against the closed form: max abs error {err:.3g}'
            row.notes.append(msg)
            log(msg)
    measure(list(row.cells.values()), settings)


def rows(settings, log=print):
    """H1 when tapeflow.hessian exists, J1 when tapeflow.jacfwd exists; a note otherwise."""
    tapeflow = import_tapeflow()
    out = []
    for name, key, make in (('hessian', 'H1', _hessian_rows), ('jacfwd', 'J1', _jacfwd_rows)):
        if hasattr(tapeflow, name):
            out.append(make(settings, log))
        else:
            log(f'note: {key} skipped: this tapeflow has no tapeflow.{name}')
    return out
