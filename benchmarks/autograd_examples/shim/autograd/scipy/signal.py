"""autograd's `convolve(A, B, axes, dot_axes, mode)` for mode='valid', written with NumPy
slices and `tensordot`: the sum, over the kernel's offsets, of the flipped kernel times
the shifted signal, contracted over `dot_axes`; the result's axes are A's other axes, B's
other axes, then the convolved ones, as autograd's. SciPy's `convolve` has no `dot_axes`."""
import itertools

import numpy as np


def convolve(A, B, axes=None, dot_axes=((), ()), mode='full'):
    if mode != 'valid':
        raise NotImplementedError("the examples' convolve: mode='valid' only")
    axes_a, axes_b = list(axes[0]), list(axes[1])
    dots_a, dots_b = list(dot_axes[0]), list(dot_axes[1])
    a_is_kernel = all(A.shape[i] <= B.shape[j] for i, j in zip(axes_a, axes_b))
    if a_is_kernel:
        K, S, axes_k, axes_s, dots_k, dots_s = A, B, axes_a, axes_b, dots_a, dots_b
    else:
        K, S, axes_k, axes_s, dots_k, dots_s = B, A, axes_b, axes_a, dots_b, dots_a
    sizes = [S.shape[j] - K.shape[i] + 1 for i, j in zip(axes_k, axes_s)]
    kept_k = [i for i in range(K.ndim) if i not in axes_k]
    dots = ([kept_k.index(i) for i in dots_k], dots_s)
    total = 0.0
    for offsets in itertools.product(*[range(K.shape[i]) for i in axes_k]):
        index_k = [slice(None)] * K.ndim
        index_s = [slice(None)] * S.ndim
        for i, j, k, size in zip(axes_k, axes_s, offsets, sizes):
            index_k[i] = K.shape[i] - 1 - k
            index_s[j] = slice(k, k + size)
        total = total + np.tensordot(K[tuple(index_k)], S[tuple(index_s)], axes=dots)
    # the product's axes: K's kept axes but its dot axes, then S's but its dot axes
    labels = [('K', i) for i in kept_k if i not in dots_k] + \
             [('S', j) for j in range(S.ndim) if j not in dots_s]
    first, second = ('K', 'S') if a_is_kernel else ('S', 'K')
    other_first = [(first, i) for i in range(A.ndim) if i not in axes_a and i not in dots_a]
    other_second = [(second, j) for j in range(B.ndim) if j not in axes_b and j not in dots_b]
    order = other_first + other_second + [('S', j) for j in axes_s]
    return np.transpose(total, [labels.index(label) for label in order])
