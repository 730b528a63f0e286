"""Spec table: products, einsum, np.linalg, np.fft."""
import numpy as np

from rulecheck import A, F, L, Spec


def spd(n, batch=()):
    rng = np.random.default_rng(n)
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def symmetric(n):
    rng = np.random.default_rng(10 + n)
    m = rng.standard_normal((n, n))
    return m + m.T


def well_conditioned(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 3.0 * np.eye(shape[-1])


def real_spectrum():
    v = well_conditioned((2, 3, 3), 5)
    return v @ (np.array([1.0, 2.0, 4.0])[:, None] * np.linalg.inv(v))


SPECS = []

# ---------------------------------------------------------------- products
for a, b in [((), (2, 3)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
             ((2, 2, 3), (3, 4)), ((2, 3), (4, 3, 2)), ((2, 2, 3), (5, 3, 2))]:
    SPECS.append(Spec(np.dot, (A(a), A(b)), name=f'dot{a}{b}'))
for a, b in [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3))]:
    SPECS.append(Spec(np.inner, (A(a), A(b)), name=f'inner{a}{b}'))
for axes, b_shape in [(0, (3, 2)), (1, (4, 2)), (2, (3, 4, 2)), (([0, 2], [1, 0]), (4, 2, 5)),
                      ((-1, 0), (4, 5)), (([], []), (2,))]:
    SPECS.append(Spec(np.tensordot, (A((2, 3, 4)), A(b_shape)), {'axes': axes},
                      name=f'tensordot({axes})'))
SPECS += [
    Spec(np.tensordot, (A((2, 3, 4)), A((4, 3, 5)), ([1, 2], [1, 0])), name='tensordot(unordered)'),
    Spec(np.linalg.tensordot, (A((2, 3)), A((3, 2))), {'axes': 1}, name='linalg.tensordot'),
    Spec(np.outer, (A((3,)), A((2, 2))), name='outer'),
    Spec(np.linalg.outer, (A((3,)), A((4,))), name='linalg.outer'),
    Spec(np.vdot, (A((2, 3)), A((6,))), name='vdot'),
    Spec(np.vdot, (A((3,), complex_=True), A((3,), complex_=True)), name='vdot(complex)'),
    Spec(np.dot, (A((2, 3), complex_=True), A((3,), complex_=True)), name='dot(complex)'),
    Spec(np.kron, (A((2,)), A((2, 3))), name='kron(1,2)'),
    Spec(np.kron, (A((2, 2)), A((3, 2))), name='kron(2,2)'),
    Spec(np.kron, (A(()), A((2, 2))), name='kron(0,2)'),
    Spec(np.kron, (A((2, 1, 2)), A((3, 2))), name='kron(3,2)'),
    Spec(np.cross, (A((3,)), A((3,))), name='cross'),
    Spec(np.cross, (A((4, 3)), A((3,))), name='cross(broadcast)'),
    Spec(np.cross, (A((3, 4)), A((2, 1, 3))), {'axisa': 0, 'axisc': 1}, name='cross(axes)'),
    Spec(np.linalg.cross, (A((2, 3)), A((2, 3))), name='linalg.cross'),
    Spec(np.vecdot, (A((2, 3)), A((3,))), name='vecdot'),
    Spec(np.vecdot, (A((3, 2)), A((3, 1))), {'axis': 0}, name='vecdot(axis)'),
    Spec(np.vecdot, (A((3,), complex_=True), A((3,), complex_=True)), name='vecdot(complex)'),
    Spec(np.linalg.vecdot, (A((2, 3)), A((2, 3))), name='linalg.vecdot'),
    Spec(np.matvec, (A((2, 3, 4)), A((4,))), name='matvec'),
    Spec(np.vecmat, (A((3,)), A((2, 3, 4))), name='vecmat'),
    Spec(np.convolve, (A((5,)), A((3,))), name='convolve'),
    Spec(np.convolve, (A((3,)), A((6,)), 'same'), name='convolve(same)'),
    Spec(np.convolve, (A((6,)), A((4,)), 'valid'), name='convolve(valid)'),
    Spec(np.correlate, (A((6,)), A((3,))), name='correlate'),
    Spec(np.correlate, (A((4,)), A((6,)), 'same'), name='correlate(same)'),
    Spec(np.correlate, (A((5,)), A((2,)), 'full'), name='correlate(full)'),
    Spec(np.interp, (A((2, 4), -1, 5), np.array([0.0, 1.0, 2.5, 4.0]), A((4,))), name='interp'),
    Spec(np.interp, (A((5,), -1, 5), np.array([0.0, 1.0, 2.5, 4.0]), A((4,)), -3.0, 7.0), name='interp(left,right)'),
    Spec(np.interp, (A((2, 4), -1, 5), A(value=[0.0, 1.0, 2.5, 4.0]), A((4,))), name='interp(xp)'),
    Spec(np.interp, (A((5,), -1, 5), A(value=[0.0, 1.0, 2.5, 4.0]), A((4,)), F(-3.0, -2.0),
                     F(6.0, 7.0)), name='interp(xp, left, right)'),
    Spec(np.fft.fftfreq, (5, F(0.5, 2.0)), name='fftfreq(d)'),
    Spec(np.fft.rfftfreq, (6, F(0.5, 2.0)), name='rfftfreq(d)'),
    Spec(np.polyval, (A((4,)), A((2, 3))), name='polyval'),
]

# ---------------------------------------------------------------- einsum
for spec, shapes in [
        ('ij,jk->ik', [(2, 3), (3, 4)]), ('ii->', [(3, 3)]), ('ii->i', [(3, 3)]), ('ij->', [(2, 3)]),
        ('i,i', [(3,), (3,)]), ('ba', [(2, 3)]), ('...ij,...jk', [(2, 2, 3), (3, 4)]),
        ('bij,bjk->bik', [(2, 2, 3), (2, 3, 4)]), ('ijk->kji', [(2, 3, 4)]),
        ('ij,ij->ij', [(1, 3), (4, 3)]), ('Ba,ab', [(2, 3), (3, 4)]), ('i,j,k->ijk', [(2,), (3,), (2,)]),
        ('iij,jk->ik', [(3, 3, 2), (2, 4)]), ('i...,i->...', [(3, 2, 2), (3,)]),
        ('ij,jk,kl->il', [(2, 3), (3, 4), (4, 2)]), ('ij,j', [(2, 1), (3,)])]:
    SPECS.append(Spec(np.einsum, (spec,) + tuple(A(s) for s in shapes), name=f'einsum({spec})'))
SPECS += [
    Spec(np.einsum, (A((2, 3)), [0, 1], A((3, 4)), [1, 2], [0, 2]), name='einsum(sublist)'),
    Spec(np.einsum, (A((3, 3)), [0, 0]), name='einsum(sublist trace)'),
    Spec(np.einsum, ('ij,jk', A((2, 3)), A((3, 4))), {'optimize': True}, name='einsum(optimize)'),
]

# ---------------------------------------------------------------- linalg
SQ = A(value=well_conditioned((3, 3)))
BATCH = A(value=well_conditioned((2, 3, 3), 1))
SPECS += [
    Spec(np.linalg.inv, (SQ,), name='inv'), Spec(np.linalg.inv, (BATCH,), name='inv(batched)'),
    Spec(np.linalg.det, (SQ,), name='det'), Spec(np.linalg.det, (BATCH,), name='det(batched)'),
    Spec(np.linalg.slogdet, (BATCH,), name='slogdet'),
    Spec(np.linalg.solve, (SQ, A((3,))), name='solve(vector)'),
    Spec(np.linalg.solve, (SQ, A((3, 2))), name='solve(matrix)'),
    Spec(np.linalg.solve, (BATCH, A((3,))), name='solve(batched, vector)'),
    Spec(np.linalg.solve, (BATCH, A((3, 2))), name='solve(batched)'),
    Spec(np.linalg.pinv, (A((3, 2)),), name='pinv(tall)'),
    Spec(np.linalg.pinv, (A((2, 2, 4)),), name='pinv(wide, batched)'),
    Spec(np.linalg.cholesky, (A(value=spd(3)),), name='cholesky'),
    Spec(np.linalg.cholesky, (A(value=spd(3, (2,))),), {'upper': True}, name='cholesky(upper, batched)'),
    Spec(np.linalg.eigh, (A(value=symmetric(3)),), name='eigh'),
    Spec(np.linalg.eigh, (A(value=symmetric(4)),), {'UPLO': 'U'}, name='eigh(U)'),
    Spec(np.linalg.eigvalsh, (A(value=symmetric(3)),), name='eigvalsh'),
    Spec(np.linalg.eigvals, (A(value=[[2.0, 1.0, 0.3], [0.5, -1.0, 0.2], [0.1, 0.4, 0.5]]),), name='eigvals(real)'),
    Spec(np.linalg.eigvals, (A(value=[[0.0, 1.0], [-2.0, 0.3]]),), name='eigvals(complex)',
         second=False),   # differentiating again needs complex eigenvectors (see eig)
    Spec(np.linalg.eig, (A(value=[[2.0, 1.0, 0.3], [0.5, -1.0, 0.2], [0.1, 0.4, 0.5]]),), name='eig(real)'),
    Spec(np.linalg.eig, (A(value=real_spectrum()),), name='eig(batched)'),
    Spec(np.linalg.svd, (A((4, 3)),), {'full_matrices': False}, name='svd(tall)'),
    Spec(np.linalg.svd, (A((2, 2, 4)),), {'full_matrices': False}, name='svd(wide, batched)'),
    Spec(np.linalg.svd, (A((3, 3)),), name='svd(square, full)'),
    Spec(np.linalg.svd, (A((4, 3)),), {'compute_uv': False}, name='svd(values)'),
    Spec(np.linalg.svdvals, (A((2, 5)),), name='svdvals'),
    Spec(np.linalg.matrix_power, (A((3, 3), -1, 1), 3), name='matrix_power(3)'),
    Spec(np.linalg.matrix_power, (A((2, 3, 3), -1, 1), 0), name='matrix_power(0)'),
    Spec(np.linalg.matrix_power, (SQ, -2), name='matrix_power(-2)'),
    Spec(np.linalg.multi_dot, (L(A((3,)), A((3, 4)), A((4, 2)), A((2,))),), name='multi_dot'),
    Spec(np.linalg.multi_dot, (L(A((2, 3)), A((3, 4))),), name='multi_dot(two)'),
]
for ord_ in [None, 2, 1, np.inf, -np.inf, 3, 0.5, 0]:
    SPECS.append(Spec(np.linalg.norm, (A((5,)),), {'ord': ord_}, name=f'norm(vector, {ord_})'))
for ord_ in [None, 'fro', 'nuc', 1, -1, 2, -2, np.inf, -np.inf]:
    SPECS.append(Spec(np.linalg.norm, (A((3, 4)),), {'ord': ord_}, name=f'norm(matrix, {ord_})'))
SPECS += [
    Spec(np.linalg.norm, (A((2, 3, 4)),), name='norm(3-D)'),
    Spec(np.linalg.norm, (A((2, 3, 4)),), {'axis': 1, 'keepdims': True}, name='norm(axis)'),
    Spec(np.linalg.norm, (A((2, 3, 4)),), {'ord': 'nuc', 'axis': (2, 0)}, name='norm(nuc, axes)'),
    Spec(np.linalg.norm, (A((2, 3, 4)),), {'ord': 1, 'axis': (0, 2), 'keepdims': True}, name='norm(1, axes)'),
    Spec(np.linalg.norm, (A((4,), complex_=True),), name='norm(complex)'),
    Spec(np.linalg.vector_norm, (A((2, 3)),), name='vector_norm'),
    Spec(np.linalg.vector_norm, (A((2, 3, 4)),), {'axis': (0, 2), 'ord': 3}, name='vector_norm(axes)'),
    Spec(np.linalg.matrix_norm, (A((2, 3, 4)),), name='matrix_norm'),
    Spec(np.linalg.matrix_norm, (A((2, 3, 4)),), {'ord': 2, 'keepdims': True}, name='matrix_norm(2)'),
]

# ---------------------------------------------------------------- fft
F = np.fft
for fn in (F.fft, F.ifft):
    SPECS += [
        Spec(fn, (A((2, 5)),), name=f'{fn.__name__}'),
        Spec(fn, (A((4, 3), complex_=True),), {'axis': 0, 'norm': 'ortho'}, name=f'{fn.__name__}(complex, ortho)'),
        Spec(fn, (A((6,)),), {'n': 4, 'norm': 'forward'}, name=f'{fn.__name__}(n<len)'),
        Spec(fn, (A((3,)),), {'n': 5}, name=f'{fn.__name__}(n>len)'),
    ]
for fn in (F.fft2, F.ifft2, F.fftn, F.ifftn):
    SPECS += [
        Spec(fn, (A((2, 3, 4)),), name=f'{fn.__name__}'),
        Spec(fn, (A((3, 4), complex_=True),), {'s': (2, 6), 'norm': 'ortho'}, name=f'{fn.__name__}(s)'),
        Spec(fn, (A((3, 4, 2)),), {'axes': (0, 2)}, name=f'{fn.__name__}(axes)'),
    ]
for fn in (F.rfft, F.ihfft):
    SPECS += [
        Spec(fn, (A((2, 6)),), name=f'{fn.__name__}(even)'),
        Spec(fn, (A((5, 2)),), {'axis': 0, 'norm': 'ortho'}, name=f'{fn.__name__}(odd, ortho)'),
        Spec(fn, (A((6,)),), {'n': 9, 'norm': 'forward'}, name=f'{fn.__name__}(n)'),
        Spec(fn, (A((7,)),), {'n': 4}, name=f'{fn.__name__}(n<len)'),
    ]
for fn in (F.irfft, F.hfft):
    SPECS += [
        Spec(fn, (A((2, 4), complex_=True),), name=f'{fn.__name__}(even)'),
        Spec(fn, (A((4,), complex_=True),), {'n': 7, 'norm': 'ortho'}, name=f'{fn.__name__}(odd)'),
        Spec(fn, (A((6,), complex_=True),), {'n': 4, 'norm': 'forward'}, name=f'{fn.__name__}(n<)'),
        Spec(fn, (A((3,)),), {'n': 8}, name=f'{fn.__name__}(real input)'),
    ]
for fn in (F.rfft2, F.rfftn):
    SPECS += [
        Spec(fn, (A((3, 4)),), name=f'{fn.__name__}'),
        Spec(fn, (A((3, 5, 2)),), {'axes': (0, 1), 'norm': 'ortho'}, name=f'{fn.__name__}(odd)'),
        Spec(fn, (A((3, 4)),), {'s': (4, 3)}, name=f'{fn.__name__}(s)'),
    ]
for fn in (F.irfft2, F.irfftn):
    SPECS += [
        Spec(fn, (A((3, 3), complex_=True),), name=f'{fn.__name__}'),
        Spec(fn, (A((2, 4, 3), complex_=True),), {'s': (3, 5), 'norm': 'ortho'}, name=f'{fn.__name__}(s odd)'),
        Spec(fn, (A((4, 3), complex_=True),), {'s': (4, 6), 'axes': (1, 0)}, name=f'{fn.__name__}(axes)'),
    ]
