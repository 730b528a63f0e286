"""A two-layer perceptron fitted to a noisy sine, by full-batch gradient descent.

`loss` calls the user function `dense`: tapeflow differentiates it too and
the generated gradient calls its forward and backward sweeps.

Run:  python examples/mlp.py
"""
import numpy as np

import tapeflow


def dense(x, W, b):
    """One tanh layer."""
    return np.tanh(x @ W + b)


def loss(W1, b1, W2, b2, X, y):
    """Mean squared error of a 1-16-1 network."""
    hidden = dense(X, W1, b1)
    prediction = hidden @ W2 + b2
    return np.mean((prediction - y) ** 2)


def make_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    X = np.linspace(-2.0, 2.0, n).reshape(n, 1)
    y = np.sin(2.0 * X) + 0.05 * rng.normal(size=(n, 1))
    return X, y


def init(hidden=16, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 1.0, (1, hidden)), np.zeros(hidden),
            rng.normal(0.0, 1.0 / np.sqrt(hidden), (hidden, 1)), np.zeros(1)]


def train(steps=1000, learning_rate=0.1, report_every=100):
    X, y = make_data()
    params = init()
    loss_and_grads = tapeflow.value_and_grad(loss, argnums=(0, 1, 2, 3))
    history = []
    for step in range(steps + 1):
        value, grads = loss_and_grads(*params, X, y)
        history.append(value)
        if step % report_every == 0:
            print(f'step {step:4d}   loss {value:.5f}')
        params = [p - learning_rate * g for p, g in zip(params, grads)]
    return params, history


def main():
    params, history = train()
    print(f'mean squared error: {history[0]:.3f} at the start, {history[-1]:.4f} at the end')


if __name__ == '__main__':
    main()
