"""The rules of the array API's functions whose complex form is not the real one
read with complex numbers: abs, sign, real, imag, conj, and vecdot (which
conjugates its first argument). The other functions of `rules/array_api.py`
are holomorphic (their rules serve complex inputs as they stand) or take real
inputs only (maximum, atan2, hypot, logaddexp... in the standard).

Complex numbers pair as everywhere in tapeflow, df = Re(sum(G * dz)), so for a
real-valued f of a complex z, G = df/dRe(z) - 1j df/dIm(z) (JAX's and autograd's
convention). For a real input each rule is the real one (|x|: sign(x); sign(x):
piecewise constant). Written with the namespace's functions of `rules/array_api`
(conj(xp, x), where(xp, ...)), so that second order differentiates them again.
"""
from __future__ import annotations

from tapeflow.rules.array_api import FUNCTIONS, unbroadcast_api
from tapeflow.rules.registry import defjvp, defvjp

__all__ = []

abs, sign, real, imag, conj, vecdot, where = (   # noqa: A001  (the namespace's, by name)
    FUNCTIONS[name] for name in ('abs', 'sign', 'real', 'imag', 'conj', 'vecdot', 'where'))


def _scalar(x):
    return x.__class__ in (float, int, complex, bool)


def _is_complex(xp, x):
    if _scalar(x):
        return x.__class__ is complex
    return xp.isdtype(x.dtype, 'complex floating')


def _conjugate(xp, x):
    """conj(x) for a complex `x`, `x` itself for a real one (the standard's conj
    need not take real arrays)."""
    if not _is_complex(xp, x):
        return x
    return x.conjugate() if _scalar(x) else conj(xp, x)


def _real_part(xp, x):
    if not _is_complex(xp, x):
        return x
    return x.real if _scalar(x) else real(xp, x)


def _conj_unit(xp, x, ans):
    """d|x| per unit of dx in the pairing Re(sum(G * dx)), `ans` being |x|; 0 at 0.

    sign(x) for a real x (piecewise constant); conj(x) / |x| for a complex x, which
    moves with x: written with the rules' own functions, so that second order sees it.
    """
    if not _is_complex(xp, x):
        return sign(xp, x)
    if _scalar(x):
        return x.conjugate() / ans if ans else 0.0
    return conj(xp, x) / where(xp, ans == 0, xp.ones_like(ans), ans)


def _inverse_modulus(xp, x, r):
    """1 / r where r = |x| is not 0, else 0."""
    if _scalar(r):
        return 1.0 / r if r else 0.0
    return xp.astype(r != 0, r.dtype) / where(xp, r == 0, xp.ones_like(r), r)


# sign(x): piecewise constant for a real x (no derivative); x / |x| for a complex one,
# which moves with x: d sign = (dx - s Re(conj(s) dx)) / |x|, and in the pairing
# Re(sum(G * dx)) the cotangent is G = (g - Re(g s) conj(s)) / |x|; 0 at 0.

def _sign_vjp(g, ans, xp, x):
    if not _is_complex(xp, x):
        return 0.0 if _scalar(x) else xp.zeros_like(x)
    return (g - _real_part(xp, g * ans) * _conjugate(xp, ans)) * _inverse_modulus(xp, x, abs(xp, x))


def _sign_jvp(t, ans, xp, x):
    if not _is_complex(xp, x):
        return 0.0 if _scalar(ans) else xp.zeros_like(ans)
    return (t - ans * _real_part(xp, _conjugate(xp, ans) * t)) * _inverse_modulus(xp, x, abs(xp, x))


defvjp(abs, None, lambda g, ans, xp, x: _real_part(xp, g) * _conj_unit(xp, x, ans))
defjvp(abs, None, lambda t, ans, xp, x: _real_part(xp, t * _conj_unit(xp, x, ans)))
defvjp(sign, None, _sign_vjp)
defjvp(sign, None, _sign_jvp)


# vecdot(a, b) = sum(conj(a) * b): conjugate-linear in `a`, so in the pairing
# Re(sum(G * da)) the cotangent of `a` is conj(g * b), that of `b` g * conj(a)

def _vecdot_vjp_a(g, ans, xp, a, b, axis=-1):
    return unbroadcast_api(xp, _conjugate(xp, _expanded(xp, g, axis) * b), a.shape)


def _vecdot_vjp_b(g, ans, xp, a, b, axis=-1):
    return unbroadcast_api(xp, _expanded(xp, g, axis) * _conjugate(xp, a), b.shape)


def _expanded(xp, g, axis):
    """The cotangent `g` of a vecdot with its reduced axis back (a Python number, the
    seed of a 1-D vecdot, made an array of the namespace first)."""
    return xp.expand_dims(xp.asarray(g) if _scalar(g) else g, axis=axis)


defvjp(vecdot, None, _vecdot_vjp_a, _vecdot_vjp_b)
defjvp(vecdot, None, lambda t, ans, xp, a, b, axis=-1: xp.vecdot(t, b, axis=axis),
       lambda t, ans, xp, a, b, axis=-1: xp.vecdot(a, t, axis=axis))


defvjp(real, None, lambda g, ans, xp, x: _real_part(xp, g))
defjvp(real, None, lambda t, ans, xp, x: _real_part(xp, t))


def _imag_vjp(g, ans, xp, x):
    """d imag(x) = Im(dx) = Re(-1j dx), so G = -1j * Re(g) (0 for a real x)."""
    if not _is_complex(xp, x):
        return 0.0 if _scalar(x) else xp.zeros_like(x)
    g = _real_part(xp, g)
    return -1j * g if _scalar(g) else xp.astype(g, x.dtype) * -1j


defvjp(imag, None, _imag_vjp)
defjvp(imag, None, lambda t, ans, xp, x: imag(xp, t) if _is_complex(xp, t) else 0.0 * t)
defvjp(conj, None, lambda g, ans, xp, x: _conjugate(xp, g))
defjvp(conj, None, lambda t, ans, xp, x: _conjugate(xp, t))
