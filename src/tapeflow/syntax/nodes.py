"""All construction of gast nodes goes through here, so a gast change touches one file.

`name`, `call`, `assign`, `if_`, `for_`... build nodes (fast: without gast's
constructor); `clone`, `substitute`, `located` and `copy_location` copy and
locate them; `parse_statement`/`parse_expression` read Python written as text.

The passes walk trees through here too: `walk` (ast.walk's order, faster),
`walk_terms` (the same without contexts and operators), `load_names`/`names_in`
(the names a node reads or holds) and `statements` live
in `syntax.walkers` and are re-exported; the `Visitor`/`Transformer` bases
(gast's, faster) are here.
"""
from __future__ import annotations

import ast
import builtins
import copy
import threading

import gast

from tapeflow.syntax.anno import Key, copyanno, defaultanno, getanno, setanno
from tapeflow.syntax.walkers import (  # noqa: F401  (re-exported: callers say nodes.walk)
    children, load_names, loaded_names, name_counts, names_in, own_nodes, statements,
    store_names, walk, walk_terms)

Load, Store, Del = gast.Load, gast.Store, gast.Del


def _new(cls, **fields):
    """`cls(**fields)` as gast's constructor makes it (the fields in the node's dict, in
    this order), without the constructor's overhead: passes build many nodes."""
    node = cls.__new__(cls)
    node.__dict__.update(fields)
    return node


def _context(store):
    return Store.__new__(Store) if store else Load.__new__(Load)


def name(identifier: str, store: bool = False) -> gast.Name:
    node = _Name_new(gast.Name)
    fields = node.__dict__
    fields['id'] = identifier
    fields['ctx'] = Store.__new__(Store) if store else Load.__new__(Load)
    fields['annotation'] = fields['type_comment'] = None
    return node


_Name_new = gast.Name.__new__


def const(value) -> gast.Constant:
    return _new(gast.Constant, value=value, kind=None)


def attribute(value, attr: str) -> gast.Attribute:
    return _new(gast.Attribute, value=_expr(value), attr=attr, ctx=_context(False))


def call(func, *args, keywords=()) -> gast.Call:
    kws = [k if isinstance(k, gast.keyword) else _new(gast.keyword, arg=k[0], value=_expr(k[1]))
           for k in keywords]
    return _new(gast.Call, func=_expr(func), args=[_expr(a) for a in args], keywords=kws)


def assign(target, value) -> gast.Assign:
    target = name(target, store=True) if isinstance(target, str) else _as_store(target)
    return _new(gast.Assign, targets=[target], value=_expr(value), type_comment=None)


def expr_stmt(value) -> gast.Expr:
    return _new(gast.Expr, value=_expr(value))


def if_(test, body, orelse=()) -> gast.If:
    return _new(gast.If, test=_expr(test), body=list(body) or [pass_()], orelse=list(orelse))


def for_(target, iterable, body) -> gast.For:
    target = name(target, store=True) if isinstance(target, str) else _as_store(target)
    return _new(gast.For, target=target, iter=_expr(iterable), body=list(body) or [pass_()],
                orelse=[], type_comment=None)


def while_(test, body) -> gast.While:
    return _new(gast.While, test=_expr(test), body=list(body) or [pass_()], orelse=[])


def tuple_(*elts, store=False) -> gast.Tuple:
    return _new(gast.Tuple, elts=[_expr(e) for e in elts], ctx=_context(store))


def list_(*elts) -> gast.List:
    return _new(gast.List, elts=[_expr(e) for e in elts], ctx=_context(False))


def subscript(value, index, store=False) -> gast.Subscript:
    return _new(gast.Subscript, value=_expr(value), slice=_expr(index), ctx=_context(store))


def binop(left, op: gast.operator, right) -> gast.BinOp:
    return _new(gast.BinOp, left=_expr(left), op=op, right=_expr(right))


def pass_() -> gast.Pass:
    return _new(gast.Pass)


def break_() -> gast.Break:
    return _new(gast.Break)


def return_(value) -> gast.Return:
    return _new(gast.Return, value=None if value is None else _expr(value))


def assert_(test, message: str) -> gast.Assert:
    return _new(gast.Assert, test=_expr(test), msg=const(message))


def keyword(arg, value) -> gast.keyword:
    return _new(gast.keyword, arg=arg, value=_expr(value))


def unary(op: gast.unaryop, operand) -> gast.UnaryOp:
    return _new(gast.UnaryOp, op=op, operand=_expr(operand))


def not_(operand) -> gast.UnaryOp:
    return unary(gast.Not(), operand)


def any_of(values) -> gast.AST:
    """`a or b or ...` (the one value itself where there is one)."""
    values = [_expr(v) for v in values]
    return values[0] if len(values) == 1 else _new(gast.BoolOp, op=gast.Or(), values=values)


def compare(left, op: gast.cmpop, right) -> gast.Compare:
    return _new(gast.Compare, left=_expr(left), ops=[op], comparators=[_expr(right)])


def slice_(lower=None, upper=None, step=None) -> gast.Slice:
    return _new(gast.Slice, **{k: None if v is None else _expr(v)
                               for k, v in (('lower', lower), ('upper', upper), ('step', step))})


def dict_(keys, values) -> gast.Dict:
    return _new(gast.Dict, keys=[None if k is None else _expr(k) for k in keys],
                values=[_expr(v) for v in values])


def comprehension(target, iterable, ifs=()) -> gast.comprehension:
    return _new(gast.comprehension, target=_expr(target), iter=_expr(iterable),
                ifs=list(ifs), is_async=0)


def list_comp(elt, generators) -> gast.ListComp:
    return _new(gast.ListComp, elt=_expr(elt), generators=list(generators))


def param(node):
    """`node` (a name) as a function's parameter."""
    node.ctx = gast.Param()
    return node


def starred(value) -> gast.Starred:
    return gast.Starred(value=_expr(value), ctx=gast.Load())


def builtin(identifier: str) -> gast.Name:
    """The name of a builtin (`len`, `range`), resolved to it (`Key.RESOLVED`)."""
    ref = name(identifier)
    setanno(ref, Key.RESOLVED, getattr(builtins, identifier))
    return ref


def function_def(fname: str, params, body, defaults=()) -> gast.FunctionDef:
    args = gast.arguments(args=[name(p, store=False) if isinstance(p, str) else p for p in params],
                          posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[_expr(d) for d in defaults])
    for a in args.args:
        a.ctx = gast.Param()
    return gast.FunctionDef(name=fname, args=args, body=list(body) or [gast.Pass()],
                            decorator_list=[], returns=None, type_comment=None,
                            type_params=[])


def module(body) -> gast.Module:
    return gast.Module(body=list(body), type_ignores=[])


def _expr(value):
    if isinstance(value, str):
        return name(value)
    if isinstance(value, gast.AST):
        return value
    return const(value)


def _as_store(node):
    node = copy.copy(node)
    if isinstance(node, (gast.Name, gast.Subscript, gast.Attribute)):
        node.ctx = Store()
    elif isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = Store()
        node.elts = [_as_store(e) for e in node.elts]
    return node


def load(node):
    """A copy of a target expression usable in load context."""
    node = copy.deepcopy(node)
    for n in walk(node):
        if hasattr(n, 'ctx') and not isinstance(n.ctx, gast.Param):
            n.ctx = Load()
    return node


# CPython 3.11 keeps the depth of its AST conversion in state threads share: two
# threads parsing at once can fail with "SystemError: AST constructor recursion depth
# mismatch" (python/cpython#106905). Every parse of tapeflow's goes through here, one
# at a time (a parse is short; compiling holds it only while parsing).
_PARSING = threading.RLock()


def parse_gast(src: str, mode: str = 'exec'):
    """`gast.parse(src, mode)`, one thread at a time."""
    with _PARSING:
        return gast.parse(src, mode=mode)


def parse_ast(src: str, mode: str = 'exec'):
    """`ast.parse(src, mode=mode)`, one thread at a time."""
    with _PARSING:
        return ast.parse(src, mode=mode)


def compile_ast(tree, filename: str, mode: str):
    """`compile(tree, filename, mode)` of a stdlib syntax tree, one thread at a time."""
    with _PARSING:
        return compile(tree, filename, mode)


def parse_statement(src: str):
    body = parse_gast(src).body
    return body[0] if len(body) == 1 else body


def parse_expression(src: str):
    return parse_gast(src, mode='eval').body


class Visitor(gast.NodeVisitor):
    """`gast.NodeVisitor` as it behaves, faster: the method for a class of node is looked
    up once per visitor class, and `generic_visit` runs without generators. (The
    `visit_Num`-style methods of Python < 3.8 are not looked for: write `visit_Constant`.)"""
    _methods: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._methods = {}          # node class -> the function that visits it

    def visit(self, node):
        method = self._methods.get(node.__class__)
        if method is None:
            method = self._methods[node.__class__] = getattr(
                type(self), 'visit_' + node.__class__.__name__, type(self).generic_visit)
        return method(self, node)

    def visit_Constant(self, node):
        return self.generic_visit(node)

    def generic_visit(self, node):
        for field in node._fields:      # a field the node lacks reads None: nothing to visit
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, gast.AST):
                        self.visit(item)
            elif isinstance(value, gast.AST):
                self.visit(value)


class Transformer(Visitor, gast.NodeTransformer):
    """`gast.NodeTransformer` as it behaves, at the speed of `Visitor`."""

    def generic_visit(self, node):
        AST = gast.AST
        for field in node._fields:      # each read at its turn, after the ones before changed
            old_value = getattr(node, field, None)
            if isinstance(old_value, list):
                new_values = []
                for value in old_value:
                    if isinstance(value, AST):
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old_value[:] = new_values
            elif isinstance(old_value, AST):
                new_node = self.visit(old_value)
                if new_node is None:
                    delattr(node, field)
                else:
                    setattr(node, field, new_node)
        return node


class _Substitute(Transformer):
    def __init__(self, subs):
        self.subs = subs

    def visit_Name(self, node):
        if node.id not in self.subs:
            return node
        sub = self.subs[node.id]
        if isinstance(sub, str):
            return gast.Name(id=sub, ctx=node.ctx, annotation=None, type_comment=None)
        sub = clone(sub) if isinstance(sub, gast.AST) else const(sub)
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            sub = _as_store(sub)
        return sub


def clone(node):
    """A deep copy of a gast tree (much faster than copy.deepcopy); annotations shared."""
    if isinstance(node, list):
        return [clone(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    cls = node.__class__
    new = cls.__new__(cls)
    old, fields = node.__dict__, new.__dict__
    ctx = old.get('ctx')
    if cls is _NameClass and old.keys() <= _NAME_KEYS and old.get('id').__class__ is str \
            and ctx.__class__ in _CONTEXTS and not ctx.__dict__ \
            and old.get('annotation') is None and old.get('type_comment') is None:
        # the commonest node, copied as below without a call per field
        fields['id'], fields['ctx'] = old['id'], ctx.__class__.__new__(ctx.__class__)
        fields['annotation'] = fields['type_comment'] = None
    else:
        _copy_fields(node, old, fields)
    if old:
        for attr in _LOCATION:
            if attr in old:
                fields[attr] = old[attr]
        annotations = old.get('_tapeflow_anno')
        if annotations is not None:
            fields['_tapeflow_anno'] = annotations.__class__(annotations)
    return new


def _copy_fields(node, old, fields):
    for field in node._fields:
        value = old[field] if field in old else getattr(node, field, None)
        fields[field] = value if value is None or value.__class__ in ATOMS else clone(value)


_NameClass = gast.Name
_NAME_KEYS = {'id', 'ctx', 'annotation', 'type_comment', 'lineno', 'col_offset', 'end_lineno',
              'end_col_offset', '_tapeflow_anno'}
_CONTEXTS = frozenset({gast.Load, gast.Store, gast.Del, gast.Param})     # nodes without fields

# Field values that are not nodes: a copy keeps them as they are.
ATOMS = frozenset({str, int, float, bool, complex, bytes})
_LOCATION = ('lineno', 'col_offset', 'end_lineno', 'end_col_offset')


def substitute(node, subs: dict):
    """Replace names in a copy of `node` (used to inline a rule's body)."""
    return _Substitute(subs).visit(clone(node))


def origin(node):
    return getanno(node, Key.ORIGIN)


def located(new, source):
    """Give `new` (a statement or list of them, nested blocks too) the user
    location of `source`, where they have none. Expressions are not located:
    errors and source maps speak of statements."""
    where = getanno(source, Key.ORIGIN) if source is not None else None
    if where is None:
        return new
    stack = list(new) if isinstance(new, list) else [new]
    while stack:
        n = stack.pop()
        defaultanno(n, Key.ORIGIN, where)
        fields = n.__dict__
        for field in ('body', 'orelse'):
            block = fields.get(field)
            if isinstance(block, list):
                stack.extend(block)
    return new


def shallow_copy(node):
    """A shallow copy of `node` with annotations of its own (changing the copy's must not
    change the original's): for passes that copy what they rewrite."""
    new = copy.copy(node)
    annotations = node.__dict__.get('_tapeflow_anno')
    if annotations is not None:
        new.__dict__['_tapeflow_anno'] = annotations.__class__(annotations)
    return new


def copy_location(new, old):
    return copyanno(old, new, Key.ORIGIN)
