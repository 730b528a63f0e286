"""Random numbers and recomputation (issue 30): every recomputation replays the random state
its forward sweep used.

Each path that runs user code again (a checkpointed loop's trips, a `tf.checkpoint`
function's forward in the reverse sweep, the forward sweep run again for a second
pullback of a function writing into its arguments, `linearize`'s `f_jvp`, forward mode
of a `custom_vjp`) is checked against the plain tape's gradient with the same seed,
against central differences with the random state reset before each evaluation, and
for the random state it leaves (the plain call's). A draw no rerun can replay is
refused where it is written.
"""
import functools
import random

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import NativeFallbackWarning

GLOBAL_RNG = np.random.default_rng(11)


class Config:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)


def central(f, x, reset, h=1e-6):
    """d f / dx (x a float) by central differences, the random state reset before each."""
    reset()
    up = f(x + h)
    reset()
    down = f(x - h)
    return (up - down) / (2 * h)


def numpy_seed(seed):
    return lambda: np.random.seed(seed)


# ------------------------------------------------------------------ checkpointed loops

def loop_numpy(x):
    s = 0.0
    for i in range(9):
        s = s + np.sin(x * np.random.rand()) * x
    return s


def loop_marked(x):
    s = 0.0
    for i in tf.checkpoint(range(7)):
        s = s + np.cos(s + x * np.random.normal())
    return s


def loop_while(x):
    s, k = 0.0, 0
    while k < 6:
        s = s + np.tanh(x * np.random.uniform(0.5, 1.5) + s)
        k = k + 1
    return s


@pytest.mark.parametrize('policy', [True, 1, 2, 3])
@pytest.mark.parametrize('f', [loop_numpy, loop_marked, loop_while])
def test_checkpointed_loop_drawing_from_numpy_replays_its_draws(f, policy):
    x = 0.8
    np.random.seed(3)
    plain = tf.value_and_grad(f)(x)
    after_plain = np.random.rand()
    np.random.seed(3)
    value, grad = tf.value_and_grad(f, checkpoint=policy)(x)
    after = np.random.rand()
    np.random.seed(3)
    assert value == f(x)
    assert np.isclose(value, plain[0], rtol=1e-14) and np.isclose(grad, plain[1], rtol=1e-12)
    assert np.isclose(grad, central(f, x, numpy_seed(3)), rtol=1e-6)
    assert after == after_plain             # the random state: as the plain call leaves it


def loop_generator(x, rng):
    s = x
    for i in range(8):
        s = s * 0.9 + x * rng.normal() * np.sin(s)
    return s


def loop_global_generator(x):
    s = 0.0
    for i in range(8):
        s = s + np.exp(-x * GLOBAL_RNG.random()) * x
    return s


def loop_object_generator(x, cfg):
    s = 0.0
    for i in range(8):
        s = s + np.sin(x * cfg.rng.standard_normal() + s)
    return s


def test_checkpointed_loop_drawing_from_a_generator_argument():
    x = 0.3
    value, grad = tf.value_and_grad(loop_generator, checkpoint=True)(x, np.random.default_rng(5))
    plain = tf.value_and_grad(loop_generator)(x, np.random.default_rng(5))
    assert value == loop_generator(x, np.random.default_rng(5))
    assert np.isclose(grad, plain[1], rtol=1e-12)
    assert np.isclose(grad, central(lambda v: loop_generator(v, np.random.default_rng(5)), x,
                                    lambda: None), rtol=1e-6)
    rng, same = np.random.default_rng(5), np.random.default_rng(5)
    tf.grad(loop_generator, checkpoint=2)(x, rng)
    loop_generator(x, same)
    assert rng.random() == same.random()       # the generator left as the plain call leaves it


def test_checkpointed_loop_drawing_from_a_global_generator():
    x = 0.6
    state = GLOBAL_RNG.bit_generator.state

    def reset():
        GLOBAL_RNG.bit_generator.state = state
    reset()
    plain = tf.value_and_grad(loop_global_generator)(x)
    reset()
    value, grad = tf.value_and_grad(loop_global_generator, checkpoint=True)(x)
    after = GLOBAL_RNG.random()
    reset()
    assert value == loop_global_generator(x) and after == GLOBAL_RNG.random()
    assert np.isclose(grad, plain[1], rtol=1e-12)
    assert np.isclose(grad, central(loop_global_generator, x, reset), rtol=1e-6)


def test_checkpointed_loop_drawing_from_a_generator_held_by_an_argument():
    x = 0.4
    plain = tf.value_and_grad(loop_object_generator)(x, Config(2))
    value, grad = tf.value_and_grad(loop_object_generator, checkpoint=True)(x, Config(2))
    assert value == loop_object_generator(x, Config(2))
    assert np.isclose(grad, plain[1], rtol=1e-12)
    assert np.isclose(grad, central(lambda v: loop_object_generator(v, Config(2)), x,
                                    lambda: None), rtol=1e-6)


def noise(x):
    return x * (1.0 + 0.1 * np.random.standard_normal()) + 0.01 * random.gauss(0.0, 1.0)


def loop_calling_a_drawing_helper(x):
    s = x
    for i in range(6):
        s = np.sin(noise(s)) + x
    return s


def test_checkpointed_loop_calling_a_function_that_draws():
    x = 0.7

    def reset():
        np.random.seed(9)
        random.seed(9)
    reset()
    plain = tf.value_and_grad(loop_calling_a_drawing_helper)(x)
    after_plain = (np.random.rand(), random.random())
    reset()
    value, grad = tf.value_and_grad(loop_calling_a_drawing_helper, checkpoint=True)(x)
    assert (np.random.rand(), random.random()) == after_plain
    reset()
    assert value == loop_calling_a_drawing_helper(x)
    assert np.isclose(grad, plain[1], rtol=1e-12)
    assert np.isclose(grad, central(loop_calling_a_drawing_helper, x, reset), rtol=1e-6)


def loop_unseeded(x):
    s = 0.0
    for i in range(4):
        rng = np.random.default_rng()
        s = s + x * rng.normal()
    return s


HIDDEN = functools.partial(lambda generator: generator, np.random.default_rng(1))


def loop_generator_from_a_call(x):
    s = 0.0
    for i in range(4):
        rng = HIDDEN()
        s = s + x * rng.normal()
    return s


def line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_a_draw_no_rerun_can_replay_is_refused_where_it_is_written():
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(loop_unseeded, checkpoint=True)(0.5)
    message = str(error.value)
    assert f'test_randomness.py:{line_of(loop_unseeded, "default_rng()")}:' in message
    assert 'cannot checkpoint this loop' in message and 'fresh entropy' in message
    assert 'give it a seed' in message
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(loop_generator_from_a_call, checkpoint=True)(0.5)
    message = str(error.value)
    assert f'test_randomness.py:{line_of(loop_generator_from_a_call, "rng.normal")}:' in message
    assert '.normal() of rng' in message and 'pass the generator in' in message
    # without checkpointing nothing is recomputed: both differentiate
    assert np.isfinite(tf.grad(loop_unseeded)(0.5))
    state = HIDDEN.args[0].bit_generator.state
    grad = tf.grad(loop_generator_from_a_call)(0.5)
    HIDDEN.args[0].bit_generator.state = state
    assert np.isclose(grad, loop_generator_from_a_call(1.0), rtol=1e-14)


# ------------------------------------------------------------------ tf.checkpoint functions

@tf.checkpoint
def noisy_layer(x):
    return np.tanh(x * (1.0 + np.random.rand()))


@tf.checkpoint
def noisy_with(x, rng):
    return np.sin(x * rng.uniform(0.5, 2.0))


def two_noisy_layers(x):
    y = noisy_layer(x)
    z = noisy_layer(y * 2.0)
    return z * x


def noisy_generator_layers(x, rng):
    return noisy_with(noisy_with(x, rng) + x, rng)


def test_a_checkpointed_function_that_samples_noise_draws_its_own_numbers_again():
    x = 0.7
    np.random.seed(3)
    value, grad = tf.value_and_grad(two_noisy_layers)(x)
    after = np.random.rand()
    np.random.seed(3)
    assert value == two_noisy_layers(x) and np.random.rand() == after
    assert np.isclose(grad, central(two_noisy_layers, x, numpy_seed(3)), rtol=1e-6)
    # the closed form, with the numbers the plain call drew
    np.random.seed(3)
    a, b = 1.0 + np.random.rand(), 1.0 + np.random.rand()
    y = np.tanh(x * a)
    z = np.tanh(2 * y * b)
    expected = z + x * (1 - z ** 2) * 2 * b * (1 - y ** 2) * a
    assert np.isclose(grad, expected, rtol=1e-12)


def test_a_checkpointed_function_drawing_from_a_generator_argument():
    x = 0.35
    value, grad = tf.value_and_grad(noisy_generator_layers)(x, np.random.default_rng(8))
    assert value == noisy_generator_layers(x, np.random.default_rng(8))
    assert np.isclose(grad, central(lambda v: noisy_generator_layers(v, np.random.default_rng(8)),
                                    x, lambda: None), rtol=1e-6)


@tf.checkpoint
def unseeded_layer(x):
    return x * np.random.default_rng().normal()


def calls_unseeded(x):
    return unseeded_layer(x) * 2.0


def test_a_checkpointed_function_drawing_fresh_entropy_is_refused():
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(calls_unseeded)(1.0)
    message = str(error.value)
    assert f'test_randomness.py:{line_of(unseeded_layer, "default_rng()")}:' in message
    assert 'unseeded_layer() again in the reverse sweep (tf.checkpoint)' in message


# ------------------------------------------------------------------ forward sweeps run again

def scaled_in_place(x):
    x *= 1.0 + np.random.rand(3)
    return np.sum(np.sin(x))


def test_a_second_pullback_runs_the_forward_again_with_its_draws():
    x = np.array([0.3, -0.2, 0.9])
    np.random.seed(4)
    m = 1.0 + np.random.rand(3)
    np.random.seed(4)
    _, pullback = tf.vjp(scaled_in_place, x.copy())
    first, second = pullback(1.0)[0], pullback(1.0)[0]
    assert np.allclose(first, np.cos(x * m) * m, rtol=1e-13)
    assert np.array_equal(first, second)


def test_a_fused_node_run_again_under_a_persistent_tape_draws_the_same_numbers():
    f = tf.function(scaled_in_place)
    x = np.array([0.3, -0.2, 0.9])
    np.random.seed(6)
    m = 1.0 + np.random.rand(3)
    np.random.seed(6)
    t = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(t)
        y = f(t)
    first, second = tape.gradient(y, t).numpy(), tape.gradient(y, t).numpy()
    assert np.allclose(first, np.cos(x * m) * m, rtol=1e-13)
    assert np.array_equal(first, second)


def sample_sine(x):
    return np.sin(x * np.random.rand(3))


def test_linearize_draws_at_each_call_what_its_output_drew():
    x = np.array([0.5, 1.0, 1.5])
    np.random.seed(2)
    out, f_jvp = tf.linearize(sample_sine, x)
    after = np.random.rand()
    np.random.seed(2)
    r = np.random.rand(3)
    assert np.array_equal(out, np.sin(x * r)) and np.random.rand() == after
    t = np.array([1.0, -2.0, 0.5])
    assert np.allclose(f_jvp(t), np.cos(x * r) * r * t, rtol=1e-13)
    assert np.array_equal(f_jvp(t), f_jvp(t))


# ------------------------------------------------------------------ the native path

def draws_once(x):
    return np.sin(x * np.random.rand())


def test_the_native_path_refuses_a_random_draw_and_auto_falls_back():
    pytest.importorskip('numba')
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(draws_once, compile='numba')(0.7)
    message = str(error.value)
    assert f'test_randomness.py:{line_of(draws_once, "np.random.rand")}:' in message
    assert "Numba makes from its own generator" in message
    np.random.seed(1)
    with pytest.warns(NativeFallbackWarning):
        grad = tf.grad(draws_once, compile='auto')(0.7)
    np.random.seed(1)
    r = np.random.rand()
    assert grad == np.cos(0.7 * r) * r
