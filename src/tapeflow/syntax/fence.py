"""Reject, before anything is transformed, what tapeflow does not differentiate.

Guarantees: after `check(source)` returns, the function uses only the subset
the desugaring and reverse passes understand. Every rejection is an
`UnsupportedError` with the user's file, line and column and one reason.
"""
from __future__ import annotations

import builtins

import gast

from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.parse import Source

# Node type -> reason. Anything here is rejected wherever it appears.
_REJECTED = {
    gast.AsyncWith: 'async with is not supported',
    gast.AsyncFor: 'async for is not supported',
    gast.AsyncFunctionDef: 'async functions are not supported',
    gast.Await: 'await is not supported',
    gast.Global: 'global statements (writes to module globals) are not supported',
}
for _name in ('TryStar',):
    if hasattr(gast, _name):
        _REJECTED[getattr(gast, _name)] = f'{_name.lower()} statements are not supported'

_FORBIDDEN_CALLS = {builtins.eval: 'eval', builtins.exec: 'exec', builtins.globals: 'globals',
                    builtins.locals: 'locals', builtins.vars: 'vars', builtins.setattr: 'setattr',
                    builtins.delattr: 'delattr'}


class _Fence(nodes.Visitor):
    def __init__(self, source: Source):
        self.source = source

    def reject(self, node, reason):
        raise self.source.error(node, reason)

    def generic_visit(self, node):
        reason = _REJECTED.get(type(node))
        if reason:
            self.reject(node, reason)
        super().generic_visit(node)

    def visit_FunctionDef(self, node):
        args = node.args
        top = node is self.source.node      # (a nested def's are bound where it is lifted)
        if top and (args.vararg is not None or args.kwarg is not None):
            self.reject(node, f'star-arguments (*args/**kwargs) in the signature of {node.name}() '
                              f'are not supported: name each parameter (def {node.name}(a, b)), '
                              f'or take one tuple or dict parameter and pass the values in it')
        if top and args.kwonlyargs:
            self.reject(node, f'keyword-only arguments of {node.name}() are not supported: make '
                              f'them ordinary parameters with defaults (they can still be '
                              f'passed by keyword)')
        if node.decorator_list and node is not self.source.node:
            self.reject(node, 'decorated nested functions are not supported')
        self.generic_visit(node)

    def visit_Nonlocal(self, node):
        if id(node) in self._own_statements():      # (a nested def's: `sugar.nonlocals`)
            self.reject(node, 'nonlocal statements in the function differentiated (writes to '
                              'a function around it) are not supported; pass the value in '
                              'and return it')

    def _own_statements(self) -> set:
        """The ids of the statements of the function itself, not inside its nested defs."""
        own, stack = set(), list(self.source.node.body)
        while stack:
            stmt = stack.pop()
            own.add(id(stmt))
            if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                continue
            for field in ('body', 'orelse', 'finalbody'):
                stack.extend(getattr(stmt, field, None) or ())
            for handler in getattr(stmt, 'handlers', None) or ():
                stack.extend(handler.body)
        return own

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target, single=len(node.targets) == 1)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target, single=True)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_target(node.target)
        self.generic_visit(node)

    def _check_target(self, target, single=False, inside=False):
        """`single`: the one target of an assignment, which desugar writes Python's way
        (`transforms.sugar.unpacking`): a starred name in a tuple, `x[i][j]`, `o.w[j]`."""
        if isinstance(target, gast.Starred) and not (single and inside):
            self.reject(target, 'starred assignment targets are not supported')
        if isinstance(target, (gast.Tuple, gast.List)):
            for elt in target.elts:
                self._check_target(elt, single, inside=True)
        if isinstance(target, gast.Subscript) and not isinstance(target.value, gast.Name) and \
                not (single and not inside):
            self.reject(target, 'assignment into a nested subscript or attribute is not supported; '
                                'assign to a name first')

    def visit_Call(self, node):
        fn = getanno(node.func, Key.RESOLVED)
        try:
            forbidden = _FORBIDDEN_CALLS.get(fn)
        except TypeError:
            forbidden = None
        if forbidden:
            self.reject(node, f'{forbidden}() is not supported in differentiated code')
        self.generic_visit(node)


def check(source: Source) -> None:
    """Raise `UnsupportedError` at the first construct outside the subset."""
    _Fence(source).visit(source.node)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): refuse what the passes do not know."""
    check(ctx.source)
    return tree
