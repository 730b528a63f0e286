"""W3: logistic-regression loss, X 500x100, gradient with respect to the weights w."""
import numpy as np

from harness import Workload


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z)


def logistic_adjoint(w, X, y):
    z = X @ w
    e = np.exp(z)
    value = np.mean(np.log(1.0 + e) - y * z)
    bz = (e / (1.0 + e) - y) / z.shape[0]
    return value, (X.T @ bz,)


def workloads(settings):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 100))
    y = (rng.random(500) < 0.5).astype(np.float64)
    w = 0.1 * rng.standard_normal(100)
    return [Workload('W3', 'logistic regression loss, X 500x100, d/dw', logistic_loss,
                     (w, X, y), (0,), logistic_adjoint)]
