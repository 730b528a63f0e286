"""A cotangent's sum of products in fewer operations: like terms collected, a common
factor taken out wherever it stands.

`factor` takes a leading name out of adjacent terms (`bx * 0.5 + bx * _sin`). The
sums it leaves often hold more: the Gaussian `exp(-0.5 * x * x)` sends back
`_exp * _mul2 + _exp * x * -0.5`, where `_mul2 = -0.5 * x`, and the sum around it
`_exp * -x + _tanh + x * (1.0 - _tanh * _tanh)` has the factor `x` in two terms
that are not side by side. Here a sum is read as terms `c * f1 * f2 ...` (a number
`c`, factors in any order: multiplication of numbers commutes), with each name
bound to a constant multiple of a name (`multiples`: `_mul2` -> (-0.5, 'x')) read
as that multiple; then

    terms with the same factors become one:     c1 * F + c2 * F  ->  (c1 + c2) * F
    a factor in several terms is taken out:     x * P + x * Q    ->  x * (P + Q)

greedily (the factor in the most terms first), inside each new sum again, and the
sum is written back only when it has fewer operations than before.

Every factor must surely hold numbers (`numeric`, as `factor` decides it: `+` of
booleans is `or`); terms whose coefficients cancel stay apart (`x - x` is nan where
x is inf, not 0). The result equals the sum in exact arithmetic and rounds
differently, as any other order of its terms does.
"""
from __future__ import annotations

from tapeflow.syntax import ast
from tapeflow.syntax import nodes

_SUMS = (ast.Add, ast.Sub)


def simplified(value, numeric, multiples):
    """`value` (an expression) with every sum in it written in fewer operations where
    that can be done (a new node, or `value` itself where nothing changed)."""
    new = _simplify(value, numeric, multiples)
    return value if new is value or _operations(new) >= _operations(value) else new


def _simplify(node, numeric, multiples):
    kind = node.__class__
    if kind is ast.BinOp and node.op.__class__ in _SUMS:
        new = _sum_simplified(node, numeric, multiples)
        if new is not None:
            return new
    if kind is ast.BinOp and node.op.__class__ in (ast.Mult, ast.Add, ast.Sub):
        left = _simplify(node.left, numeric, multiples)
        right = _simplify(node.right, numeric, multiples)
        if left is node.left and right is node.right:
            return node
        new = nodes.shallow_copy(node)
        new.left, new.right = left, right
        return new
    if kind is ast.UnaryOp and node.op.__class__ is ast.USub:
        operand = _simplify(node.operand, numeric, multiples)
        if operand is node.operand:
            return node
        new = nodes.shallow_copy(node)
        new.operand = operand
        return new
    return node


def _sum_simplified(node, numeric, multiples):
    """The sum `node` in fewer operations, or itself; None where its terms are not all
    surely numbers (the caller simplifies inside them)."""
    parts = _summands(node, numeric)
    if parts is None:
        return None
    terms = []
    for negated, part in parts:
        part = _simplify(part, numeric, multiples)
        term = _term(part, numeric, multiples)
        coefficient, factors = term if term is not None else (1, [part])
        terms.append(_Term(-coefficient if negated else coefficient, factors, part, negated))
    new = _written(_normal(terms))
    return new if _operations(new) < _operations(node) else node


class _Term:
    """`coefficient * factors[0] * ...`; `node` (negated where `negated`) as the user's
    code wrote it, kept for writing the term back unchanged."""
    __slots__ = ('coefficient', 'factors', 'node', 'negated')

    def __init__(self, coefficient, factors, node=None, negated=False):
        self.coefficient, self.factors, self.node, self.negated = (
            coefficient, factors, node, negated)

    def key(self):
        return tuple(sorted((_key(f) for f in self.factors), key=repr))


def _summands(node, numeric):
    """[(negated, term)] of a sum, nested sums flattened (`a - (b + c)` is `a - b - c`),
    every term surely a number; else None."""
    out = []

    def add(n, negated):
        if n.__class__ is ast.BinOp and n.op.__class__ in _SUMS:
            add(n.left, negated)
            add(n.right, negated ^ (n.op.__class__ is ast.Sub))
        else:
            out.append((negated, n))
    add(node, False)
    return out if all(numeric(t) for _, t in out) else None


def _term(node, numeric, multiples):
    """(coefficient, [factors]) of a product of numbers, constants, negations and
    multiples folded into the coefficient; None where a factor is not surely a number."""
    coefficient, factors = 1, []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = n.__class__
        if kind is ast.BinOp and n.op.__class__ is ast.Mult:
            stack.append(n.right)
            stack.append(n.left)
        elif kind is ast.UnaryOp and n.op.__class__ is ast.USub:
            coefficient = -coefficient
            stack.append(n.operand)
        elif kind is ast.Constant and n.value.__class__ in (int, float):
            coefficient = coefficient * n.value
        elif kind is ast.Name and n.id in multiples and numeric(n) \
                and numeric(nodes.name(multiples[n.id][1])):
            c, base = multiples[n.id]
            coefficient = coefficient * c
            factors.append(nodes.name(base))
        elif numeric(n):
            factors.append(n)
        else:
            return None
    return coefficient, factors


def _key(factor):
    return ('Name', factor.id) if factor.__class__ is ast.Name else _structure(factor)


def _structure(node):
    """A hashable value equal for equal expressions (their kinds, fields and operands)."""
    if node.__class__ is list:
        return tuple(_structure(n) for n in node)
    if not isinstance(node, ast.AST):
        return node
    return (node.__class__.__name__,) + tuple(
        _structure(getattr(node, f, None)) for f in node._fields
        if f not in ('ctx', 'kind', 'type_comment', 'annotation'))


def _normal(terms) -> list:
    """`terms` with like terms collected and common factors taken out (new terms)."""
    collected, index = [], {}
    for term in terms:
        key = term.key()
        k = index.get(key)
        if k is None:
            index[key] = len(collected)
            collected.append(term)
            continue
        first = collected[k]
        total = first.coefficient + term.coefficient
        if total == 0:                  # cancelling terms stay apart (inf - inf is nan)
            collected.append(term)
            continue
        collected[k] = _Term(total, first.factors)
    return _factored(collected)


def _factored(terms) -> list:
    """Take out the factor found in most terms (at least two), then again in the sum
    left inside and among the rest."""
    counts, first = {}, {}
    for i, term in enumerate(terms):
        for key in {_key(f) for f in term.factors}:
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, i)
    shared = [k for k, n in counts.items() if n > 1]
    if not shared:
        return terms
    best = max(shared, key=lambda k: (counts[k], -first[k]))
    inside, rest, factor, at = [], [], None, first[best]
    for term in terms:
        keys = [_key(f) for f in term.factors]
        if best not in keys:
            rest.append(term)
            continue
        i = keys.index(best)
        factor = term.factors[i]
        inside.append(_Term(term.coefficient, term.factors[:i] + term.factors[i + 1:]))
    inner = _factored(inside)
    sign = -1 if all(t.coefficient < 0 for t in inner) else 1
    if sign < 0:
        inner = [_Term(-t.coefficient, t.factors) for t in inner]
    if len(inner) == 1 and inner[0].coefficient == 1 and inner[0].factors:
        taken = _Term(sign, [factor] + inner[0].factors)
    else:
        taken = _Term(sign, [factor, _written(inner)])
    before = [t for t in rest if terms.index(t) < at]
    after = [t for t in rest if terms.index(t) >= at]
    return _factored(before + [taken] + after) if len(rest) > 1 else before + [taken] + after


def _written(terms):
    """The sum of `terms`, a positive one first where there is one."""
    positive = next((i for i, t in enumerate(terms) if t.coefficient > 0), None)
    if positive:
        terms = [terms[positive]] + terms[:positive] + terms[positive + 1:]
    out = None
    for term in terms:
        node, negative = _product(term)
        if out is None:
            out = nodes.unary(ast.USub(), node) if negative else node
        else:
            out = nodes.binop(out, ast.Sub() if negative else ast.Add(), node)
    return out


def _product(term):
    """(node, negated) writing `term`: its own node where it is one the code wrote."""
    if term.node is not None:
        return term.node, term.negated
    c, factors = term.coefficient, term.factors
    magnitude = -c if c < 0 else c
    if not factors:
        return nodes.const(magnitude), c < 0
    out = factors[0]
    for f in factors[1:]:
        out = nodes.binop(out, ast.Mult(), f)
    if magnitude != 1:
        out = nodes.binop(out, ast.Mult(), nodes.const(magnitude))
    return out, c < 0


def _operations(node) -> int:
    return sum(1 for n in nodes.walk_terms(node) if n.__class__ in (ast.BinOp, ast.UnaryOp))


def multiples(fdef, wanted=None) -> dict:
    """{name: (number, base)}: the names `fdef` binds once, at its top level, to a
    number literal times a name (`-0.5 * x`, `x * 2`) that holds one value throughout
    (a parameter never rebound, or a name bound once above); of the names in `wanted`
    only, where given. The caller checks that `fdef` changes no array in place
    (`purity.writes_nothing`)."""
    candidates = {}
    for stmt in fdef.body:
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 \
                and stmt.targets[0].__class__ is ast.Name \
                and (wanted is None or stmt.targets[0].id in wanted):
            multiple = _multiple(stmt.value)
            if multiple is not None:
                candidates[id(stmt)] = multiple
    if not candidates:                  # (most functions: no walk)
        return {}
    bound = {}
    for stmt in fdef.body:
        for node in nodes.walk(stmt):
            if node.__class__ is ast.Name and node.ctx.__class__ in (ast.Store, ast.Del):
                bound[node.id] = bound.get(node.id, 0) + 1
            elif node.__class__ in (ast.FunctionDef, ast.AugAssign):
                return {}
    params = {a.id for a in fdef.args.args}
    found, above = {}, set()
    for stmt in fdef.body:
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 \
                and stmt.targets[0].__class__ is ast.Name:
            target = stmt.targets[0].id
            multiple = candidates.get(id(stmt))
            if multiple is not None and bound.get(target) == 1 and target not in params:
                base = multiple[1]
                if (base in params and not bound.get(base)) or base in above:
                    found[target] = multiple
            if bound.get(target) == 1 and target not in params:
                above.add(target)
    return found


def restored_multiples(fdef, known, pops) -> dict:
    """The `known` multiples (`multiples` of the combined function) that hold in `fdef`,
    the backward of the split pair: the name and its base both restored by one
    top-level `a, b, ... = _pop()` and bound nowhere else, in a function that writes
    nothing (the forward pushed them together, as the combined function computes them;
    the caller checks `fdef` writes nothing)."""
    bound = {}
    for node in nodes.walk(fdef):
        if node.__class__ is ast.Name and node.ctx.__class__ in (ast.Store, ast.Del):
            bound[node.id] = bound.get(node.id, 0) + 1
    found = {}
    for stmt in fdef.body:
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 \
                and stmt.targets[0].__class__ is ast.Tuple and stmt.value.__class__ is ast.Call \
                and stmt.value.func.__class__ is ast.Name and stmt.value.func.id in pops \
                and not stmt.value.args:
            together = {e.id for e in stmt.targets[0].elts if e.__class__ is ast.Name
                        and bound.get(e.id) == 1}
            found.update({m: (c, base) for m, (c, base) in known.items()
                          if m in together and base in together})
    return found


def _multiple(value):
    """(number, name) of `c * name` / `name * c` (c an int or float literal, maybe
    negated), else None."""
    if value.__class__ is not ast.BinOp or value.op.__class__ is not ast.Mult:
        return None
    for number, other in ((value.left, value.right), (value.right, value.left)):
        c = _number(number)
        if c is not None and other.__class__ is ast.Name:
            return c, other.id
    return None


def _number(node):
    if node.__class__ is ast.UnaryOp and node.op.__class__ is ast.USub:
        c = _number(node.operand)
        return None if c is None else -c
    if node.__class__ is ast.Constant and node.value.__class__ in (int, float):
        return node.value
    return None
