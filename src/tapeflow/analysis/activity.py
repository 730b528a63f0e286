"""Activity: which variables carry a derivative from the inputs to the output.

Runs on ANF (`transforms.anf`). A variable is *varied* when some assignment
to it has a differentiable dependence on a differentiated input, *useful*
when the output depends on it, and *active* when both. Only statements that
assign an active variable get adjoints.

The analysis is flow-insensitive (one answer per name for the whole
function), which is conservative: a name that is active anywhere is active
everywhere, so it may get an adjoint it does not need, never miss one.
"""
from __future__ import annotations


import gast
import numpy as np

from tapeflow.rules import registry
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno

# Operators whose result carries no derivative.
_NONDIFF_BINOPS = (gast.FloorDiv, gast.BitAnd, gast.BitOr, gast.BitXor, gast.LShift, gast.RShift)
_NONDIFF_UNARY = (gast.Not, gast.Invert)


def differentiable_operands(value) -> set:
    """Names whose derivative flows through the ANF operation `value`."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, gast.BinOp):
        if isinstance(value.op, _NONDIFF_BINOPS):
            return set()
        return _names(value.left) | _names(value.right)
    if isinstance(value, gast.UnaryOp):
        return set() if isinstance(value.op, _NONDIFF_UNARY) else _names(value.operand)
    if isinstance(value, (gast.Compare, gast.BoolOp, gast.Constant, gast.JoinedStr)):
        return set()
    if isinstance(value, gast.Subscript):
        if type(getanno(value.value, Key.RESOLVED)) in _VALUE_MAKERS:
            return _names(value.slice)      # np.mgrid[0:x:5j]: made from its bounds
        return _names(value.value)
    if isinstance(value, gast.Attribute):
        fn = getanno(value, Key.RESOLVED)
        if fn is not None:
            return set()
        target = registry.ATTRIBUTES.get(value.attr)
        if target is not None and registry.is_nondifferentiable(target):
            return set()
        if value.attr in NONDIFF_ATTRIBUTES:
            return set()
        return _names(value.value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return set().union(*(_names(e) for e in value.elts)) if value.elts else set()
    if isinstance(value, gast.Call):
        return _call_operands(value)
    return set().union(*(_names(n) for n in gast.iter_child_nodes(value))) if list(gast.iter_child_nodes(value)) else set()


# Objects whose subscript computes values from the index (`operations._makes_values`).
_VALUE_MAKERS = (type(np.mgrid), type(np.ogrid))

NONDIFF_ATTRIBUTES = {'shape', 'ndim', 'size', 'dtype', 'itemsize', 'nbytes', 'strides'}


def _call_operands(call) -> set:
    fn = getanno(call.func, Key.RESOLVED)
    if fn is not None:
        if registry.is_nondifferentiable(fn):
            return set()
        entry = registry.lookup(fn)
        static = entry.static_argnums if entry is not None else ()
        names = set()
        for i, a in enumerate(call.args):
            if i not in static:             # shapes, axes: read, not differentiated
                names |= _names(a)
        for k in call.keywords:
            names |= _names(k.value)
        return names
    if isinstance(call.func, gast.Attribute):        # a method
        method = registry.METHODS.get(call.func.attr)
        if method is not None and registry.is_nondifferentiable(method[0]):
            return set()
        names = _names(call.func.value)
        for a in call.args:
            names |= _names(a)
        for k in call.keywords:
            names |= _names(k.value)
        return names
    names = _names(call.func)
    for a in call.args:
        names |= _names(a)
    return names


def _names(node) -> set:
    return nodes.load_names(node)


def _assignments(body):
    """(target name, operands) for every flow of value in the function body."""
    for stmt in body:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Name):
                yield target.id, differentiable_operands(stmt.value)
            elif isinstance(target, gast.Subscript):
                yield target.value.id, _names(stmt.value) | {target.value.id}
        elif isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
            call = stmt.value
            if isinstance(call.func, gast.Attribute) and call.func.attr in ('append', 'extend', 'insert') \
                    and isinstance(call.func.value, gast.Name):
                operands = set()
                for a in call.args:
                    operands |= _names(a)
                yield call.func.value.id, operands
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and not isinstance(stmt, gast.FunctionDef):
                yield from _assignments(inner)


def output_names(body) -> set:
    names = set()
    for stmt in body:
        if isinstance(stmt, gast.Return) and stmt.value is not None:
            names |= _names(stmt.value)
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and not isinstance(stmt, gast.FunctionDef):
                names |= output_names(inner)
    return names


def active_names(node: gast.FunctionDef, wrt: set, outputs: set | None = None) -> set:
    """The active variables of `node` (ANF) differentiated with respect to `wrt`."""
    flows = list(_assignments(node.body))
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for target, operands in flows:
            if target not in varied and operands & varied:
                varied.add(target)
                changed = True
    useful = set(output_names(node.body) if outputs is None else outputs)
    changed = True
    while changed:
        changed = False
        for target, operands in flows:
            if target in useful:
                new = operands - useful
                if new:
                    useful |= new
                    changed = True
    return varied & useful
