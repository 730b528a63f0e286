"""First-compile time of a 50-line function (goal: under 50 ms).

The in-memory cache is cleared before every sample (`tapeflow.cache.clear()`)
and a fresh `tapeflow.grad` is made, so each sample parses, transforms and
loads the code anew; tapeflow's disk cache, where it has one, is turned off
in this process (`tapeflow.set_cache_dir(None)`; disk_cache.py measures it in
fresh processes). The figure is the first call minus a warm call, minimum
over samples (compile cost is deterministic; the minimum removes load noise).
"""
import math
import numpy as np

from harness import Row, finite_difference_check, import_tapeflow, now, short_reason


def fifty_lines(x, W, n, scale):
    h = np.tanh(W @ x)
    total = 0.0
    acc = 0.0
    for i in range(n):
        if i % 2 == 0:
            total = total + np.sum(h * h) * 0.5
        elif i % 3 == 0:
            total = total - 0.1 * np.sum(h)
        else:
            total = total + math.sin(float(i)) * np.sum(x)
        acc += 0.01 * total
    k = 0
    while k < 3:
        h = h * 0.9 + 0.1 * np.tanh(h)
        k += 1
    s = np.sum(np.exp(-h * h))
    y = x * scale
    z = y[1:] - y[:-1]
    r = np.sum(z * z)
    q = np.dot(x, x)
    if q > 1.0:
        r = r + np.log(q)
    else:
        r = r - q
    parts = []
    for j in range(4):
        parts.append(x[j] * x[j + 1])
    p = parts[0] + parts[1] * parts[2] - parts[3]
    m = np.max(h)
    e = np.exp(h - m)
    soft = e / np.sum(e)
    ent = -np.sum(soft * np.log(soft))
    u = W.T @ h
    v = np.sum(u * x) / (1.0 + np.sum(x * x))
    t = 0.0
    for a, b in zip(x[:5], h[:5]):
        t = t + a * b
    for idx, val in enumerate(x[:3]):
        t = t + idx * val
    c = 2.0 if s > 0.0 else 3.0
    w = (x ** 2).mean()
    g = math.exp(-0.5) * np.sum(np.sqrt(x * x + 1.0))
    d = -np.sum(x) / len(x)
    f2 = np.sum(np.cos(x)) * 0.1
    d = d + f2
    out = total + acc + s + r + p + ent + v + t + c * w + g + d
    out = out * 1.0
    if out != out:
        out = 0.0
    return out


def arguments():
    rng = np.random.default_rng(6)
    x = rng.standard_normal(16)
    W = rng.standard_normal((16, 16)) / 4.0
    return (x, W, 7, 1.5)


def first_call_cost(g, args, clock):
    """(time of the first call of `g` minus a warm call's, the gradient)."""
    start = clock()
    grad = g(*args)
    first = clock() - start
    start = clock()
    g(*args)
    return first - (clock() - start), grad


def rows(settings, log=print):
    row = Row('compile', 'first compile of a 50-line function (ms)', ('first compile',),
              unit='ms', baseline='first compile')
    cell = row.cells['first compile']
    try:
        tapeflow = import_tapeflow()
    except Exception as exc:  # noqa: BLE001
        cell.error = short_reason(exc)
        return [row]
    if hasattr(tapeflow, 'set_cache_dir'):
        tapeflow.set_cache_dir(None)
    args = arguments()
    samples = 3 if settings.quick else 7
    times = []
    try:
        for _ in range(samples):
            tapeflow.cache.clear()
            seconds, grad = first_call_cost(tapeflow.grad(fifty_lines), args, now)
            times.append(seconds)
    except Exception as exc:  # noqa: BLE001
        cell.error = short_reason(exc)
        return [row]
    ok, fd, an = finite_difference_check(fifty_lines, args, (0,), (grad,))
    if not ok:
        msg = f'!!! compile: gradient of the 50-line function disagrees with finite differences ' \
              f'(fd={fd:.8g}, tapeflow={an:.8g})'
        row.notes.append(msg)
        log(msg)
        cell.note = 'MISMATCH vs finite differences'
    cell.times = times
    cell.loops = 1
    nlines = len(__import__('inspect').getsource(fifty_lines).splitlines())
    row.extra['source_lines'] = nlines
    row.extra['samples_ms'] = [t * 1e3 for t in times]
    return [row]
