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


from tapeflow.syntax import ast
import numpy as np

from tapeflow.rules import mutation as mutators
from tapeflow.rules import registry
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno

# Operators whose result carries no derivative.
_NONDIFF_BINOPS = (ast.FloorDiv, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_NONDIFF_UNARY = (ast.Not, ast.Invert)


def differentiable_operands(value) -> set:
    """Names whose derivative flows through the ANF operation `value`."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.BinOp):
        if isinstance(value.op, _NONDIFF_BINOPS):
            return set()
        return _names(value.left) | _names(value.right)
    if isinstance(value, ast.UnaryOp):
        return set() if isinstance(value.op, _NONDIFF_UNARY) else _names(value.operand)
    if isinstance(value, (ast.Compare, ast.BoolOp, ast.Constant, ast.JoinedStr)):
        return set()
    if isinstance(value, ast.Subscript):
        if type(getanno(value.value, Key.RESOLVED)) in _VALUE_MAKERS:
            return _names(value.slice)      # np.mgrid[0:x:5j]: made from its bounds
        return _names(value.value)
    if isinstance(value, ast.Attribute):
        fn = getanno(value, Key.RESOLVED)
        if fn is not None:
            return set()
        target = registry.ATTRIBUTES.get(value.attr)
        if target is not None and registry.is_nondifferentiable(target):
            return set()
        if value.attr in NONDIFF_ATTRIBUTES:
            return set()
        return _names(value.value)
    if isinstance(value, (ast.Tuple, ast.List)):
        return set().union(*(_names(e) for e in value.elts)) if value.elts else set()
    if isinstance(value, ast.Call):
        return _call_operands(value)
    return set().union(*(_names(n) for n in ast.iter_child_nodes(value))) if list(ast.iter_child_nodes(value)) else set()


# Objects whose subscript computes values from the index (`operations._makes_values`).
_VALUE_MAKERS = (type(np.mgrid), type(np.ogrid))

# Methods that write what they are given into their object (a write run as written, which the
# mutation pass lowers or refuses, still carries the values into it).
WRITING_METHODS = frozenset(mutators.LIST_METHODS) | frozenset(mutators.DICT_METHODS) | \
    frozenset(mutators.ARRAY_METHODS)

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
    if isinstance(call.func, ast.Attribute):        # a method
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
    for k in call.keywords:
        names |= _names(k.value)
    return names


def _names(node) -> set:
    return nodes.load_names(node)


def _assignments(body):
    """(target name, operands) for every flow of value in the function body."""
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                yield target.id, differentiable_operands(stmt.value)
            elif isinstance(target, ast.Subscript):
                yield target.value.id, _names(stmt.value) | {target.value.id}
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                    and call.func.attr in WRITING_METHODS:
                operands = set()
                for a in call.args:
                    operands |= _names(a)
                for k in call.keywords:
                    operands |= _names(k.value)
                yield call.func.value.id, operands
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and not isinstance(stmt, ast.FunctionDef):
                yield from _assignments(inner)


def output_names(body) -> set:
    names = set()
    for stmt in body:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            names |= _names(stmt.value)
        for field in ('body', 'orelse'):
            inner = getattr(stmt, field, None)
            if inner and not isinstance(stmt, ast.FunctionDef):
                names |= output_names(inner)
    return names


def varied_names(node: ast.FunctionDef, wrt: set) -> set:
    """The variables of `node` (ANF) that depend on `wrt` (whether or not the output does)."""
    return _varied(list(_assignments(node.body)), wrt)


def _varied(flows, wrt) -> set:
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for target, operands in flows:
            if target not in varied and operands & varied:
                varied.add(target)
                changed = True
    return varied


def active_names(node: ast.FunctionDef, wrt: set, outputs: set | None = None) -> set:
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


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): `ctx.active`; the writes the mutation
    pass left pending are checked against it."""
    ctx.active = ctx.active_names(tree)
    ctx.extra['varied'] = varied_names(tree, set(ctx.differentiated(tree)))
    ctx.check_writes(tree)
    return tree
