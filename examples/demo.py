"""What tapeflow is for, in one run: fit a physical model to measurements.

A pendulum with friction swings; we have noisy measurements of its angle
and want its two parameters back: omega2 = g / L (from the length L) and the
friction coefficient. The model is an ordinary Python loop that integrates
the equation of motion,

    theta'' = -omega2 * sin(theta) - friction * theta'

and the loss is the mean squared distance to the measurements. tapeflow
reads that loop and generates its gradient; gradient descent then recovers
the parameters. On the way the demo checks the gradient against finite
differences, times it beside autograd (and JAX, when they are installed),
and prints the code tapeflow generated. This is what `make demo` runs.

Run:  python examples/demo.py
"""
import importlib
import time
import types

import numpy as np

import tapeflow

DT = 0.05           # time step of the integrator (s)
TRUE = (4.0, 0.3)   # omega2 (1/s^2, a 2.45 m pendulum) and friction (1/s) to recover


def loss(omega2, friction, measured):
    """Mean squared distance between the simulated angles and `measured`."""
    theta = 1.0                     # released at 1 rad, at rest
    velocity = 0.0
    total = 0.0
    for i in range(measured.shape[0]):
        acceleration = -omega2 * np.sin(theta) - friction * velocity
        velocity = velocity + DT * acceleration         # semi-implicit Euler
        theta = theta + DT * velocity
        error = theta - measured[i]
        total = total + error * error
    return total / measured.shape[0]


def measurements(steps=160, noise=0.02, seed=0):
    """The angles of the true pendulum, every DT seconds, with measurement noise."""
    omega2, friction = TRUE
    theta, velocity, angles = 1.0, 0.0, []
    for _ in range(steps):
        velocity += DT * (-omega2 * np.sin(theta) - friction * velocity)
        theta += DT * velocity
        angles.append(theta)
    return np.array(angles) + np.random.default_rng(seed).normal(0.0, noise, steps)


def with_numpy(fn, module):
    """The same function, its `np` bound to another library's NumPy (autograd's, JAX's)."""
    return types.FunctionType(fn.__code__, dict(fn.__globals__, np=module), fn.__name__)


def per_call(fn, args, seconds=0.4):
    """Median seconds per call of fn(*args) (after one call that may compile)."""
    fn(*args)
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def fit(gradient, measured, steps=300, rate=0.05):
    """Adam on (omega2, friction) from a rough first guess."""
    params = np.array([3.0, 0.1])
    moment, square = np.zeros(2), np.zeros(2)
    for step in range(1, steps + 1):
        value, grads = gradient(params[0], params[1], measured)
        g = np.array(grads)
        moment = 0.9 * moment + 0.1 * g
        square = 0.999 * square + 0.001 * g * g
        params = params - rate * (moment / (1 - 0.9 ** step)) / \
            (np.sqrt(square / (1 - 0.999 ** step)) + 1e-8)
        if step in (1, 10, 30, 100, steps):
            print(f'  step {step:3d}   loss {value:.6f}   omega2 {params[0]:.4f}   '
                  f'friction {params[1]:.4f}')
    return params


def main():
    measured = measurements()
    print(f'Fitting a pendulum with friction to {measured.size} noisy measurements '
          f'({measured.size * DT:.0f} s of swinging).')
    print(f'True parameters: omega2 = {TRUE[0]}, friction = {TRUE[1]}; first guess 3.0, 0.1.')

    start = time.perf_counter()
    gradient = tapeflow.value_and_grad(loss, argnums=(0, 1))
    value, (d_omega2, d_friction) = gradient(3.0, 0.1, measured)
    compile_ms = (time.perf_counter() - start) * 1e3
    print(f'\n1. tapeflow compiled the gradient of loss() in {compile_ms:.0f} ms (first call).')

    print('\n2. The gradient against central finite differences (step 1e-6), at the first guess:')
    worst = 0.0
    for name, exact, bump in (('d loss / d omega2  ', d_omega2, (1e-6, 0.0)),
                              ('d loss / d friction', d_friction, (0.0, 1e-6))):
        numeric = (loss(3.0 + bump[0], 0.1 + bump[1], measured) -
                   loss(3.0 - bump[0], 0.1 - bump[1], measured)) / 2e-6
        relative = abs(exact - numeric) / max(abs(numeric), 1e-12)
        worst = max(worst, relative)
        print(f'  {name}  tapeflow {exact: .10f}   finite differences {numeric: .10f}   '
              f'relative difference {relative:.1e}')
    if worst > 1e-5:
        raise SystemExit('the gradient disagrees with finite differences')

    print('\n3. Gradient descent (Adam) with that gradient:')
    omega2, friction = fit(gradient, measured)
    print(f'  recovered omega2 = {omega2:.3f} (true {TRUE[0]}), '
          f'friction = {friction:.3f} (true {TRUE[1]})')

    print('\n4. Time per gradient of this 160-step simulation (median):')
    args = (3.0, 0.1, measured)
    ours = per_call(gradient, args)
    print(f'  tapeflow   {ours * 1e3:8.3f} ms')
    compare(args, d_omega2, d_friction, ours)

    print('\n5. The code tapeflow generated for the gradient (tapeflow.source):\n')
    print(tapeflow.source(loss, argnums=(0, 1), args=args))


def compare(args, d_omega2, d_friction, ours):
    """Time autograd and JAX on the same function, where they are installed."""
    try:
        autograd = importlib.import_module('autograd')
        anp = importlib.import_module('autograd.numpy')
    except ImportError:
        print('  autograd   not installed: skipped (pip install autograd)')
    else:
        theirs = autograd.value_and_grad(with_numpy(loss, anp), argnum=(0, 1))
        _, grads = theirs(*args)
        agree = np.allclose(grads, (d_omega2, d_friction), rtol=1e-9, atol=1e-12)
        t = per_call(theirs, args)
        print(f'  autograd   {t * 1e3:8.3f} ms   ({t / ours:.0f} times tapeflow\'s; '
              f'same gradient: {"yes" if agree else "NO"})')
    try:
        jax = importlib.import_module('jax')
        jnp = importlib.import_module('jax.numpy')
    except ImportError:
        print('  JAX        not installed: skipped (pip install jax)')
        return
    jax.config.update('jax_enable_x64', True)
    # Op by op: jax.jit would unroll this 160-step Python loop into one huge
    # program and spend minutes compiling it (a jitted loop is written with
    # jax.lax.scan, which is no longer the same function).
    theirs = jax.value_and_grad(with_numpy(loss, jnp), argnums=(0, 1))
    _, grads = theirs(*args)
    agree = np.allclose(np.array(grads), (d_omega2, d_friction), rtol=1e-9, atol=1e-12)
    t = per_call(lambda *a: jax.block_until_ready(theirs(*a)), args)
    print(f'  JAX        {t * 1e3:8.3f} ms   ({t / ours:.0f} times tapeflow\'s, op by op: no jit; '
          f'same gradient: {"yes" if agree else "NO"})')

if __name__ == '__main__':
    main()
