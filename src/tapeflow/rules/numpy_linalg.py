"""Rules for np.linalg: inv, pinv, det, slogdet, solve, cholesky, eigh,
eigvalsh, eig, eigvals, svd, svdvals, norm/vector_norm/matrix_norm, matrix_power,
multi_dot.

All are batched over leading axes. Formulas follow Giles, "An extended
collection of matrix derivative results" (2008), Murray (2016) for Cholesky
and Townsend (2016) for the SVD. cholesky and eigh read one triangle of
their input (NumPy's behaviour), so their cotangent lives on that triangle:
for a symmetric perturbation it agrees with the symmetrised convention.
Real inputs unless stated; eigenvalues and singular values must be distinct
for eigenvector and singular-vector derivatives.
"""
import numpy as np

from tapeflow.rules.batching import lift_tangent
from tapeflow.rules.entries import entry
from tapeflow.rules.shapes import fill_zeros, fit, rebuild

inv, solve = np.linalg.inv, np.linalg.solve


def T(x):
    return np.swapaxes(x, -1, -2)


def H(x):
    """The conjugate transpose of the last two axes."""
    return np.conj(T(x))


def _eye(n, like):
    dtype = getattr(like, 'dtype', np.float64)
    return np.eye(n, dtype=dtype if np.issubdtype(dtype, np.inexact) else np.float64)


def _mat(g):
    """A batch of scalars as a batch of 1x1 matrices, to scale matrices."""
    return np.expand_dims(np.expand_dims(g, -1), -1)


def _trace(x):
    return np.trace(x, axis1=-2, axis2=-1)


def _second(g):
    return 0.0 if g is None else g


# ---------------------------------------------------------------- inv, det, solve, pinv

def inv_vjp(g, ans, a): return fit(-T(ans) @ g @ T(ans), a)
def inv_jvp(t, ans, a): return -ans @ t @ ans
def det_vjp(g, ans, a): return fit(_mat(g * ans) * T(inv(a)), a)
def det_jvp(t, ans, a): return ans * _trace(solve(a, t))
def slogdet_vjp(g, ans, a): return fit(_mat(_second(g[1])) * T(inv(a)), a)
def slogdet_jvp(t, ans, a): return np.zeros_like(ans[0]), np.real(_trace(solve(a, t)))


def _vector(b):
    """NumPy 2's solve treats b as a vector only when it is 1-D."""
    return np.ndim(b) == 1


def _column(x, b):
    return np.expand_dims(x, -1) if _vector(b) else x


def _uncolumn(x, b):
    return x[..., 0] if _vector(b) else x


def _solve_grad_b(g, a, b):
    return solve(T(a), _column(g, b))


def solve_vjp_a(g, ans, a, b): return fit(-_solve_grad_b(g, a, b) @ T(_column(ans, b)), a)
def solve_vjp_b(g, ans, a, b): return fit(_uncolumn(_solve_grad_b(g, a, b), b), b)
def solve_jvp_a(t, ans, a, b): return _uncolumn(-solve(a, t @ _column(ans, b)), b)
def solve_jvp_b(t, ans, a, b): return solve(a, t) + np.zeros_like(ans)
def solve_jvp_b_batched(t, ans, a, b):
    return _uncolumn(solve(a, _column(lift_tangent(t, b, ans), b)), b) + np.zeros_like(ans)


def _pinv_vjp(g, ans, a):
    m, n = np.shape(a)[-2:]
    left = _eye(m, a) - a @ ans
    right = _eye(n, a) - ans @ a
    return -T(ans) @ g @ T(ans) + left @ T(g) @ ans @ T(ans) + T(ans) @ ans @ T(g) @ right


def _pinv_jvp(t, ans, a):
    m, n = np.shape(a)[-2:]
    left = _eye(m, a) - a @ ans
    right = _eye(n, a) - ans @ a
    return -ans @ t @ ans + ans @ T(ans) @ T(t) @ left + right @ T(t) @ T(ans) @ ans


def pinv_vjp(g, ans, a, rcond=None, hermitian=False, rtol=None):
    return fit(_pinv_vjp(g, ans, a), a)

def pinv_jvp(t, ans, a, rcond=None, hermitian=False, rtol=None): return _pinv_jvp(t, ans, a)


# ---------------------------------------------------------------- cholesky, eigh

def _triangle(x, upper):
    return np.triu(x) if upper else np.tril(x)


def _symmetric_from(x, upper):
    """The symmetric (complex: Hermitian) matrix a function reading one triangle of `x`
    sees: the other triangle mirrored (conjugated), the real part of the diagonal."""
    tri = _triangle(x, upper)
    return tri + np.conj(T(tri)) - np.real(x) * _eye(np.shape(x)[-1], x)


def _onto_triangle(gs, upper):
    """The cotangent of the read triangle, from that of the symmetric (Hermitian) matrix,
    in the pairing df = Re(sum(G * dA)) (the adjoint of `_symmetric_from`)."""
    both = gs + np.conj(T(gs))
    return _triangle(both, upper) - np.real(gs) * _eye(np.shape(gs)[-1], gs)


def _phi(x):
    """The lower triangle of x with its diagonal halved."""
    return np.tril(x) - 0.5 * x * _eye(np.shape(x)[-1], x)


def _cholesky_vjp(g, ans, upper):
    if np.iscomplexobj(ans) or np.iscomplexobj(g):
        raise NotImplementedError('no reverse-mode rule for np.linalg.cholesky of a complex '
                                  'matrix yet; use jvp (forward mode) or a real matrix')
    low = T(ans) if upper else ans
    g_low = T(g) if upper else g
    inner = solve(T(low), _phi(T(low) @ g_low))
    s = T(solve(T(low), T(inner)))
    return _onto_triangle(0.5 * (s + T(s)), upper)


def _cholesky_jvp(t, ans, upper):
    # A = L L^H: dL = L phi(L^-1 dA L^-H) (the conjugate transpose H is T for real L)
    low = H(ans) if upper else ans
    da = _symmetric_from(t, upper)
    inner = solve(low, H(solve(low, H(da))))
    d_low = low @ _phi(inner)
    return H(d_low) if upper else d_low


def cholesky_vjp(g, ans, a, upper=False): return fit(_cholesky_vjp(g, ans, upper), a)
def cholesky_jvp(t, ans, a, upper=False): return _cholesky_jvp(t, ans, upper)


def _gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    diff = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    off = 1.0 - _eye(np.shape(w)[-1], w)
    return off / (diff + (1.0 - off))


# Complex Hermitian input: w = Re(diag(V^H H V)), so dw = Re(diag(V^H dH V)) and the
# cotangent of H, in the pairing of the other rules, is (V diag(gw) V^H)^T. Each
# eigenvector of a complex matrix carries a free phase: no derivative for them (NaN
# tangents, an error in reverse), as for the singular vectors.

def _eigh_vjp(g, ans, a, uplo):
    w, v = ans
    gw, gv = fill_zeros(list(g) if isinstance(g, (tuple, list)) else [g, None], [w, v])
    if np.iscomplexobj(a) or np.iscomplexobj(v):
        if np.any(gv != 0):
            raise NotImplementedError(
                'no derivative rule for the eigenvectors of np.linalg.eigh of a complex '
                'matrix (each has a free phase); differentiate the eigenvalues (eigvalsh) '
                'instead')
        held = np.conj(v) * np.expand_dims(np.real(gw), -2)
        return _onto_triangle(held @ T(v), uplo == 'U')
    inner = np.expand_dims(gw, -1) * _eye(np.shape(w)[-1], w) + _gaps(w) * (T(v) @ gv)
    return _onto_triangle(v @ inner @ T(v), uplo == 'U')


def _eigh_jvp(t, ans, a, uplo):
    w, v = ans
    inner = np.conj(T(v)) @ _symmetric_from(t, uplo == 'U') @ v
    dv = v @ (_gaps(w) * inner)
    if np.iscomplexobj(a) or np.iscomplexobj(v) or np.iscomplexobj(t):
        dv = dv * np.nan    # the phase convention of complex eigenvectors: no derivative
    return np.real(np.diagonal(inner, axis1=-2, axis2=-1)), dv


def eigh_vjp(g, ans, a, UPLO='L'): return fit(_eigh_vjp(g, ans, a, UPLO), a)
def eigh_jvp(t, ans, a, UPLO='L'): return _eigh_jvp(t, ans, a, UPLO)
def eigvalsh_vjp(g, ans, a, UPLO='L'):
    return fit(_eigh_vjp((g, None), np.linalg.eigh(a, UPLO), a, UPLO), a)

def eigvalsh_jvp(t, ans, a, UPLO='L'): return _eigh_jvp(t, np.linalg.eigh(a, UPLO), a, UPLO)[0]


def _eig_vjp(g, ans, a):
    w, v = ans
    gw, gv = fill_zeros(list(g) if isinstance(g, (tuple, list)) else [g, None], [w, v])
    inner = np.expand_dims(gw, -1) * _eye(np.shape(w)[-1], w)
    if np.any(gv != 0):
        _require_real_spectrum(w)
        gv = gv - v * np.sum(v * gv, axis=-2, keepdims=True)
        inner = inner + _gaps(w) * (T(v) @ gv)
    return solve(T(v), inner @ T(v))


def _eig_jvp(t, ans, a):
    w, v = ans
    inner = solve(v, t @ v)
    dv = v @ (_gaps(w) * inner)
    if np.any(np.imag(w) != 0):
        dv = dv * np.nan   # the phase convention of complex eigenvectors: no derivative here
    else:
        dv = dv - v * np.sum(v * dv, axis=-2, keepdims=True)
    return np.diagonal(inner, axis1=-2, axis2=-1), dv


def _require_real_spectrum(w):
    if np.any(np.imag(w) != 0):
        raise NotImplementedError('no derivative rule for the eigenvectors of np.linalg.eig '
                                  'when eigenvalues are complex (their phase is a convention)')


def eig_vjp(g, ans, a): return fit(_eig_vjp(g, ans, a), a)
def eig_jvp(t, ans, a): return _eig_jvp(t, ans, a)
def eigvals_vjp(g, ans, a): return fit(_eig_vjp((g, None), np.linalg.eig(a), a), a)
def eigvals_jvp(t, ans, a): return _eig_jvp(t, np.linalg.eig(a), a)[0]


# ---------------------------------------------------------------- svd

def _svd_parts(ans, a, full_matrices, compute_uv):
    if not compute_uv:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return u, s, T(vh)
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError('no derivative rule for svd with full_matrices=True '
                                  'of a non-square matrix (use full_matrices=False)')
    u, s, vh = ans
    return u, s, T(vh)


# Complex matrices: s = Re(diag(U^H A V)), so ds = Re(diag(U^H dA V)) and, in the
# pairing the other rules use (df = Re(sum(G * dA)), the convention of sin and abs),
# the cotangent of A is conj(U diag(g) V^H). The singular vectors of a complex matrix
# carry a free phase each: no derivative for them (NaN tangents, an error in reverse).

def _svd_vjp(g, ans, a, full_matrices, compute_uv):
    u, s, v = _svd_parts(ans, a, full_matrices, compute_uv)
    if not compute_uv:
        return np.conj((u * np.expand_dims(np.real(g), -2)) @ T(v))
    gu, gs, gvh = fill_zeros(list(g), list(ans))
    if np.iscomplexobj(a):
        if np.any(gu != 0) or np.any(gvh != 0):
            raise NotImplementedError(
                'no derivative rule for the singular vectors of a complex matrix (each has '
                'a free phase); differentiate the singular values (compute_uv=False, '
                'svdvals) or a norm instead')
        return np.conj((u * np.expand_dims(np.real(gs), -2)) @ T(v))
    gv = T(gvh)
    m, n = np.shape(a)[-2:]
    f = _gaps(s * s)
    inner = ((f * (T(u) @ gu - T(gu) @ u)) * np.expand_dims(s, -2)
             + np.expand_dims(gs, -1) * _eye(np.shape(s)[-1], s)
             + np.expand_dims(s, -1) * (f * (T(v) @ gv - T(gv) @ v)))
    out = u @ inner @ T(v)
    s_inv = 1.0 / np.expand_dims(s, -2)
    if m > n:
        out = out + (_eye(m, a) - u @ T(u)) @ gu @ (s_inv * _eye(n, a)) @ T(v)
    if n > m:
        out = out + u @ (T(s_inv) * _eye(m, a)) @ T(gv) @ (_eye(n, a) - v @ T(v))
    return out


def _svd_jvp(t, ans, a, full_matrices, compute_uv):
    u, s, v = _svd_parts(ans, a, full_matrices, compute_uv)
    if np.iscomplexobj(a) or np.iscomplexobj(t):
        ds = np.real(np.diagonal(T(np.conj(u)) @ t @ np.conj(v), axis1=-2, axis2=-1))
        if not compute_uv:
            return ds
        return u * np.nan, ds, T(v) * np.nan
    dp = T(u) @ t @ v
    ds = np.diagonal(dp, axis1=-2, axis2=-1)
    if not compute_uv:
        return ds
    m, n = np.shape(a)[-2:]
    f = _gaps(s * s)
    row, col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    du = u @ (f * (dp * row + col * T(dp)))
    dv = v @ (f * (col * dp + T(dp) * row))
    if m > n:
        du = du + (_eye(m, a) - u @ T(u)) @ t @ v / row
    if n > m:
        dv = dv + (_eye(n, a) - v @ T(v)) @ T(t) @ u / row
    return du, ds, T(dv)


def svd_vjp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    return fit(_svd_vjp(g, ans, a, full_matrices, compute_uv), a)

def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    return _svd_jvp(t, ans, a, full_matrices, compute_uv)

def svdvals_vjp(g, ans, x): return fit(_svd_vjp(g, ans, x, False, False), x)
def svdvals_jvp(t, ans, x): return _svd_jvp(t, ans, x, False, False)


# ---------------------------------------------------------------- matrix_power, multi_dot

def _powers(a, n):
    out = [_eye(np.shape(a)[-1], a) + 0.0 * a]
    for _ in range(n - 1):
        out.append(out[-1] @ a)
    return out


def _matrix_power_vjp(g, a, n):
    if n == 0:
        return 0.0 * a
    base = inv(a) if n < 0 else a
    powers = _powers(base, abs(n))
    total = sum(T(powers[k]) @ g @ T(powers[abs(n) - 1 - k]) for k in range(abs(n)))
    return -T(base) @ total @ T(base) if n < 0 else total


def _matrix_power_jvp(t, a, n):
    if n == 0:
        return 0.0 * t
    base = inv(a) if n < 0 else a
    dbase = -base @ t @ base if n < 0 else t
    powers = _powers(base, abs(n))
    return sum(powers[k] @ dbase @ powers[abs(n) - 1 - k] for k in range(abs(n)))


def matrix_power_vjp(g, ans, a, n): return fit(_matrix_power_vjp(g, a, n), a)
def matrix_power_jvp(t, ans, a, n): return _matrix_power_jvp(t, a, n)


def _chain(arrays):
    mats = list(arrays)
    if np.ndim(mats[0]) == 1:
        mats[0] = np.expand_dims(mats[0], 0)
    if np.ndim(mats[-1]) == 1:
        mats[-1] = np.expand_dims(mats[-1], -1)
    return mats


def _multi_dot_vjp(g, arrays):
    mats = _chain(arrays)
    g = np.reshape(g, (np.shape(mats[0])[0], np.shape(mats[-1])[1]))
    prefix = [None]
    for m in mats[:-1]:
        prefix.append(m if prefix[-1] is None else prefix[-1] @ m)
    suffix = [None]
    for m in mats[:0:-1]:
        suffix.append(m if suffix[-1] is None else m @ suffix[-1])
    suffix = suffix[::-1]
    out = []
    for arr, left, right in zip(arrays, prefix, suffix):
        cot = g if left is None else T(left) @ g
        cot = cot if right is None else cot @ T(right)
        out.append(fit(np.reshape(cot, np.shape(arr)), arr))
    return rebuild(arrays, out)


def _multi_dot_jvp(t, arrays):
    terms = [np.linalg.multi_dot([tk if k == i else a for k, a in enumerate(arrays)])
             for i, tk in enumerate(t) if tk is not None and np.ndim(tk) > 0]
    return sum(terms) if terms else 0.0 * np.linalg.multi_dot(arrays)


def multi_dot_vjp(g, ans, arrays, out=None): return _multi_dot_vjp(g, arrays)
def multi_dot_jvp(t, ans, arrays, out=None): return _multi_dot_jvp(t, arrays)


# ---------------------------------------------------------------- registration

def _linalg(fn, vjp, jvp, *, forms, batched=True):
    """np.linalg's entries: named `numpy.linalg.<fn>`; their JVPs use matmul, solve and
    broadcasting over leading (stack) axes only, so a batch of tangents
    (rules/batching.py) goes through them as it is."""
    entry(fn, vjp, jvp, batched=jvp if batched is True else batched, forms=forms,
          name=f'numpy.linalg.{fn.__name__}')


_linalg(np.linalg.inv, inv_vjp, inv_jvp, forms='batched square matrices')
_linalg(np.linalg.det, det_vjp, det_jvp, forms='batched square matrices')
_linalg(np.linalg.slogdet, slogdet_vjp, slogdet_jvp, forms='batched square matrices')
_linalg(np.linalg.solve, (solve_vjp_a, solve_vjp_b), (solve_jvp_a, solve_jvp_b),
        batched=(solve_jvp_a, solve_jvp_b_batched),
        forms='batched; b a vector (1-D) or matrices; derivative in a and b')
_linalg(np.linalg.pinv, pinv_vjp, pinv_jvp, forms='batched, full rank (any m x n)')
_linalg(np.linalg.cholesky, cholesky_vjp, cholesky_jvp,
        forms='batched; upper; the derivative lives on the triangle NumPy reads')
EIGH = 'batched; UPLO; distinct eigenvalues for eigenvector derivatives'
_linalg(np.linalg.eigh, eigh_vjp, eigh_jvp, forms=EIGH)
_linalg(np.linalg.eigvalsh, eigvalsh_vjp, eigvalsh_jvp, forms=EIGH)
_linalg(np.linalg.eigvals, eigvals_vjp, eigvals_jvp,
        forms='batched, distinct eigenvalues; complex results')
_linalg(np.linalg.eig, eig_vjp, eig_jvp,
        forms='batched, distinct eigenvalues; eigenvectors (unit norm) only for a real spectrum')
_linalg(np.linalg.svd, svd_vjp, svd_jvp,
        forms='batched; compute_uv; full_matrices only for square input; distinct singular '
              'values; complex input: singular values only (no singular vectors)')
_linalg(np.linalg.svdvals, svdvals_vjp, svdvals_jvp,
        forms='batched, distinct singular values; real or complex')
_linalg(np.linalg.matrix_power, matrix_power_vjp, matrix_power_jvp,
        forms='batched; n any int (negative through inv)')
_linalg(np.linalg.multi_dot, multi_dot_vjp, multi_dot_jvp, batched=None,
        forms='a list of arrays, 1-D ends (cotangent: a list)')
