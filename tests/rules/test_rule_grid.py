"""The rule grid: every registered rule through the compiler, to second order in both
modes (third order for the elementwise functions), on the spec table's inputs.

For each function of the spec table (`test_specs.ALL`) its first spec with real
inputs and its first with complex inputs, called from a small user module as a
user would (`user(x0, x1, ...)`, lists as lists, constants as globals), checked by
`gradcheck.check_grads`: reverse and forward mode against central differences,
and again on the functions (x, v) -> vjp(f, x)(v) and (x, v) -> jvp(f, x, v), so
every rule's own rules are differentiated by the compiler too. Specs at a kink
(`second=False`) are checked to first order.
"""
import itertools
import os
import warnings
import zlib

import numpy as np
import pytest

from rulecheck import A, F, L, realize
from specs_elementwise import SPECS as ELEMENTWISE
from test_specs import ALL, _ids
from tests.gradcheck import check_grads
from tests.user_module import write_module

_ELEMENTWISE = {id(spec.fn) for spec in ELEMENTWISE}


def _is_complex(spec):
    def has(m):
        return (isinstance(m, A) and m.complex_) or (isinstance(m, L) and any(map(has, m.items)))
    return any(has(m) for m in spec.args)


def _grid():
    chosen, seen = [], set()
    for spec in ALL:
        key = (id(spec.fn), _is_complex(spec))
        if key in seen or spec.wrt is not None:
            continue
        seen.add(key)
        order = 1 if not spec.second else \
            (3 if id(spec.fn) in _ELEMENTWISE and not key[1] else 2)
        chosen.append((spec, order))
    return chosen


# Every eighth entry runs in `make test` (about 90 s on 2 cores); the whole grid is
# `TAPEFLOW_RULE_GRID=all`, `make rule-grid` (about 10 minutes).
_STRIDE = 1 if os.environ.get('TAPEFLOW_RULE_GRID') == 'all' else 8
GRID = _grid()[::_STRIDE]
_counter = itertools.count()


def _module(spec, tmp_path):
    """`packed(p)`: spec.fn called with the differentiated inputs p[0], p[1], ..."""
    params, call_args, consts = [], [], {}
    for k, marker in enumerate(spec.args):
        if isinstance(marker, L) and not _structured(marker):
            names = [f'x{k}_{j}' for j in range(len(marker.items))]
            params += names
            call_args.append(('(' if marker.tuple_ else '[') + ', '.join(names)
                             + (',)' if marker.tuple_ else ']'))
        elif isinstance(marker, (A, F, L)):        # (a NamedTuple: passed whole, a pytree)
            params.append(f'x{k}')
            call_args.append(f'x{k}')
        else:
            consts[f'C{k}'] = marker
            call_args.append(f'C{k}')
    for key, value in spec.kwargs.items():
        consts[f'K_{key}'] = value
        call_args.append(f'{key}=K_{key}')
    packed = ', '.join(f'p[{i}]' for i in range(len(params)))
    text = (f'import numpy as np\n\n\ndef user({", ".join(params)}):\n'
            f'    return FN({", ".join(call_args)})\n\n\n'
            f'def packed(p):\n    return user({packed})\n')
    name = f'grid_{next(_counter)}'
    module = write_module(tmp_path, name, text)
    module.FN = spec.fn
    for key, value in consts.items():
        setattr(module, key, value)
    return module


def _structured(marker):
    return isinstance(marker.tuple_, type)


def _flat(spec, args):
    out = []
    for marker, value in zip(spec.args, args):
        if isinstance(marker, L) and not _structured(marker):
            out += list(value)
        elif isinstance(marker, (A, F, L)):
            out.append(value)
    return tuple(out)


@pytest.fixture(scope='module')
def module_dir(tmp_path_factory):
    return tmp_path_factory.mktemp('grid_modules')


@pytest.mark.parametrize('spec, order', GRID, ids=_ids([s for s, _ in GRID]))
def test_rule_to_higher_order_in_both_modes(spec, order, module_dir):
    rng = np.random.default_rng(zlib.crc32(('grid' + spec.id).encode()))
    args = [realize(a, rng) for a in spec.args]
    module = _module(spec, module_dir)
    x = _flat(spec, args)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        check_grads(module.packed, x, rng, order=order, eps=spec.eps,
                    rtol=max(spec.rtol * 10, 1e-4), atol=max(spec.atol * 10, 1e-6),
                    what=spec.id)
