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
# Helpers of the derivative rules whose value on literals is a literal: (module, name).
_PURE_HELPERS = frozenset({('tapeflow.rules.operators', '_slope_exponent')})


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
    if isinstance(node, ast.Constant) or isinstance(node, ast.Name):
        return node
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            new = _fold(value, namespace)
            if new is not value:
                setattr(node, field, new)
        elif isinstance(value, list):
            for k, item in enumerate(value):
                if isinstance(item, ast.AST):
                    new = _fold(item, namespace)
                    if new is not item:
                        value[k] = new
    if isinstance(node, ast.BinOp):
        return _binop(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and _literal(node.operand):
        value = node.operand.value
        return _as_literal(-value if isinstance(node.op, ast.USub) else value, node)
    if isinstance(node, ast.Call):
        return _helper_call(node, namespace)
    return node


def _literal(node):
    return isinstance(node, ast.Constant) and node.value.__class__ in _NUMBERS


def _as_literal(value, old):
    if value.__class__ is int and abs(value) < _LARGEST_INT or \
            value.__class__ is float and math.isfinite(value):
        return nodes.copy_location(nodes.const(value), old)
    return old


def _binop(node):
    compute = _FOLDED_OPS.get(node.op.__class__)
    if compute is None or not (_literal(node.left) and _literal(node.right)):
        return node
    return _as_literal(compute(node.left.value, node.right.value), node)


def _helper_call(node, namespace):
    if not isinstance(node.func, ast.Name) or node.keywords \
            or not all(_literal(a) for a in node.args):
        return node
    fn = namespace.get(node.func.id)
    if (getattr(fn, '__module__', None), getattr(fn, '__qualname__', None)) not in _PURE_HELPERS:
        return node
    return _as_literal(fn(*[a.value for a in node.args]), node)
