"""Custom derivatives: a rule for the compiler, and `custom_gradient` on the eager tape.

1. `clip_gradient(x)` is the identity whose derivative rule clips the incoming
   gradient to [-1, 1]. Registered with `defvjp`, the compiler calls the rule
   instead of differentiating the function's body.
2. `log1pexp(x) = log(1 + e^x)`: its automatic derivative e^x / (1 + e^x) is
   nan for large x (inf / inf); a `custom_gradient` gives the stable form.

Run:  python examples/custom_gradient.py
"""
import numpy as np

import tapeflow
import tapeflow as tf
from tapeflow.rules import defvjp


def clip_gradient(x):
    return x


def clipped_rule(g, ans, x):
    return np.clip(g, -1.0, 1.0)


defvjp(clip_gradient, clipped_rule)


def loss(w):
    return np.sum(clip_gradient(10.0 * w) ** 2)


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1.0 - 1.0 / (1.0 + e))

    return tf.math.log(1.0 + e), grad


def naive_log1pexp(x):
    return tf.math.log(1.0 + tf.exp(x))


def eager_gradient(fn, value):
    x = tf.constant(value)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


def main():
    w = np.array([0.01, 0.5, -2.0])
    clipped = tapeflow.grad(loss)(w)
    print('gradient of sum(clip_gradient(10 w)^2) at w =', w)
    print('  with clipping:   ', clipped, '  (20 w clipped to [-1, 1], times 10)')
    print('  without clipping:', 200.0 * w)
    print()
    print('d/dx log(1 + e^x) at x = 100 (float32, where e^100 overflows)')
    with np.errstate(over='ignore', invalid='ignore'):
        print('  custom_gradient: ', eager_gradient(log1pexp, 100.0))
        print('  automatic:       ', eager_gradient(naive_log1pexp, 100.0))
    print()
    print('The generated gradient calls the rule:')
    print(tapeflow.source(loss))


if __name__ == '__main__':
    main()
