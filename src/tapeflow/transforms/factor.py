"""A common factor taken out of a cotangent's sum: `bx * 0.5 + bx * _sin` -> `bx * (0.5 + _sin)`.

A name's cotangent is the sum of what each of its uses sends back, and the uses of
one value often send the same cotangent times something: the scalar loop's step
`x = sin(x) * x + 0.5 * x` gives `bx * 0.5 + bx * _sin + bx * x * math.cos(x)`, three
products where the hand-written adjoint writes one. This pass, run on each finished
function (after fusion has gathered each cotangent into one statement), rewrites the
value of an assignment to a cotangent

    ... ± a * p ± a * q ...    ->    ... ± a * (p ± q) ...

for adjacent terms of a sum whose leftmost factor is the same name `a`, when every
cofactor (`p`, `q`) surely holds numbers that add as numbers: a float (or complex)
array or scalar, or a Python number (`+` on two boolean arrays is `or`, and on
small integers it wraps). Such a value is a Python number literal, a call of a
`math` function returning a float, a NumPy ufunc whose every loop returns an
inexact type, arithmetic with one inexact operand, a differentiated parameter, or
a local every assignment of which is one of these (a value restored from the tape
is one the name held before).

The sum is the same in exact arithmetic and rounds differently: a cotangent is
computed to rounding, as by any other order of its terms, never the function's
value (only assignments to cotangents are rewritten, so the forward computation
stays the user's, bit for bit). Where a rewrite makes a temporary single-use,
fusion runs again on the function.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tapeflow.syntax import ast
from tapeflow.syntax import nodes
from tapeflow.transforms import fusion, purity, terms
from tapeflow.transforms.assemble import unit_roles

_SUMS = (ast.Add, ast.Sub)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult)
# `math` functions whose value is a float for every argument they take
_MATH_FLOATS = frozenset({
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'sinh', 'cosh', 'tanh', 'asinh',
    'acosh', 'atanh', 'exp', 'expm1', 'exp2', 'log', 'log1p', 'log2', 'log10', 'sqrt', 'cbrt',
    'pow', 'hypot', 'fabs', 'erf', 'erfc', 'gamma', 'lgamma', 'copysign', 'fmod', 'degrees',
    'radians', 'ldexp'})


def transform(fdef: ast.FunctionDef, cotangents, inexact=(), pops=(),
              restored=None, multiples=None) -> ast.FunctionDef | None:
    """`fdef` with common factors taken out of the sums assigned to `cotangents`
    (names); `inexact`: names known to hold floats (the differentiated parameters);
    `pops`: the names of the tape's pop; `restored` (a function of the split pair): the
    names the combined function's values show inexact, which its pops restore;
    `multiples`: a function of `fdef` and the names its cotangent sums read, giving the
    names that hold a number times another name, read as such (`terms.multiples`). A new
    function (what it rewrites, it copies), or None where nothing changed."""
    targets = [s for s in nodes.statements(fdef.body) if _assigned(s) in cotangents
               and s.value.__class__ is ast.BinOp and s.value.op.__class__ in _SUMS]
    if not targets:
        return None
    typed = _Inexact(fdef, set(inexact), set(pops), restored)
    if multiples is not None:
        multiples = multiples(fdef, set().union(*(nodes.names_in(s.value) for s in targets)))
    rewritten = {}
    for stmt in targets:
        value = terms.simplified(_factored(stmt.value, typed), typed.numeric, multiples or {})
        if value is not stmt.value:
            new = rewritten[id(stmt)] = nodes.shallow_copy(stmt)
            new.value = value
    if not rewritten:
        return None
    out = nodes.shallow_copy(fdef)
    out.body = _rebuilt(fdef.body, rewritten)
    return out


def _assigned(stmt):
    if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 \
            and stmt.targets[0].__class__ is ast.Name:
        return stmt.targets[0].id
    return None


def _rebuilt(stmts, rewritten) -> list:
    def rewrite(block):
        block = fusion.copy_blocks(block, rewrite)
        return [rewritten.get(id(s), s) for s in block]
    return rewrite(stmts)


# ---------------------------------------------------------------- the sums

def _terms(value) -> list:
    """[(negated, term)] of a chain of `+` and `-` (its right operands kept whole)."""
    terms = []
    while value.__class__ is ast.BinOp and value.op.__class__ in _SUMS:
        terms.append((value.op.__class__ is ast.Sub, value.right))
        value = value.left
    terms.append((False, value))
    return terms[::-1]


def _split(term):
    """(the leftmost factor's name, [cofactors in order]) of `a * p * q`, else None."""
    factors = []
    while term.__class__ is ast.BinOp and term.op.__class__ is ast.Mult:
        factors.append(term.right)
        term = term.left
    if term.__class__ is not ast.Name or not factors:
        return None
    return term.id, factors[::-1]


def _product(factors):
    out = factors[0]
    for f in factors[1:]:
        out = nodes.binop(out, ast.Mult(), f)
    return out


def _sum(terms):
    """`t0 ± t1 ± ...` from [(negated, term)] (the first term's sign is its own)."""
    negated, out = terms[0]
    if negated:
        out = nodes.unary(ast.USub(), out)
    for neg, term in terms[1:]:
        out = nodes.binop(out, ast.Sub() if neg else ast.Add(), term)
    return out


def _factored(value, typed):
    terms = _terms(value)
    if len(terms) < 2:
        return value
    out, k, changed = [], 0, False
    while k < len(terms):
        negated, term = terms[k]
        split = _split(term)
        group = [(negated, split)] if split else []
        j = k + 1
        while split and j < len(terms):
            other = _split(terms[j][1])
            if other is None or other[0] != split[0]:
                break
            group.append((terms[j][0], other))
            j += 1
        if len(group) > 1 and all(typed.numeric(_product(fs)) for _, (_, fs) in group):
            inner = _sum([(neg ^ negated ^ sign, part) for neg, (_, fs) in group
                          for sign, part in _parts(_product(fs), typed)])
            out.append((negated, nodes.binop(nodes.name(split[0]), ast.Mult(), inner)))
            k, changed = j, True
        else:
            out.append((negated, term))
            k += 1
    return nodes.copy_location(_sum(out), value) if changed else value


def _parts(cofactor, typed) -> list:
    """The terms of a cofactor that is a sum of numbers (`p + (q + r)` is written
    `p + q + r`), else the cofactor whole."""
    parts = _terms(cofactor)
    if len(parts) > 1 and all(typed.numeric(part) for _, part in parts):
        return parts
    return [(False, cofactor)]


# ---------------------------------------------------------------- what holds numbers

class _Inexact:
    """Which expressions of one function surely hold inexact numbers (or Python
    numbers): a fixpoint over its locals, optimistic at first."""

    def __init__(self, fdef, known, pops, restored=None):
        values, other, popped = {}, set(), set()
        for stmt in nodes.statements(fdef.body):
            name = _assigned(stmt)
            if name is not None:
                if not _restored(stmt.value, pops):     # a value the name held before
                    values.setdefault(name, []).append(stmt.value)
                else:
                    popped.add(name)
            elif stmt.__class__ is ast.Assign:
                bound = {n.id for t in stmt.targets for n in nodes.walk(t)
                         if n.__class__ is ast.Name}
                if not _restored(stmt.value, pops):
                    other |= bound
                else:
                    popped |= bound
            elif stmt.__class__ is ast.For:
                other |= {n.id for n in nodes.walk(stmt.target) if n.__class__ is ast.Name}
            elif stmt.__class__ not in _BINDING_NOTHING:      # any other binding of a name
                other |= {n.id for n in nodes.walk(stmt) if n.__class__ is ast.Name
                          and n.ctx.__class__ is not ast.Load}
        params = {a.id for a in fdef.args.args}
        # `math.f` and `np.f` name the modules unless the function binds those names
        self.modules = {'math', 'np'} - values.keys() - other - params
        self.names = {n for n in values if n not in params} | (known & params)
        if restored is not None:
            # The backward of the split pair pops what its forward computed, by the
            # statements of the combined function's forward part: `restored`, the names
            # inexact there, are so here; a name popped that is not one of them is not.
            self.names |= {n for n in popped if n in restored and n not in values}
            self.names -= popped - restored
        self.names -= other
        self.values = values
        changed = True
        while changed:
            changed = False
            for name in list(self.names):
                if name in values and not all(self.inexact(v) for v in values[name]):
                    self.names.discard(name)
                    changed = True

    def numeric(self, node) -> bool:
        """A value that adds as a number: inexact, or a Python number literal."""
        if node.__class__ is ast.Constant:
            return node.value.__class__ in (int, float, complex)
        return self.inexact(node)

    def inexact(self, node) -> bool:
        kind = node.__class__
        if kind is ast.Constant:
            return node.value.__class__ in (float, complex)
        if kind is ast.Name:
            return node.id in self.names
        if kind is ast.BinOp:
            if node.op.__class__ is ast.Div:
                return self.numeric(node.left) and self.numeric(node.right)
            return node.op.__class__ in _ARITHMETIC and (
                self.inexact(node.left) and self.numeric(node.right)
                or self.numeric(node.left) and self.inexact(node.right))
        if kind is ast.UnaryOp:
            return node.op.__class__ in (ast.USub, ast.UAdd) and self.inexact(node.operand)
        if kind is ast.Call:
            return _float_call(node, self.modules) and all(self.numeric(a) for a in node.args)
        return False


def _restored(value, pops) -> bool:
    """`_pop()` or `_pop()[0]`: a value from the tape (the name's own, pushed before)."""
    if value.__class__ is ast.Subscript:
        value = value.value
    return value.__class__ is ast.Call and value.func.__class__ is ast.Name \
        and value.func.id in pops and not value.args


def _float_call(call, modules) -> bool:
    """`math.f(...)` returning a float, or `np.f(...)` a ufunc every loop of which
    returns an inexact type (`np.sin`, `np.exp`; not `np.add`, which keeps ints)."""
    func = call.func
    if call.keywords or func.__class__ is not ast.Attribute \
            or func.value.__class__ is not ast.Name or func.value.id not in modules:
        return False
    if func.value.id == 'math':
        return func.attr in _MATH_FLOATS and callable(getattr(math, func.attr, None))
    if func.value.id == 'np':
        ufunc = getattr(np, func.attr, None)
        return isinstance(ufunc, np.ufunc) and all(
            t.split('->')[1] in _INEXACT_CODES for t in ufunc.types if 'O' not in t)
    return False


_BINDING_NOTHING = (ast.Expr, ast.If, ast.While, ast.Return, ast.Pass, ast.Break, ast.Continue)
_INEXACT_CODES = frozenset({'e', 'f', 'd', 'g', 'F', 'D', 'G'})


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`), reverse mode, when optimizing: each
    generated function's cotangent sums factored, fused again where that opened a fusion."""
    if not ctx.optimize:
        return tree
    cotangents, inexact, pops = ctx.cotangent_names, set(ctx.wrt_names or ()), {ctx.names.pop}
    combined = unit_roles(tree, ctx).get('combined')
    if combined is not None:        # as it is now, for the split pair (now or when asked for):
        ctx.factored_from = nodes.shallow_copy(combined)     # later passes copy what they
        ctx.factored_from.body = list(combined.body)         # change, never in place
    options, known = ctx.fusion_options(), {}
    for k, fdef in enumerate(tree.body):
        restored = None
        if fdef is not combined:
            if ctx.inexact_locals is None:
                ctx.inexact_locals = frozenset(_Inexact(ctx.factored_from, inexact, pops).names)
            restored = ctx.inexact_locals
        multiples = functools.partial(_multiples, combined=fdef is combined, ctx=ctx,
                                      options=options, known=known)
        for _ in range(_ROUNDS):
            factored = transform(fdef, cotangents, inexact, pops, restored, multiples)
            if factored is None:
                break
            fdef = tree.body[k] = fusion.transform(factored, **options)
    return tree


def _multiples(fdef, read, combined, ctx, options, known):
    """`terms.multiples` of the names `read` in `fdef`'s cotangent sums, in a function that
    writes nothing: of the combined function its own; of the backward of the split pair
    those of the combined function (`known`, a memo) that it restores together."""
    if combined:
        found = terms.multiples(fdef, read)
        return found if found and purity.writes_nothing(fdef, **options) else {}
    if 'all' not in known:
        source = ctx.factored_from
        found = terms.multiples(source)
        known['all'] = found if found and purity.writes_nothing(source, **options) else {}
    wanted = {m: v for m, v in known['all'].items() if m in read}
    if not wanted or not purity.writes_nothing(fdef, **options):
        return {}
    return terms.restored_multiples(fdef, wanted, {ctx.names.pop})


_ROUNDS = 3          # factor, fuse what that made single-use, factor again (`a * b * p + a * q`)
