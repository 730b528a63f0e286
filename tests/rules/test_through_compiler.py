"""Every rule through the compiler: `tapeflow.grad` of a small user function
`np.sum(fn(x, ...) * w)`, written to a module file as a user would, against
central finite differences of that function. One spec per primitive (the
first of the table), to keep the run short."""
import itertools
import warnings
import zlib

import numpy as np
import pytest

import tapeflow as tf
from rulecheck import A, F, L, Spec, realize
from test_specs import ALL, _ids
from tests.user_module import write_module


def _plain_markers(spec):
    def ok(m):
        return (isinstance(m, A) and not m.complex_) or isinstance(m, F) or \
            (isinstance(m, L) and all(ok(i) for i in m.items) and not m.tuple_)
    return all(ok(m) for m in spec.args if isinstance(m, (A, F, L))) and spec.wrt is None


def _first_per_function(specs):
    seen, out = set(), []
    for spec in specs:
        if id(spec.fn) not in seen and _plain_markers(spec):
            seen.add(id(spec.fn))
            out.append(spec)
    return out


COMPILED = _first_per_function(ALL)
# runtime/support.add_adjoint rebuilds a namedtuple cotangent (SlogdetResult,
# EighResult...) with type(a)(generator), which namedtuples refuse.
NAMEDTUPLE_OUTPUTS = {np.linalg.slogdet, np.linalg.eigh, np.linalg.eig, np.linalg.svd}
_counter = itertools.count()


def _user_module(spec, tmp_path, n_outputs, complex_out):
    """A module with `user(x0, x1, ...)` calling spec.fn as a user would."""
    params, call_args, consts = [], [], {}
    for k, marker in enumerate(spec.args):
        if isinstance(marker, L):
            names = [f'x{k}_{j}' for j in range(len(marker.items))]
            params += names
            call_args.append('[' + ', '.join(names) + ']')
        elif isinstance(marker, (A, F)):
            params.append(f'x{k}')
            call_args.append(f'x{k}')
        else:
            consts[f'C{k}'] = marker
            call_args.append(f'C{k}')
    for key, value in spec.kwargs.items():
        consts[f'K_{key}'] = value
        call_args.append(f'{key}=K_{key}')
    body = [f'def user({", ".join(params)}):', f'    out = FN({", ".join(call_args)})']
    if n_outputs is None:
        body.append('    return np.sum(np.real(out * W0))' if complex_out else
                    '    return np.sum(out * W0)')
    else:
        terms = [f'np.sum(np.real(out[{i}] * W{i}))' for i in range(n_outputs)]
        body.append('    return ' + ' + '.join(terms))
    name = f'user_{next(_counter)}'
    module = write_module(tmp_path, name, 'import numpy as np\n\n\n' + '\n'.join(body) + '\n')
    module.FN = spec.fn
    for key, value in consts.items():
        setattr(module, key, value)
    return module


def _flat_args(spec, args):
    out = []
    for marker, value in zip(spec.args, args):
        if isinstance(marker, L):
            out += list(value)
        elif isinstance(marker, (A, F)):
            out.append(value)
    return out


@pytest.fixture(scope='module')
def module_dir(tmp_path_factory):
    return tmp_path_factory.mktemp('user_modules')


def _marks(spec):
    return []


@pytest.mark.parametrize('spec', [pytest.param(s, marks=_marks(s)) for s in COMPILED],
                         ids=_ids(COMPILED))
def test_grad_of_a_user_function_calling_the_rule(spec, module_dir):
    tmp_path = module_dir
    rng = np.random.default_rng(zlib.crc32(('compiled' + spec.id).encode()))
    args = [realize(a, rng) for a in spec.args]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        out = spec.fn(*args, **spec.kwargs)
        outputs = list(out) if isinstance(out, (tuple, list)) else None
        complex_out = any(np.iscomplexobj(o) for o in (outputs or [out]))
        if any(np.max(np.abs(o), initial=0.0) > 1e100 for o in (outputs or [out])):
            return   # nan_to_num(inf): a loss of 1e308 leaves finite differences nothing
        module = _user_module(spec, tmp_path, None if outputs is None else len(outputs),
                              complex_out)
        for i, o in enumerate(outputs or [out]):
            w = rng.standard_normal(np.shape(o))
            if np.iscomplexobj(o):
                w = w + 1j * rng.standard_normal(np.shape(o))
            setattr(module, f'W{i}', w)
        flat = _flat_args(spec, args)
        argnums = tuple(range(len(flat)))
        grads = tf.grad(module.user, argnums=argnums)(*flat)
        for k, (x, gx) in enumerate(zip(flat, grads)):
            assert np.shape(gx) == np.shape(x), f'{spec.id}: gradient {k} has shape {np.shape(gx)}'
            v = rng.standard_normal(np.shape(x)) if np.ndim(x) else float(rng.standard_normal())
            h = 1e-6
            plus, minus = list(flat), list(flat)
            plus[k], minus[k] = x + h * v, x - h * v
            fd = (module.user(*plus) - module.user(*minus)) / (2 * h)
            got = float(np.sum(gx * v))
            assert abs(got - fd) <= 1e-6 + 1e-5 * max(abs(fd), abs(got), 1.0), \
                f'{spec.id}: gradient {k}: {got!r} vs finite differences {fd!r}'
