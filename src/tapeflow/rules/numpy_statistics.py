"""Rules for the statistics of `numpy_reductions`' family: var, std (ddof or
correction, where=, real or complex), their nan-variants, and np.average (weights,
returned). The VJP spreads `g` back over the reduced axes (`expand`), the JVP is the
statistic's own linearisation.
"""
import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.numpy_reductions import (batch_axes, count, expand, not_nan,
                                             with_kept_dims)
from tapeflow.rules.registry import nondifferentiable
from tapeflow.rules.shapes import fit


# ---------------------------------------------------------------- var, std

def _dof(a, axis, valid, ddof, correction, keepdims=True):
    return count(a, axis, valid, keepdims) - (ddof if correction is None else correction)


def _centered(a, axis, valid):
    """a minus its mean over `axis`, zero where `valid` is False (conjugated)."""
    centered = np.conj(a - np.mean(a, axis=axis, keepdims=True, where=valid))
    return centered if valid is True else np.where(valid, centered, 0.0)


def _var_grad(a, axis, valid, ddof, correction):
    return _centered(a, axis, valid) * (2.0 / _dof(a, axis, valid, ddof, correction))


def _safe_div(a, b):
    return a / np.where(b == 0, 1.0, b)


def var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
            mean=None, correction=None):
    return fit(expand(g, a, axis, keepdims) * _var_grad(a, axis, where, ddof, correction), a)

def var_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
            mean=None, correction=None):
    return np.sum(np.real(t * _var_grad(a, axis, where, ddof, correction)), axis=axis,
                  keepdims=keepdims)

def std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
            mean=None, correction=None):
    spread = expand(_safe_div(g, 2.0 * ans), a, axis, keepdims)
    return fit(spread * _var_grad(a, axis, where, ddof, correction), a)

def std_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
            mean=None, correction=None):
    variance = var_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=where,
                       correction=correction)
    return _safe_div(variance, 2.0 * ans)

def var_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                    where=True, mean=None, correction=None):
    return np.sum(np.real(t * _var_grad(a, axis, where, ddof, correction)),
                  axis=batch_axes(np.ndim(a), axis), keepdims=keepdims)

def std_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                    where=True, mean=None, correction=None):
    variance = var_jvp_batched(t, ans, a, axis, dtype, out, ddof, keepdims, where=where,
                               correction=correction)
    return _safe_div(variance, 2.0 * ans)

def nanvar_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                       where=True, mean=None, correction=None):
    return var_jvp_batched(t, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                           correction=correction)

def nanstd_jvp_batched(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                       where=True, mean=None, correction=None):
    return std_jvp_batched(t, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                           correction=correction)

def nanvar_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
               mean=None, correction=None):
    return var_vjp(g, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                   correction=correction)

def nanvar_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
               mean=None, correction=None):
    return var_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                   correction=correction)

def nanstd_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
               mean=None, correction=None):
    return std_vjp(g, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                   correction=correction)

def nanstd_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True,
               mean=None, correction=None):
    return std_jvp(t, ans, a, axis, dtype, out, ddof, keepdims, where=not_nan(a, where),
                   correction=correction)


# ---------------------------------------------------------------- average

def _weights(a, axis, weights):
    """`weights` broadcast against `a` as np.average does (1-D weights lie along axis)."""
    if weights is None:
        return np.ones(np.shape(a))
    if np.ndim(weights) == 1 and np.ndim(a) != 1:
        shape = [1] * np.ndim(a)
        shape[axis % np.ndim(a)] = np.shape(weights)[0]
        weights = np.reshape(weights, shape)
    return np.broadcast_to(weights, np.shape(a))


def _average_grad_a(a, axis, weights):
    w = _weights(a, axis, weights)
    return w / np.sum(w, axis=axis, keepdims=True)


def _average_grad_w(a, ans, axis, weights, keepdims):
    w = _weights(a, axis, weights)
    return (a - with_kept_dims(ans, a, axis, keepdims)) / np.sum(w, axis=axis, keepdims=True)


def _to_weights(cot, a, axis, weights):
    """A cotangent of the broadcast weights, summed to the weights' own shape."""
    if np.ndim(weights) == 1 and np.ndim(a) != 1:
        others = tuple(i for i in range(np.ndim(a)) if i != axis % np.ndim(a))
        return np.sum(cot, axis=others)
    return cot


def _first(g):
    """The cotangent of average's value (None: zero) when it returned a pair."""
    g = g[0] if isinstance(g, (tuple, list)) else g
    return 0.0 if g is None else g


def _weights_sum_part(g, a, axis, keepdims, returned):
    if not returned or g[1] is None:
        return 0.0
    return expand(g[1], a, axis, keepdims)


def _average_value(ans):
    return ans[0] if isinstance(ans, tuple) else ans


def average_vjp_a(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    return fit(expand(_first(g), a, axis, keepdims) * _average_grad_a(a, axis, weights), a)

def average_vjp_w(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    slope = _average_grad_w(a, _average_value(ans), axis, weights, keepdims)
    spread = expand(_first(g), a, axis, keepdims) * slope \
        + _weights_sum_part(g, a, axis, keepdims, returned)
    return fit(_to_weights(spread, a, axis, weights), weights)

def average_jvp_a(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    return _pair(np.sum(t * _average_grad_a(a, axis, weights), axis=axis, keepdims=keepdims), ans,
                 returned)

def average_jvp_w(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    return _average_jvp_w(t, ans, a, axis, weights, returned, keepdims)


def _pair(tangent, ans, returned):
    return (tangent, np.zeros_like(ans[1])) if returned else tangent


def _average_jvp_w(t, ans, a, axis, weights, returned, keepdims):
    tw = _weights(a, axis, t)
    value = np.sum(tw * _average_grad_w(a, _average_value(ans), axis, weights, keepdims),
                   axis=axis, keepdims=keepdims)
    if returned:
        total = np.sum(tw, axis=axis, keepdims=keepdims)
        return value, np.broadcast_to(total, np.shape(ans[1])) + 0.0
    return value


entry(np.average, (average_vjp_a, None, average_vjp_w), (average_jvp_a, None, average_jvp_w),
      forms='axis None/int/tuple, weights (same shape, or 1-D along axis; differentiable), '
            'returned, keepdims')


# ---------------------------------------------------------------- registration

nondifferentiable(_dof)      # counts: constant wherever the rules that call it are differentiable

SPREAD = 'axis None/int/tuple, ddof or correction, keepdims, where; real or complex'
entry(np.var, var_vjp, var_jvp, batched=var_jvp_batched, forms=SPREAD)
entry(np.std, std_vjp, std_jvp, batched=std_jvp_batched, forms=SPREAD)
entry(np.nanvar, nanvar_vjp, nanvar_jvp, batched=nanvar_jvp_batched, forms=SPREAD)
entry(np.nanstd, nanstd_vjp, nanstd_jvp, batched=nanstd_jvp_batched, forms=SPREAD)
