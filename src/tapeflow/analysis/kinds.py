"""Which variables always hold Python or NumPy scalars.

Runs on ANF. Given the parameters known to be scalars (the arguments of this
compilation were Python floats or ints), a variable is *scalar* when every
assignment to it produces a scalar: constants, arithmetic and comparisons of
scalars, `math` functions, NumPy ufuncs of scalars, `len`. The reverse
transform drops `unbroadcast` from the adjoints of scalar results: nothing was
broadcast, so the operands need not be kept for their shapes.
"""
from __future__ import annotations

import builtins

import gast
import numpy as np

from tapeflow.syntax.anno import Key, getanno

_SCALAR_BUILTINS = {builtins.float, builtins.int, builtins.abs, builtins.len, builtins.min,
                    builtins.max, builtins.round, builtins.bool}
_ALWAYS_SCALAR = {builtins.len}


def _produces_scalar(value, scalar) -> bool:
    def atom(n):
        if isinstance(n, gast.Constant):
            return isinstance(n.value, (int, float, bool)) or n.value is None
        if isinstance(n, gast.Name):
            return n.id in scalar
        if isinstance(n, gast.Attribute) and getanno(n, Key.RESOLVED) is not None:
            return isinstance(getanno(n, Key.RESOLVED), (int, float))
        return False

    if isinstance(value, (gast.Constant, gast.Name, gast.Attribute)) and not (
            isinstance(value, gast.Attribute) and getanno(value, Key.RESOLVED) is None):
        return atom(value)
    if isinstance(value, gast.BinOp):
        return atom(value.left) and atom(value.right)
    if isinstance(value, gast.UnaryOp):
        return atom(value.operand)
    if isinstance(value, (gast.Compare, gast.BoolOp)):
        return True
    if isinstance(value, gast.Call):
        fn = getanno(value.func, Key.RESOLVED)
        if fn in _ALWAYS_SCALAR:
            return True
        args_scalar = all(atom(a) for a in value.args) and not value.keywords
        if getattr(fn, '__module__', None) == 'math' or fn in _SCALAR_BUILTINS:
            return args_scalar
        if isinstance(fn, np.ufunc):
            return args_scalar
    return False


def scalar_names(node: gast.FunctionDef, scalar_params: set) -> set:
    """The names of `node` (ANF) that hold scalars whenever `scalar_params` do."""
    params = {a.id for a in node.args.args}
    assignments = []
    loop_targets = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
            assignments.append((n.targets[0].id, n.value))
        elif isinstance(n, gast.Assign):               # y[i] = v: y is an array or list
            base = n.targets[0].value
            if isinstance(base, gast.Name):
                assignments.append((base.id, None))
        elif isinstance(n, gast.For):
            if isinstance(n.iter, gast.Call) and getanno(n.iter.func, Key.RESOLVED) is builtins.range:
                loop_targets.add(n.target.id)
            else:
                assignments.append((n.target.id, None))
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and isinstance(n.func.value, gast.Name):
            assignments.append((n.func.value.id, None))  # a method may mutate its object
    scalar = (set(scalar_params) | {t for t, _ in assignments} | loop_targets) - (params - set(scalar_params))
    changed = True
    while changed:
        changed = False
        for target, value in assignments:
            if target in scalar and (value is None or not _produces_scalar(value, scalar)):
                scalar.discard(target)
                changed = True
    return scalar
