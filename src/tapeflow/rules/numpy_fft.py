"""Rules for np.fft: fft/ifft, fft2/ifft2, fftn/ifftn, rfft/irfft, rfft2/irfft2,
rfftn/irfftn, hfft/ihfft (fftshift/ifftshift are gathers, in `indexing`).

The pairing is bilinear, Re(sum(cotangent * tangent)), as in autograd and
JAX, so the VJP of a complex transform is the transform itself (its matrix is
symmetric) with the same `norm`, cut or zero-padded back to the input's
length when `n`/`s` resized it, and its real part for a real input. The
half-spectrum transforms need the weights of the bins they leave out: both
ends of the spectrum count once, the others twice. Every `n`/`s`, `axis`/
`axes` and `norm` NumPy accepts, odd lengths included.
"""
import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.registry import linear_pair
from tapeflow.rules.shapes import fit

_SWAPPED = {None: 'forward', 'backward': 'forward', 'forward': 'backward', 'ortho': 'ortho'}


def _axes_of(x, s, axes, default):
    if axes is not None:
        return [a % np.ndim(x) for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
    if s is not None:
        return list(range(np.ndim(x) - len(s), np.ndim(x)))
    return [a % np.ndim(x) for a in default] if default is not None else list(range(np.ndim(x)))


def _resize(y, shape, axes):
    """`y` cut or zero-padded along `axes` to the sizes `shape` has there."""
    index = [slice(None)] * np.ndim(y)
    widths = [(0, 0)] * np.ndim(y)
    for ax in axes:
        have, want = np.shape(y)[ax], shape[ax]
        if have > want:
            index[ax] = slice(0, want)
        elif have < want:
            widths[ax] = (0, want - have)
    y = y[tuple(index)]
    return np.pad(y, widths) if any(w != (0, 0) for w in widths) else y


def _complex_vjp(fn, g, x, axes, norm):
    return _resize(fn(g, axes=axes, norm=norm), np.shape(x), axes)


def _real_vjp(g, x, axes, lengths, norm):
    """Cotangent of the real input of rfftn over `axes` (last one halved)."""
    last = axes[-1]
    widths = [(0, 0)] * np.ndim(g)
    widths[last] = (0, lengths[-1] - np.shape(g)[last])
    return _resize(np.fft.fftn(np.pad(g, widths), axes=axes, norm=norm), np.shape(x), axes)


def _half_weights(n, ndim, axis, dtype):
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = n // 2 + 1
    return np.reshape(weights, shape).astype(dtype)


def _halfspectrum_vjp(g, a, axes, lengths, norm):
    """Cotangent of the half-spectrum input of irfftn over `axes`."""
    last = axes[-1]
    spectrum = np.fft.ifftn(g, axes=axes, norm=norm)
    index = [slice(None)] * np.ndim(g)
    index[last] = slice(0, lengths[-1] // 2 + 1)
    weights = _half_weights(lengths[-1], np.ndim(g), last, np.real(spectrum).dtype)
    return _resize(spectrum[tuple(index)] * weights, np.shape(a), axes)


def _lengths(x, s, axes, halved_input):
    if s is not None:
        return list(s)
    shape = np.shape(x)
    out = [shape[a] for a in axes]
    if halved_input:
        out[-1] = 2 * (out[-1] - 1)
    return out


# ---------------------------------------------------------------- complex transforms

def _fft1(fn):
    def vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
        return fit(_complex_vjp(lambda y, axes, norm: fn(y, axis=axes[0], norm=norm), g, a,
                                [axis % np.ndim(a)], norm), a)

    def jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
        return fn(t, n, axis, norm)
    return vjp, jvp


def _fftn(fn, default_axes):
    def vjp(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        return fit(_complex_vjp(fn, g, a, _axes_of(a, s, axes, default_axes), norm), a)

    def jvp(t, ans, a, s=None, axes=default_axes, norm=None, out=None):
        return fn(t, s, axes, norm)
    return vjp, jvp


# ---------------------------------------------------------------- real transforms

def _rfft1(fn, swap):
    def vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
        axes = [axis % np.ndim(a)]
        norm = _SWAPPED[norm] if swap else norm
        g = np.conj(g) if swap else g
        return fit(_real_vjp(g, a, axes, _lengths(a, None if n is None else [n], axes, False),
                             norm), a)

    def jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
        return fn(t, n, axis, norm)
    return vjp, jvp


def _irfft1(fn, swap):
    def vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
        axes = [axis % np.ndim(a)]
        lengths = _lengths(a, None if n is None else [n], axes, True)
        cot = _halfspectrum_vjp(g, a, axes, lengths, _SWAPPED[norm] if swap else norm)
        return fit(np.conj(cot) if swap else cot, a)

    def jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
        return fn(t, n, axis, norm)
    return vjp, jvp


def _rfftn(fn, default_axes):
    def vjp(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        axes = _axes_of(a, s, axes, default_axes)
        return fit(_real_vjp(g, a, axes, _lengths(a, s, axes, False), norm), a)

    def jvp(t, ans, a, s=None, axes=default_axes, norm=None, out=None):
        return fn(t, s, axes, norm)
    return vjp, jvp


def _irfftn(fn, default_axes):
    def vjp(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        axes = _axes_of(a, s, axes, default_axes)
        return fit(_halfspectrum_vjp(g, a, axes, _lengths(a, s, axes, True), norm), a)

    def jvp(t, ans, a, s=None, axes=default_axes, norm=None, out=None):
        return fn(t, s, axes, norm)
    return vjp, jvp


_FFT = np.fft
FULL = 'n, axis, norm (backward/ortho/forward); real or complex input'
FULL_N = 's, axes, norm; real or complex input'
REAL, REAL_N = 'real input; n (odd or even), axis, norm', 'real input; s, axes, norm'
HALF = 'half-spectrum input; n (odd or even), axis, norm'
HALF_N = 'half-spectrum input; s (odd or even), axes, norm'
for _fn, (_vjp, _jvp), _forms in [
        (_FFT.fft, _fft1(_FFT.fft), FULL), (_FFT.ifft, _fft1(_FFT.ifft), FULL),
        (_FFT.fft2, _fftn(_FFT.fft2, (-2, -1)), FULL_N),
        (_FFT.ifft2, _fftn(_FFT.ifft2, (-2, -1)), FULL_N),
        (_FFT.fftn, _fftn(_FFT.fftn, None), FULL_N), (_FFT.ifftn, _fftn(_FFT.ifftn, None), FULL_N),
        (_FFT.rfft, _rfft1(_FFT.rfft, False), REAL), (_FFT.ihfft, _rfft1(_FFT.ihfft, True), REAL),
        (_FFT.irfft, _irfft1(_FFT.irfft, False), HALF),
        (_FFT.hfft, _irfft1(_FFT.hfft, True), HALF),
        (_FFT.rfft2, _rfftn(_FFT.rfft2, (-2, -1)), REAL_N),
        (_FFT.rfftn, _rfftn(_FFT.rfftn, None), REAL_N),
        (_FFT.irfft2, _irfftn(_FFT.irfft2, (-2, -1)), HALF_N),
        (_FFT.irfftn, _irfftn(_FFT.irfftn, None), HALF_N)]:
    entry(_fn, _vjp, _jvp, forms=_forms, name=f'numpy.fft.{_fn.__name__}')
    linear_pair(_vjp, _jvp)     # a transform is linear: its rules are each other's transpose


# ---------------------------------------------------------------- sample frequencies
# fftfreq(n, d) = k / (n * d): the integer n is a count, the spacing d a float.

def fftfreq_vjp_d(g, ans, n, d=1.0, device=None): return fit(np.sum(-g * ans / d), d)
def fftfreq_jvp_d(t, ans, n, d=1.0, device=None): return -t * ans / d


entry(np.fft.fftfreq, (None, fftfreq_vjp_d), (None, fftfreq_jvp_d), also=(np.fft.rfftfreq,),
      forms='n an integer count; derivative in the spacing d (by position)')
