"""`fixed_point(f, a, x0, distance, tol)`: iterate `f(a)` from `x0` to within `tol`;
its derivative in `a` by the implicit function theorem (a `custom_vjp`): the adjoint
equation solved by the same iteration, as autograd does."""
import tapeflow as _tf


def _iterate(step, x, distance, tol):
    x, previous = step(x), x
    while distance(x, previous) > tol:
        x, previous = step(x), x
    return x


@_tf.custom_vjp
def _solve(a, x0, f, distance, tol):
    return _iterate(f(a), x0, distance, tol)


def _solve_fwd(a, x0, f, distance, tol):
    x = _iterate(f(a), x0, distance, tol)
    return x, (a, x, f, distance, tol)


def _solve_bwd(residuals, g):
    a, x, f, distance, tol = residuals
    _, pull_x = _tf.vjp(f(a), x)

    def adjoint_step(w):
        return pull_x(w)[0] + g
    w = _iterate(adjoint_step, 0.0 * g, distance, tol)
    _, pull_a = _tf.vjp(lambda a: f(a)(x), a)
    return pull_a(w)[0], 0.0 * x, None, None, None


_solve.defvjp(_solve_fwd, _solve_bwd)


def fixed_point(f, a, x0, distance, tol):
    return _solve(a, x0, f, distance, tol)
