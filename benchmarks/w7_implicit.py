"""W7: a data-dependent `while`: implicit Euler, each step a Newton solve to a tolerance.

50 steps of y' = k sin(t) - y**3 by implicit Euler; each step solves
z = y + h (k sin(t + h) - z**3) by Newton's method until the residual is under
1e-12 (a few iterations, as many as the data needs: an early exit). tapeflow
tapes the trip counts and differentiates through the iterations; JAX cannot
reverse `lax.while_loop`, so its column runs a fixed number of Newton iterations
in `lax.fori_loop` (`implicit_euler_jax`), enough for the same tolerance here.
"""
import math

import numpy as np

STEPS, NEWTON = 50, 6


def implicit_euler(y, k):
    t = 0.0
    for n in range(50):
        z = y
        r = z - y - 0.05 * (k * math.sin(t + 0.05) - z * z * z)
        while abs(r) > 1e-12:
            z = z - r / (1.0 + 3.0 * 0.05 * z * z)
            r = z - y - 0.05 * (k * math.sin(t + 0.05) - z * z * z)
        y = z
        t = t + 0.05
    return y


def implicit_euler_adjoint(y, k):
    """By hand: the same solves, then the implicit function theorem at each solution
    (dz/dy = 1 / (1 + 3h z**2), dz/dk = h sin(t + h) / (1 + 3h z**2))."""
    h, t = 0.05, 0.0
    zs, ss = [0.0] * STEPS, [0.0] * STEPS
    for n in range(STEPS):
        s = math.sin(t + h)
        z = y
        r = z - y - h * (k * s - z * z * z)
        while abs(r) > 1e-12:
            z = z - r / (1.0 + 3.0 * h * z * z)
            r = z - y - h * (k * s - z * z * z)
        zs[n], ss[n] = z, s
        y = z
        t = t + h
    by, bk = 1.0, 0.0
    for n in range(STEPS - 1, -1, -1):
        scale = by / (1.0 + 3.0 * h * zs[n] * zs[n])
        bk += scale * h * ss[n]
        by = scale
    return y, (by, bk)


def implicit_euler_jax(y, k):
    """For JAX: the same steps, a fixed NEWTON iterations each (`np` is jax.numpy here)."""
    from jax import lax

    def newton(i, state):
        z, y, t = state
        r = z - y - 0.05 * (k * np.sin(t + 0.05) - z * z * z)
        return z - r / (1.0 + 3.0 * 0.05 * z * z), y, t

    def step(n, state):
        y, t = state
        z, _, _ = lax.fori_loop(0, NEWTON, newton, (y, y, t))
        return z, t + 0.05
    return lax.fori_loop(0, STEPS, step, (y, 0.0))[0]


ARGS, ARGNUMS = (0.5, 2.0), (0, 1)
TITLE = 'implicit Euler, 50 steps, each a Newton solve to 1e-12 (a data-dependent while)'
