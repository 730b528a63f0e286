"""Shape arithmetic back in one expression: `range(xs.shape[0])`, not three statements.

ANF names every operation, shape arithmetic too (`_shape = xs.shape`,
`_item = _shape[0]`, `_range = range(_item)`); none of it is differentiated, and
the hand-written adjoint writes it as one expression. This pass, run on each
finished function, moves the value of

    t = <shape expression>

into the one later statement of the same block that reads `t`, when:

- the value is a shape expression: `x.shape`, `x.ndim`, `x.size`, a
  subscript or slice of a shape expression, a tuple of them, `+ - * //` on
  them; its leaves are int literals and names that only ever hold such values
  (or a `range` loop's counter): ints and tuples of ints, never active;
- `t` is the compiler's temporary, assigned once and read once in the function;
- every statement in between assigns such a value to a name the value does not
  read: nothing in between can change a shape or rebind an operand;
- the reader is an assignment to a name, or a `for` reading `t` in its
  iterable, from the same line of the user's code (an error is reported at the
  same line), whose value is a shape expression or one call on shape
  expressions and atoms (the argument is evaluated first, as before).

Nothing is computed differently: the same attribute reads and the same int
arithmetic, in the same order, so values are those of the unnested code.
"""
from __future__ import annotations

from tapeflow.syntax import ast
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms.fusion import copy_blocks

_SHAPE_ATTRIBUTES = frozenset({'shape', 'ndim', 'size'})
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)


def transform(fdef: ast.FunctionDef, temporary=lambda name: name[0] == '_') -> ast.FunctionDef:
    """`fdef` with its shape temporaries nested into their readers: a new function
    (what the pass rewrites, it copies; `fdef` and its statements stay as they are),
    or `fdef` itself where no assignment reads a shape."""
    bindings = _bindings(fdef)
    if not any(v is not None and _reads_shape(v) for values in bindings.values() for v in values):
        return fdef
    loads, stores = nodes.name_counts(fdef)
    for arg in fdef.args.args:
        stores[arg.id] = stores.get(arg.id, 0) + 2          # never assigned once
    nester = _Nester(loads, stores, temporary, _integer_names(bindings, stores))
    nested = nodes.shallow_copy(fdef)
    nested.body = nester.block(fdef.body)
    return nested


def _bindings(fdef) -> dict:
    """name -> the values assigned to it (None: a `range(...)` loop's counter)."""
    bindings = {}
    for stmt in nodes.statements(fdef.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            bindings.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) \
                and isinstance(stmt.iter, ast.Call) and isinstance(stmt.iter.func, ast.Name) \
                and stmt.iter.func.id == 'range':
            bindings.setdefault(stmt.target.id, []).append(None)
    return bindings


def _reads_shape(v) -> bool:
    if v.__class__ is ast.Attribute:
        return v.attr in _SHAPE_ATTRIBUTES
    if v.__class__ is ast.Subscript:
        return _reads_shape(v.value)
    if v.__class__ is ast.Tuple:
        return any(_reads_shape(e) for e in v.elts)
    return v.__class__ is ast.BinOp and (_reads_shape(v.left) or _reads_shape(v.right))


def _integer_names(bindings, stores) -> set:
    """Names every binding of which is a shape expression (or a `range` loop's counter,
    `range` being the builtin)."""
    every = _Everything()
    counters = not stores.get('range')
    ints = {name for name, values in bindings.items() if len(values) == stores.get(name, 0)
            and all(_is_shape(v, every) if v is not None else counters for v in values)}
    changed = True
    while changed:                      # drop names one of whose values is no shape expression
        changed = False
        for name in list(ints):
            if not all(v is None or _is_shape(v, ints) for v in bindings[name]):
                ints.discard(name)
                changed = True
    return ints


class _Everything:
    """Every name (a first, optimistic guess of the names holding ints)."""
    def __contains__(self, name):
        return True


def _is_shape(v, ints) -> bool:
    if isinstance(v, ast.Constant):
        return v.value.__class__ is int
    if isinstance(v, ast.Name):
        return v.id in ints
    if isinstance(v, ast.Attribute):
        return v.attr in _SHAPE_ATTRIBUTES and isinstance(v.value, ast.Name)
    if isinstance(v, ast.Subscript):
        return _is_shape(v.value, ints) and _is_index(v.slice, ints)
    if isinstance(v, ast.Tuple):
        return all(_is_shape(e, ints) for e in v.elts)
    if isinstance(v, ast.BinOp):
        return isinstance(v.op, _INT_OPS) and _is_shape(v.left, ints) and _is_shape(v.right, ints)
    return False


def _is_index(index, ints) -> bool:
    if isinstance(index, ast.Slice):
        return all(part is None or _is_shape(part, ints)
                   for part in (index.lower, index.upper, index.step))
    return _is_shape(index, ints)


def _line(stmt):
    """The user's line `stmt` comes from (its origin is (line, column)), or None."""
    where = getanno(stmt, Key.ORIGIN)
    return where[0] if isinstance(where, tuple) else where


class _Nester:
    def __init__(self, loads, stores, temporary, ints):
        self.loads, self.stores, self.temporary, self.ints = loads, stores, temporary, ints

    def block(self, stmts) -> list:
        stmts = copy_blocks(stmts, self.block)
        i = 0
        while i < len(stmts):
            if not self.nest_at(stmts, i):
                i += 1
        return stmts

    def shape_assignment(self, stmt) -> bool:
        return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name) and _is_shape(stmt.value, self.ints)

    def nest_at(self, stmts, i) -> bool:
        stmt = stmts[i]
        if not self.shape_assignment(stmt) or isinstance(stmt.value, (ast.Name, ast.Constant)):
            return False
        t = stmt.targets[0].id
        if not (self.temporary(t) and self.loads.get(t) == 1 and self.stores.get(t) == 1):
            return False
        operands = nodes.load_names(stmt.value) | {t}
        for k in range(i + 1, len(stmts)):
            later = stmts[k]
            if t in nodes.load_names(later):
                return self.nest(stmts, i, k, t)
            if not self.shape_assignment(later) or later.targets[0].id in operands:
                return False
        return False

    def nest(self, stmts, i, k, t) -> bool:
        use = stmts[k]
        if _line(use) != _line(stmts[i]):
            return False
        if isinstance(use, ast.Assign) and len(use.targets) == 1 \
                and isinstance(use.targets[0], ast.Name):
            field = 'value'
        elif isinstance(use, ast.For):
            field = 'iter'
        else:
            return False
        expr = getattr(use, field)
        if t not in nodes.load_names(expr):
            return False
        expr = nodes.substitute(expr, {t: stmts[i].value})
        if not (_is_shape(expr, self.ints) or self.call_on_shapes(expr)):
            return False
        use = stmts[k] = nodes.shallow_copy(use)
        setattr(use, field, expr)
        del stmts[i]
        self.loads[t] = self.stores[t] = 0
        return True

    def call_on_shapes(self, expr) -> bool:
        """One call whose arguments are atoms or shape expressions (evaluated first)."""
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if not (isinstance(func, ast.Name) or isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)):
            return False
        return all(isinstance(a, (ast.Name, ast.Constant)) or _is_shape(a, self.ints)
                   for a in list(expr.args) + [kw.value for kw in expr.keywords])


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`), when optimizing: each generated function."""
    if not ctx.optimize:
        return tree
    if ctx.mode == 'forward':
        return transform(tree)
    tree.body = [transform(fdef) for fdef in tree.body]
    return tree
