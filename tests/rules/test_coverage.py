"""The registry covers what it promises: autograd's functions, 200+ NumPy
functions, a spec for every rule, methods that map to rules, an up-to-date
docs/numpy-support.md, and rule bodies the compiler can inline."""
import ast
import builtins
import functools
import inspect
import textwrap

import numpy as np

from tapeflow.rules import RULES, coverage, dicts
from tapeflow.rules.registry import ATTRIBUTES, METHODS, RULES_OF_RULES, VERSION_DEPENDENT
from test_specs import ALL

# What HIPS autograd 1.x differentiates (numpy_vjps.py, linalg.py, fft.py).
AUTOGRAD = """
nan_to_num add multiply subtract divide maximum minimum fmax fmin logaddexp logaddexp2
true_divide mod remainder power arctan2 hypot negative abs fabs absolute reciprocal exp exp2
expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh
arctanh rad2deg degrees deg2rad radians square sqrt sinc reshape roll array_split split vsplit
hsplit dsplit ravel expand_dims squeeze diag flipud fliplr rot90 trace full triu tril clip
swapaxes moveaxis rollaxis real_if_close real imag conj conjugate angle where cross linspace
astype diff gradient repeat tile kron transpose broadcast_to sum mean prod var std max min amax
amin cumsum inner matmul dot tensordot outer concatenate sort partition atleast_1d atleast_2d
atleast_3d einsum diagonal pad array stack hstack vstack dstack column_stack row_stack append
linalg.det linalg.slogdet linalg.inv linalg.pinv linalg.solve linalg.norm linalg.eigh
linalg.eig linalg.cholesky linalg.svd
fft.fft fft.ifft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfft fft.irfft fft.rfft2 fft.irfft2
fft.rfftn fft.irfftn fft.fftshift fft.ifftshift
""".split()
# autograd's np.msort: NumPy 2 removed the function itself.
NOT_IN_NUMPY = {'msort'}


def _resolve(name):
    obj = np
    for part in name.split('.'):
        obj = getattr(obj, part, None)
    return obj


def test_every_function_autograd_differentiates_has_rules():
    missing = []
    for name in AUTOGRAD:
        if _resolve(name) is None and f'np.{name}' in VERSION_DEPENDENT:
            continue  # np.row_stack on NumPy >= 2.5
        entry = RULES.get(_resolve(name))
        if entry is None or entry.nondiff or not entry.vjps or not entry.jvps:
            missing.append(name)
    assert not missing, f'autograd differentiates these, tapeflow does not: {missing}'
    assert all(not hasattr(np, name) for name in NOT_IN_NUMPY)


def test_at_least_200_numpy_functions_are_differentiable():
    diff, nondiff = coverage.counts()
    assert diff >= 200, diff
    assert nondiff >= 80, nondiff


def test_every_differentiable_rule_is_checked_by_a_spec():
    checked = {id(spec.fn) for spec in ALL}
    # Rules reached through an alias share their rule functions with a checked entry.
    checked_rules = {id(rule) for fn, entry in RULES.items() if id(fn) in checked
                     for rule in list(entry.vjps.values()) + list(entry.jvps.values())}
    unchecked = []
    for fn, entry in RULES.items():
        if entry.nondiff or id(fn) in checked or not _ours(entry) or fn in RULES_OF_RULES \
                or fn in MAKES_FUNCTIONS or fn in TAKES_FUNCTIONS or _constructed(fn, entry):
            continue            # (rules of rules: checked through the functions they serve)
        if all(id(rule) in checked_rules for rule in entry.vjps.values()):
            continue
        unchecked.append(entry.name)
    assert not unchecked, f'rules without a spec: {sorted(unchecked)}'


# Rules whose result is a function (a partial): checked through calls of what they make
# (tests/python/test_dynamic_calls.py), which a spec cannot perturb; and the rules of dicts,
# which a spec cannot hold: checked through the compiler in tests/python/test_dicts.py
# (`f(**a, **b)`'s spread_keywords: tests/python/test_star_signatures.py).
MAKES_FUNCTIONS = {functools.partial, builtins.dict, dicts.dict_values, dicts.dict_items,
                   dicts.dict_copy, dicts.dict_pairs, dicts.spread_keywords}


def _takes_functions():
    """Rules of functions that take a function (odeint's right-hand side), which a spec
    cannot perturb: checked through the compiler in tests/rules/test_scipy_integrate.py."""
    try:
        from scipy.integrate import odeint
    except ImportError:  # pragma: no cover - SciPy is optional
        return set()
    return {odeint}


TAKES_FUNCTIONS = _takes_functions()


def _constructed(fn, entry):
    """A user's class whose construction rules tapeflow made (`transforms.constructors`):
    checked through the compiler in tests/python/test_constructors.py."""
    return isinstance(fn, type) and all(
        rule.__name__.startswith(f'{fn.__name__}_vjp_') for rule in entry.vjps.values())


def _ours(entry):
    """Registered by tapeflow.rules (other tests register rules of their own)."""
    rules = list(entry.vjps.values()) + list(entry.jvps.values())
    return any((getattr(r, '__module__', '') or '').startswith('tapeflow.rules.') for r in rules)


def test_methods_and_attributes_map_to_registered_callables():
    for name, fn in ATTRIBUTES.items():
        assert RULES.get(fn) is not None, f'x.{name}'
    for name, (fn, _) in METHODS.items():
        assert RULES.get(fn) is not None, f'x.{name}()'
    for name in ('sum', 'mean', 'max', 'reshape', 'transpose', 'astype', 'dot', 'clip', 'T'):
        assert name in METHODS or name in ATTRIBUTES


def test_the_coverage_document_is_up_to_date():
    try:
        import scipy.special  # noqa: F401
        with_scipy = True
    except ImportError:  # pragma: no cover - the doc is written with SciPy present
        with_scipy = False
    current = coverage.DOC.read_text()
    if not with_scipy:
        start = current.index(coverage.SCIPY_HEADING)
        end = current.index('\n## ', start + 1)
        current = current[:start] + current[end + 1:]
    assert current == coverage.render(include_scipy=with_scipy), \
        'docs/numpy-support.md is stale: run  PYTHONPATH=src python -m tapeflow.rules.coverage'


def _inlinable(rule):
    """The single returned expression of a module-level def, or None."""
    if not inspect.isfunction(rule) or rule.__name__ == '<lambda>' \
            or rule.__qualname__ != rule.__name__:
        return None
    tree = ast.parse(textwrap.dedent(inspect.getsource(rule)))
    body = tree.body[0].body
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return tree.body[0]
    return None


def test_single_return_rules_refer_only_to_parameters_and_module_names():
    seen = 0
    for entry in RULES.values():
        for rule in list(entry.vjps.values()) + list(entry.jvps.values()):
            node = _inlinable(rule)
            if node is None:
                continue
            seen += 1
            params = {a.arg for a in node.args.args + node.args.kwonlyargs}
            params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
            expression = node.body[0]
            for sub in ast.walk(expression):
                if isinstance(sub, ast.comprehension):
                    params |= {n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name)}
                if isinstance(sub, ast.Lambda):
                    params |= {a.arg for a in sub.args.args}
            for name in ast.walk(expression):
                if isinstance(name, ast.Name):
                    known = name.id in params or name.id in rule.__globals__ \
                        or hasattr(builtins, name.id)
                    assert known, f'{rule.__module__}.{rule.__name__}: {name.id}'
    assert seen > 300


def test_every_rule_module_has_a_section_of_the_coverage_document():
    """A family module the docs' sections do not name would lose its rows silently."""
    sections = {module for family, _ in coverage.FAMILIES
                for module in (family if isinstance(family, tuple) else (family,))}
    public = coverage.public_names()
    listed = {coverage._family(entry) for fn, entry in RULES.items()
              if _ours(entry) and public.get(id(fn)) and fn not in RULES_OF_RULES}
    assert 'numpy_elementwise' in listed
    assert listed - {'nondiff', 'other'} <= sections, sorted(listed - sections)
