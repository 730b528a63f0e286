"""W4: a two-layer MLP with a softmax cross-entropy loss.

Batch 128, 64 -> 128 (tanh) -> 10; gradient with respect to W1, b1, W2, b2.
The max subtracted for stability has a zero derivative overall (the loss does
not depend on it), which is what the hand-written adjoint assumes.
"""
import numpy as np

from harness import Workload


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (z - lse), axis=1))


def mlp_adjoint(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    ez = np.exp(z)
    s = np.sum(ez, axis=1, keepdims=True)
    value = -np.mean(np.sum(Y * (z - np.log(s)), axis=1))
    n = X.shape[0]
    # d/dlogits of -sum(Y * log softmax) / n = (softmax * sum(Y) - Y) / n
    blogits = (ez / s * np.sum(Y, axis=1, keepdims=True) - Y) / n
    bW2 = h.T @ blogits
    bb2 = blogits.sum(axis=0)
    ba = (blogits @ W2.T) * (1.0 - h * h)
    bW1 = X.T @ ba
    bb1 = ba.sum(axis=0)
    return value, (bW1, bb1, bW2, bb2)


def workloads(settings):
    rng = np.random.default_rng(4)
    batch, n_in, n_hidden, n_out = 128, 64, 128, 10
    X = rng.standard_normal((batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, batch)]
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = 0.1 * rng.standard_normal(n_hidden)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = 0.1 * rng.standard_normal(n_out)
    return [Workload('W4', 'MLP 128x(64->128 tanh->10), softmax xent, d/d(W1,b1,W2,b2)',
                     mlp_loss, (W1, b1, W2, b2, X, Y), (0, 1, 2, 3), mlp_adjoint)]
