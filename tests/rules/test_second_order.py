"""Second order: each VJP rule, run on traced values and differentiated again
by the rules (what the eager tape does for Hessians), against finite
differences of the VJP itself."""
import warnings
import zlib

import numpy as np
import pytest

from rulecheck import A, Spec, pair, random_like, realize
from tapeflow.rules import RULES
from test_specs import ALL, _ids
from tracer import gradient, leaf, record


def _traceable(spec: Spec, i):
    marker = spec.args[i]
    return isinstance(marker, A) and not marker.complex_


SECOND = [spec for spec in ALL if spec.tensor and spec.second and any(
    _traceable(spec, i) for i in (spec.wrt or range(len(spec.args))))]


def _dot(r, w):
    if isinstance(r, (list, tuple)):
        total = 0.0
        for a, b in zip(r, w):
            total = total + _dot(a, b)
        return total
    return np.sum(r * w)


@pytest.mark.parametrize('spec', SECOND, ids=_ids(SECOND))
def test_vjp_rules_differentiate_correctly(spec):
    rng = np.random.default_rng(zlib.crc32(('2nd' + spec.id).encode()))
    args = [realize(a, rng) for a in spec.args]
    kwargs, entry = spec.kwargs, RULES[spec.fn]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        ans = spec.fn(*args, **kwargs)
        for i in spec.wrt or range(len(args)):
            if not _traceable(spec, i):
                continue
            u, w, dv = random_like(ans, rng), random_like(args[i], rng), random_like(args[i], rng)

            def s(x):
                moved = list(args)
                moved[i] = x
                return pair(entry.vjp(i)(u, spec.fn(*moved, **kwargs), *moved, **kwargs), w)

            x = leaf(args[i])
            traced_args = list(args)
            traced_args[i] = x
            traced_ans = record(spec.fn, tuple(traced_args), kwargs)
            second = gradient(_dot(entry.vjp(i)(u, traced_ans, *traced_args, **kwargs), w), x)
            h = 1e-5
            fd = (s(args[i] + h * dv) - s(args[i] - h * dv)) / (2 * h)
            got = pair(second, dv)
            assert abs(got - fd) <= 1e-5 + 1e-4 * max(abs(fd), abs(got)), \
                f'{spec.id} arg {i}: second order {got!r}, finite differences {fd!r}'
