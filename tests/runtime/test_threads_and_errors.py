"""Thread-locality of tapes, and the errors of the recording path."""
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.rules import RULES, MissingRule
from tapeflow.runtime.recording import apply


def test_operations_in_another_thread_are_not_recorded():
    x = tf.Variable(3.0)
    results = {}

    def other():
        results['recording'] = tf.is_recording()
        results['y'] = x * x

    with tf.GradientTape(persistent=True) as tape:
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        z = x * 2.0
    assert results['recording'] is False
    assert tape.gradient(results['y'], x) is None
    assert tape.gradient(z, x).numpy() == 2.0


def test_each_thread_has_its_own_tapes():
    errors, grads = [], {}

    def work(k):
        try:
            x = tf.Variable(float(k))
            with tf.GradientTape() as tape:
                y = x
                for _ in range(50):
                    y = y * 1.0 + x * 0.0
                y = y * y
            grads[k] = tape.gradient(y, x).numpy()
        except Exception as e:          # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and grads == {k: 2.0 * k for k in range(8)}


def test_a_numpy_function_without_a_rule_names_itself(monkeypatch):
    monkeypatch.delitem(RULES, np.multiply)
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape():
        with pytest.raises(MissingRule, match=r'numpy\.multiply.*argument 1'):
            np.multiply(2.0, x)
    assert np.multiply(2.0, x).numpy().tolist() == [2.0, 4.0]   # no tape: just computes


def test_a_function_without_a_rule_is_fine_on_unwatched_tensors():
    def double(a):
        return a * 2

    x, w = tf.constant([1.0, 2.0]), tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = apply(double, (x,), {})
        z = y * w
    assert y.numpy().tolist() == [2.0, 4.0] and tape.gradient(z, w).numpy() == 6.0
    with tf.GradientTape():
        with pytest.raises(MissingRule, match='double'):
            apply(double, (w,), {})


def test_results_without_derivative_are_not_errors():
    x = tf.Variable([1.5, -2.0])
    with tf.GradientTape() as tape:
        assert np.shape(x) == (2,)
        positive = x > 0
        idx = apply(np.argmax, (x,), {})       # integer result: nothing to differentiate
        y = x * 2.0
    assert positive.numpy().tolist() == [True, False] and idx.numpy() == 0
    assert tape.gradient(positive, x) is None


def test_a_missing_argument_rule_names_function_and_argument():
    prim = RULES[np.power]
    x = tf.Variable(2.0)
    saved = prim.vjps.pop(1)
    try:
        with tf.GradientTape() as tape:
            y = 3.0 ** x
        with pytest.raises(MissingRule, match=r'argument 1 of numpy\.power|argument 1 of operator\.pow'):
            tape.gradient(y, x)
    finally:
        prim.vjps[1] = saved


def test_tensor_keyword_arguments_are_moved_to_their_positions():
    def scale(a, factor=1.0):
        return a * factor

    RULES_BEFORE = dict(RULES)
    from tapeflow.rules.registry import defvjp
    defvjp(scale, lambda g, ans, a, factor=1.0: g * factor, lambda g, ans, a, factor=1.0: g * a)
    try:
        a, f = tf.Variable(2.0), tf.Variable(5.0)
        with tf.GradientTape() as tape:
            y = apply(scale, (a,), {'factor': f})
        assert y.numpy() == 10.0
        assert [g.numpy() for g in tape.gradient(y, [a, f])] == [5.0, 2.0]
    finally:
        RULES.clear()
        RULES.update(RULES_BEFORE)
