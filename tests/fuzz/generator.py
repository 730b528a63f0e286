"""Programs: a module with helpers and one entry `def f(...)` returning a float.

`generate(choices)` draws the parameters (arrays of small shapes, floats,
lists), which of them are differentiated, a seed for their values, the body
of `f` from the grammar, and a return that sums several live values so that
every write matters. `programs()` is the same generator as a Hypothesis
strategy.
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np

from . import grammar
from .choices import HypothesisChoices, RandomChoices
from .grammar import Line
from .scope import Array, ArrayList, Dict, Float, FloatList, Fn, FnList, Index, Namespace, Scope, Tuple

PARAMETER_TYPES = ((Array((3,)), 3), (Float(), 3), (Array((2, 3)), 2), (Array((4,)), 2),
                   (Array((3, 3)), 2), (FloatList(3), 1), (ArrayList((3,), 2), 1))
PARAMETER_NAMES = ('x', 'y', 'z', 'w')
LOCAL_NAMES = {Array: 'abcdegh', Float: 'stu', Index: 'ijkl',
               FloatList: ('ys', 'zs', 'vs'), ArrayList: ('rows', 'cols', 'mats'),
               FnList: ('fns', 'ops', 'layers'), Tuple: ('state', 'tup', 'pair'),
               Dict: ('d', 'memo', 'cache', 'params'), Namespace: ('st', 'ns', 'obj')}
MODULE_CONSTRUCTS = ('shadow_range',)    # written at the module's top, not by the grammar
LOW, HIGH = 0.5, 1.5        # every input in here: smooth, no division near 0, no ties
# what the oracle checks beside the gradient: forward mode (jvp along a direction against
# central differences), then also second order (hvp against differences of the gradient)
CHECKS = (('reverse', 6), ('forward', 3), ('second', 1))


@dataclasses.dataclass
class Program:
    source: str
    params: tuple           # (name, type) pairs
    wrt: tuple              # positions differentiated
    value_seed: int
    tags: tuple             # the construct that wrote each line (line n: tags[n - 1])
    used: collections.Counter
    record: list | None = None   # the choices that made it (seeded and replayed programs)
    spans: list = ()             # (start, end) in `record` of each statement's choices
    checks: str = 'reverse'      # 'reverse', 'forward' (and reverse), 'second' (and both)

    def args(self):
        """Fresh arguments (the same ones every call)."""
        rng = np.random.default_rng(self.value_seed)
        return [make_value(t, rng) for _, t in self.params]

    def __str__(self):
        return (f'{self.source}\n# args = {literal(self.args())}\n# argnums = {self.wrt}\n'
                f'# checks = {self.checks}\n')

    def _repr_pretty_(self, printer, cycle):
        """How Hypothesis prints a failing program: as its source and arguments."""
        printer.text('\n' + str(self))


def make_value(t, rng):
    if isinstance(t, Float):
        return float(rng.uniform(LOW, HIGH))
    if isinstance(t, Array):
        return rng.uniform(LOW, HIGH, t.shape)
    if isinstance(t, FloatList):
        return [float(v) for v in rng.uniform(LOW, HIGH, t.length)]
    return [rng.uniform(LOW, HIGH, t.shape) for _ in range(t.length)]


def literal(value) -> str:
    """Python source that rebuilds `value` exactly (floats, arrays, lists of them)."""
    if isinstance(value, (list, tuple)):
        inner = ', '.join(literal(v) for v in value)
        return f'[{inner}]' if isinstance(value, list) else f'({inner},)'
    if isinstance(value, np.ndarray):
        return f'np.array({value.tolist()!r})'
    return repr(float(value)) if isinstance(value, (float, np.floating)) else repr(value)


class Writer:
    """What the constructs see: the choices, fresh names, the module's helpers."""

    def __init__(self, choices, constructs):
        self.c, self.constructs = choices, constructs
        self.taken: set[str] = set()
        self.helpers: dict[str, list] = {}
        self.used = collections.Counter()
        self.imports: set[str] = set()     # modules beside numpy the program's lines use

    def fresh(self, t) -> str:
        pool = LOCAL_NAMES[type(t)]
        for name in list(pool) + [f'{pool[0]}{k}' for k in range(1, 1000)]:
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise AssertionError('out of names')

    def fresh_function(self, stem) -> str:
        k = 1
        while f'{stem}{k}' in self.taken:
            k += 1
        self.taken.add(f'{stem}{k}')
        return f'{stem}{k}'

    def define(self, name, lines):
        """A module-level helper (once; tagged with the construct being written)."""
        if name not in self.helpers:
            self.taken.add(name)
            self.helpers[name] = lines

    def block(self, scope, least=1, most=3, more=0.5):
        return grammar.block(self, scope, least, most, more)

    def body(self, scope, most=3, more=0.5):
        """A block of at least one statement (`pass` if nothing applied)."""
        return self.block(scope, 1, most, more) or ['pass']

    indent = staticmethod(grammar.indent)


def generate(choices, weights=None) -> Program:
    """One program, every decision drawn from `choices`."""
    c = choices
    g = Writer(c, grammar.table(weights))
    types = [c.weighted(PARAMETER_TYPES) for _ in range(c.integer(1, 3))]
    params = tuple((parameter_name(t, k), t) for k, t in enumerate(types))
    g.taken.update(name for name, _ in params)
    wrt = tuple(k for k in range(len(params)) if not c.chance(0.2)) or (0,)
    value_seed = c.integer(0, 2**31 - 1)
    checks = c.weighted(CHECKS)
    scope = Scope(params)
    body = g.block(scope, 1, 12, 0.85)
    body.append(Line(f'return {return_value(c, scope)}', 'return'))
    # module flags: a branch on a global is read when the code runs (a pushed test was
    # once taken for a local and set to None, and `if FLAG_ON:` never ran)
    lines = [Line(f'import {name}', 'module') for name in sorted(g.imports)]
    lines += [Line('import numpy as np', 'module'), Line('', 'module'),
              Line('FLAG_ON = True', 'module'), Line('FLAG_OFF = False', 'module'),
              Line('', 'module')]
    if c.chance(0.15):
        # a global named like a name of the generated code: the user's loops run their
        # trips backwards, the generated code's own `range` must stay the builtin
        g.used['shadow_range'] += 1
        lines += [Line(text, 'shadow_range') for text in (
            'import builtins', '', '', 'def range(*bounds):',
            '    return builtins.range(*bounds)[::-1]', '')]
    for name, helper in g.helpers.items():
        lines += [Line('', 'module')] + [Line(text, f'def {name}') if isinstance(text, str) else text
                                         for text in helper] + [Line('', 'module')]
    signature = ', '.join(name for name, _ in params)
    lines += [Line('', 'module'), Line(f'def f({signature}):', 'def f')] + grammar.indent(body)
    source = '\n'.join(line.text for line in lines) + '\n'
    return Program(source, params, wrt, value_seed, tuple(line.construct for line in lines),
                   g.used, getattr(c, 'record', None), c.spans, checks)


def seeded(seed, index, weights=None) -> Program:
    """Program `index` of the run with seed `seed` (`make fuzz`), independent of the others."""
    return generate(RandomChoices(f'{seed}/{index}'), weights)


def parameter_name(t, k) -> str:
    name = PARAMETER_NAMES[k]
    return name + 's' if isinstance(t, (FloatList, ArrayList)) else name


def return_value(c, scope) -> str:
    """A sum of terms over several live values, the ones written last first."""
    live = [n for n in scope.names(lambda t: not isinstance(t, (Index, Fn, FnList)))
            if getattr(scope.vars[n], 'length', 1) > 0]
    recent = [n for n in reversed(scope.touched) if n in live][:3]
    others = [n for n in live if n not in recent]
    chosen = recent + c.sample(others, c.integer(0 if recent else 1, 2))
    return ' + '.join(term(c, name, scope.vars[name]) for name in chosen)


def term(c, name, t) -> str:
    if isinstance(t, Array):
        return c.pick(('np.sum({0} * {0})', 'np.sum(np.sin({0}))', 'np.sum({0})',
                       'np.sum(np.tanh({0}) * {0})')).format(name)
    if isinstance(t, Float):
        return c.pick(('{0}', '{0} * {0}', 'np.sin({0})')).format(name)
    if isinstance(t, FloatList):
        return c.pick(('sum({0})', '{0}[-1]', 'max({0})', '{0}[0] * {0}[-1]')).format(name)
    if isinstance(t, Tuple) and isinstance(t.element, Float):
        return c.pick(('sum({0})', '{0}[-1]', '{0}[0] * {0}[-1]')).format(name)
    if isinstance(t, Namespace):
        attr, kind = c.pick(t.attrs)
        return term(c, f'{name}.{attr}', kind)
    if isinstance(t, Dict):
        key = c.pick(sorted(t.keys, key=repr))
        if isinstance(t.element, Float):
            return c.pick(('sum({0}.values())', f'{{0}}[{key!r}]', f'{{0}}[{key!r}] ** 2')).format(name)
        return c.pick((f'np.sum({{0}}[{key!r}])', 'sum(np.sum(v * v) for v in {0}.values())')).format(name)
    return c.pick(('np.sum({0}[0] * {0}[-1])', 'np.sum({0}[-1])')).format(name)


def programs(weights=None):
    """The generator as a Hypothesis strategy (Hypothesis shrinks what it finds)."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        return generate(HypothesisChoices(draw), weights)
    return build()
