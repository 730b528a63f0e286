"""The seed tutorial's loop-and-branch function, compiled instead of taped.

`tapeflow.grad` reads the source of `f`, generates its adjoint once (a plain
Python function that pushes the loop's trip count and each branch decision
on a stack, then pops them in reverse), and runs it on plain floats. The same
function decorated with `tapeflow.function` is one fused node on a
GradientTape, and agrees with the eager tape.

Run:  python examples/seed_compiled.py
"""
import tapeflow as tf


def f(x, n):
    out = 1.0
    for i in range(n):
        if i > 1 and i < 5:
            out = out * x
    return out


df = tf.grad(f)                 # the gradient with respect to x (argument 0)
f_fused = tf.function(f)        # under a tape: one node whose backward is the generated code


def main():
    for n in (6, 5, 4):
        print(f'f(2.0, {n}) = {f(2.0, n):5}   df/dx = {df(2.0, n)}')
    assert [df(2.0, n) for n in (6, 5, 4)] == [12.0, 12.0, 4.0]

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f_fused(x, 6)
    print('on a GradientTape:', tape.gradient(y, x).numpy())

    print()
    print('The generated code:')
    print(tf.source(f))


if __name__ == '__main__':
    main()
