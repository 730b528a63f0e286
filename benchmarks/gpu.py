"""Gradients on a GPU: tapeflow on CuPy beside torch (CUDA) and JAX (jit), same device.

    python benchmarks/gpu.py [--repeat N]          (make bench-gpu)

W3 logistic regression (X 20000x1000), W4 a two-layer MLP (batch 4096,
1024 -> 1024 -> 10), W6 sum(sin(x)**2 * exp(-x)) over 5e7 elements: value and
gradient, milliseconds per call (the median of N calls after two warm-up
calls, each synchronised with the device), and the gradient of each library
compared with tapeflow's on the same inputs. A library that is not installed,
or sees no GPU, gets a line saying so; with no CuPy GPU there is nothing to time.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z)


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean(np.sum((out - Y) ** 2, axis=1))


def sine_decay(x):
    return np.sum(np.sin(x) ** 2 * np.exp(-x))


def workloads(rng):
    n = rng.standard_normal
    return [
        ('W3', 'logistic regression, X 20000x1000, d/dw', logistic_loss,
         (0.01 * n(1000), n((20000, 1000)), (rng.random(20000) < 0.5) * 1.0), (0,)),
        ('W4', 'MLP, batch 4096, 1024->1024->10, d/d(all weights)', mlp_loss,
         (0.03 * n((1024, 1024)), 0.1 * n(1024), 0.03 * n((1024, 10)), 0.1 * n(10),
          n((4096, 1024)), n((4096, 10))), (0, 1, 2, 3)),
        ('W6', 'sum(sin(x)**2 * exp(-x)), 5e7 elements', sine_decay,
         (rng.uniform(-1.0, 1.0, 50_000_000),), (0,)),
    ]


def timed(call, sync, repeat):
    for _ in range(2):
        out = call()
        sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, out


def host_of(value, to_numpy):
    if isinstance(value, (tuple, list)):
        return [host_of(v, to_numpy) for v in value]
    return to_numpy(value)


def same(a, b):
    a, b = (a if isinstance(a, list) else [a]), (b if isinstance(b, list) else [b])
    return all(np.allclose(x, y, rtol=1e-6, atol=1e-9) for x, y in zip(a, b))


def torch_path():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError('torch sees no CUDA device')
    functions = {'W3': lambda w, X, y: torch.mean(torch.log(1.0 + torch.exp(X @ w)) - y * (X @ w)),
                 'W4': lambda W1, b1, W2, b2, X, Y: torch.mean(torch.sum(
                     (torch.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2, dim=1)),
                 'W6': lambda x: torch.sum(torch.sin(x) ** 2 * torch.exp(-x))}

    def prepare(name, args, wrt):
        tensors = [torch.tensor(a, device='cuda', requires_grad=i in wrt) for i, a in enumerate(args)]
        fn = functions[name]

        def call():
            value = fn(*tensors)
            grads = torch.autograd.grad(value, [tensors[i] for i in wrt])
            return value, grads
        return call
    return prepare, torch.cuda.synchronize, lambda out: [g.cpu().numpy() for g in out[1]]


def jax_path():
    import jax
    import jax.numpy as jnp
    jax.config.update('jax_enable_x64', True)
    if jax.default_backend() != 'gpu':
        raise RuntimeError(f'JAX runs on {jax.default_backend()}, not a GPU')
    functions = {'W3': lambda w, X, y: jnp.mean(jnp.log(1.0 + jnp.exp(X @ w)) - y * (X @ w)),
                 'W4': lambda W1, b1, W2, b2, X, Y: jnp.mean(jnp.sum(
                     (jnp.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2, axis=1)),
                 'W6': lambda x: jnp.sum(jnp.sin(x) ** 2 * jnp.exp(-x))}
    state = {}

    def prepare(name, args, wrt):
        on_gpu = [jnp.asarray(a) for a in args]
        fn = jax.jit(jax.value_and_grad(functions[name], argnums=wrt))
        state['last'] = None

        def call():
            out = fn(*on_gpu)
            state['last'] = out
            return out
        return call
    return prepare, lambda: jax.block_until_ready(state.get('last')), \
        lambda out: [np.asarray(g) for g in out[1]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=20)
    options = parser.parse_args()
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError('no CUDA device')
        device = cp.cuda.runtime.getDeviceProperties(0)['name'].decode()
    except Exception as error:      # noqa: BLE001
        print(f'gpu benchmark: CuPy with a CUDA GPU is not available here ({error}); nothing to time')
        return
    print(f'gradients on {device}: value and gradient, ms per call (median of {options.repeat})')
    rng = np.random.default_rng(0)
    import tapeflow as tf
    others = {}
    for label, make in (('torch CUDA', torch_path), ('JAX jit', jax_path)):
        try:
            others[label] = make()
        except Exception as error:  # noqa: BLE001
            print(f'  {label}: not measured ({type(error).__name__}: {error})')
    print(f'  {"":4} {"tapeflow+CuPy":>14} ' + ' '.join(f'{k:>12}' for k in others) + '  workload')
    for name, what, fn, args, wrt in workloads(rng):
        on_gpu = tuple(cp.asarray(a) for a in args)
        grad = tf.value_and_grad(fn, argnums=wrt)
        ours_ms, (_, ours) = timed(lambda: grad(*on_gpu), cp.cuda.Device().synchronize, options.repeat)
        ours = [cp.asnumpy(g) for g in (ours if isinstance(ours, tuple) else (ours,))]
        cells = []
        for label, (prepare, sync, to_numpy) in others.items():
            try:
                ms, out = timed(prepare(name, args, wrt), sync, options.repeat)
                flag = '' if same(to_numpy(out), ours) else '!'
                cells.append(f'{ms:11.2f}{flag or " "}')
            except Exception as error:  # noqa: BLE001
                cells.append(f'{"fail":>12}')
                print(f'  {label} {name}: {type(error).__name__}: {error}')
        print(f'  {name:4} {ours_ms:14.2f} ' + ' '.join(cells) + f'  {what}')
    print('  (! : that library\'s gradient differs from tapeflow\'s)')


if __name__ == '__main__':
    main()
