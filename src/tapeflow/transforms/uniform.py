"""Cotangents of whole-array sums and means kept as one number where they meet arrays.

The cotangent of `s = np.sum(x)` is `bs` in every element of x's shape, and
of `np.mean(x)` that divided by its size; `grad_of_sum(bs, x)` builds that
array, and the arithmetic that follows reads it element by element. Where
every read of the cotangent is arithmetic that meets an array of x's shape
(`bsub * y`, `-bsub / _add`) before it is stored, the number alone gives the
same result in every element: this pass, run on each finished function with
the shapes specialisation found, writes `uniform_sum(bs, x)` (or
`uniform_mean`) instead, which returns the number where the dtypes make the
two computations equal bit for bit (a float cotangent of float64, or a
Python float, on a float array) and the array otherwise.

The same holds of a sum or mean over one constant axis (`np.sum(e, axis=1,
keepdims=True)`, a softmax's normaliser): where its cotangent only meets arrays
of e's shape, `kept_sum(g, e, 1, True)` gives `g` with the axis kept (of size
1), which broadcasts there as the array of its copies would (`kept`: in any
statement, the call nested in arithmetic too). Not in the combined function the
native path compiles, whose loop lowering reads the arrays.
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.syntax import nodes
from tapeflow.transforms.assemble import unit_roles

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
UNIFORM = {'grad_of_sum': 'uniform_sum', 'grad_of_mean': 'uniform_mean'}
KEPT = {'grad_of_sum': 'kept_sum', 'grad_of_mean': 'kept_mean'}


def transform(fdef: ast.FunctionDef, shapes: dict, namespace: dict, helpers: dict,
              axes=True):
    """Rewrite (copying what it changes: the split functions share statements) the
    `grad_of_sum` / `grad_of_mean` assigned to a name in `fdef` whose reads all broadcast
    (`shapes`: name -> static shape; `namespace`, the generated module's, and `helpers`,
    name -> function, confirm what the names call): whole-array ones as `uniform_*`,
    and (`axes`) ones over one constant axis as `kept_*`."""
    wanted = {}                                 # target -> (call, shape of `like`, helper)
    for stmt in nodes.statements(fdef.body):
        call = stmt.value if isinstance(stmt, ast.Assign) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id in UNIFORM and not call.keywords \
                and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if len(call.args) == 2 and isinstance(call.args[1], ast.Name) \
                    and namespace.get(call.func.id) is helpers.get(call.func.id) \
                    and shapes.get(call.args[1].id):
                helper = UNIFORM[call.func.id]
            elif axes and _over_one_axis(call, shapes, namespace, helpers):
                helper = KEPT[call.func.id]
            else:
                continue
            target = stmt.targets[0].id
            wanted[target] = None if target in wanted else (
                stmt, shapes[call.args[1].id], helper)
    if not any(wanted.values()):
        return
    parents, stores, reads = {}, {}, {}
    for top in fdef.body:
        if not (nodes.names_in(top) & wanted.keys()):
            continue
        for stmt in nodes.statements([top]):      # each statement (a compound one's header)
            parts = [stmt] if not isinstance(getattr(stmt, 'body', None), list) else [
                getattr(stmt, f) for f in ('test', 'iter', 'target') if getattr(stmt, f, None)]
            for part in parts:
                if not (nodes.names_in(part) & wanted.keys()):
                    continue
                for node in nodes.walk_terms(part):
                    for child in nodes.children(node):
                        parents[id(child)] = node
                    if node.__class__ is ast.Name and node.id in wanted:
                        if node.ctx.__class__ is ast.Load:
                            reads.setdefault(node.id, []).append(node)
                        else:
                            stores[node.id] = stores.get(node.id, 0) + 1
    rewritten = {}
    for target, found in wanted.items():
        if found is None or stores.get(target) != 1 or not reads.get(target):
            continue
        stmt, shape, helper = found
        if all(_meets(read, shape, shapes, parents, not axes) for read in reads[target]):
            new = rewritten[id(stmt)] = nodes.shallow_copy(stmt)
            new.value = nodes.shallow_copy(stmt.value)
            new.value.func = nodes.name(helper)
    if rewritten:                        # copies: other functions may share these statements
        fdef.body = _rebuilt(fdef.body, rewritten)


def kept(fdef: ast.FunctionDef, shapes: dict, namespace: dict, helpers: dict, cotangents,
         reads=None):
    """Rewrite (copying what it changes) the `grad_of_sum(g, x, axis[, keepdims])` and
    `grad_of_mean` over one constant axis of `fdef` whose value meets, in arithmetic, an
    array of x's static shape (`shapes`) as `kept_sum` / `kept_mean`: `g` with the axis
    kept, which broadcasts there as the array of its copies would. Only assignments to
    `cotangents` (names) hold them; `reads`, the memo of the names statements read that
    the tape pass keeps (`assemble.trim_tape`)."""
    rewritten, reads = {}, {} if reads is None else reads
    for stmt in nodes.statements(fdef.body):
        if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 \
                or getattr(stmt.targets[0], 'id', None) not in cotangents:
            continue
        known = reads.get(id(stmt))
        if known is None or known[0] is not stmt:
            known = reads[id(stmt)] = stmt, nodes.load_names(stmt)
        if KEPT.keys().isdisjoint(known[1]):
            continue
        parents, found = {}, []
        for node in nodes.walk_terms(stmt.value):
            for child in nodes.children(node):
                parents[id(child)] = node
            if node.__class__ is ast.Call and _over_one_axis(node, shapes, namespace, helpers):
                found.append(node)
        renames = {id(c): KEPT[c.func.id] for c in found
                   if _meets(c, shapes[c.args[1].id], shapes, parents)}
        for c in found:     # a whole-array one inside: a number that kept_* takes as well
            inner = c.args[0]
            if id(c) in renames and inner.__class__ is ast.Call and len(inner.args) == 2 \
                    and inner.func.__class__ is ast.Name and inner.func.id in UNIFORM \
                    and not inner.keywords and inner.args[1].__class__ is ast.Name \
                    and shapes.get(inner.args[1].id) \
                    and namespace.get(inner.func.id) is helpers.get(inner.func.id):
                renames[id(inner)] = UNIFORM[inner.func.id]
        if renames:
            new = rewritten[id(stmt)] = nodes.shallow_copy(stmt)
            new.value = _renamed(stmt.value, renames)
    if rewritten:
        fdef.body = _rebuilt(fdef.body, rewritten)


def _over_one_axis(call, shapes, namespace, helpers) -> bool:
    """`grad_of_sum(g, x, axis)` or `(g, x, axis, keepdims)` of the helpers themselves,
    `axis` an int literal, `keepdims` a bool one, x of a static shape."""
    func, args = call.func, call.args
    return func.__class__ is ast.Name and func.id in KEPT and not call.keywords \
        and len(args) in (3, 4) and namespace.get(func.id) is helpers.get(func.id) \
        and args[1].__class__ is ast.Name and bool(shapes.get(args[1].id)) \
        and _literal(args[2], int) and (len(args) == 3 or _literal(args[3], bool))


def _literal(node, kind) -> bool:
    return node.__class__ is ast.Constant and node.value.__class__ is kind


def _renamed(node, calls):
    """A copy of the expression `node` (copied along the paths to `calls`) whose calls
    in `calls` (id -> helper) call that helper instead."""
    if id(node) in calls:
        new = nodes.shallow_copy(node)
        new.func = nodes.name(calls[id(node)])
        new.args = [_renamed(a, calls) for a in node.args]
        return new
    children = nodes.children(node)
    if not any(_holds(child, calls) for child in children):
        return node
    new = nodes.shallow_copy(node)
    for field in new._fields:
        value = getattr(new, field, None)
        if value.__class__ is list:
            setattr(new, field, [_renamed(v, calls) if isinstance(v, ast.AST) else v
                                 for v in value])
        elif isinstance(value, ast.AST):
            setattr(new, field, _renamed(value, calls))
    return new


def _holds(node, calls) -> bool:
    return any(id(n) in calls for n in nodes.walk_terms(node))


def _rebuilt(stmts, rewritten) -> list:
    """`stmts` with the statements in `rewritten` (id -> copy) replaced, and the compound
    statements holding them copied."""
    out = []
    for stmt in stmts:
        if id(stmt) in rewritten:
            stmt = rewritten[id(stmt)]
        elif isinstance(getattr(stmt, 'body', None), list):
            blocks = {f: getattr(stmt, f) for f in ('body', 'orelse')
                      if isinstance(getattr(stmt, f, None), list)}
            new = {f: _rebuilt(b, rewritten) for f, b in blocks.items()}
            if any(new[f] != blocks[f] for f in blocks):
                stmt = nodes.shallow_copy(stmt)
                for f, b in new.items():
                    setattr(stmt, f, b)
        out.append(stmt)
    return out


def _meets(node, shape, shapes, parents, named=False) -> bool:
    """Whether the value read at `node` meets, through unary minus and `+ - * /` only,
    an array of `shape` (arithmetic on names of static shapes; `named`: a name, as the
    native path's loop lowering reads it) before the statement uses it otherwise."""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)):
            node = parent
            continue
        if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, _OPERATORS)):
            return False
        other = parent.right if parent.left is node else parent.left
        if (shapes.get(other.id) if other.__class__ is ast.Name else
                None if named else _shape_of(other, shapes)) == shape:
            return True
        node = parent


def _shape_of(node, shapes):
    """The static shape of arithmetic on names of static shapes and numbers, else None."""
    kind = node.__class__
    if kind is ast.Name:
        return shapes.get(node.id)
    if kind is ast.Constant:
        return () if node.value.__class__ in (int, float) else None
    if kind is ast.UnaryOp:
        return _shape_of(node.operand, shapes) if node.op.__class__ in (ast.USub, ast.UAdd) \
            else None
    if kind is ast.BinOp and node.op.__class__ in _OPERATORS + (ast.Pow,):
        left, right = _shape_of(node.left, shapes), _shape_of(node.right, shapes)
        return None if left is None or right is None else _broadcast(left, right)
    return None


def _broadcast(a, b):
    """NumPy's broadcast of two static shapes of ints, else None."""
    if len(a) < len(b):
        a, b = b, a
    out = list(a)
    for i, n in enumerate(b, len(a) - len(b)):
        m = out[i]
        if n.__class__ is not int or m.__class__ is not int:
            return None
        if m == 1:
            out[i] = n
        elif n != 1 and n != m:
            return None
    return tuple(out) if all(m.__class__ is int for m in out) else None


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): each generated function, when optimizing
    (the sums over one axis kept in NumPy code only: not in the combined function Numba
    compiles)."""
    if ctx.optimize:
        unit = unit_roles(tree, ctx)
        for role in ('combined', 'forward', 'backward'):          # the combined function first
            if role in unit:
                axes = role != 'combined' or ctx.target == 'python'
                transform(unit[role], ctx.shapes, ctx.namespace, ctx.reductions, axes)
                if axes:
                    ctx.tape_reads = ctx.tape_reads or {}
                    kept(unit[role], ctx.shapes, ctx.namespace, ctx.reductions,
                         ctx.cotangent_names, ctx.tape_reads)
    return tree
