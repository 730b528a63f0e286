"""A tanh recurrent network over 50 steps, trained to predict the next value of a wave.

The loss runs a Python `for` loop over the sequence; the generated gradient
pushes each step's hidden state in the forward sweep and pops them in the
reverse sweep (backpropagation through time, written out as code).

Run:  python examples/rnn.py
"""
import numpy as np

import tapeflow

STEPS = 50


def loss(Wh, wx, b, wy, xs):
    """Mean squared error of the one-step-ahead predictions over the sequence."""
    h = np.zeros(b.shape)
    total = 0.0
    for t in range(STEPS):
        h = np.tanh(Wh @ h + wx * xs[t] + b)
        error = wy @ h - xs[t + 1]
        total = total + error * error
    return total / STEPS


def make_sequence():
    t = np.arange(STEPS + 1)
    return 0.8 * np.sin(0.3 * t) * np.cos(0.05 * t)


def init(hidden=8, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 0.3, (hidden, hidden)), rng.normal(0.0, 0.5, hidden),
            np.zeros(hidden), rng.normal(0.0, 0.5, hidden)]


def train(steps=200, learning_rate=0.1, report_every=25):
    xs = make_sequence()
    params = init()
    loss_and_grads = tapeflow.value_and_grad(loss, argnums=(0, 1, 2, 3))
    history = []
    for step in range(steps + 1):
        value, grads = loss_and_grads(*params, xs)
        history.append(value)
        if step % report_every == 0:
            print(f'step {step:3d}   loss {value:.5f}')
        params = [p - learning_rate * g for p, g in zip(params, grads)]
    return params, history


def main():
    params, history = train()
    print(f'loss: {history[0]:.4f} at the start, {history[-1]:.5f} at the end')


if __name__ == '__main__':
    main()
