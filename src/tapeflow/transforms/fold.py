"""Constant folding: arithmetic on number literals done once, at compile time.

Runs on any tree (the user's function before ANF, generated functions after the
reverse or forward transform). Folds only what gives the very same value, of the
very same type, at compile time as at run time:

- `-` and `+` of an int or float literal, `+`, `-`, `*` on two of them (Python's own arithmetic: both
  operands are Python numbers, never NumPy's), when the result is finite:
  `2 - 1` -> `1`, `0.5 * 2` -> `1.0`;
- a call of a pure helper the derivative rules inline, on literal arguments:
  `_slope_exponent(2) - 1` -> `1` (the rule of `x ** 2`).

Never `x ** 1`, `x * 1.0`, `x + 0.0`, `--x` and the like where `x` is not a
literal: a bool array's `** 1` is an int array, an int times `1.0` a float,
`-0.0 + 0.0` is `0.0`, and a Python complex's `z ** 1` can lose the sign of a
zero; so those expressions stay as written.
"""
from __future__ import annotations

import math

from tapeflow.syntax import ast
from tapeflow.syntax import nodes

_NUMBERS = (int, float)           # exact classes: bool and complex are not folded
_FOLDED_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b}
_LARGEST_INT = 2 ** 63            # keeps generated code readable; larger products stay


def transform(node, namespace=None):
    """`node` with its constant arithmetic folded, in place (also returned).

    `namespace`: what the names of generated code are bound to, to recognise
    the rules' pure helpers; without it, only operators on literals fold."""
    return _fold(node, namespace or {})


def expression(expr, namespace=None):
    """`expr` folded: a literal where it was constant arithmetic, else `expr` (its
    operands folded in place)."""
    return _fold(expr, namespace or {})


def _fold(node, namespace):
    """Fold the nodes under `node` (parents seen before children: a pass that changed
    something runs again, for literals folded out of folded literals)."""
    if not any_node(node, _FOLDABLE, lambda n: _folded(n, namespace, probe=True)):
        return node                           # the common case: nothing to fold, one scan
    root = _Root(node)
    changed = True
    while changed:
        changed = False
        for parent in nodes.walk_terms(root):
            for field in parent._fields:
                value = getattr(parent, field, None)
                if value.__class__ in _FOLDABLE:
                    new = _folded(value, namespace)
                    if new is not value:
                        setattr(parent, field, new)
                        changed = True
                elif value.__class__ is list:
                    for k, item in enumerate(value):
                        if item.__class__ in _FOLDABLE:
                            new = _folded(item, namespace)
                            if new is not item:
                                value[k] = new
                                changed = True
    return root.node


def any_node(tree, classes, test) -> bool:
    """Whether a node under `tree` of one of `classes` passes `test` (a scan faster than
    `nodes.walk`: names, literals, contexts and operators are not looked into)."""
    stack = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    fields_of = _SCANNED.get
    while stack:
        n = pop()
        cls = n.__class__
        if cls in classes and test(n):
            return True
        fields = fields_of(cls)
        if fields is None:
            fields = _SCANNED[cls] = tuple(f for f in getattr(cls, '_fields', ())
                                           if f not in ('ctx', 'op', 'ops'))
        for field in fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, ast.AST) and value.__class__ not in _LEAVES:
                push(value)
    return False


_SCANNED: dict = {}          # node class -> the fields `any_node` looks into
_LEAVES = frozenset({ast.Name, ast.Constant})


class _Root(ast.AST):
    """Holds the tree being folded, so that its root can be replaced too."""
    _fields = ('node',)

    def __init__(self, node):
        self.node = node


def _folded(node, namespace, probe=False):
    """`node` folded, or `node`; with `probe`, whether it may fold (no call made)."""
    if node.__class__ is ast.BinOp:
        if probe:
            return _literal(node.left) and _literal(node.right)
        return _binop(node)
    if node.__class__ is ast.UnaryOp:
        if isinstance(node.op, (ast.USub, ast.UAdd)) and _literal(node.operand) \
                and not _signed(node):
            if probe:
                return True
            value = _value(node.operand)
            return _as_literal(-value if isinstance(node.op, ast.USub) else value, node)
        return False if probe else node
    if probe:
        return _pure_helper(node, namespace) is not None
    return _helper_call(node, namespace)


_FOLDABLE = frozenset({ast.BinOp, ast.UnaryOp, ast.Call})


def _literal(node):
    """A number written as a literal: `2`, `1.5`, or a negative one, `-1.0` (how this
    pass writes one: a negative constant would print as `-1.0 ** 2`, which is -1.0)."""
    return isinstance(node, ast.Constant) and node.value.__class__ in _NUMBERS or _signed(node)


def _signed(node):
    """`-c`, `c` a non-negative number: the form of a negative literal."""
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and node.operand.value.__class__ in _NUMBERS \
        and math.copysign(1, node.operand.value) > 0


def _value(node):
    return -node.operand.value if _signed(node) else node.value


def _as_literal(value, old):
    if value.__class__ is int and abs(value) < _LARGEST_INT or \
            value.__class__ is float and math.isfinite(value):
        if math.copysign(1, value) < 0:                 # -1.0, -0.0: as `-c`
            return nodes.copy_location(nodes.unary(ast.USub(), nodes.const(-value)), old)
        return nodes.copy_location(nodes.const(value), old)
    return old


def _binop(node):
    compute = _FOLDED_OPS.get(node.op.__class__)
    if compute is None or not (_literal(node.left) and _literal(node.right)):
        return node
    return _as_literal(compute(_value(node.left), _value(node.right)), node)


def _pure_helper(node, namespace):
    """The rules' pure helper `node` calls on literals, or None."""
    if node.func.__class__ is not ast.Name or node.keywords:
        return None
    fn = namespace.get(node.func.id)
    # the rules mark the helpers whose value on literals is a literal, and pure
    if not getattr(fn, '__tapeflow_folds__', False) or not all(_literal(a) for a in node.args):
        return None
    return fn


def _helper_call(node, namespace):
    fn = _pure_helper(node, namespace)
    return node if fn is None else _as_literal(fn(*[_value(a) for a in node.args]), node)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`), when optimizing: reverse mode folds the
    reverse sweep (the forward is folded by ANF already), forward mode its function."""
    if not ctx.optimize:
        return tree
    if ctx.mode == 'forward':
        return transform(tree, ctx.namespace)
    ctx.reverse = [transform(stmt, ctx.namespace) for stmt in ctx.reverse]
    return nodes.function_def(tree.name, ctx.params, ctx.forward + ctx.reverse)
