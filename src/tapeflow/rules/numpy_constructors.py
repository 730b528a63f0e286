"""Rules for the array constructors whose output moves with an argument: np.full and
np.full_like (in fill_value), np.linspace (in start and stop), np.arange (in start
and step). Each is linear in that argument; the rules of arange and linspace are
primitives of their own (`linear_pair`), so generated code that calls them
differentiates again.
"""
import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import linear_pair, nondifferentiable
from tapeflow.rules.shapes import broadcast_tangent, fill_zeros, fit


def _linspace_vjp(g, ans, value, num, endpoint, axis, from_start):
    step_g = None
    if isinstance(g, (tuple, list)):
        g, step_g = fill_zeros([g[0]], [ans[0]])[0], g[1]
    weights = np.linspace(1.0, 0.0, num, endpoint=endpoint) if from_start \
        else np.linspace(0.0, 1.0, num, endpoint=endpoint)
    cot = np.tensordot(weights, np.moveaxis(g, axis, 0), axes=1)
    if step_g is not None:
        steps = max(num - 1, 1) if endpoint else num
        cot = cot + (-step_g if from_start else step_g) / steps
    return fit(cot, value)


def full_vjp(g, ans, shape, fill_value, dtype=None, order='C', device=None, like=None):
    return fit(g, fill_value)

def full_jvp(t, ans, shape, fill_value, dtype=None, order='C', device=None, like=None):
    return broadcast_tangent(t, ans) + 0.0

def full_like_vjp_a(g, ans, a, fill_value, dtype=None, order='K', subok=True, shape=None,
                    device=None):
    return fit(0.0 * g, a)

def full_like_vjp(g, ans, a, fill_value, dtype=None, order='K', subok=True, shape=None,
                  device=None):
    return fit(g, fill_value)

def full_like_jvp_a(t, ans, a, fill_value, dtype=None, order='K', subok=True, shape=None,
                    device=None):
    return np.zeros_like(ans)

def full_like_jvp(t, ans, a, fill_value, dtype=None, order='K', subok=True, shape=None,
                  device=None):
    return np.broadcast_to(t, np.shape(ans)) + 0.0

# arange(stop) | arange(start, stop) | arange(start, stop, step): out[k] =
# start + k * step. The count moves only in steps: d/dstop is 0, d/dstart 1,
# d/dstep k. An integer result (dtype=int) is piecewise constant: 0.

def _arange_weights(ans, args, i):
    """d(out)/d(args[i]), in the shape of `ans`."""
    if not np.issubdtype(ans.dtype, np.inexact) or len(args) == 1 or i == 1:
        return np.zeros_like(ans)
    if i == 0:
        return np.ones_like(ans)
    return np.arange(np.shape(ans)[0], dtype=ans.dtype)


def arange_vjp_0(g, ans, *args, **kw):
    return fit(np.sum(g * _arange_weights(ans, args, 0)), args[0])

def arange_vjp_1(g, ans, *args, **kw):
    return fit(np.sum(g * _arange_weights(ans, args, 1)), args[1])

def arange_vjp_2(g, ans, *args, **kw):
    return fit(np.sum(g * _arange_weights(ans, args, 2)), args[2])

def arange_jvp_0(t, ans, *args, **kw):
    return t * _arange_weights(ans, args, 0)

def arange_jvp_1(t, ans, *args, **kw):
    return t * _arange_weights(ans, args, 1)

def arange_jvp_2(t, ans, *args, **kw):
    return t * _arange_weights(ans, args, 2)


def linspace_vjp_start(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None,
                       axis=0, **kw):
    return _linspace_vjp(g, ans, start, num, endpoint, axis, True)

def linspace_vjp_stop(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
                      **kw):
    return _linspace_vjp(g, ans, stop, num, endpoint, axis, False)

def linspace_jvp_start(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None,
                       axis=0, **kw):
    return _linspace_jvp(t, ans, stop, num, endpoint, retstep, axis, True)

def linspace_jvp_stop(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
                      **kw):
    return _linspace_jvp(t, ans, start, num, endpoint, retstep, axis, False)


def _linspace_jvp(t, ans, other, num, endpoint, retstep, axis, from_start):
    ends = (t, np.zeros_like(other)) if from_start else (np.zeros_like(other), t)
    samples = np.linspace(*ends, num, endpoint=endpoint, axis=axis)
    if not retstep:
        return samples
    steps = max(num - 1, 1) if endpoint else num
    return samples, (ends[1] - ends[0]) / steps + 0.0 * ans[1]


# ---------------------------------------------------------------- registration

FILL = 'derivative in fill_value (scalar or broadcastable array)'
entry(np.full, (None, full_vjp), (None, full_jvp), static=(0,), forms=FILL)
entry(np.full_like, (full_like_vjp_a, full_like_vjp), (full_like_jvp_a, full_like_jvp),
      forms=FILL)
entry(np.linspace, (linspace_vjp_start, linspace_vjp_stop),
      (linspace_jvp_start, linspace_jvp_stop), static=(2,),
      forms='start and stop scalars or arrays; num, endpoint, axis')
nondifferentiable(_arange_weights)
entry(np.arange, (arange_vjp_0, arange_vjp_1, arange_vjp_2),
      (arange_jvp_0, arange_jvp_1, arange_jvp_2),
      forms='start, stop, step by position: derivative 1 in start, k in step, 0 in stop '
            '(the count moves in steps); 0 for an integer dtype')
# linear in the cotangent and in the tangent, and transposes of each other: their own rules
for _pair in [(arange_vjp_0, arange_jvp_0), (arange_vjp_1, arange_jvp_1),
              (arange_vjp_2, arange_jvp_2), (linspace_vjp_start, linspace_jvp_start),
              (linspace_vjp_stop, linspace_jvp_stop)]:
    linear_pair(*_pair)
