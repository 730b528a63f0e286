"""ForwardAccumulator: TF 2.x eager forward mode over the shared JVP rules.

Values are checked against central differences along random directions and
against GradientTape (<u, J v> computed forward equals <J^T u, v> computed
backward); second order through every nesting of tapes and accumulators;
then TF's documented examples and behaviours, and the errors.
"""
import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import RULES, MissingRule
from tapeflow.runtime.recording import apply, record_node, wrap
from tests.gradcheck import seed_of


# ---------------------------------------------------------------- helpers

def _flatten(y):
    if isinstance(y, (list, tuple)):
        return [a for item in y for a in _flatten(item)]
    return [np.asarray(y.numpy() if isinstance(y, tf.Tensor) else y, dtype=np.float64)]


def _inner(a, b):
    return float(sum(np.sum(x * y) for x, y in zip(_flatten(a), _flatten(b))))


def forward(f, values, directions):
    xs = [tf.constant(v) for v in values]
    with tf.ForwardAccumulator(xs, [tf.constant(d) for d in directions]) as acc:
        y = f(*xs)
    return y, acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def backward(f, values, cotangent):
    xs = [tf.constant(v) for v in values]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return tape.gradient(y, xs, output_gradients=cotangent,
                         unconnected_gradients=tf.UnconnectedGradients.ZERO)


def _random_like(rng, y):
    if isinstance(y, (list, tuple)):
        return type(y)(_random_like(rng, item) for item in y)
    return rng.standard_normal(np.shape(y.numpy()))


SHAPES = {
    'elementwise': ([(3, 4)], lambda x: np.sin(x) * np.exp(x) + np.tanh(x) / (1 + x * x)),
    'log1p_exp': ([(5,)], lambda x: np.log(1 + np.exp(x)) + np.sqrt(x * x + 1.0)),
    'binary': ([(3,), (3,)], lambda x, y: x * y + x / (y * y + 1) - y ** 3),
    'power': ([(4,)], lambda x: np.abs(x) ** 1.5 + 2.0 ** x),
    'broadcast': ([(3,), (4,)], lambda x, y: x[:, None] * y[None, :] + y),
    'broadcast_scalar': ([(), (2, 3)], lambda s, y: s * y + s),
    'matmul': ([(3, 4), (4, 2)], lambda a, b: a @ b),
    'matvec': ([(3, 4), (4,)], lambda a, v: np.tanh(a @ v)),
    'reductions': ([(3, 4)], lambda x: np.sum(x ** 2, axis=0) + np.mean(x, axis=0)
                   + np.prod(x, axis=0) + np.max(x, axis=0)),
    'methods': ([(3, 4)], lambda x: x.T.sum(axis=1) * x.mean() + x.reshape(2, 6).T[:4, 0]),
    'indexing': ([(3, 4)], lambda x: x[1:, ::2] * 2 + x[0, 0] + x[[0, 2], 1:3]),
    'join': ([(2, 3), (2, 3)], lambda x, y: np.concatenate([x, y * 2, np.ones((1, 3))])
             + np.stack([x, y], axis=0).sum(axis=0)[0]),
    'where': ([(6,)], lambda x: np.where(x > 0, x, 0.1 * x) * np.maximum(x, 0.2)),
    'linalg': ([(3, 3), (3,)], lambda a, b: np.linalg.solve(a @ a.T + 3 * np.eye(3), b)
               + np.linalg.inv(a + 4 * np.eye(3))[0] * np.linalg.det(a + 4 * np.eye(3))),
    'tf_ops': ([(2, 3), (3, 2)], lambda a, b: tf.reduce_sum(tf.sigmoid(tf.matmul(a, b)), axis=1)
               + tf.reduce_mean(tf.square(a))),
    'several_outputs': ([(3, 4)], lambda x: (np.sin(x), [np.split(x, 2, axis=1)[1] * 3.0])),
    'eigh': ([(3, 3)], lambda a: np.linalg.eigh(a + a.T)[0]),
}


@pytest.fixture(params=sorted(SHAPES))
def case(request):
    shapes, f = SHAPES[request.param]
    rng = np.random.default_rng(seed_of(request.param))
    values = [rng.uniform(0.3, 1.5, s) * rng.choice([-1.0, 1.0], s) for s in shapes]
    return f, values, rng


# ---------------------------------------------------------------- values

def test_jvp_matches_central_differences(case):
    f, values, rng = case
    v = [rng.standard_normal(np.shape(x)) for x in values]
    _, jvp = forward(f, values, v)
    eps = 1e-6
    plus = f(*[tf.constant(x + eps * d) for x, d in zip(values, v)])
    minus = f(*[tf.constant(x - eps * d) for x, d in zip(values, v)])
    for j, p, m in zip(_flatten(jvp), _flatten(plus), _flatten(minus)):
        np.testing.assert_allclose(j, (p - m) / (2 * eps), rtol=1e-6, atol=1e-7)


def test_jvp_is_the_transpose_of_the_tape_vjp(case):
    f, values, rng = case
    v = [rng.standard_normal(np.shape(x)) for x in values]
    y, jvp = forward(f, values, v)
    u = _random_like(rng, y)
    vjp = backward(f, values, u)
    np.testing.assert_allclose(_inner(u, jvp), _inner(vjp, v), rtol=1e-10, atol=1e-10)


def test_jvp_shapes_and_dtypes_follow_the_outputs(case):
    f, values, rng = case
    y, jvp = forward(f, values, [np.ones(np.shape(x)) for x in values])
    for out, t in zip(_flatten(y), _flatten(jvp)):
        assert out.shape == t.shape
    for out, t in zip(_leaves(y), _leaves(jvp)):
        assert isinstance(t, tf.Tensor) and t.dtype == out.dtype


def _leaves(y):
    if isinstance(y, (list, tuple)):
        return [a for item in y for a in _leaves(item)]
    return [y]


def test_float32_tangents_stay_float32():
    x = tf.constant([0.5, 1.0])                      # float32
    with tf.ForwardAccumulator(x, [1.0, 2.0]) as acc:
        y = np.sin(x) * 3.0 + 1.0 * x
    assert acc.jvp(y).dtype == np.float32
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos([0.5, 1.0]) * [3, 6] + [1, 2],
                               rtol=1e-6)


# ---------------------------------------------------------------- second order

SCALAR = {
    'logsumexp': ((4,), lambda x: np.log(np.sum(np.exp(x * x)))),
    'rosenbrock': ((5,), lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)),
    'quartic_matmul': ((3,), lambda x: np.sum(np.tanh(np.outer(x, x) @ x) ** 2)),
    'logistic': ((6,), lambda x: tf.reduce_sum(np.log(1 + np.exp(x * np.arange(6.0) - 1)))),
}


def _grad(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize('name', sorted(SCALAR))
def test_hessian_vector_products_agree_in_every_nesting(name):
    shape, f = SCALAR[name]
    rng = np.random.default_rng(len(name))
    x0, v, w = (rng.uniform(-1, 1, shape) for _ in range(3))
    eps = 1e-5
    numeric = (_grad(f, tf.constant(x0 + eps * v)).numpy()
               - _grad(f, tf.constant(x0 - eps * v)).numpy()) / (2 * eps)
    x, tv = tf.constant(x0), tf.constant(v)

    # forward-over-reverse: the accumulator sees the tape's backward pass
    with tf.ForwardAccumulator(x, tv) as acc:
        g = _grad(f, x)
    forward_over_reverse = acc.jvp(g).numpy()

    # reverse-over-forward: the tape records the accumulator's tangents
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.ForwardAccumulator(x, tv) as acc:
            y = f(x)
        directional = acc.jvp(y)
    reverse_over_forward = tape.gradient(directional, x).numpy()

    # reverse-over-reverse, for reference
    with tf.GradientTape() as outer:
        outer.watch(x)
        g = _grad(f, x)
    reverse_over_reverse = outer.gradient(g, x, output_gradients=tv).numpy()

    for hvp in (forward_over_reverse, reverse_over_forward, reverse_over_reverse):
        np.testing.assert_allclose(hvp, numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forward_over_reverse, reverse_over_reverse, rtol=1e-10)

    # forward-over-forward: w^T H v
    with tf.ForwardAccumulator(x, tf.constant(w)) as outer_acc:
        with tf.ForwardAccumulator(x, tv) as inner_acc:
            y = f(x)
        second = outer_acc.jvp(inner_acc.jvp(y)).numpy()
    np.testing.assert_allclose(second, np.dot(w, reverse_over_reverse), rtol=1e-9)


def test_second_order_forward_over_forward_and_reverse_over_forward(case):
    """d/dw of the JVP along v: by nested accumulators, by a tape, by differences."""
    f, values, rng = case
    v, w = ([rng.standard_normal(np.shape(x)) for x in values] for _ in range(2))
    xs = [tf.constant(x) for x in values]
    with tf.ForwardAccumulator(xs, [tf.constant(d) for d in w]) as outer:
        with tf.ForwardAccumulator(xs, [tf.constant(d) for d in v]) as inner:
            y = f(*xs)
        jvp = inner.jvp(y, unconnected_gradients='zero')
    second = outer.jvp(jvp, unconnected_gradients='zero')
    eps = 1e-5
    _, plus = forward(f, [x + eps * d for x, d in zip(values, w)], v)
    _, minus = forward(f, [x - eps * d for x, d in zip(values, w)], v)
    for s, p, m in zip(_flatten(second), _flatten(plus), _flatten(minus)):
        np.testing.assert_allclose(s, (p - m) / (2 * eps), rtol=1e-5, atol=1e-7)
    u = _random_like(rng, y)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        with tf.ForwardAccumulator(xs, [tf.constant(d) for d in v]) as acc:
            y = f(*xs)
        jvp = acc.jvp(y, unconnected_gradients='zero')
    grads = tape.gradient(jvp, xs, output_gradients=u, unconnected_gradients='zero')
    np.testing.assert_allclose(_inner(grads, w), _inner(u, second), rtol=1e-9, atol=1e-12)


X11_35_DERIVATIVES = [1.1 ** 3.5, 3.5 * 1.1 ** 2.5, 3.5 * 2.5 * 1.1 ** 1.5,
                      3.5 * 2.5 * 1.5 * 1.1 ** 0.5]


@pytest.mark.parametrize('order', range(4))
def test_higher_order_pure_forward(order):
    def forwardgrad(f):
        def compute(primal):
            with tf.ForwardAccumulator(primal, tf.constant(1.)) as acc:
                out = f(primal)
            return acc.jvp(out)
        return compute

    f = lambda x: x ** 3.5  # noqa: E731
    for _ in range(order):
        f = forwardgrad(f)
    np.testing.assert_allclose(f(tf.constant(1.1)).numpy(), X11_35_DERIVATIVES[order], rtol=1e-5)


def test_third_order_from_three_nested_accumulators_and_a_tape():
    x = tf.constant(1.1, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.ForwardAccumulator(x, tf.constant(1.0, dtype=tf.float64)) as a:
            with tf.ForwardAccumulator(x, tf.constant(1.0, dtype=tf.float64)) as b:
                with tf.ForwardAccumulator(x, tf.constant(1.0, dtype=tf.float64)) as c:
                    y = x ** 3.5
                first = c.jvp(y)
            second = b.jvp(first)
        third = a.jvp(second)
    fourth = tape.gradient(third, x)
    np.testing.assert_allclose([first.numpy(), second.numpy(), third.numpy()],
                               X11_35_DERIVATIVES[1:], rtol=1e-12)
    np.testing.assert_allclose(fourth.numpy(), 3.5 * 2.5 * 1.5 * 0.5 * 1.1 ** -0.5, rtol=1e-12)


# ---------------------------------------------------------------- TF's documented examples

def test_tf_doc_linear_regression_columns_match_the_tape():
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    targets = tf.constant([[1.], [-1.]])
    kernel = tf.Variable([[0.5], [-0.25]])
    bias = tf.Variable([0.1])
    loss_fn = lambda: tf.reduce_sum((tf.matmul(x, kernel) + bias - targets) ** 2.)  # noqa

    kernel_fprop = []
    with tf.ForwardAccumulator(kernel, tf.constant([[1.], [0.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.ForwardAccumulator(kernel, tf.constant([[0.], [1.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.ForwardAccumulator(bias, tf.constant([1.])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (kernel, bias))
    np.testing.assert_allclose(kernel_grad.numpy(), np.stack(
        [k.numpy() for k in kernel_fprop])[:, None], rtol=1e-6)
    np.testing.assert_allclose(bias_grad.numpy(), bias_fprop.numpy()[None], rtol=1e-6)


def test_tf_doc_nested_accumulators():
    primal = tf.constant(1.1)
    with tf.ForwardAccumulator(primal, tf.constant(1.)) as outer:
        with tf.ForwardAccumulator(primal, tf.constant(1.)) as inner:
            primal_out = primal ** tf.constant(3.5)
    inner_jvp = inner.jvp(primal_out)
    assert inner_jvp.dtype == np.float32
    np.testing.assert_allclose(inner_jvp.numpy(), 4.4417057, rtol=1e-6)
    np.testing.assert_allclose(outer.jvp(inner_jvp).numpy(), 10.094786, rtol=1e-6)
    np.testing.assert_allclose(outer.jvp(primal_out).numpy(), 4.4417057, rtol=1e-6)
    # inner accumulators do not see the outer one's tangents
    assert inner.jvp(outer.jvp(primal_out)) is None


def test_tf_doc_forward_over_backward_hvp():
    v = tf.Variable([1., 2.])
    with tf.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward_ = tape.gradient(y, v)
    assert backward_.numpy().tolist() == [3., 12.]
    assert acc.jvp(backward_).numpy().tolist() == [6., 0.]


@pytest.mark.parametrize('accumulator_first', [True, False])
def test_backward_over_forward(accumulator_first):
    # Watching depends on nesting, not on the order of creation.
    c = tf.constant(1.)
    if accumulator_first:
        acc, tape = tf.ForwardAccumulator(c, .1), tf.GradientTape()
    else:
        tape, acc = tf.GradientTape(), tf.ForwardAccumulator(c, .1)
    with tape:
        with acc:
            tape.watch(c)
            d = tf.cos(c)
        assert tf.is_watched(acc.jvp(d))
    np.testing.assert_allclose(tape.gradient(acc.jvp(d), c).numpy(), -.1 * np.cos(1.), rtol=1e-6)


@pytest.mark.parametrize('accumulator_first', [True, False])
def test_tapes_inside_an_accumulator_ignore_its_tangents(accumulator_first):
    c = tf.constant(1.)
    if accumulator_first:
        acc, tape = tf.ForwardAccumulator(c, .1), tf.GradientTape()
    else:
        tape, acc = tf.GradientTape(), tf.ForwardAccumulator(c, .1)
    with tape:
        pass
    with acc:
        with tape:
            tape.watch(c)
            d = np.cos(c)
            e = np.cos(acc.jvp(d))
            weak_e = weakref.ref(e)
            del e
            assert weak_e() is None            # not kept by the tape
        assert tape.gradient(acc.jvp(d), c) is None


def test_reversing_the_nesting_gives_none():
    primal = tf.constant(1.1)
    with tf.ForwardAccumulator(primal, tf.constant(1.)) as outer_acc:
        with tf.ForwardAccumulator(primal, tf.constant(1.)) as acc:
            primal_out = primal ** 3.5
    assert acc.jvp(outer_acc.jvp(primal_out)) is None


def test_tangent_of_a_tangent_watched_by_the_outer_accumulator():
    two = tf.constant(2.)
    primal_in = tf.constant(1.)
    inner_tangent = tf.constant(3.)
    with tf.ForwardAccumulator([primal_in, inner_tangent],
                               [tf.constant(2.), tf.constant(4.)]) as outer_acc:
        with tf.ForwardAccumulator(primal_in, inner_tangent) as inner_acc:
            primal_out = primal_in * two
            assert inner_acc.jvp(primal_out).numpy() == 6.
            assert outer_acc.jvp(primal_out).numpy() == 4.
            assert outer_acc.jvp(inner_acc.jvp(primal_out)).numpy() == 8.


# ---------------------------------------------------------------- TF behaviours

def test_jvp_manual():
    with tf.ForwardAccumulator(tf.constant(0.1), tf.constant(0.2)) as acc:
        primal = tf.sin(tf.constant(0.1))
    assert acc.jvp(primal) is None                         # another Tensor than the watched one
    x = tf.constant(0.1)
    with tf.ForwardAccumulator(x, tf.constant(0.2)) as acc:
        y = tf.sin(x)
    np.testing.assert_allclose(y.numpy(), np.sin(0.1), rtol=1e-6)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos(0.1) * 0.2, rtol=1e-6)


def test_watching_twice_adds_and_duplicates_are_errors():
    x = tf.constant(-2.)
    with pytest.raises(ValueError, match='multiple times'):
        tf.ForwardAccumulator([x, x], [1., 2.])
    with tf.ForwardAccumulator([x], [3.]) as acc:
        assert acc.jvp(x).numpy() == 3.
        acc._watch(x, tf.constant(10.))
        assert acc.jvp(x).numpy() == 13.
        y = tf.constant(3.) * x
    assert acc.jvp(y).numpy() == 39.


def test_reenter_and_jvp_outside_the_context():
    x = tf.constant(-2.)
    with tf.ForwardAccumulator(x, 1.5) as acc:
        assert acc.jvp(x).numpy() == 1.5
        y = 4. * x
        assert acc.jvp(y).numpy() == 6.
        with pytest.raises(ValueError, match='already recording'):
            with acc:
                pass
    z = 4. * x
    assert acc.jvp(z) is None
    with acc:
        yy = y * y
    assert acc.jvp(yy).numpy() == 6. * -8. * 2.
    assert not tf.is_recording()


def test_dead_tensors_lose_their_tangents():
    x = tf.ones([100])
    x_weak = weakref.ref(x)
    tangent = tf.constant(np.zeros(100, np.float32))
    tangent_weak = weakref.ref(tangent)
    with tf.ForwardAccumulator(x, tangent) as acc:
        derived = tf.constant(2.) * x
        del tangent
        assert acc.jvp(x).numpy().tolist() == [0.0] * 100
        del x
        assert x_weak() is None and tangent_weak() is None
        derived_weak = weakref.ref(derived)
        derived_tangent = acc.jvp(derived)
        derived_tangent_weak = weakref.ref(derived_tangent)
        del derived, derived_tangent
        assert derived_weak() is None and derived_tangent_weak() is None
        assert len(acc._live) == 0


def test_a_new_tensor_reusing_a_dead_ones_id_has_no_tangent():
    x = tf.constant(np.ones(3))
    with tf.ForwardAccumulator(x, np.ones(3)) as acc:
        for _ in range(200):
            y = x * 2.0
            dead = id(y)
            del y
            fresh = tf.constant(np.ones(3))
            if id(fresh) == dead:
                assert acc.jvp(fresh) is None
            z = fresh * 3.0
            assert acc.jvp(z) is None


def test_variables_as_primals():
    v = tf.Variable([1., 2., 3.])
    with tf.ForwardAccumulator(v, tf.constant([.1, -.2, .3])) as acc:
        np.testing.assert_allclose(acc.jvp(v).numpy(), [.1, -.2, .3])
        x = v * 2.
        np.testing.assert_allclose(acc.jvp(x).numpy(), [.2, -.4, .6])
        x2 = v + .1
        np.testing.assert_allclose(acc.jvp(x2).numpy(), [.1, -.2, .3])
        np.testing.assert_allclose(acc.jvp(v.value()).numpy(), [.1, -.2, .3])
        v.assign_sub([0.5, 0.5, 0.5])                # not an operation with a tangent
        assert v.numpy().tolist() == [0.5, 1.5, 2.5]


def test_unconnected_gradients():
    x = tf.constant(-1.)
    with tf.ForwardAccumulator(x, 0.1) as acc:
        np.testing.assert_allclose(acc.jvp(x, unconnected_gradients='zero').numpy(), 0.1)
        np.testing.assert_allclose(acc.jvp(x, unconnected_gradients='none').numpy(), 0.1)
        y = tf.constant([-2., 1.])
        zero = acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        assert zero.numpy().tolist() == [0., 0.] and zero.dtype == np.float32
        assert acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.NONE) is None
        with pytest.raises(ValueError, match='unconnected_gradients'):
            acc.jvp(y, unconnected_gradients='sometimes')


def test_nested_structures_of_primals_tangents_and_results():
    a, b = tf.constant(np.array([1.0, 2.0])), tf.constant(3.0, dtype=tf.float64)
    primals = {'a': a, 'rest': [b]}
    tangents = {'a': [1.0, -1.0], 'rest': [np.float64(2.0)]}
    with tf.ForwardAccumulator(primals, tangents) as acc:
        y = {'sum': np.sum(a) * b, 'pair': (a * a, b * 2.0), 'none': None}
    out = acc.jvp(y)
    assert out['none'] is None
    np.testing.assert_allclose(out['sum'].numpy(), 0.0 * 3.0 + 3.0 * 2.0)
    np.testing.assert_allclose(out['pair'][0].numpy(), [2.0, -4.0])
    np.testing.assert_allclose(out['pair'][1].numpy(), 4.0)
    assert acc.jvp([a, b])[1].numpy() == 2.0


def test_integer_results_have_no_tangent():
    x = tf.constant([1.5, -2.0])
    with tf.ForwardAccumulator(x, [1.0, 1.0]) as acc:
        i = np.argmax(x)
        positive = x > 0
        y = x * tf.cast(positive, tf.float32)
    assert acc.jvp(i) is None and acc.jvp(positive) is None
    assert acc.jvp(y).numpy().tolist() == [1.0, 0.0]


def test_an_integer_primal_warns():
    i = tf.constant(3)
    with pytest.warns(UserWarning, match='floating'):
        acc = tf.ForwardAccumulator(i, 1)
    assert acc.jvp(i).numpy() == 1


def test_tape_stop_recording_keeps_the_nesting():
    c = tf.constant(1.)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(c)
        with tf.ForwardAccumulator(c, .1) as acc:
            with tape.stop_recording():
                ignored = np.cos(c)
            d = np.cos(c)
    assert tape.gradient(ignored, c) is None
    np.testing.assert_allclose(tape.gradient(acc.jvp(d), c).numpy(), -.1 * np.cos(1.), rtol=1e-6)


def test_accumulator_stop_recording():
    c = tf.constant(1.)
    with tf.ForwardAccumulator(c, 1.) as acc:
        with acc.stop_recording():
            a = c * 2.
        b = c * 2.
    assert acc.jvp(a) is None and acc.jvp(b).numpy() == 2.


def test_other_threads_are_not_seen():
    x = tf.constant(2.0)
    results = {}
    with tf.ForwardAccumulator(x, 1.0) as acc:
        thread = threading.Thread(target=lambda: results.setdefault('y', x * x))
        thread.start()
        thread.join()
        z = x * x
    assert acc.jvp(results['y']) is None and acc.jvp(z).numpy() == 4.0


# ---------------------------------------------------------------- custom nodes

def test_custom_gradient_is_transposed_to_all_orders():
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * tf.cos(x)
        return np.sin(x.numpy()), grad

    c = tf.constant([1., 2.])
    with tf.ForwardAccumulator(c, tf.constant([1., 3.])) as acc:
        y = f(c)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos([1., 2.]) * [1., 3.], rtol=1e-6)

    p = tf.constant(0.3)
    with tf.ForwardAccumulator(p, tf.constant(1.)) as outer:
        with tf.ForwardAccumulator(p, tf.constant(1.)) as inner:
            y = f(p)
    np.testing.assert_allclose(outer.jvp(inner.jvp(y)).numpy(), -np.sin(0.3), rtol=1e-6)


def test_exception_in_custom_gradient_is_not_swallowed():
    @tf.custom_gradient
    def f(unused_x):
        def grad(unused_dy):
            raise ValueError('test_error_string')
        return 1., grad

    c, d = tf.constant(1.), tf.constant(2.)
    with tf.ForwardAccumulator(c, d):
        with pytest.raises(ValueError, match='test_error_string'):
            f(c)


def test_record_node_uses_its_jvp_when_given_one():
    x = tf.constant(np.array([1.0, 2.0]))
    calls = []

    def jvp(tangents):
        calls.append(tangents)
        return [tangents[0] * 10.0]

    with tf.ForwardAccumulator(x, np.array([1.0, -1.0])) as acc:
        out = wrap(x.numpy() * 5.0)
        assert record_node([x], [out], lambda cts: [cts[0] * 5.0], jvp=jvp)
    assert len(calls) == 1
    assert acc.jvp(out).numpy().tolist() == [10.0, -10.0]


def test_record_node_with_a_numpy_backward():
    x = tf.constant(np.array([1.0, 2.0, 3.0]))
    m = np.arange(6.0).reshape(2, 3)

    def backward(cts):          # computes on NumPy values: cannot be differentiated
        return [m.T @ np.asarray(cts[0] if not isinstance(cts[0], tf.Tensor)
                                 else cts[0].numpy())]

    with tf.ForwardAccumulator(x, np.array([1.0, 0.0, 2.0])) as acc:
        out = wrap(m @ x.numpy())
        record_node([x], [out], backward)
    np.testing.assert_allclose(acc.jvp(out).numpy(), m @ [1.0, 0.0, 2.0])   # row by row

    with tf.ForwardAccumulator(x, np.ones(3)):
        with tf.ForwardAccumulator(x, np.ones(3)):
            out = wrap(m @ x.numpy())
            with pytest.raises(MissingRule, match='record_node'):
                record_node([x], [out], backward)


def test_compiled_functions_under_accumulators():
    @tf.function
    def g(x):
        return np.sum(np.sin(x) * x)

    xs, vs = np.array([1., 2., 3.]), np.array([1., 0., 2.])
    x, v = tf.constant(xs), tf.constant(vs)
    with tf.ForwardAccumulator(x, v) as acc:
        y = g(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.dot(np.cos(xs) * xs + np.sin(xs), vs))
    hvp = (2 * np.cos(xs) - xs * np.sin(xs)) * vs
    with tf.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        gx = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(gx).numpy(), hvp)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.ForwardAccumulator(x, v) as acc:
            y = g(x)
        directional = acc.jvp(y)
    np.testing.assert_allclose(tape.gradient(directional, x).numpy(), hvp)


# ---------------------------------------------------------------- errors

def test_tangent_shape_must_match():
    with pytest.raises(ValueError, match=r'was expected to be of shape \(2,\) but is instead '
                                         r'of shape \(3,\)'):
        tf.ForwardAccumulator(tf.constant([1., 2.]), tf.constant([1., 2., 3.]))
    with pytest.raises(ValueError, match='expected to be of shape'):
        tf.ForwardAccumulator(tf.constant([1., 2.]), 1.0)


def test_tangent_dtype_must_match():
    with pytest.raises(ValueError, match='float64.*float32|dtype'):
        tf.ForwardAccumulator(tf.constant([1., 2.]), tf.constant(np.array([1., 2.])))
    # Python numbers and NumPy arrays are converted to the primal's dtype, as in TF
    x = tf.constant(np.array([1., 2.]))
    acc = tf.ForwardAccumulator(x, [1, 2])
    assert acc.jvp(x).dtype == np.float64
    assert tf.ForwardAccumulator(x, np.array([1, 2], np.float32)).jvp(x).dtype == np.float64


def test_structures_must_match_and_primals_be_tensors():
    a, b = tf.constant(1.), tf.constant(2.)
    with pytest.raises(ValueError, match='structures'):
        tf.ForwardAccumulator([a, b], [1.])
    with pytest.raises(ValueError, match='structures'):
        tf.ForwardAccumulator({'a': a}, {'b': 1.})
    with pytest.raises(ValueError, match='not tf.Tensor or tf.Variable'):
        tf.ForwardAccumulator(np.ones(2), np.ones(2))


def test_missing_jvp_rule_names_the_function(monkeypatch):
    monkeypatch.delitem(RULES[np.sin].jvps, 0)
    x = tf.constant([1.0, 2.0])
    with tf.ForwardAccumulator(x, [1.0, 1.0]):
        with pytest.raises(MissingRule, match=r'forward-mode rule for argument 0 of numpy\.sin'):
            np.sin(x)
        np.sin(tf.constant(1.0))                        # no tangent: fine
    np.sin(x)                                           # no accumulator: fine


def test_a_function_without_any_rule_is_an_error():
    def double(a):
        return a * 2

    x = tf.constant([1.0, 2.0])
    with tf.ForwardAccumulator(x, [1.0, 1.0]):
        with pytest.raises(MissingRule, match='double'):
            apply(double, (x,), {})
        assert apply(double, (tf.constant(1.0),), {}).numpy() == 2.0


def test_a_broken_jvp_rule_is_reported(monkeypatch):
    monkeypatch.setitem(RULES[np.tanh].jvps, 0, lambda t, ans, x: np.sum(t))
    x = tf.constant([1.0, 2.0])
    with tf.ForwardAccumulator(x, [1.0, 1.0]):
        with pytest.raises(ValueError, match=r'numpy\.tanh gave a tangent of shape \(\)'):
            np.tanh(x)


def test_no_leak_of_recorders_after_errors():
    x = tf.constant(1.0)
    with pytest.raises(RuntimeError):
        with tf.ForwardAccumulator(x, 1.0):
            with tf.GradientTape():
                raise RuntimeError
    assert not tf.is_recording()
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert (x * x).numpy() == 1.0


# ---------------------------------------------------------------- the shared corpus

def _corpus():
    from tests.runtime.test_corpus_eager import EAGER, _tensor
    return EAGER, _tensor


@pytest.mark.parametrize('case', _corpus()[0], ids=lambda c: c.name)
def test_corpus_jvp_is_the_transpose_of_the_tape_vjp(case):
    _, as_tensor = _corpus()
    rng = np.random.default_rng(seed_of(case.name))
    args = case.args(rng)
    values = [as_tensor(a) if i in case.wrt else a for i, a in enumerate(args)]
    sources = [values[i] for i in case.wrt]
    directions = [rng.standard_normal(np.shape(args[i])) for i in case.wrt]
    with tf.ForwardAccumulator(sources, directions) as acc:
        out = case.fn(*values)
    jvp = acc.jvp(out, unconnected_gradients='zero')
    u = rng.standard_normal(np.shape(np.asarray(out)))
    with tf.GradientTape() as tape:
        tape.watch(sources)
        again = case.fn(*values)
    grads = tape.gradient(again, sources, output_gradients=u, unconnected_gradients='zero')
    np.testing.assert_allclose(np.sum(u * jvp.numpy()),
                               sum(np.sum(g.numpy() * d) for g, d in zip(grads, directions)),
                               rtol=1e-9, atol=1e-12)
