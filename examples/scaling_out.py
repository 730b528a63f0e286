"""The gradient of a loss over data on disk, read chunk by chunk with Dask.

The data is a memory-mapped `.npy` file; each chunk of rows is read from the file
by the worker that computes on it, so the data never has to fit in memory (nor
travel in the task graph). tapeflow differentiates the plain NumPy
loss: on Dask arrays the gradient is a lazy Dask array, a graph of per-chunk
work that `dask.compute` runs, here on a local cluster of two worker processes
(`--threads` runs it in this process instead). For a cluster of several
machines, connect the client to its scheduler instead:
`Client('tcp://scheduler-host:8786')`; the rest is unchanged.

    python examples/scaling_out.py [--rows N] [--threads]
"""
import argparse
import logging
import os
import tempfile

import dask
import dask.array as da
import numpy as np

import tapeflow as tf


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z)


def write_data(path, rows, features, rng):
    """A memory-mapped file of `rows` examples, written a block at a time."""
    X = np.lib.format.open_memmap(path + '.X.npy', mode='w+', dtype=np.float64, shape=(rows, features))
    y = np.lib.format.open_memmap(path + '.y.npy', mode='w+', dtype=np.float64, shape=(rows,))
    truth = rng.standard_normal(features)
    for start in range(0, rows, 50_000):
        block = rng.standard_normal((min(50_000, rows - start), features))
        X[start:start + len(block)] = block
        y[start:start + len(block)] = rng.random(len(block)) < 1 / (1 + np.exp(-block @ truth))
    X.flush(), y.flush()
    return path + '.X.npy', path + '.y.npy'


def read_rows(path, start, stop):
    return np.load(path, mmap_mode='r')[start:stop]


def on_disk(path, chunk):
    """A Dask array over the `.npy` file at `path`, a chunk of `chunk` rows per task."""
    header = np.load(path, mmap_mode='r')
    shape, dtype = header.shape, header.dtype
    blocks = [da.from_delayed(dask.delayed(read_rows)(path, start, min(start + chunk, shape[0])),
                              shape=(min(start + chunk, shape[0]) - start,) + shape[1:], dtype=dtype)
              for start in range(0, shape[0], chunk)]
    return da.concatenate(blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=200_000)
    parser.add_argument('--threads', action='store_true', help='no cluster: threads in this process')
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as directory:
        x_path, y_path = write_data(os.path.join(directory, 'data'), options.rows, 20, rng)
        X, y = on_disk(x_path, 50_000), on_disk(y_path, 50_000)
        value_and_grad = tf.value_and_grad(logistic_loss)
        w = np.zeros(20)
        loss, g = value_and_grad(w, X, y)
        print(f'gradient: a lazy {type(g).__module__.split(".")[0]} array of {g.npartitions} '
              f'chunk(s) over {X.npartitions} chunks of data')
        client = None
        if not options.threads:
            from distributed import Client, LocalCluster
            # (silence_logs: a worker's heartbeat can race the shutdown and log an error)
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                   silence_logs=logging.CRITICAL)
            client = Client(cluster)
            print(f'computing on a local cluster of {len(client.scheduler_info()["workers"])} workers')
        try:
            for step in range(5):
                loss, g = dask.compute(*value_and_grad(w, X, y))
                print(f'step {step}  loss {loss:.6f}')
                w = w - 2.0 * g
            in_memory = tf.grad(logistic_loss)(w, np.load(x_path), np.load(y_path))
            lazy = tf.grad(logistic_loss)(w, X, y).compute()
            print(f'largest difference from the in-memory gradient: {np.max(np.abs(lazy - in_memory)):.1e}')
        finally:
            if client is not None:
                client.close()
                cluster.close()


if __name__ == '__main__':
    main()
