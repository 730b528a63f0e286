"""Logistic regression trained by gradient descent with `tapeflow.value_and_grad`.

The loss is ordinary NumPy code; tapeflow generates its gradient once, then
each step runs the generated code. At the end the example prints that code.

Run:  python examples/logistic_regression.py
"""
import numpy as np

import tapeflow


def loss(w, b, X, y):
    """Mean cross-entropy of the model p = sigmoid(X @ w + b)."""
    z = X @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def make_data(n=200, seed=0):
    """Two Gaussian blobs in the plane, labelled 0 and 1."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(-1.0, 1.0, (n // 2, 2)), rng.normal(1.0, 1.0, (n // 2, 2))])
    y = np.concatenate([np.zeros(n // 2), np.ones(n // 2)])
    return X, y


def train(steps=100, learning_rate=0.5, report_every=10):
    X, y = make_data()
    w, b = np.zeros(2), 0.0
    loss_and_grad = tapeflow.value_and_grad(loss, argnums=(0, 1))
    history = []
    for step in range(steps + 1):
        value, (dw, db) = loss_and_grad(w, b, X, y)
        history.append(value)
        if step % report_every == 0:
            print(f'step {step:3d}   loss {value:.4f}')
        w = w - learning_rate * dw
        b = b - learning_rate * db
    accuracy = np.mean((X @ w + b > 0) == (y == 1.0))
    print(f'accuracy {accuracy:.1%}   w = {np.round(w, 3)}   b = {b:.3f}')
    return w, b, history, accuracy


def main():
    w, b, _, _ = train()
    X, y = make_data()
    print()
    print('The gradient tapeflow generated for loss(w, b, X, y), with respect to w and b')
    print(f'(specialised to these shapes: X {X.shape}, w {w.shape}, b a float):')
    print()
    print(tapeflow.source(loss, argnums=(0, 1), args=(w, b, X, y)))


if __name__ == '__main__':
    main()
