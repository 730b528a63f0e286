"""Desugar: rewrite the function into the smaller language the later passes know.

Runs after `syntax.fence` and `syntax.resolve`. Guarantees on its output:

- no `match` statement (an `if` chain on its subject), no `:=` (assignments where Python
  evaluates them), no `else` block of a loop (a flag says whether it broke);
- no augmented assignment (`x += y` is `x = x + y`, marked `Key.IN_PLACE`;
  `y[i] += v` is `t = y[i]; t = t + v` (marked); `y[i] = t`);
- every `for` loop iterates `range(...)`: loops over sequences, `enumerate`
  and `zip` index their sequences;
- no `continue`, no `break` but the one `if <flags>: break` that ends a loop
  body (marked `Key.LOOP_EXIT`), and a single `return`, the last statement:
  jumps are lowered to flags that guard the statements they skip.

Calls of the user's functions are made for what they are given (a variant for
the number of star arguments, and for the functions passed); `[x] * n` is the
call `repeated([x], n)`. Other expressions are left alone (ANF runs next).

Each family of sugar is a module of `transforms.sugar`; `transform` runs them
in this order (a later one reads what an earlier one left).
"""
from __future__ import annotations

from tapeflow.syntax import ast
from tapeflow.syntax.naming import Namer
from tapeflow.transforms import namespaces
from tapeflow.transforms.sugar.assignments import AugAssign
from tapeflow.transforms.sugar.exceptions import lower_guarded
from tapeflow.transforms.sugar.folding import FoldTransforms, PullbackCalls
from tapeflow.transforms.sugar.generators import check_reads, is_generator, lower_generator
from tapeflow.transforms.sugar.iterators import IteratorValues
from tapeflow.transforms.sugar.jumps import Jumps
from tapeflow.transforms.sugar.loop_else import lower_loop_else
from tapeflow.transforms.sugar.loops import Loops, ZipValues
from tapeflow.transforms.sugar.match import lower_match
from tapeflow.transforms.sugar.named_ops import LowerNamedOps
from tapeflow.transforms.sugar.attributes import lower_attribute_writes
from tapeflow.transforms.sugar.operators import lower_operator_writes
from tapeflow.transforms.sugar.nested_defs import lift_nested_defs
from tapeflow.transforms.sugar.unpacking import lower_targets
from tapeflow.transforms.sugar.walrus import lower_walrus


def transform(node: ast.FunctionDef, namer: Namer, source=None, fn=None,
              bindings=None) -> ast.FunctionDef:
    if bindings is not None:
        lower_targets(node, namer, bindings)                    # a, *b = v; x[i][j] = v
    if source is not None:
        lower_match(node, namer, source, bindings)              # match -> if/elif on _subject
    lower_loop_else(node, namer)                                # for/while ... else -> flag
    if source is not None:
        lower_walrus(node, namer, source)                       # (y := v) -> y = v; y
    if source is not None and is_generator(fn):
        lower_generator(node, namer, source)                    # yield -> _yielded.append
    if source is not None:
        check_reads(node, source, fn)                           # each read as Python reads it
    if source is not None and bindings is not None:
        namespaces.rewrite(node, namer, source, bindings)       # xp.exp(z) -> exp(xp, z)
    if source is not None and bindings is not None:
        lower_operator_writes(node, namer, source)              # operator.iadd(a, b) -> a += b
        lower_attribute_writes(node, namer, source, bindings)   # o.v = x -> _attrs_o['v'] = x
        lower_guarded(node, namer, source, bindings)            # try, with -> attempt(...)
    if source is not None:
        lift_nested_defs(node, source, fn, namer, bindings)
        LowerNamedOps(source).visit(node)
    if bindings is not None:
        FoldTransforms(namer, bindings, source, fn).visit(node)
        if source is not None:
            PullbackCalls(namer, bindings, source).rewrite(node)
    node.body = AugAssign(namer, source).visit_body(node.body)
    IteratorValues(namer).rewrite(node)
    ZipValues(namer, source).rewrite(node)
    node.body = Loops(namer).visit_body(node.body)
    node.body = Jumps(namer).lower_function(node.body)
    return node


def lower_loops(namer: Namer, stmts: list) -> list:
    """`stmts` with their `for` loops in desugar's form (loops over `range`): for a pass
    that writes loops after desugar (ANF's comprehensions)."""
    return Loops(namer).visit_body(stmts)


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`)."""
    return transform(tree, ctx.namer, ctx.source, ctx.fn, ctx.bindings)
