"""The fuzzer's programs on Dask arrays and on the CuPy stand-in (`tests/fuzz/libraries.py`
says what is checked): the library's plain value and the right gradient, or a refusal
located at a line of the program, never another number and never a crash.

Deterministic: the first programs of `python -m tests.fuzz.libraries --library L --seed 0`.
Thousands more: `python -m tests.fuzz.libraries --library dask --seed 0 --count 2000`.
"""
import numpy as np
import pytest

from tests.fuzz.libraries import run

PROGRAMS = {'duck': 120, 'dask': 60}


@pytest.mark.parametrize('library', sorted(PROGRAMS))
def test_library_fuzz(library, tmp_path):
    tally, failures = run(library, 0, PROGRAMS[library], str(tmp_path))
    assert not failures, [(index, kind, reason) for index, kind, reason, _ in failures[:3]]
    assert tally['ok'] >= PROGRAMS[library] // 4, tally     # most programs get through



def placed(y, z):
    c = y * 1.0
    np.place(c, c < 1.0, [np.sum(z)])
    return np.sum(np.tanh(c) * c) + np.sum(z * z)


def test_values_listing_a_librarys_scalars_are_read_in_that_library():
    """`np.place(c, mask, [np.sum(z)])` on the CuPy stand-in (the library fuzzer, seed
    8181): the list of the library's scalars is cycled, and its gradient gathered, in that
    library (it crashed converting them to NumPy)."""
    import tapeflow as tf
    from tests import duck_gpu
    from tests.gradcheck import check_gradient
    y, z = np.array([0.6, 1.4, 0.8, 1.2]), np.array([0.3, 0.7])
    value, grads = tf.value_and_grad(placed, argnums=(0, 1))(duck_gpu.asarray(y), duck_gpu.asarray(z))
    assert np.isclose(float(value.get()), placed(y, z), rtol=1e-12)
    check_gradient(placed, [g.get() for g in grads], (y, z), (0, 1), np.random.default_rng(2))


def placed_nowhere(y, z):
    c = y * 1.0
    np.place(c, c > 5.0, [np.sum(z)])           # (no element is over 5: nothing placed)
    return np.sum(c * c) + np.sum(z)


def test_values_placed_nowhere_on_the_stand_in():
    """The same with an empty mask (the library fuzzer, seed 12121: a crash cycling the
    values to no slot)."""
    import tapeflow as tf
    from tests import duck_gpu
    y, z = np.array([0.6, 1.4, 0.8]), np.array([0.3, 0.7])
    value, (gy, gz) = tf.value_and_grad(placed_nowhere, argnums=(0, 1))(
        duck_gpu.asarray(y), duck_gpu.asarray(z))
    assert np.isclose(float(value.get()), placed_nowhere(y, z), rtol=1e-12)
    assert np.allclose(gy.get(), 2.0 * y) and np.allclose(gz.get(), 1.0)


def diagonal_filled(x):
    a = np.zeros((3, 3))
    np.fill_diagonal(a, np.sum(x))
    return np.sum(x * a)


def test_an_index_dask_cannot_read_back_is_a_refusal_at_the_write():
    """np.fill_diagonal of a NumPy array with a Dask value (the library fuzzer, seed 14141):
    the gradient reads the written elements back from a Dask cotangent through a 2-d index,
    which Dask does not support; that is a refusal at the line of the write, not Dask's
    NotImplementedError."""
    da = pytest.importorskip('dask.array')
    import tapeflow as tf
    x = da.from_array(np.arange(1.0, 10.0).reshape(3, 3), chunks=3)
    with pytest.raises(tf.UnsupportedError) as caught:
        tf.value_and_grad(diagonal_filled)(x)
    line = diagonal_filled.__code__.co_firstlineno + 2
    assert f'{__file__}:{line}:' in str(caught.value) and 'dask array' in str(caught.value)
