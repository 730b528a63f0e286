"""scipy.integrate.odeint through the compiler, written as users write it (issue 29).

A linear system against its closed form, y(t) = expm(A (t - t0)) y0 (the derivative in A
by scipy.linalg.expm_frechet); a small neural right-hand side, func(y, t, W) =
tanh(y @ W), against central differences of the plain call; both in y0, the output
times t and args, by tf.grad and by tf.jvp, with rtol = atol = 1e-10 in odeint. Then
autograd's ode_net.py (an MLP's parameters as a list of (W, b) pairs passed as
`tuple((params,))`, rtol=0.01); the ways to pass the arguments (args= or by position,
y0= and t=, tfirst, a number y0, a list t, decreasing times, a lambda over a parameter);
Jacobians; and the refusals: a second derivative, full_output, and a library function
without a rule, located at the user's call.
"""
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf

si = pytest.importorskip('scipy.integrate')
from scipy.integrate import odeint  # noqa: E402
from scipy.linalg import expm, expm_frechet  # noqa: E402

TIGHT = dict(rtol=1e-10, atol=1e-10)
A = np.array([[-0.5, 1.0, 0.2], [-1.0, -0.3, 0.1], [0.3, -0.2, -0.4]])
Y0 = np.array([1.0, 0.5, -0.3])
T = np.array([0.2, 0.7, 1.1, 2.0])
W = np.array([[0.3, -0.8, 0.5], [0.9, 0.1, -0.4], [-0.6, 0.7, 0.2]])
WEIGHTS = np.random.default_rng(29).standard_normal((4, 3))


def linear(y, t, A):
    return A @ y


def neural(y, t, W):
    return np.tanh(y @ W)


def linear_loss(y0, t, A):
    return np.sum(WEIGHTS * odeint(linear, y0, t, args=(A,), rtol=1e-10, atol=1e-10))


def neural_loss(y0, t, W):
    return np.sum(WEIGHTS * odeint(neural, y0, t, args=(W,), rtol=1e-10, atol=1e-10))


def central(f, args, k, eps=1e-6):
    """d f / d args[k], element by element, by central differences."""
    x = np.asarray(args[k], dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[i] = eps
        up, down = list(args), list(args)
        up[k], down[k] = x + step, x - step
        out[i] = (f(*up) - f(*down)) / (2 * eps)
    return out


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


# ---------------------------------------------------------------- the linear system

def linear_reference():
    """The gradient of `linear_loss` in y0, t and A from y(t) = expm(A (t - t0)) y0."""
    t0, gy0, gt, gA = T[0], np.zeros(3), np.zeros(4), np.zeros((3, 3))
    for i, ti in enumerate(T):
        flow = expm(A * (ti - t0))
        gy0 += flow.T @ WEIGHTS[i]
        if i:
            gt[i] = WEIGHTS[i] @ A @ flow @ Y0
            gt[0] -= WEIGHTS[i] @ flow @ A @ Y0
        for k, j in np.ndindex(3, 3):
            direction = np.zeros((3, 3))
            direction[k, j] = 1.0
            gA[k, j] += WEIGHTS[i] @ expm_frechet(A * (ti - t0), direction * (ti - t0),
                                                  compute_expm=False) @ Y0
    return gy0, gt, gA


def test_linear_system_gradients_match_the_matrix_exponential():
    grads = tf.grad(linear_loss, argnums=(0, 1, 2))(Y0, T, A)
    for got, expected in zip(grads, linear_reference()):
        assert got.shape == expected.shape
        assert relative(got, expected) < 1e-7


def test_linear_system_forward_mode_matches_the_matrix_exponential():
    rng = np.random.default_rng(3)
    for k, expected in enumerate(linear_reference()):
        tangents = [np.zeros(3), np.zeros(4), np.zeros((3, 3))]
        tangents[k] = rng.standard_normal(tangents[k].shape)
        value, tangent = tf.jvp(linear_loss, (Y0, T, A), tuple(tangents))
        assert value == pytest.approx(linear_loss(Y0, T, A), rel=1e-12)
        assert tangent == pytest.approx(np.sum(expected * tangents[k]), rel=1e-7)


def test_the_final_states_jacobian_is_the_matrix_exponential():
    def final(y0):
        return odeint(linear, y0, np.array([0.0, 1.5]), (A,), rtol=1e-10, atol=1e-10)[-1]
    for jacobian in (tf.jacobian, tf.jacfwd, tf.jacrev):
        assert relative(jacobian(final)(Y0), expm(1.5 * A)) < 1e-8


# ---------------------------------------------------------------- a neural right-hand side

def test_neural_rhs_gradients_match_central_differences():
    grads = tf.grad(neural_loss, argnums=(0, 1, 2))(Y0, T, W)
    value, _ = tf.value_and_grad(neural_loss)(Y0, T, W)
    assert value == neural_loss(Y0, T, W)
    for k, got in enumerate(grads):
        assert relative(got, central(neural_loss, (Y0, T, W), k)) < 1e-6


def test_neural_rhs_forward_mode_matches_central_differences():
    rng = np.random.default_rng(5)
    for k in range(3):
        tangents = [np.zeros(3), np.zeros(4), np.zeros((3, 3))]
        tangents[k] = rng.standard_normal(tangents[k].shape)
        _, tangent = tf.jvp(neural_loss, (Y0, T, W), tuple(tangents))
        expected = np.sum(central(neural_loss, (Y0, T, W), k) * tangents[k])
        assert tangent == pytest.approx(expected, rel=1e-6)


def test_args_by_position_or_keyword_and_y0_t_by_keyword_give_one_gradient():
    def by_position(W):
        return np.sum(WEIGHTS * odeint(neural, Y0, T, (W,), rtol=1e-10, atol=1e-10))

    def by_keyword(W):
        return np.sum(WEIGHTS * odeint(neural, y0=Y0, t=T, args=(W,), rtol=1e-10, atol=1e-10))

    def tfirst(W):
        return np.sum(WEIGHTS * odeint(lambda t, y, W: np.tanh(y @ W), Y0, T, args=(W,),
                                       tfirst=True, rtol=1e-10, atol=1e-10))
    expected = tf.grad(neural_loss, argnums=2)(Y0, T, W)
    for f in (by_position, by_keyword, tfirst):
        np.testing.assert_allclose(tf.grad(f)(W), expected, rtol=1e-9)
    assert tf.source(by_keyword).count('_odeint_vjp_args(') == 1


# ---------------------------------------------------------------- autograd's ode_net.py

def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.maximum(0, outputs)
    return outputs


def ode_net_case():
    rs = np.random.RandomState(0)
    params = [(rs.randn(m, n) * 0.3, rs.randn(n) * 0.3) for m, n in ((2, 20), (20, 2))]
    t = np.linspace(0.0, 1.5, 30)
    true_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
    target = odeint(lambda y, t: np.dot(y ** 3, true_A), np.array([2.0, 0.0]), t)
    return params, t, target


def ode_net_loss(rtol, atol=None):
    _, t, target = ode_net_case()
    y0 = np.array([2.0, 0.0])

    def loss(params):
        pred = odeint(nn_predict, y0, t, tuple((params,)), rtol=rtol, atol=atol)
        return np.sum((pred - target) ** 2)
    return loss


def test_ode_net_gradient_in_a_list_of_layers():
    params = ode_net_case()[0]
    loose, tight = ode_net_loss(0.01), ode_net_loss(1e-10, 1e-10)
    g_loose, g_tight = tf.grad(loose)(params), tf.grad(tight)(params)
    assert isinstance(g_tight, list) and all(isinstance(layer, tuple) for layer in g_tight)
    flat = lambda g: np.concatenate([np.ravel(x) for layer in g for x in layer])  # noqa: E731
    # rtol=0.01: as near the exact gradient as the solution is to the exact solution
    assert np.linalg.norm(flat(g_loose) - flat(g_tight)) < 1e-2 * np.linalg.norm(flat(g_tight))
    rng = np.random.default_rng(7)
    direction = [(rng.standard_normal(w.shape), rng.standard_normal(b.shape)) for w, b in params]
    along = lambda eps: tight([(w + eps * dw, b + eps * db)  # noqa: E731
                               for (w, b), (dw, db) in zip(params, direction)])
    numeric = (along(1e-5) - along(-1e-5)) / 2e-5
    assert flat(g_tight) @ flat(direction) == pytest.approx(numeric, rel=1e-3)


def test_ode_net_gradient_is_autograds():
    autograd = pytest.importorskip('autograd')
    anp = pytest.importorskip('autograd.numpy')
    from autograd.builtins import tuple as atuple
    from autograd.scipy.integrate import odeint as aodeint
    params, t, target = ode_net_case()

    def a_predict(inputs, t, params):
        for W, b in params:
            outputs = anp.dot(inputs, W) + b
            inputs = anp.maximum(0, outputs)
        return outputs

    def a_loss(params):
        pred = aodeint(a_predict, np.array([2.0, 0.0]), t, atuple((params,)), rtol=0.01)
        return anp.mean(anp.abs(pred - target))

    def loss(params):
        pred = odeint(nn_predict, np.array([2.0, 0.0]), t, tuple((params,)), rtol=0.01)
        return np.mean(np.abs(pred - target))
    ours, theirs = tf.grad(loss)(params), autograd.grad(a_loss)(params)
    for (w, b), (aw, ab) in zip(ours, theirs):
        np.testing.assert_allclose(w, aw, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(b, ab, rtol=1e-6, atol=1e-12)


# ---------------------------------------------------------------- forms

def decay(y, t, k):
    return -k * y + np.sin(3.0 * t)


@pytest.mark.parametrize('times', [[0.0, 0.6, 1.5], [1.5, 0.6, 0.0]], ids=['rising', 'falling'])
def test_a_number_y0_and_a_list_of_times(times):
    def f(y0, t, k):
        return np.sum(odeint(decay, y0, t, (k,), rtol=1e-10, atol=1e-10) ** 2)
    gy0, gt, gk = tf.grad(f, argnums=(0, 1, 2))(1.5, times, 0.7)
    assert isinstance(gy0, float) and isinstance(gk, float) and isinstance(gt, list)
    args = (1.5, np.array(times), 0.7)
    assert gy0 == pytest.approx(float(central(f, args, 0)), rel=1e-6)
    assert gk == pytest.approx(float(central(f, args, 2)), rel=1e-6)
    np.testing.assert_allclose(gt, central(f, args, 1), rtol=1e-5, atol=1e-7)


def test_the_last_time_moves_the_whole_grid():
    def f(end):
        return np.sum(odeint(decay, np.array([1.0]), np.linspace(0.0, end, 5), (0.4,),
                             rtol=1e-10, atol=1e-10) ** 2)
    assert tf.grad(f)(2.0) == pytest.approx(float(central(f, (2.0,), 0)), rel=1e-6)
    assert tf.jvp(f, (2.0,), (1.0,))[1] == pytest.approx(float(central(f, (2.0,), 0)), rel=1e-6)


def test_a_lambda_over_a_parameter_is_differentiated_in_it():
    def over_k(k):
        return np.sum(odeint(lambda y, t: -k * y + 0.5, Y0, T, rtol=1e-10, atol=1e-10) ** 2)

    def by_default(k):
        return np.sum(odeint(lambda y, t, c=k: -c * y + 0.5, Y0, T, rtol=1e-10, atol=1e-10) ** 2)

    def nested(k, W):
        def rhs(y, t, W):
            return np.tanh(y @ W) * k
        return np.sum(odeint(rhs, Y0, T, args=(W,), rtol=1e-10, atol=1e-10) ** 2)
    for f in (over_k, by_default):
        expected = float(central(f, (0.8,), 0))
        assert tf.grad(f)(0.8) == pytest.approx(expected, rel=1e-6)
        assert tf.jvp(f, (0.8,), (1.0,))[1] == pytest.approx(expected, rel=1e-6)
    gk, gW = tf.grad(nested, argnums=(0, 1))(0.8, W)
    assert gk == pytest.approx(float(central(nested, (0.8, W), 0)), rel=1e-6)
    assert relative(gW, central(nested, (0.8, W), 1)) < 1e-6


def test_the_eager_tape_over_a_tf_function():
    @tf.function
    def f(A):
        return np.sum(WEIGHTS * odeint(linear, Y0, T, (A,), rtol=1e-10, atol=1e-10))
    variable = tf.Variable(A)
    with tf.GradientTape() as tape:
        value = f(variable)
    assert relative(tape.gradient(value, variable).numpy(), linear_reference()[2]) < 1e-7


# ---------------------------------------------------------------- refusals

def test_a_second_derivative_is_refused():
    def f(y0):
        return np.sum(odeint(linear, y0, T, (A,), rtol=1e-10, atol=1e-10) ** 2)
    with pytest.raises(tf.MissingRule, match='odeint has no second derivative'):
        tf.hessian(f)(Y0)


def test_full_output_is_refused():
    def f(A):
        return np.sum(odeint(linear, Y0, T, (A,), full_output=True)[0])
    with pytest.raises(NotImplementedError, match='full_output=True'):
        tf.grad(f)(A)


def where(fn, offset=1):
    """'file:line:' of the line `offset` lines below `fn`'s def."""
    return f'{fn.__code__.co_filename}:{fn.__code__.co_firstlineno + offset}:'


def test_a_library_function_without_a_rule_is_refused_at_the_users_call():
    from scipy.integrate import quad
    from scipy.optimize import brentq

    def integral(a):
        return quad(lambda x: a * x, 0.0, 1.0)[0]

    def integral_args(a):
        return quad(lambda x, a: a * x, 0.0, 1.0, (a,))[0]

    def root(a):
        return brentq(lambda x, a: x - a, -10.0, 10.0, args=(a,))
    cases = [(integral, 'scipy.integrate.quad (argument 0)'),
             (integral_args, 'scipy.integrate.quad (argument 3)'),
             (root, "scipy.optimize.brentq (argument 'args')")]
    for f, what in cases:
        with pytest.raises(tf.UnsupportedError) as error:
            tf.grad(f)(0.5)
        assert str(error.value).startswith(where(f)), str(error.value)
        assert f'no derivative rule for {what}' in str(error.value)


def test_a_library_function_without_a_rule_runs_where_nothing_moves():
    from scipy.integrate import quad

    def f(x):
        return x * quad(np.cos, 0.0, 1.0)[0]
    assert tf.grad(f)(2.0) == pytest.approx(np.sin(1.0), rel=1e-12)


def test_odeint_rules_wait_for_scipy_integrate(tmp_path):
    script = tmp_path / 'lazy_integrate.py'
    script.write_text('import sys, tapeflow as tf, numpy as np\n'
                      'print("scipy.integrate" in sys.modules)\n'
                      'from scipy.integrate import odeint\n\n\n'
                      'def f(k):\n'
                      '    return odeint(lambda y, t, k: -k * y, 1.0, [0.0, 2.0], (k,),\n'
                      '                  rtol=1e-12, atol=1e-12)[-1, 0]\n\n\n'
                      'print(round(float(tf.grad(f)(0.5)), 8))\n')
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ['False', str(round(-2.0 * np.exp(-1.0), 8))]
