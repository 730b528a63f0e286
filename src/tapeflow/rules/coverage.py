"""Writes docs/numpy-support.md, the coverage table, from the rule registry.

    python -m tapeflow.rules.coverage            # rewrite the file
    python -m tapeflow.rules.coverage --check    # exit 1 if it is out of date

Every registered callable is listed under its public names (np.abs and
np.absolute are one function), grouped by the module that holds its rules,
with the arguments that carry a derivative and the argument forms the rules
support (`registry.FORMS`). A test keeps the file in step with the registry.
The file is the same whichever supported NumPy and Python write or check it:
names only some versions have (`registry.VERSION_DEPENDENT`) are listed apart,
from that table, and arguments are named as NumPy >= 2.4 names them, also
where an older NumPy gives its ufuncs and C functions no signature.
"""
from __future__ import annotations

import argparse
import builtins
import inspect
import itertools
import math
import operator
import re
import sys
import types
from pathlib import Path

import numpy as np

import tapeflow.rules  # noqa: F401  (fills the registry)
from tapeflow.rules import array_ops, numpy_methods, numpy_shape
from tapeflow.rules.registry import (ATTRIBUTES, FORMS, METHODS, RULES, VERSION_DEPENDENT,
                                     load_lazily)

DOC = Path(__file__).resolve().parents[3] / 'docs' / 'numpy-support.md'
SCIPY_HEADING = '## SciPy'
RESULTS = Path(__file__).resolve().parents[3] / 'benchmarks' / 'autograd_suite' / 'RESULTS.md'

load_lazily()               # the whole table, the optional families' too (SciPy's)

FAMILIES = [
    (('operators', 'powers'), 'Python operators and their ufunc twins'),
    ('numpy_elementwise', 'Elementwise, one argument'),
    ('numpy_binary', 'Elementwise, two arguments; where, clip'),
    (('numpy_reductions', 'numpy_statistics'), 'Reductions'),
    ('numpy_scans', 'Scans and differences'),
    ('numpy_order', 'Order statistics'),
    (('numpy_shape', 'numpy_constructors'), 'Shape and layout'),
    ('numpy_join', 'Joining and splitting'),
    ('indexing', 'Indexing and gathers'),
    ('array_ops', "tapeflow's own array primitives"),
    ('numpy_methods', 'ndarray methods without a NumPy function'),
    (('numpy_products', 'numpy_interp'), 'Products'),
    ('numpy_einsum', 'einsum'),
    (('numpy_linalg', 'numpy_norms'), 'np.linalg'),
    ('numpy_fft', 'np.fft'),
    (('math_rules', 'iterators', 'dicts'), 'The math module and numeric builtins'),
    ('scipy_special', 'scipy.special'),
    (('scipy_stats', 'scipy_stats_shapes', 'scipy_stats_mvn'), 'scipy.stats'),
    ('scipy_integrate', 'scipy.integrate'),
]
SCIPY_FAMILIES = ('scipy_special', 'scipy_stats', 'scipy_integrate')  # (a family's first module)


def _namespaces():
    spaces = [('np', np), ('np.linalg', np.linalg), ('np.fft', np.fft), ('math', math),
              ('operator', operator), ('builtins', builtins),
              ('tapeflow.rules.array_ops', array_ops),
              ('tapeflow.rules.numpy_shape', numpy_shape),
              ('tapeflow.rules.numpy_methods', numpy_methods)]
    try:
        import scipy.special
        from scipy.special import _ufuncs
        spaces += [('scipy.special', scipy.special), ('scipy.special._ufuncs', _ufuncs)]
        import scipy.integrate
        import scipy.stats
    except ImportError:  # pragma: no cover
        return spaces
    # the distributions whose methods have rules (norm: norm.logpdf...), as scipy.stats names them
    owners = {id(fn.__self__) for fn in RULES if isinstance(fn, types.MethodType)}
    spaces += [(f'scipy.stats.{name}', obj) for name, obj in sorted(vars(scipy.stats).items())
               if not name.startswith('_') and id(obj) in owners]
    return spaces + [('scipy.integrate', scipy.integrate)]


def public_names() -> dict:
    """identity(callable) -> its public names, in namespace order then alphabetical."""
    names: dict = {}
    for prefix, module in _namespaces():
        module_name = getattr(module, '__name__', prefix)
        for attr in sorted(dir(module)):
            if attr.startswith('_') and module_name != 'scipy.special._ufuncs':
                continue
            obj = getattr(module, attr, None)
            imported = getattr(obj, '__module__', None) != module_name
            if prefix.startswith('tapeflow.') and imported or \
                    f'{prefix}.{attr}' in VERSION_DEPENDENT:
                continue
            if callable(obj) and RULES.get(_key(obj)) is not None:
                names.setdefault(identity(obj), []).append((obj, f'{prefix}.{attr}'))
    return {key: _canonical_first(found) for key, found in names.items()}


def identity(obj):
    """The key of `obj` in `public_names`: its id, or for a bound method (read anew at each
    reading: `norm.logpdf`) the ids of its object and function."""
    if isinstance(obj, types.MethodType):
        return id(obj.__self__), id(obj.__func__)
    return id(obj)


def _canonical_first(found):
    """Names of one callable, the one matching its __name__ first (np.transpose,
    not np.permute_dims), then in namespace order."""
    own = getattr(found[0][0], '__name__', None)
    ordered = sorted(enumerate(found), key=lambda item: (item[1][1].rsplit('.', 1)[1] != own,
                                                         item[0]))
    return [name for _, (_, name) in ordered]


def _key(obj):
    try:
        hash(obj)
        return obj
    except TypeError:
        return None


def _family(entry):
    if entry.nondiff:
        return 'nondiff'
    for rules in (entry.vjps, entry.jvps):
        for rule in rules.values():
            how = getattr(rule, '__tapeflow_inline__', None)
            if isinstance(how, tuple):      # a helper's composition: the formula it was given
                rule = how[1]
            module = getattr(rule, '__module__', '') or ''
            if module.startswith('tapeflow.rules.'):
                return module.rsplit('.', 1)[1]
    return 'other'


def _argument_names(entry):
    argnums = sorted(set(entry.vjps) | set(entry.jvps))
    if len(argnums) > 8:
        return f'arguments {argnums[0]}..{argnums[-1]}'
    names = _positional_names(entry.fn)
    out = []
    for i in argnums:
        label = names[i] if i < len(names) else _rule_parameter(entry, i) or f'arg {i}'
        modes = ('' if i in entry.vjps else ' (forward only)') if i in entry.jvps \
            else ' (reverse only)'
        out.append(label + modes)
    return ', '.join(out)


def _rule_parameter(entry, i):
    """The rule's own name for argument `i` (after its g/t and ans), or ''."""
    names = _positional_names(entry.vjps.get(i) or entry.jvps[i])
    return names[i + 2] if i + 2 < len(names) else ''


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _positional_names(fn):
    """The names of `fn`'s leading positional parameters, as NumPy >= 2.4 gives them.

    Older NumPy gives its ufuncs and C functions no signature: a ufunc's
    parameters are x, or x1, x2...; a C function's docstring opens with its
    signature ('dot(a, b, out=None)'), read up to the first one that is not a
    plain name.
    """
    if fn is np.arange:             # NumPy >= 2.4 says `start_or_stop`, older ones `start`
        return ['start', 'stop', 'step']
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        pass
    else:
        return list(itertools.takewhile(str.isidentifier, (
            p.name if p.kind in _POSITIONAL else '' for p in params)))
    if isinstance(fn, np.ufunc):
        return ['x'] if fn.nin == 1 else [f'x{i}' for i in range(1, fn.nin + 1)]
    opening = re.match(rf'\s*{re.escape(getattr(fn, "__name__", ""))}\(([^)]*)', fn.__doc__ or '')
    if opening is None:
        return []
    items = opening.group(1).replace('[', '').replace(']', '').split(',')
    return list(itertools.takewhile(str.isidentifier, (item.strip() for item in items)))


def _rows(family, names):
    """The table rows of the modules `family` names (one, or a tuple of them)."""
    modules = family if isinstance(family, tuple) else (family,)
    rows = []
    for fn, entry in RULES.items():
        if _family(entry) not in modules:
            continue
        known = names.get(identity(fn))
        if not known:
            continue
        primary, *aliases = known
        also = ', '.join(f'`{a}`' for a in aliases)
        name = f'`{primary}`' + (f' (also {also})' if aliases else '')
        forms = FORMS.get(fn, '').replace('|', '\\|')
        rows.append((primary, f'| {name} | {_argument_names(entry)} | {forms} |'))
    return [row for _, row in sorted(rows)]


def _is_numpy(name):
    return name.startswith(('np.', 'np.linalg.', 'np.fft.'))


def counts(names=None):
    """(differentiable, non-differentiable) NumPy functions, counted once per callable."""
    names = public_names() if names is None else names
    diff = nondiff = 0
    for fn, entry in RULES.items():
        if _family(entry) == 'other':
            continue
        known = names.get(identity(fn), [])
        if any(_is_numpy(n) and not n.startswith('np.random.') for n in known):
            if entry.nondiff:
                nondiff += 1
            else:
                diff += 1
    return diff, nondiff


def render(include_scipy: bool = True) -> str:
    names = public_names()
    diff, nondiff = counts(names)
    aliases = sum(1 for fn, entry in RULES.items() if not entry.nondiff
                  for n in names.get(identity(fn), []) if _is_numpy(n))
    lines = [
        '# NumPy support',
        '',
        '<!-- Generated by `python -m tapeflow.rules.coverage` from the rule registry. '
        'Do not edit by hand: tests/rules/test_coverage_doc.py fails when it is stale. -->',
        '',
        f'tapeflow differentiates **{diff} NumPy functions** (`np.*`, `np.linalg.*`, '
        f'`np.fft.*`; {aliases} names counting aliases such as `np.abs`/`np.absolute`), '
        f'and knows {nondiff} more to be non-differentiable (plus `np.random`). Each has '
        'a reverse (VJP) and a forward (JVP) rule, checked against finite differences '
        'in `tests/rules`.',
        '',
        'Conventions: every binary rule sums its cotangent back over broadcast axes; a '
        'float32 input gets a float32 cotangent, a Python float a float, a list a list. '
        'Complex numbers pair bilinearly, Re(sum(cotangent * tangent)), as in autograd '
        'and JAX.',
        '',
    ]
    for family, title in FAMILIES:
        first = family[0] if isinstance(family, tuple) else family
        if first in SCIPY_FAMILIES and not include_scipy:
            continue
        rows = _rows(family, names)
        if not rows:
            continue
        if first == 'scipy_special':
            lines += [SCIPY_HEADING, '', 'Registered when SciPy is installed, at the first '
                      'derivative that needs them (`import tapeflow` does not import SciPy).',
                      '', f'### {title}', '']
        elif first == 'scipy_stats':
            lines += [f'### {title}', ''] + _STATS_NOTES
        elif first == 'scipy_integrate':
            lines += [f'### {title}', ''] + _INTEGRATE_NOTES
        else:
            lines += [f'## {title}', '']
        lines += ['| function | derivative in | argument forms |', '|---|---|---|'] + rows + ['']
    lines += _version_dependent_section() + _nondiff_section(names) + _methods_section()
    lines += _measured_section()
    return '\n'.join(lines).rstrip() + '\n'


_STATS_NOTES = [
    'Methods of the distribution objects, called as users write them (`from scipy.stats '
    'import norm`, then `norm.logpdf(x, mu, sigma)`), each with a reverse and a forward rule '
    'per positional argument. Outside a distribution\'s support, where a method is a '
    'constant, its derivative is 0. A keyword argument (`loc=`, `scale=`, `df=`) reaches the '
    'rules while it is not differentiated; differentiating one is refused at its line: pass '
    'it positionally (`norm.logpdf(x, mu, sigma)`, `t.logpdf(x, df, loc, scale)`). The cdf '
    'family of t, gamma and beta has no derivative in df, a or b (the incomplete beta and '
    'gamma functions in their parameters): an error at the call. Frozen distributions '
    '(`norm(mu, sigma).logpdf(x)`) have no rules. The eager tape refuses these calls (SciPy '
    'converts its arguments with np.asarray): call them inside a `tf.function`.',
    '']


_INTEGRATE_NOTES = [
    '`odeint(func, y0, t, args=(params,), rtol=..., atol=...)` as autograd\'s ode_net.py writes '
    'it: reverse mode by the adjoint method (the augmented system integrated backward by '
    'odeint, `tapeflow.vjp` of `func` at each step), forward mode by the sensitivity equations '
    '(`tapeflow.jvp` of `func`), both with the call\'s options, so their accuracy is set by '
    'rtol and atol as the solution\'s is. `args=` is differentiated as the positional '
    'argument; a `func` that reads values being differentiated from its enclosing function (a '
    'lambda) is differentiated in them. No second derivative (tf.jacrev and tf.jacobian work); '
    'the eager tape refuses the call (call it inside a `tf.function`).',
    '']


def _measured_section():
    """autograd's own tests run against tapeflow (`make autograd-suite` writes the
    section, with every test that did not pass and its reason)."""
    if not RESULTS.exists():
        return []
    return [RESULTS.read_text().rstrip(), '']


def _version_dependent_section():
    if not VERSION_DEPENDENT:
        return []
    rows = [f'| `{name}` | {versions} |' for name, versions in sorted(VERSION_DEPENDENT.items())]
    return ['## Names that only some NumPy or Python versions have', '',
            'Their rules are registered where the running NumPy or Python has the name. '
            'They are left out of the tables and counts above, so that this page reads the '
            'same on every supported version.', '',
            '| function | registered on |', '|---|---|'] + rows + ['']


def _nondiff_section(names):
    plain, random = [], 0
    for fn, entry in RULES.items():
        if not entry.nondiff:
            continue
        known = names.get(identity(fn), [])
        if any(n.startswith('np.random.') for n in known) or \
                getattr(fn, '__qualname__', '').startswith(('Generator.', 'RandomState.')):
            random += 1
        elif known and not known[0].startswith('tapeflow.'):
            plain.append(known[0])
    return ['## Non-differentiable', '',
            'Outputs carry no derivative; the compiler needs no adjoint for them:', '',
            ', '.join(f'`{n}`' for n in sorted(plain)) + '.', '',
            f'And all of `np.random` ({random} functions and `Generator`/`RandomState` '
            'methods).', '']


def _methods_section():
    names = public_names()

    def label(fn):
        known = names.get(identity(fn))
        return f'`{known[0]}`' if known else f'`{getattr(fn, "__name__", fn)}`'
    attrs = ', '.join(f'`x.{a}` → {label(fn)}' for a, fn in sorted(ATTRIBUTES.items()))
    methods = ', '.join(f'`x.{m}(...)` → {label(fn)}' for m, (fn, _) in sorted(METHODS.items()))
    return ['## ndarray attributes and methods', '', attrs + '.', '', methods + '.', '']


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='fail if the file is stale')
    parser.add_argument('--output', type=Path, default=DOC)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ''
        if current != text:
            print(f'{args.output} is out of date: run python -m tapeflow.rules.coverage')
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    diff, nondiff = counts()
    print(f'wrote {args.output}: {diff} differentiable NumPy functions, '
          f'{nondiff} non-differentiable')
    return 0


if __name__ == '__main__':
    sys.exit(main())
