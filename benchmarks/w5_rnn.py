"""W5: a vanilla tanh RNN, hidden 128, input 64, 50 steps, batch 32.

h_t = tanh(x_t @ Wx + h_{t-1} @ Wh + b); loss = 0.5 * sum(h_T ** 2) / batch;
gradient with respect to Wx, Wh, b.
"""
import numpy as np

from harness import Workload


def rnn_loss(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return 0.5 * np.sum(h * h) / h.shape[0]


def rnn_adjoint(Wx, Wh, b, xs, h0):
    steps = xs.shape[0]
    hs = [h0]
    h = h0
    for t in range(steps):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        hs.append(h)
    value = 0.5 * np.sum(h * h) / h.shape[0]
    bh = h / h.shape[0]
    bWx = np.zeros_like(Wx)
    bWh = np.zeros_like(Wh)
    bb = np.zeros_like(b)
    for t in range(steps - 1, -1, -1):
        ht = hs[t + 1]
        ba = bh * (1.0 - ht * ht)
        bWx += xs[t].T @ ba
        bWh += hs[t].T @ ba
        bb += ba.sum(axis=0)
        bh = ba @ Wh.T
    return value, (bWx, bWh, bb)


def workloads(settings):
    rng = np.random.default_rng(5)
    steps, batch, n_in, n_hidden = 50, 32, 64, 128
    xs = rng.standard_normal((steps, batch, n_in))
    h0 = np.zeros((batch, n_hidden))
    Wx = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    Wh = 0.9 * rng.standard_normal((n_hidden, n_hidden)) / np.sqrt(n_hidden)
    b = 0.1 * rng.standard_normal(n_hidden)
    return [Workload('W5', 'tanh RNN, 50 steps, batch 32, 64->128, d/d(Wx,Wh,b)',
                     rnn_loss, (Wx, Wh, b, xs, h0), (0, 1, 2), rnn_adjoint)]
