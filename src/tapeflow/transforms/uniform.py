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
"""
from __future__ import annotations

from tapeflow.syntax import ast

from tapeflow.syntax import nodes
from tapeflow.transforms.assemble import unit_roles

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
UNIFORM = {'grad_of_sum': 'uniform_sum', 'grad_of_mean': 'uniform_mean'}


def transform(fdef: ast.FunctionDef, shapes: dict, namespace: dict, helpers: dict):
    """Rewrite (copying what it changes: the split functions share statements) the whole-array `grad_of_sum` / `grad_of_mean` of `fdef` whose
    reads all broadcast (`shapes`: name -> static shape; `namespace`, the generated
    module's, and `helpers`, name -> function, confirm what the names call)."""
    wanted = {}                                       # target -> (call, shape of `like`)
    for stmt in nodes.statements(fdef.body):
        call = stmt.value if isinstance(stmt, ast.Assign) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id in UNIFORM and len(call.args) == 2 and not call.keywords \
                and isinstance(call.args[1], ast.Name) \
                and namespace.get(call.func.id) is helpers.get(call.func.id) \
                and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and shapes.get(call.args[1].id):
            target = stmt.targets[0].id
            wanted[target] = None if target in wanted else (stmt, shapes[call.args[1].id])
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
        stmt, shape = found
        if all(_meets(read, shape, shapes, parents) for read in reads[target]):
            new = rewritten[id(stmt)] = nodes.shallow_copy(stmt)
            new.value = nodes.shallow_copy(stmt.value)
            new.value.func = nodes.name(UNIFORM[stmt.value.func.id])
    if rewritten:                        # copies: other functions may share these statements
        fdef.body = _rebuilt(fdef.body, rewritten)


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


def _meets(node, shape, shapes, parents) -> bool:
    """Whether the value read at `node` meets, through unary minus and `+ - * /` only,
    an array of `shape` (named) before the statement uses it otherwise."""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)):
            node = parent
            continue
        if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, _OPERATORS)):
            return False
        other = parent.right if parent.left is node else parent.left
        if isinstance(other, ast.Name) and shapes.get(other.id) == shape:
            return True
        node = parent


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): each generated function, when optimizing."""
    if ctx.optimize:
        unit = unit_roles(tree, ctx)
        for role in ('combined', 'forward', 'backward'):          # the combined function first
            if role in unit:
                transform(unit[role], ctx.shapes, ctx.namespace, ctx.reductions)
    return tree
