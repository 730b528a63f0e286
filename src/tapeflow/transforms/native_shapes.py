"""Native shapes: the static shape of each array name of the native function.

`transforms.native_loops` writes an array statement as loops over its elements where
every array it reads is a float64 array of a shape known when the function is
compiled. `Shapes` finds those names: the arguments' shapes, `ctx.shapes`, and
what each binding computes (optimistic, then checked: a binding may read its own
name; a name bound to arrays of two shapes, or to what is not understood, has none).
`float_valued` finds the names that surely hold floats, so too.
"""
from __future__ import annotations

from tapeflow.syntax import ast, nodes

_ELEMENTWISE_NP = frozenset({'exp', 'log', 'sin', 'cos', 'tanh', 'sqrt'})
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _broadcast(*shapes):
    """NumPy's broadcast of static shapes, or None."""
    if any(s is None for s in shapes):
        return None
    ndim = max(len(s) for s in shapes)
    out = []
    for k in range(ndim):
        sizes = {s[k - ndim + len(s)] for s in shapes if k - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _full_slice(node):
    """`:` or `slice(None, None, None)`."""
    if isinstance(node, ast.Slice):
        return node.lower is None and node.upper is None and node.step is None
    return calls(node, 'slice') and all(constant(a, None) for a in node.args) and \
        not node.keywords


def index_parts(index):
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    kinds = []
    for part in parts:
        if constant(part, None):
            kinds.append(None)
        elif _full_slice(part):
            kinds.append(':')
        elif isinstance(part, ast.Constant) and part.value.__class__ is int:
            kinds.append(part.value)
        else:
            return None
    return kinds


def _indexed_shape(shape, kinds):
    """The shape of `a[index]` (`index_parts`), `a` of `shape`; or None."""
    if shape is None or kinds is None or sum(k is not None for k in kinds) != len(shape):
        return None
    out, axis = [], 0
    for kind in kinds:
        if kind is None:
            out.append(1)
            continue
        if kind == ':':
            out.append(shape[axis])
        elif not -shape[axis] <= kind < shape[axis]:
            return None
        axis += 1
    return tuple(out)


class Shapes:
    """The static shape of each name that holds float64 arrays (or numbers) of one shape
    wherever it is bound in the function; a fixpoint over its bindings."""

    def __init__(self, fdef, ctx, tapes, gone=None):
        self.ctx = ctx
        known = ctx.shapes or {}
        arguments = ctx.parameter_shapes()
        self.params = {p for p, shape in arguments.items() if shape != ()}
        self.numbers = {n for n, s in known.items() if s == ()}
        bindings, unknown = {}, set()
        for stmt in nodes.statements(fdef.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                if popped(stmt.value, tapes):
                    continue            # what was pushed: one of its other bindings
                if constant(stmt.value, None) and name in getattr(ctx, 'undefined', ()):
                    continue            # its tape's placeholder: pushed, popped, never read
                bindings.setdefault(name, []).append(stmt.value)
            else:
                unknown |= _own_stores(stmt)
        self.params -= unknown
        self.numbers -= set(bindings) - unknown
        bindings = {n: v for n, v in bindings.items() if n not in unknown | self.numbers}
        banned = set()
        while True:         # optimistic, then checked: a binding may read its own name
            self._fixpoint(bindings, known, arguments, banned, gone or {})
            broken = {n for n, shape in self.shapes.items() if n in bindings and
                      {self.of(v, strict=False) for v in bindings[n]} != {shape}}
            if not broken:
                break
            banned |= broken

    def _fixpoint(self, bindings, known, arguments, banned, gone):
        self.shapes = {p: tuple(arguments[p]) for p in self.params - banned}
        self.shapes.update(gone)
        self.shapes.update({n: () for n in self.numbers})
        changed, rounds = True, 4 * len(bindings) + 4     # (what does not settle: checked)
        while changed and rounds:
            changed, rounds = False, rounds - 1
            for name, values in bindings.items():
                if name in banned or name in arguments:
                    continue
                found = {self.of(v, strict=False) for v in values} - {None}
                shape = found.pop() if len(found) == 1 else None
                if shape is not None and _static(known.get(name)) and known[name] != shape:
                    shape = None        # (analysis.shapes disagrees: neither is trusted)
                if shape is not None and self.shapes.get(name) != shape:
                    self.shapes[name] = shape
                    changed = True

    def of(self, node, top=True, strict=True):
        """`node`'s static shape, where it computes float64 arrays (or numbers) of one:
        what `_Lowering` can write as loops, or a view; else None. Not `strict` (the
        shapes of names): also the helpers whose value has `x`'s shape whatever `g`'s
        (their twins' float64 arrays, or a typing error)."""
        if isinstance(node, ast.Constant):
            return () if node.value.__class__ in (int, float) else None
        if isinstance(node, ast.Name):
            return self.shapes.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, _OPS):
            return _broadcast(self.of(node.left, False, strict),
                              self.of(node.right, False, strict))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.of(node.operand, False, strict)
        if isinstance(node, ast.Subscript):
            return _indexed_shape(self.of(node.value, False, strict) or None,
                                  index_parts(node.slice))
        if not isinstance(node, ast.Call) or node.keywords and not calls(node, 'np.sum'):
            return None
        if not strict and calls(node, 'np.full') and len(node.args) == 2 and \
                isinstance(node.args[0], ast.Tuple) and self.of(node.args[1]) == ():
            shape = tuple(getattr(n, 'value', None) for n in node.args[0].elts)
            return shape if _static(shape) else None    # (a tape's placeholder of NaN)
        args = [self.of(a, False, strict) for a in node.args[:2 if calls(node, 'untake') else 3]]
        if not strict and len(args) > 1 and args[1] and \
                any(calls(node, h) for h in ('unbroadcast', 'grad_of_sum', 'untake')):
            return args[1]
        if calls(node, 'grad_of_sum') and len(args) == 2 and args[1] and \
                isinstance(node.args[0], (ast.Name, ast.Constant)):
            return args[1]      # (its twin takes a number `g`, the seed of a sum, only)
        if None in args:
            return None
        if calls(node, 'np') and node.func.attr in _ELEMENTWISE_NP and len(args) == 1:
            return args[0]
        if calls(node, 'add_adjoint') and len(args) == 2 and args[0] == args[1]:
            return args[0]
        if calls(node, 'zeros_like_adjoint') and len(args) == 1:
            return args[0]
        if calls(node, 'unbroadcast') and len(args) == 2 and \
                (args[0] == args[1] or top and summed_axes(args[0], args[1]) is not None):
            return args[1]
        if calls(node, 'grad_of_sum') and len(args) in (2, 3) and args[1] != ():
            axis = axis_number(node.args[2], len(args[1])) if len(args) == 3 else None
            if axis is None and len(args) == 3:
                return None
            spread = () if axis is None else args[1][:axis] + args[1][axis + 1:]
            return args[1] if args[0] == spread else None
        if calls(node, 'untake') and len(node.args) == 3 and args[1] != ():
            kinds = index_parts(node.args[2])
            if kinds is None or any(k not in (None, ':') for k in kinds):
                return None
            return args[1] if _indexed_shape(args[1], kinds) == args[0] else None
        if top and calls(node, 'np.sum') and len(node.args) == 1 and \
                axis_keyword(node) is not None:
            axis = axis_number(axis_keyword(node), len(args[0]))
            if axis is None or args[0][axis] == 0:
                return None
            return args[0][:axis] + args[0][axis + 1:]
        return None


def summed_axes(g, x):
    """The axes of `g` that `unbroadcast(g, x)` sums (its leading ones, and where `x`
    has 1), or None where `x` is no broadcast operand of `g`'s shape."""
    if g is None or x is None or len(x) > len(g) or _broadcast(g, x) != g or 0 in g:
        return None
    lead = len(g) - len(x)
    return tuple(k for k in range(len(g)) if k < lead or x[k - lead] == 1 and g[k] != 1)


def axis_keyword(node):
    if len(node.keywords) == 1 and node.keywords[0].arg == 'axis':
        return node.keywords[0].value
    return None


def axis_number(node, ndim):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant):
        value = -node.operand.value
    elif isinstance(node, ast.Constant):
        value = node.value
    else:
        return None
    if value.__class__ is not int or not -ndim <= value < ndim:
        return None
    return value % ndim


def popped(value, tapes):
    """`_x_tape.pop()` or `_x_tape[_x_tape_top]`, a value restored from a tape."""
    if isinstance(value, ast.Subscript):
        return ast.name_id(value.value) in tapes
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr == 'pop' and ast.name_id(value.func.value) in tapes


def _own_stores(stmt):
    """The names `stmt` binds in its own expressions (a loop's target, not its body's)."""
    return {n.id for n in nodes.own_nodes(stmt) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Store)}


def _static(shape):
    return shape.__class__ is tuple and all(n.__class__ is int for n in shape)


def constant(node, value):
    return isinstance(node, ast.Constant) and node.value is value


def calls(node, name):
    """Whether `node` calls `name` (`f`, or `np` for any `np.f`, or `np.f`)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and ast.name_id(func.value) == 'np':
        return name in ('np', 'np.' + func.attr)
    return ast.name_id(func) == name


# `math` functions whose value is a float whatever their arguments.
_FLOAT_MATH = frozenset({'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'sinh', 'cosh',
                         'tanh', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sqrt',
                         'pow', 'hypot', 'fabs', 'erf', 'erfc'})


def float_valued(fdef, pop):
    """The names every binding of which in `fdef` is surely a float, but for restoring
    what the tape kept (`x = _pop()`) and a placeholder (`x = None`): a `_FLOAT_MATH`
    call, a float literal, a division, and arithmetic with such a value or name
    (optimistic, then checked). Parameters are not: their arguments may be ints. (A
    complex operand would make a complex, which Numba refuses to keep in a float64 tape:
    a typing error at the line, never another number.)"""
    params = {a.id for a in fdef.args.args}
    bindings, others = {}, set(params)
    for stmt in nodes.statements(fdef.body):
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if _is_call_of(value, pop) or isinstance(value, ast.Constant) and value.value is None:
            continue
        for node in nodes.own_nodes(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                single = value is not None and len(stmt.targets) == 1 and stmt.targets[0] is node
                if single:
                    bindings.setdefault(node.id, []).append(value)
                else:
                    others.add(node.id)
    floats = set(bindings) - others
    changed = True
    while changed:
        kept = {n for n in floats if all(_is_float(v, floats) for v in bindings[n])}
        changed, floats = kept != floats, kept
    return floats


def _is_call_of(node, name):
    return isinstance(node, ast.Call) and ast.name_id(node.func) == name


def _is_float(node, floats) -> bool:
    if isinstance(node, ast.Constant):
        return node.value.__class__ is float
    if isinstance(node, ast.Name):
        return node.id in floats
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and ast.name_id(node.func.value) == 'math' \
            and node.func.attr in _FLOAT_MATH
    if isinstance(node, ast.BinOp) and isinstance(node.op, _OPS):
        return isinstance(node.op, ast.Div) or _is_float(node.left, floats) or \
            _is_float(node.right, floats)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_float(node.operand, floats)
    return False
