"""The kinds of node the passes match on (gast's classes), named here so that gast
is spoken in `syntax/` alone: a pass writes `isinstance(stmt, ast.Assign)` after
`from tapeflow.syntax import ast`, and builds nodes with `syntax.nodes`; a change
of parser touches this layer only.

The helpers at the end answer the questions passes ask most ("which name does
this statement bind?", "which function does this call name?").
"""
from __future__ import annotations

import gast as _gast
from gast import (AST, Add, And, Assign, Attribute, AugAssign, BinOp, BitAnd, BitOr, BitXor,  # noqa: F401
                  BoolOp, Break, Call, ClassDef, Compare, Constant, Continue, Del, Dict,
                  DictComp, Div, Eq, Expr, FloorDiv, For, FunctionDef, GeneratorExp, If,
                  Invert, JoinedStr, Lambda, List, ListComp, Load, LShift, MatMult, Mod,
                  Module, Mult, Name, NamedExpr, Not, Or, Param, Pass, Pow, Return, RShift,
                  SetComp, Slice, Starred, Store, Sub, Subscript, Tuple, UAdd, UnaryOp, USub,
                  While, comprehension, expr, expr_context, iter_child_nodes, iter_fields,
                  keyword, operator, unaryop)
from gast import (AnnAssign, Assert, Delete, ExceptHandler, Global, IfExp, Nonlocal,  # noqa: F401
                  Raise, Set, Try, With, Yield, YieldFrom, withitem, In, NotIn, Is, IsNot, Lt,
                  LtE, Gt, GtE, NotEq)

# Statements that hold blocks of statements.
COMPOUND = (For, While, If)

PARSER_VERSION = getattr(_gast, '__version__', '?')      # named in the disk cache's keys


def name_id(node):
    """The identifier `node` names, or None when it is not a bare name."""
    return node.id if isinstance(node, Name) else None


def assigned_name(stmt):
    """`x` for a statement `x = ...` (one target, a bare name), else None."""
    if isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], Name):
        return stmt.targets[0].id
    return None


def called_name(node):
    """`f` for a call `f(...)` of a bare name, else None."""
    if isinstance(node, Call) and isinstance(node.func, Name):
        return node.func.id
    return None


def is_const(node, value=...):
    """Whether `node` is a constant (equal to `value`, where one is given)."""
    return isinstance(node, Constant) and (value is ... or
                                           (type(node.value) is type(value) and node.value == value))
