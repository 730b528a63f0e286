"""Desugar, loops: every `for` loop iterates `range(...)`.

`ZipValues(namer, source).rewrite(fdef)` makes a `zip(...)` that is not a
loop's iterable the list of its pairs; `Loops(namer).visit_body(body)` makes
`for v in xs` (and `enumerate`, `zip`, `reversed`, `tf.checkpoint(...)`)
`for i in range(len(xs)): v = xs[i]`. Runs after `syntax.resolve`.
"""
from __future__ import annotations

import builtins

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, copyanno, getanno, setanno
from tapeflow.transforms.sugar.assignments import BlockRewriter


def _loop_zip(iterable, target) -> bool:
    """`for a, b in zip(x, y)`: the form `Loops` indexes directly."""
    return _resolved(iterable, builtins.zip) and not iterable.keywords and \
        isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args)


class ZipValues:
    """`zip(x, y)` anywhere but `for a, b in zip(x, y)` is the list of its pairs.

    `list(zip(x, y))`, `tuple(zip(...))`, `dict(zip(...))`, `enumerate(zip(...))`,
    `for pair in zip(...)`: the zip becomes `[(a, b) for a, b in zip(x, y)]`,
    which later passes lower to a loop that indexes `x` and `y` (a zip object has
    no len() and no derivative rule; the list of its pairs has both). This is
    exact where the zip is consumed once, by the call it is passed to or the
    loop it drives. A zip bound to a name (which may be consumed twice, the
    second time empty) or given to `len` (a TypeError in Python) is refused.
    """

    _CONSUMERS = frozenset({builtins.list, builtins.tuple, builtins.dict, builtins.sorted,
                            builtins.sum, builtins.min, builtins.max, builtins.enumerate,
                            builtins.any, builtins.all, builtins.set, builtins.frozenset,
                            builtins.map, builtins.filter})

    def __init__(self, namer, source):
        self.namer = namer
        self.source = source

    def _error(self, node, reason):
        if self.source is None:
            raise TypeError(reason)
        raise self.source.error(node, reason)

    def rewrite(self, fdef):
        loops, zips = set(), []
        for n in nodes.walk_terms(fdef):
            if isinstance(n, ast.For) and _loop_zip(n.iter, n.target):
                loops.add(id(n.iter))
            if isinstance(n, ast.comprehension) and _loop_zip(n.iter, n.target):
                loops.add(id(n.iter))
            if _resolved(n, builtins.zip):
                zips.append(id(n))
        if any(z not in loops for z in zips):   # (most functions: no zip but a loop's)
            self._visit(fdef, None, loops)

    def _visit(self, node, parent, loops):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        new = self._visit(child, node, loops)
                        if new is not child:
                            value[k] = new
            elif isinstance(value, ast.AST):
                new = self._visit(value, node, loops)
                if new is not value:
                    setattr(node, field, new)
        if not _resolved(node, builtins.zip) or id(node) in loops:
            return node
        return self._pairs(node, parent)

    def _pairs(self, call, parent):
        from tapeflow.transforms.sugar.iterators import consumed
        if call.keywords:
            self._error(call, 'zip() with keywords is not supported in compiled code; '
                              'write zip(x, y, ...) with its sequences')
        if _resolved(parent, builtins.len):
            self._error(call, 'a zip object has no len(); write len(list(zip(...))) '
                              'or min(len(x), len(y))')
        if not consumed(call, parent):
            self._error(call, 'zip(...) here is an iterator that is used up by its first pass; '
                              'write list(zip(...)) to keep its pairs, or iterate it where it is '
                              'made (for a, b in zip(x, y))')
        if any(isinstance(a, ast.Starred) for a in call.args):      # zip(*pairs): read at once
            from tapeflow.rules.iterators import zipped
            func = nodes.copy_location(nodes.name('zipped'), call.func)
            setanno(func, Key.RESOLVED, zipped)
            return nodes.copy_location(nodes.call(func, *call.args), call)
        names = [self.namer.new('_z') for _ in call.args]
        target = nodes.tuple_(*[nodes.name(n, store=True) for n in names], store=True)
        pair = nodes.tuple_(*[nodes.name(n) for n in names])
        pairs = nodes.list_comp(pair, [nodes.comprehension(target, call)])
        for n in nodes.walk_terms(pairs):
            if n is not call and not isinstance(n, ast.comprehension):
                nodes.copy_location(n, call)
        return nodes.copy_location(pairs, call)


def _is_one_of(fn, functions) -> bool:
    try:
        return fn in functions
    except TypeError:           # an unhashable callable
        return False


# ------------------------------------------------------------------ for loops

def _grows(body, seq) -> bool:
    """Whether the loop's body may lengthen the list `seq` it iterates (`seq.append(v)`,
    `seq.extend`, `seq.insert`, `seq += ...`), which Python's loop then reads too."""
    for n in nodes.walk_terms(nodes.module(body)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                isinstance(n.func.value, ast.Name) and n.func.value.id == seq and \
                n.func.attr in ('append', 'extend', 'insert'):
            return True
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == seq:
            return True
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.BinOp) and \
                getanno(n, Key.IN_PLACE) and any(isinstance(t, ast.Name) and t.id == seq
                                                 for t in n.targets):
            return True
    return False


def _aug_targets(body) -> set:
    """Names a block binds with `x += ...` (not yet desugared)."""
    return {n.target.id for n in nodes.walk_terms(nodes.module(body))
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}

def _resolved(node, obj) -> bool:
    return isinstance(node, ast.Call) and getanno(node.func, Key.RESOLVED) is obj


class Loops(BlockRewriter):
    """`for v in xs` becomes `for i in range(len(xs)): v = xs[i]`."""

    def __init__(self, namer):
        self.namer = namer

    def visit_For(self, node):
        node.body = self.visit_body(node.body)
        iterable = node.iter
        if isinstance(iterable, ast.Call) and len(iterable.args) == 1 and not iterable.keywords \
                and getattr(getanno(iterable.func, Key.RESOLVED), '__tapeflow_loop_marker__', False):
            node.iter = iterable = iterable.args[0]       # `tf.checkpoint(range(n))`
            setanno(node, Key.CHECKPOINT, True)
        if _resolved(iterable, builtins.range):
            return node
        prologue, heads = [], []
        self.iterated = []
        self.rebound = nodes.store_names(node.body) | _aug_targets(node.body)
        if _resolved(iterable, builtins.enumerate) and not iterable.keywords and \
                isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2:
            counter, item = node.target.elts
            seq, length = self._sequence(iterable.args[0], prologue, node)
            start = iterable.args[1] if len(iterable.args) > 1 else None
            index = counter if start is None and isinstance(counter, ast.Name) else \
                nodes.name(self.namer.new('_i'), store=True)
            if index is not counter:
                heads.append(nodes.assign(counter, nodes.binop(index.id, ast.Add(), start or 0)))
            heads.append(nodes.assign(item, seq(index.id)))
        elif _resolved(iterable, builtins.zip) and not iterable.keywords and \
                isinstance(node.target, ast.Tuple) and len(node.target.elts) == len(iterable.args):
            seqs = [self._sequence(a, prologue, node) for a in iterable.args]
            index = nodes.name(self.namer.new('_i'), store=True)
            for target, (seq, _) in zip(node.target.elts, seqs):
                heads.append(nodes.assign(target, seq(index.id)))
            lengths = [length for _, length in seqs]
            length = lengths[0] if len(lengths) == 1 else \
                nodes.call(nodes.builtin('min'), *lengths)
        else:
            seq, length = self._sequence(iterable, prologue, node)
            index = nodes.name(self.namer.new('_i'), store=True)
            heads.append(nodes.assign(node.target, seq(index.id)))
            named = iterable.id if isinstance(iterable, ast.Name) else None
            if self.iterated and named is not None and _grows(node.body, named):
                return self._growing(node, self.iterated[-1], index.id, heads, prologue)
        loop = nodes.for_(index, nodes.call(nodes.builtin('range'), length), heads + node.body)
        copyanno(node, loop, Key.CHECKPOINT)
        setanno(loop, Key.ITERATED, tuple(self.iterated))
        nodes.located(heads, node)
        nodes.located(prologue, node)
        nodes.copy_location(loop, node)
        return prologue + [loop]

    def _growing(self, node, seq, index, heads, prologue):
        """A list the body appends to, iterated to its end as Python does: `while` the next
        position is in it (the step first: a `continue` does not skip it)."""
        step = nodes.assign(index, nodes.binop(index, ast.Add(), 1))
        more = nodes.compare(nodes.binop(index, ast.Add(), 1), ast.Lt(),
                             nodes.call(nodes.builtin('len'), seq))
        loop = nodes.while_(more, [step] + heads + node.body)
        nodes.located([step] + heads, node)
        nodes.copy_location(loop, node)
        start = nodes.located(nodes.assign(index, -1), node)
        return nodes.located(prologue, node) + [start, loop]

    def _sequence(self, expr, prologue, node):
        """(item, length): `item(i)` reads the i-th element `expr` iterates, `length`
        counts them. `reversed(xs)` reads `xs[n - 1 - i]` with `n = len(xs)` taken once,
        as its iterator does (it has no len() of its own)."""
        if _resolved(expr, builtins.reversed) and len(expr.args) == 1 and not expr.keywords:
            seq = self._named(expr.args[0], prologue)
            count = self.namer.new('_n')
            prologue.append(nodes.assign(count, nodes.call(nodes.builtin('len'), seq)))
            return (lambda i: nodes.subscript(
                seq, nodes.binop(nodes.binop(count, ast.Sub(), 1), ast.Sub(), i))), \
                nodes.name(count)
        seq = self._named(expr, prologue)
        self.iterated.append(seq)
        return (lambda i: nodes.subscript(seq, i)), nodes.call(nodes.builtin('len'), seq)

    def _named(self, expr, prologue):
        """A name for what `expr` evaluates to when the loop starts (Python iterates that
        object: a name bound again in the body changes nothing)."""
        if isinstance(expr, ast.Name) and expr.id not in self.rebound:
            return expr.id
        seq = self.namer.new('_seq')
        prologue.append(nodes.assign(seq, expr))
        return seq
