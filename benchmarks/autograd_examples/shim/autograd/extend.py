"""autograd.extend's `primitive` and `defvjp`, as tapeflow's `defvjp`.

autograd's rule for argument i is `make_vjp(ans, *args) -> (g -> cotangent)`;
tapeflow's is `vjp(g, ans, *args) -> cotangent`.
"""
import tapeflow as _tf

from autograd import primitive  # noqa: F401


def defvjp(fun, *makers, argnums=None):
    positions = argnums if argnums is not None else range(len(makers))
    rules = {}
    for i, make in zip(positions, makers):
        if make is not None:
            rules[i] = (lambda make: lambda g, ans, *args: make(ans, *args)(g))(make)
    for i, rule in rules.items():
        _tf.defvjp(fun, rule, argnum=i)
