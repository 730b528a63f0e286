"""The seed tutorial's examples ("Automatic differentiation and gradient tape"), on tapeflow.

Each block is the tutorial's code with `import tapeflow as tf` in place of
TensorFlow. A constant Tensor is watched only when asked (`t.watch(x)`), as in
TensorFlow.

Run:  python examples/seed_gradient_tape.py
"""
import tapeflow as tf


def gradient_of_sum_squared():
    x = tf.ones((2, 2))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)
    dz_dx = t.gradient(z, x)          # d(sum(x)^2)/dx = 2 * sum(x) = 8 everywhere
    for i in [0, 1]:
        for j in [0, 1]:
            assert dz_dx[i][j].numpy() == 8.0
    return dz_dx


def gradient_wrt_intermediate():
    x = tf.ones((2, 2))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)
    dz_dy = t.gradient(z, y)          # an intermediate value is a source too
    assert dz_dy.numpy() == 8.0
    return dz_dy


def persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    dz_dx = t.gradient(z, x)          # 108.0 (4*x^3 at x = 3)
    dy_dx = t.gradient(y, x)          # 6.0
    del t                             # drop the reference to the tape
    assert dz_dx.numpy() == 108.0 and dy_dx.numpy() == 6.0
    return dz_dx, dy_dx


def f(x, y):
    output = 1.0
    for i in range(y):
        if i > 1 and i < 5:
            output = tf.multiply(output, x)
    return output


def grad(x, y):
    with tf.GradientTape() as t:
        t.watch(x)
        out = f(x, y)
    return t.gradient(out, x)


def control_flow():
    x = tf.convert_to_tensor(2.0)
    results = grad(x, 6), grad(x, 5), grad(x, 4)
    assert [r.numpy() for r in results] == [12.0, 12.0, 4.0]
    return results


def higher_order():
    x = tf.Variable(1.0)              # a trainable Variable is watched without asking
    with tf.GradientTape() as t:
        with tf.GradientTape() as t2:
            y = x * x * x
        # Computed inside t's context, so the gradient computation is recorded too.
        dy_dx = t2.gradient(y, x)
    d2y_dx2 = t.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0 and d2y_dx2.numpy() == 6.0
    return dy_dx, d2y_dx2


def main():
    print('d(sum(x)^2)/dx        =', gradient_of_sum_squared().numpy().tolist())
    print('d(y^2)/dy, y = sum(x) =', float(gradient_wrt_intermediate().numpy()))
    dz_dx, dy_dx = persistent_tape()
    print('persistent tape       =', float(dz_dx.numpy()), float(dy_dx.numpy()))
    print('loop and branch       =', [float(g.numpy()) for g in control_flow()])
    first, second = higher_order()
    print('x^3 at 1: first, second derivative =', float(first.numpy()), float(second.numpy()))


if __name__ == '__main__':
    main()
