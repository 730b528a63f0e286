"""W8: a small-array loop: 16-body gravity, 1000 steps on arrays of shape (16, 3).

Each step a dozen NumPy operations on arrays of at most 16 x 16 x 3 values: the
per-operation overhead of the interpreter and of NumPy's dispatch dominates.
"""
import numpy as np

BODIES, STEPS, DT = 16, 1000, 0.001


def gravity(pos, vel, m):
    for step in range(1000):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = np.sum(d * d, axis=2) + 0.01
        w = m * r2 ** -1.5
        acc = np.sum(d * w[:, :, None], axis=1)
        vel = vel + 0.001 * acc
        pos = pos + 0.001 * vel
    return np.sum(pos * pos)


def gravity_adjoint(pos, vel, m):
    """By hand: keep each step's positions, then recompute the step's forces backwards."""
    positions = []
    for step in range(STEPS):
        positions.append(pos)
        d = pos[None, :, :] - pos[:, None, :]
        w = m * (np.sum(d * d, axis=2) + 0.01) ** -1.5
        vel = vel + DT * np.sum(d * w[:, :, None], axis=1)
        pos = pos + DT * vel
    value = np.sum(pos * pos)
    bpos, bvel = 2.0 * pos, np.zeros_like(vel)
    for pos in reversed(positions):
        bvel = bvel + DT * bpos                 # pos' = pos + dt vel'
        bacc = DT * bvel                        # vel' = vel + dt acc
        d = pos[None, :, :] - pos[:, None, :]
        r2 = np.sum(d * d, axis=2) + 0.01
        w = m * r2 ** -1.5
        bd = bacc[:, None, :] * w[:, :, None]
        bw = np.sum(bacc[:, None, :] * d, axis=2)
        br2 = bw * m * -1.5 * r2 ** -2.5
        bd = bd + 2.0 * d * br2[:, :, None]
        bpos = bpos + np.sum(bd, axis=0) - np.sum(bd, axis=1)
    return value, (bpos, bvel)


def gravity_jax(pos, vel, m):
    """For JAX: the same steps in `lax.fori_loop` (`np` is jax.numpy here)."""
    from jax import lax

    def step(i, state):
        pos, vel = state
        d = pos[None, :, :] - pos[:, None, :]
        w = m * (np.sum(d * d, axis=2) + 0.01) ** -1.5
        vel = vel + 0.001 * np.sum(d * w[:, :, None], axis=1)
        return pos + 0.001 * vel, vel
    pos, vel = lax.fori_loop(0, STEPS, step, (pos, vel))
    return np.sum(pos * pos)


def arguments():
    rng = np.random.default_rng(8)
    return (rng.normal(size=(BODIES, 3)), 0.1 * rng.normal(size=(BODIES, 3)),
            rng.uniform(0.5, 1.5, size=BODIES))


ARGS, ARGNUMS = arguments(), (0, 1)
TITLE = '16-body gravity, 1000 steps, arrays of shape (16, 3)'
