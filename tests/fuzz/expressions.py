"""Expressions of a requested type, built from what a scope holds.

`float_expr` and `array_expr` return source text that evaluates, in the
scope given, to a float or to an array of the requested shape, smooth in
its inputs on the ranges the arguments are drawn from (inputs in [0.5, 1.5];
a division is always by `1.0 + e ** 2`). `subscript` gives an index of an
array together with the shape it selects, for reads and for writes.
"""
from __future__ import annotations

from .scope import Array, ArrayList, Dict, Float, FloatList, Fn, FnList, Index, Namespace, Tuple

CONSTANTS = ('2.0', '0.5', '1.5', '3.0', '0.25', '0.75')
FLOAT_UNARY = ('np.sin({})', 'np.tanh({})', 'np.cos({})', '{} ** 2', 'np.exp(-{} ** 2)')
BINARY = ('+', '*', '-')


def wrap(text: str) -> str:
    """`text` in parentheses unless it is already one operand (no space outside brackets)."""
    depth = 0
    for ch in text:
        depth += ch in '([{'
        depth -= ch in ')]}'
        if ch == ' ' and depth == 0:
            return f'({text})'
    return text


def constant(c) -> str:
    return c.pick(CONSTANTS)


def index_for(c, scope, n: int) -> str:
    """An integer index into an axis of length `n`: a constant, a negative one, a loop variable."""
    loop_vars = scope.of_type(Index, lambda t: t.bound <= n)
    forms = [(str(c.integer(0, n - 1)), 4), (str(-c.integer(1, n)), 1)]
    if loop_vars:
        forms.append((c.pick(loop_vars), 3))
    return c.weighted(forms)


def subscript(c, scope, shape, repeats=0.2, masks=0.1):
    """(index text, shape selected) of an array of `shape`; repeated integer indices and
    boolean masks at the given rates. A shape of None: a data-dependent mask (any count)."""
    n = shape[0]
    if len(shape) == 2:
        forms = [
            (lambda: (index_for(c, scope, n), shape[1:]), 4),
            (lambda: (f'{index_for(c, scope, n)}, {index_for(c, scope, shape[1])}', ()), 4),
            (lambda: (f':, {index_for(c, scope, shape[1])}', (n,)), 3),
            (lambda: ('1:', (n - 1, shape[1])), 2 * (n > 1)),
            (lambda: ('1:, :2', (n - 1, 2)), n > 1 and shape[1] > 2),
            (lambda: ('[0, 0]', (2, shape[1])), 6 * repeats),
        ]
    else:
        forms = [
            (lambda: (index_for(c, scope, n), ()), 5),
            (lambda: ('1:', (n - 1,)), 3 * (n > 1)),
            (lambda: (':2', (2,)), 2 * (n > 2)),
            (lambda: ('::2', ((n + 1) // 2,)), 2 * (n > 2)),
            (lambda: (f'{n - 2}::-1', (n - 1,)), n > 1),
            (lambda: (repeated_indices(c, n), (3,)), 10 * repeats),
            (lambda: (constant_mask(c, n), (2,)), 5 * masks * (n > 2)),
        ]
    text, selected = c.weighted([(form, round(weight * 10)) for form, weight in forms])()
    return text, selected


def repeated_indices(c, n: int) -> str:
    """Three integer indices into an axis of length `n`, the first two equal (NumPy: last write wins)."""
    first = c.integer(0, n - 1)
    return f'[{first}, {first}, {c.integer(0, n - 1)}]'


def constant_mask(c, n: int) -> str:
    """A boolean mask literal of length `n` with exactly two True entries."""
    chosen = c.sample(range(n), 2)
    return 'np.array([' + ', '.join('True' if k in chosen else 'False' for k in range(n)) + '])'


def array_terms(c, scope):
    """(text, shape) of arrays readable in one step: names, and views of them."""
    terms = []
    for name in scope.of_type(Array):
        shape = scope.vars[name].shape
        terms.append((name, shape))
        if len(shape) == 2:
            terms += [(f'{name}.T', shape[::-1]), (f'{name}[{index_for(c, scope, shape[0])}]', shape[1:]),
                      (f'{name}[:, {index_for(c, scope, shape[1])}]', shape[:1])]
        elif shape[0] > 2:
            terms += [(f'{name}[1:]', (shape[0] - 1,)), (f'{name}[:2]', (2,))]
    for name in scope.of_type(ArrayList, lambda t: t.length > 0):
        t = scope.vars[name]
        terms.append((f'{name}[{c.integer(0, t.length - 1)}]', t.shape))
        terms.append((f'{name}[-1]', t.shape))
    for name in scope.of_type(Tuple, lambda t: t.length > 0 and isinstance(t.element, Array)):
        t = scope.vars[name]
        terms.append((f'{name}[{c.pick(("-1", "0"))}]', t.element.shape))
    for name in scope.of_type(Dict, lambda t: t.keys and isinstance(t.element, Array)):
        t = scope.vars[name]
        terms.append((f'{name}[{c.pick(sorted(t.keys, key=repr))!r}]', t.element.shape))
    for name in scope.of_type(Namespace):
        terms += [(f'{name}.{attr}', t.shape) for attr, t in scope.vars[name].attrs if isinstance(t, Array)]
    return terms


def callee(c, scope):
    """A function value in scope (`scope.Fn`, an element of an `FnList`), else np.tanh."""
    lists = scope.of_type(FnList, lambda t: t.length > 0)
    fns = scope.of_type(Fn) + [f'{n}[{c.pick(("0", "-1"))}]' for n in lists]
    return c.pick(fns) if fns else 'np.tanh'


def container_reads(c, scope):
    """Float reads of tuples and dicts of floats."""
    reads = []
    for name in scope.of_type(Tuple, lambda t: t.length > 0 and isinstance(t.element, Float)):
        reads.append(c.pick((f'{name}[-1]', f'{name}[0]', f'sum({name})')))
    for name in scope.of_type(Dict, lambda t: isinstance(t.element, Float)):
        keys = sorted(scope.vars[name].keys, key=repr)
        reads.append(c.pick((f'{name}[{c.pick(keys)!r}]', f'{name}.get({c.pick(keys)!r}, 0.5)'))
                     if keys else f"{name}.get('zz', 0.5)")
    for name in scope.of_type(Namespace):
        reads += [f'{name}.{attr}' for attr, t in scope.vars[name].attrs if isinstance(t, Float)]
    return reads


def float_leaf(c, scope) -> str:
    forms = [(lambda: constant(c), 2)]
    floats = scope.of_type(Float)
    if floats:
        forms.append((lambda: c.pick(floats), 6))
    terms = [term for term in array_terms(c, scope)]
    if terms:
        forms.append((lambda: reduction(c, c.pick(terms)[0]), 4))
        forms.append((lambda: element(c, scope, c.pick(terms)), 3))
    lists = scope.of_type(FloatList, lambda t: t.length > 0)
    if lists:
        forms.append((lambda: list_read(c, c.pick(lists), scope.vars), 3))
    if scope.of_type((Tuple, Dict, Namespace)):
        forms.append((lambda: c.pick(container_reads(c, scope) or ['1.0']), 3))
    if scope.of_type((Fn, FnList)):
        forms.append((lambda: f'{callee(c, scope)}({c.pick(floats) if floats else constant(c)})', 1))
    return c.weighted(forms)()


def reduction(c, term: str) -> str:
    return c.pick(('np.sum({})', '{}.sum()', 'np.mean({})')).format(term)


def element(c, scope, term) -> str:
    text, shape = term
    if not shape:
        return text
    indices = ', '.join(index_for(c, scope, n) for n in shape)
    return f'{text}[{indices}]'


def list_read(c, name, types) -> str:
    length = types[name].length
    return c.pick((f'{name}[-1]', f'{name}[{c.integer(0, length - 1)}]', f'sum({name})',
                   f'max({name})', f'{name}[0]'))


def float_expr(c, scope, depth=2) -> str:
    if depth <= 0:
        return float_leaf(c, scope)
    forms = [
        (lambda: float_leaf(c, scope), 5),
        (lambda: c.pick(FLOAT_UNARY).format(wrap(float_expr(c, scope, depth - 1))), 2),
        (lambda: binary(c, float_expr(c, scope, depth - 1), float_expr(c, scope, depth - 1)), 3),
        (lambda: divided(float_expr(c, scope, depth - 1), float_expr(c, scope, depth - 1)), 1),
    ]
    return c.weighted(forms)()


def binary(c, left: str, right: str) -> str:
    return f'{wrap(left)} {c.pick(BINARY)} {wrap(right)}'


def divided(numerator: str, denominator: str) -> str:
    return f'{wrap(numerator)} / (1.0 + {wrap(denominator)} ** 2)'


def array_leaf(c, scope, shape) -> str:
    terms = [text for text, s in array_terms(c, scope) if s == shape]
    forms = [(lambda: f'np.ones({shape_text(shape)}) * {wrap(float_leaf(c, scope))}', 1)]
    if terms:
        forms.append((lambda: c.pick(terms), 12))
        if scope.of_type((Fn, FnList)):
            forms.append((lambda: f'{callee(c, scope)}({c.pick(terms)})', 2))
    wide = [text for text, s in array_terms(c, scope) if len(s) == 2 and s[1] == shape[0]]
    if len(shape) == 1 and wide:
        forms.append((lambda: f'{c.pick(("np.sum", "np.mean", "np.max"))}({c.pick(wide)}, axis=0)', 1))
    if len(shape) == 2 and terms:             # a reduction over an axis, kept and broadcast back
        forms.append((lambda: f'({c.pick(terms)} - np.max({c.pick(terms)}, axis=-1, keepdims=True))', 1))
        forms.append((lambda: f'{c.pick(("np.sum", "np.mean"))}({c.pick(terms)}, axis='
                              f'{c.pick(("0", "1", "(0, 1)"))}, keepdims=True) * {c.pick(terms)}', 1))
    return c.weighted(forms)()


def matmul(c, scope, shape):
    """`A @ B` of the given shape from arrays in scope, or None if no two fit."""
    terms = array_terms(c, scope)
    rows = [(text, s) for text, s in terms if len(s) == 2 and s[0] == shape[0]]
    pairs = [(a, b) for a, sa in rows for b, sb in terms
             if len(sb) == len(shape) and sb[0] == sa[1] and sb[1:] == shape[1:]]
    if not pairs:
        return None
    a, b = c.pick(pairs)
    return f'{a} @ {b}'


def array_expr(c, scope, shape, depth=2) -> str:
    if depth <= 0:
        return array_leaf(c, scope, shape)
    product = matmul(c, scope, shape) if c.chance(0.15) else None
    if product:
        return product
    forms = [
        (lambda: array_leaf(c, scope, shape), 5),
        (lambda: c.pick(FLOAT_UNARY).format(wrap(array_expr(c, scope, shape, depth - 1))), 2),
        (lambda: binary(c, array_expr(c, scope, shape, depth - 1),
                        array_expr(c, scope, shape, depth - 1)), 3),
        (lambda: binary(c, float_expr(c, scope, depth - 1), array_expr(c, scope, shape, depth - 1)), 2),
        (lambda: divided(array_expr(c, scope, shape, depth - 1), float_expr(c, scope, depth - 1)), 1),
    ]
    return c.weighted(forms)()


def expr_of(c, scope, t, depth=2) -> str:
    """An expression of type `t` (a Float or an Array's shape)."""
    if isinstance(t, Array):
        return array_expr(c, scope, t.shape, depth)
    return float_expr(c, scope, depth)


def value_for(c, scope, shape, depth=1) -> str:
    """A right-hand side for a write of `shape`: a float (broadcast) or an array of that shape."""
    if shape is None or not shape or c.chance(0.3):
        return float_expr(c, scope, depth)
    return array_expr(c, scope, shape, depth)


def shape_text(shape) -> str:
    return f'({shape[0]},)' if len(shape) == 1 else str(tuple(shape))
