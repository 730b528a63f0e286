"""Statements on floats and arrays: bindings, aliases, views and in-place writes.

Each construct is one small function `(g, scope[, name]) -> lines or None`
(None: it does not apply here). Those taking `name` write into that array;
the grammar picks the array. Writes keep the shape of what they write to, so
any alias or view of the array stays valid for the statements that follow.
"""
from __future__ import annotations

from .expressions import (array_expr, constant, expr_of, float_expr, shape_text,
                          subscript, value_for, wrap)
from .scope import Array, ArrayList, Float, FloatList, Index, same_kind

ARG_SHAPES = ((3,), (4,), (2, 3), (3, 3))
PATHOLOGICAL = 0.1   # rate of forms a careful compiler may well refuse (copy-or-view reshapes)


def assign(g, scope):
    """`name = expr`: a fresh name, or an existing one rebound to the same kind."""
    c = g.c
    shapes = sorted({scope.vars[n].shape for n in scope.of_type(Array)}) or list(ARG_SHAPES)
    t = c.weighted([(Float(), 2), (Array(c.pick(shapes)), 3)])
    same = [n for n in scope.names(lambda u: same_kind(u, t)) if scope.rebindable(n)]
    target = c.pick(same) if same and c.chance(0.3) else g.fresh(t)
    text = expr_of(c, scope, t)
    scope.bind(target, t)
    return [f'{target} = {text}']


def multiple(g, scope):
    """`m = c * a` (a number times a name), then a statement reading `m` beside `a`: the
    cotangent of `a` sums terms that are multiples of each other (`transforms.terms`
    reads `m` as `c * a` and collects them: a Gaussian `np.exp(m * a)`, `m * a * b`)."""
    c = g.c
    names = scope.names(lambda t: isinstance(t, (Float, Array)))
    if not names:
        return None
    base = c.pick(names)
    t = scope.vars[base]
    number = c.pick(('-0.5', '0.25', '-1.5', '-2', '0.5'))   # exp(m * a) stays small
    m = g.fresh(t)
    first = f'{m} = {number} * {base}' if c.chance(0.5) else f'{m} = {base} * {number}'
    other = expr_of(c, scope, t, 1)
    use = c.pick((f'np.exp({m} * {base})', f'{m} * {base} * {wrap(other)}',
                  f'np.exp({m} * {base}) * {wrap(other)} + {m} * {wrap(other)}',
                  f'np.tanh({base}) * {base} + np.exp({m} * {base})'))
    scope.bind(m, t)
    target = g.fresh(t)
    scope.bind(target, t)
    return [first, f'{target} = {use}']


def augassign(g, scope):
    """`name op= expr` on a float or a whole array (an array is written in place)."""
    c = g.c
    names = [n for n in scope.names(lambda t: isinstance(t, (Float, Array))) if scope.rebindable(n)]
    if not names:
        return None
    name = c.pick(names)
    t = scope.vars[name]
    scope.touch(name)
    return [in_place(c, scope, name, t.shape if isinstance(t, Array) else ())]


def in_place(c, scope, target, shape) -> str:
    """`target op= value` with a value that broadcasts to `shape`; divisions stay away from 0."""
    op = c.pick(('+=', '*=', '-=', '/='))
    value = value_for(c, scope, shape)
    if op == '/=':
        value = f'(1.0 + {wrap(value)} ** 2)'
    return f'{target} {op} {value}'


def alias(g, scope):
    """`b = a`: a second name for the same array or list."""
    names = scope.names(lambda t: isinstance(t, (Array, FloatList, ArrayList)))
    if not names:
        return None
    source = g.c.pick(names)
    target = g.fresh(scope.vars[source])
    scope.bind(target, scope.vars[source])
    return [f'{target} = {source}']


def copy(g, scope):
    """A copy of an array (independent) or of a list (shallow: array elements still shared)."""
    c = g.c
    names = scope.names(lambda t: isinstance(t, (Array, FloatList, ArrayList)))
    if not names:
        return None
    source = c.pick(names)
    t = scope.vars[source]
    if isinstance(t, Array):
        text, t = c.pick(('{}.copy()', 'np.copy({})', 'np.array({})')).format(source), Array(t.shape)
    else:
        text = c.pick(('list({})', '{}.copy()', '{}[:]')).format(source)
    target = g.fresh(t)
    scope.bind(target, t)
    return [f'{target} = {text}']


def view_forms(t: Array):
    """(template, shape, contiguous, weight) of the views of an array of type `t`."""
    shape, contiguous = t.shape, t.contiguous
    reshaped = 1.0 if contiguous else PATHOLOGICAL     # not contiguous: NumPy copies
    if t.ndim == 1:
        n = shape[0]
        forms = [('{}[1:]', (n - 1,), contiguous, 3 * (n > 1)), ('{}[:-1]', (n - 1,), contiguous, n > 1),
                 ('{}[::2]', ((n + 1) // 2,), False, 2 * (n > 2)), ('{}[::-1]', (n,), False, 1)]
        if n == 4:
            forms.append(('{}.reshape(2, 2)', (2, 2), contiguous, reshaped))
        return forms
    rows, cols = shape
    return [('{}[0]', (cols,), contiguous, 2), ('{}[-1]', (cols,), contiguous, 1),
            ('{}[:, 1]', (rows,), False, 2), ('{}.T', (cols, rows), False, 2),
            ('np.transpose({})', (cols, rows), False, 1), ('{}[1:]', (rows - 1, cols), contiguous, rows > 1),
            ('{}.reshape(-1)', (rows * cols,), contiguous, 2 * reshaped),
            ('{}.ravel()', (rows * cols,), contiguous, reshaped),
            (f'{{}}.reshape({cols}, {rows})', (cols, rows), contiguous, reshaped)]


def view(g, scope, name):
    """`v = <view of name>`, then often a write through the view or through the base."""
    c = g.c
    forms = [((template, shape, contiguous), round(10 * weight))
             for template, shape, contiguous, weight in view_forms(scope.vars[name])]
    template, shape, contiguous = c.weighted(forms)
    target = g.fresh(Array(shape))
    scope.bind(target, Array(shape, contiguous))
    lines = [f'{target} = {template.format(name)}']
    if c.chance(0.6):
        written = c.pick((target, name))
        lines += c.pick((setitem, aug_subscript))(g, scope, written)
    return lines


def setitem(g, scope, name):
    """`name[index] = value`: ints, slices, repeated integer indices, boolean masks."""
    c = g.c
    t = scope.vars[name]
    if c.chance(0.05):
        text = f'{name}[{name} > {constant_threshold(c)}] = {float_expr(c, scope, 1)}'
    else:
        index, shape = subscript(c, scope, t.shape)
        text = f'{name}[{index}] = {value_for(c, scope, shape)}'
    scope.touch(name)
    return [text]


def aug_subscript(g, scope, name):
    """`name[index] op= value` (with repeated indices: NumPy's last write wins)."""
    index, shape = subscript(g.c, scope, scope.vars[name].shape, repeats=0.3)
    scope.touch(name)
    return [in_place(g.c, scope, f'{name}[{index}]', shape)]


def out_argument(g, scope, name):
    """A ufunc writing into `name` with `out=`, its result sometimes kept (it is `name`)."""
    c = g.c
    t = scope.vars[name]
    operand = lambda: array_expr(c, scope, t.shape, 1) if c.chance(0.7) else float_expr(c, scope, 0)
    call = c.weighted([
        (lambda: f'np.multiply({operand()}, {constant(c)}, out={name})', 3),
        (lambda: f'np.add({operand()}, {operand()}, out={name})', 3),
        (lambda: f'np.subtract({operand()}, {operand()}, out={name})', 1),
        (lambda: f'np.{c.pick(("sin", "tanh", "cos"))}({array_expr(c, scope, t.shape, 1)}, out={name})', 2),
    ])()
    scope.touch(name)
    if c.chance(0.3):
        result = g.fresh(t)
        scope.bind(result, t)
        return [f'{result} = {call}']
    return [call]


def mutating_call(g, scope, name):
    """A NumPy function or method that writes into its first argument."""
    c = g.c
    t = scope.vars[name]
    forms = [
        (lambda: f'np.copyto({name}, {value_for(c, scope, t.shape)})', 3),
        (lambda: f'np.put({name}, {flat_indices(c, t.size)}, {value_for(c, scope, (2,))})', 2),
        (lambda: add_at(c, scope, name, t), 2),
        (lambda: f'np.putmask({name}, {name} > {constant_threshold(c)}, '
                 f'{value_for(c, scope, t.shape)})', 1),
        (lambda: place(c, scope, name, t), 1),
        (lambda: f'{name}.fill({float_expr(c, scope, 1)})', 2),
        (lambda: f'{name}.sort()', 1),
    ]
    if t.ndim == 2:
        forms.append((lambda: f'np.fill_diagonal({name}, {float_expr(c, scope, 1)})', 2))
    scope.touch(name)
    return [c.weighted(forms)()]


def flat_indices(c, size: int) -> str:
    first = c.integer(0, size - 1)
    second = first if c.chance(0.3) else c.integer(0, size - 1)
    return f'[{first}, {second}]'


def constant_threshold(c) -> str:
    return c.pick(('1.0', '0.9', '1.2'))


def add_at(c, scope, name, t) -> str:
    """`np.add.at` accumulates at repeated indices (unlike `+=`, where the last write wins)."""
    first = c.integer(0, t.shape[0] - 1)
    indices = f'[{first}, {first}, {c.integer(0, t.shape[0] - 1)}]'
    value = value_for(c, scope, (3,) + t.shape[1:])
    return f'np.add.at({name}, {indices}, {value})'


def place(c, scope, name, t) -> str:
    """`np.place`: values fill the masked places in order (cycled); data-dependent masks
    get one value, cycled to any count."""
    if t.ndim == 1 and t.shape[0] >= 3:
        mask = 'np.array([' + ', '.join(('True', 'False', 'True') + ('False',) * (t.shape[0] - 3)) + '])'
        return f'np.place({name}, {mask}, {array_expr(c, scope, (2,), 1)})'
    return f'np.place({name}, {name} < {constant_threshold(c)}, [{float_expr(c, scope, 1)}])'


def or_and(g, scope):
    """`s = s or 1.0`, `t = s and u`: Python's `or`/`and` on float values."""
    c = g.c
    floats = scope.of_type(Float)
    if not floats:
        return None
    name = c.pick(floats)
    if scope.rebindable(name) and c.chance(0.5):
        scope.touch(name)
        return [f'{name} = {name} or {constant(c)}']
    text = f'{name} {c.pick(("and", "or"))} {wrap(float_expr(c, scope, 1))}'
    target = g.fresh(Float())
    scope.bind(target, Float())
    return [f'{target} = {text}']


def loop_index_write(g, scope, name):
    """`name[i] = f(name[i], ...)` in a loop: the element read is the one being overwritten."""
    t = scope.vars[name]
    loops = scope.of_type(Index, lambda u: u.bound <= t.shape[0])
    if not loops:
        return None
    index = g.c.pick(loops)
    value = expr_of(g.c, scope, Array(t.shape[1:]) if t.ndim == 2 else Float(), 1)
    scope.touch(name)
    return [f'{name}[{index}] = {name}[{index}] * {wrap(value)}']


def fresh_zeros(g, scope):
    """`out = np.zeros(shape)`, later filled by writes."""
    shape = g.c.pick(ARG_SHAPES)
    target = g.fresh(Array(shape))
    scope.bind(target, Array(shape))
    return [f'{target} = np.{g.c.pick(("zeros", "ones"))}({shape_text(shape)})']
