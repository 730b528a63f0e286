"""Fuse single-use temporaries into the one statement that reads them.

ANF names every intermediate, and the reverse sweep names every adjoint
contribution; a hand-written adjoint writes `bx = bx * 0.5 + bmul * _sin`
where the generated one writes three statements. Each statement costs the
interpreter a store and a load, which on scalar code is most of the time.
This pass, run on each finished function, moves the value of

    t = <arithmetic>

into the one later statement of the same block that reads `t`, when:

- the value is arithmetic on names and constants (`+ - * / ** @`, unary `-`,
  and calls of `math` functions, NumPy ufuncs, NumPy reductions over constant
  axes, and the helpers the rules mark pure: `unbroadcast`, `grad_of_sum`...),
  so evaluating it later computes the same number;
- no statement in between rebinds a name the value reads, writes memory
  (a subscript or attribute target), or calls anything but the tape's push
  and `_pop()`, so the operands are the same objects with the same contents;
- that statement is an assignment reading `t` once, and `t` is dead after
  it: the statement rebinds `t` (`bx = bx + ...`), or `t` is assigned once
  and read once in the whole function.

The operations and their order are unchanged (the tree is moved, not
rewritten), so the numbers are bit for bit those of the unfused code.
"""
from __future__ import annotations

from tapeflow.syntax import ast
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms import purity

def transform(fdef: ast.FunctionDef, push=(), pop=(), keep=(), temporary=None,
              namespace=None, facts=None) -> ast.FunctionDef:
    """`fdef` fused (a new function; `fdef` and its statements are left as they are:
    what the fusion rewrites, it copies); `push` and `pop`: the names of the tape's push
    and pop in it (calls that change no array the code reads); `keep`: names never
    fused away (the value's and the gradients', which readers look for); `temporary`,
    a predicate: the names that may vanish (the compiler's, not the user's own);
    `namespace`: the generated module's, whose helpers marked `__tapeflow_pure__`
    (they compute a new value and change nothing) are calls like arithmetic.
    A name that is rebound by the statement reading it (`bx = bx + ...`) stays anyway.
    `facts`: a memo of what statements are, which the functions of one compilation
    share with their statements (no statement is edited: facts stay true)."""
    loads, stores = _counts(fdef)
    for name in keep:
        stores[name] = stores.get(name, 0) + 2          # never assigned once
    helpers = purity.pure_helpers(namespace, stores)
    temporary = temporary or (lambda name: True)
    fuser = _Fuser(loads, stores, set(push), set(pop), temporary, helpers,
                   {} if facts is None else facts)
    fuser.paired = fuser.paired_names(fdef.body, {n for n, k in stores.items()
                                                  if k > 1 and loads.get(n) == k and temporary(n)})
    fused = nodes.shallow_copy(fdef)
    fused.body = fuser.block(fdef.body)
    return fused


def _stored(stmt) -> set:
    """The names a simple statement binds (all it names, for a kind not known here)."""
    if stmt.__class__ is ast.Assign:
        return {n.id for t in stmt.targets for n in nodes.walk_terms(t)
                if n.__class__ is ast.Name and n.ctx.__class__ is not ast.Load}
    if stmt.__class__ in (ast.Expr, ast.Return, ast.Pass, ast.Break, ast.Continue):
        return set()
    return nodes.names_in(stmt)


def _counts(fdef):
    """Reads and bindings of each name; a parameter counts as bound twice (never once:
    it is never fused away)."""
    loads, stores = nodes.name_counts(fdef)
    for stmt in nodes.statements(fdef.body):
        primal = getanno(stmt, Key.PRIMAL)          # the user's call, run again by a
        if primal is not None:                      # checkpointed loop (`checkpoint`)
            for name, count in nodes.name_counts(primal)[0].items():
                loads[name] = loads.get(name, 0) + count
    for arg in fdef.args.args:
        stores[arg.id] = stores.get(arg.id, 0) + 2
    return loads, stores


class _Fuser(purity.Calls):
    def __init__(self, loads, stores, push, pop, temporary, helpers, facts):
        super().__init__(push, pop, helpers, {m for m in ('math', 'np') if not stores.get(m)})
        self.loads, self.stores, self.temporary = loads, stores, temporary
        self.touched = 0                # where the last fusion rewrote a statement
        self.paired = set()             # names each value of which one reader reads (`_paired`)
        # id(statement) -> {what: fact}, true of the statement wherever these (what the
        # facts read of the function) are the same
        self.memo = facts.setdefault((frozenset(self.modules), frozenset(push),
                                      frozenset(pop), frozenset(helpers)), {})

    def block(self, stmts) -> list:
        """A fused copy of the block `stmts` (compound statements copied, with fused
        copies of their blocks; the others shared until a fusion rewrites them)."""
        stmts = copy_blocks(stmts, self.block)
        # A fusion may open another one earlier in the block: sweep again, up to the last
        # fusion (what follows it was looked at since, but for the statements a later
        # fusion rewrites, up to which the sweep goes on: `touched`).
        limit = len(stmts)
        while limit:
            i, again = 0, 0
            while i < min(limit, len(stmts)):
                if self.fuse_at(stmts, i):
                    again = i
                    limit = max(limit, self.touched + 1)
                else:
                    i += 1
            limit = again
        return stmts

    def fuse_at(self, stmts, i) -> bool:
        stmt = stmts[i]
        if self.copied_next(stmts, i):
            return True
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and self.fact(stmt, 'pure', lambda: self.pure(stmt.value))):
            return False
        t = stmt.targets[0].id
        if isinstance(stmt.value, ast.Name) and self.stores.get(t) == 1 and \
                self.temporary(t) and self.propagate(stmts, i, t, stmt.value.id):
            return True
        if self.stores.get(t, 0) < 2 and not (self.loads.get(t) == 1 and self.temporary(t)) \
                and t not in self.paired:
            return False            # read elsewhere too, and no reader can rebind it
        operands = self.fact(stmt, 'operands', lambda: nodes.load_names(stmt.value) | {t})
        for k in range(i + 1, len(stmts)):
            later = stmts[k]
            reads = self.reads_of(later)
            if t in reads:
                return self.substitute(stmts, i, k, t)
            if not self.passable(later, operands):
                return False
        return False

    def copied_next(self, stmts, i) -> bool:
        """`t = <value>; y = t`, `t` a temporary read there alone: `y = <value>`, whatever
        the value (nothing runs between: the same evaluation, in the same place)."""
        use = stmts[i + 1] if i + 1 < len(stmts) else None
        if getattr(use, 'value', None).__class__ is not ast.Name:       # (the common case)
            return False
        stmt, t = stmts[i], ast.assigned_name(stmts[i])
        if t is None or ast.assigned_name(use) is None or ast.name_id(use.value) != t \
                or self.loads.get(t) != 1 or self.stores.get(t) != 1 or not self.temporary(t) \
                or isinstance(stmt.value, ast.Attribute):   # (a bound method keeps its name)
            return False
        fused = stmts[i + 1] = nodes.shallow_copy(stmt)    # (located where the value is:
        fused.targets = use.targets                         # its errors name that line)
        del stmts[i]
        self.touched = i
        self.loads[t] = self.stores[t] = 0
        return True

    def paired_names(self, body, names) -> set:
        """Those of `names` (each read as often as it is assigned) every value of which
        is read by the first statement after its assignment, in its block, to mention the
        name, and nowhere else: one read per value (`_sin = math.sin(x)` in the forward
        sweep and again in the reverse one, each read right after). Each such assignment
        may fuse into its reader as a name assigned once and read once would."""
        if not names:
            return set()
        failed = set()

        def block(stmts) -> set:
            """The names of `names` that `stmts` mention."""
            waiting, seen = set(), set()        # assigned here, not read yet; mentioned
            for stmt in stmts:
                if isinstance(getattr(stmt, 'body', None), list):
                    here = set()
                    for field in ('test', 'iter', 'target'):
                        part = getattr(stmt, field, None)
                        if part is not None:
                            here |= nodes.names_in(part) & names
                    for field in ('body', 'orelse'):
                        inner = getattr(stmt, field, None)
                        if isinstance(inner, list):
                            here |= block(inner)
                    failed.update(here & waiting)        # read (or not) in a nested block
                    waiting -= here
                    seen |= here
                    continue
                reads = self.reads_of(stmt) & names
                failed.update(reads - waiting)           # a value from elsewhere
                waiting -= reads
                stored = _stored(stmt) & names
                target = ast.assigned_name(stmt)
                if target in names:
                    failed.update(stored - {target})
                    if target in waiting:
                        failed.add(target)               # assigned again, never read
                    waiting.add(target)
                else:
                    failed.update(stored)                # bound otherwise (a tuple)
                seen |= reads | stored
            failed.update(waiting)                       # read after the block, if at all
            return seen
        block(body)
        return names - failed

    def fact(self, stmt, what, compute):
        """`compute()`, a fact about `stmt`, memoised: a statement changes only where a
        fusion rewrites it, which forgets its facts."""
        facts = self.memo.get(id(stmt))
        if facts is None:
            facts = self.memo[id(stmt)] = {'': stmt}        # (holds it: ids stay unique)
        if what not in facts:
            facts[what] = compute()
        return facts[what]

    def reads_of(self, stmt) -> set:
        """The names `stmt` reads."""
        return self.fact(stmt, 'reads', lambda: nodes.load_names(stmt))

    def propagate(self, stmts, i, t, source) -> bool:
        """`t = source`, `t` assigned nowhere else: every read of `t` reads `source`, the
        same object, where no statement since rebinds `source`."""
        readers, found = [], 0                  # (position, reads of `t` there)
        for k in range(i + 1, len(stmts)):
            later = stmts[k]
            if found == self.loads.get(t, 0):
                break
            names = [n for n in nodes.walk_terms(later) if isinstance(n, ast.Name)]
            here = sum(n.id == t for n in names)
            if here:
                readers.append(k)
            found += here
            if any(n.id == source and not isinstance(n.ctx, ast.Load) for n in names):
                # rebound here: reads of `t` in an assignment's value come before the store
                if here and not (isinstance(later, ast.Assign) and isinstance(
                        later.targets[0], (ast.Name, ast.Tuple))):
                    return False
                break
        if not readers or found != self.loads.get(t, 0):
            return False
        for k in readers:                       # a renamed copy of each reader
            stmts[k] = nodes.clone(stmts[k])
            for n in nodes.walk_terms(stmts[k]):
                if isinstance(n, ast.Name) and n.id == t:
                    n.id = source
        self.loads[source] = self.loads.get(source, 0) + found - 1
        self.loads[t], self.stores[t] = 0, 0
        del stmts[i]
        self.touched = readers[-1] - 1
        return True

    def substitute(self, stmts, i, k, t) -> bool:
        use = stmts[k]
        if not (isinstance(use, ast.Assign) and len(use.targets) == 1
                and isinstance(use.targets[0], ast.Name)):
            return False
        spots = [n for n in nodes.walk_terms(use.value) if isinstance(n, ast.Name) and n.id == t]
        if len(spots) != 1 or not self.fact(use, 'plain', lambda: self.plain_value(use)):
            return False
        rebinds = use.targets[0].id == t
        if not rebinds and t not in self.paired and (
                self.loads.get(t) != 1 or self.stores.get(t) != 1 or not self.temporary(t)):
            return False
        value = _replaced(use.value, spots[0], stmts[i].value)
        if self.helpers and (self.fact(stmts[i], 'helps', lambda: self.calls_helper(stmts[i].value))
                             or self.fact(use, 'helps', lambda: self.calls_helper(use.value))) \
                and self.too_nested(value):
            return False
        use = stmts[k] = nodes.shallow_copy(use)
        use.value = value
        del stmts[i]
        self.touched = k - 1
        self.loads[t] -= 1
        self.stores[t] -= 1
        return True

    def calls_helper(self, value) -> bool:
        return any(n.__class__ is ast.Call and n.func.__class__ is ast.Name
                   and n.func.id in self.helpers for n in nodes.walk_terms(value))

    def too_nested(self, value) -> bool:
        """Whether `value` calls helpers more than twice deep or three times, or calls one
        and is wider than a line a reader takes in (`grad_of_sum(unbroadcast(-bz, m) / s,
        e) * e`); arithmetic alone fuses as wide as it comes."""
        calls = 0

        def depth(node):
            nonlocal calls
            inner = max((depth(child) for child in nodes.children(node)), default=0)
            if node.__class__ is ast.Call and node.func.__class__ is ast.Name \
                    and node.func.id in self.helpers:
                calls += 1
                return inner + 1
            return inner
        deepest = depth(value)
        return deepest > _MOST_NESTED or calls > _MOST_CALLS or calls and _width(value) > _WIDEST

    def passable(self, stmt, names) -> bool:
        """Whether `stmt` may run between a value's old and new place."""
        if isinstance(stmt, ast.Expr):
            return self.fact(stmt, 'plain', lambda: self.harmless_call(stmt.value) and all(
                self.plain(a) for a in stmt.value.args))
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            return False
        target = stmt.targets[0]
        targets = [target] if isinstance(target, ast.Name) else getattr(target, 'elts', None)
        if targets is None or not all(isinstance(e, ast.Name) for e in targets):
            return False                       # writes memory
        if any(e.id in names for e in targets):
            return False
        return self.fact(stmt, 'plain', lambda: self.plain_value(stmt))

    def plain_value(self, stmt) -> bool:
        """`plain` of an assignment's value; a pure value is (no walk where that is known)."""
        if isinstance(stmt.targets[0], ast.Name) and \
                self.fact(stmt, 'pure', lambda: self.pure(stmt.value)):
            return True
        return self.plain(stmt.value)

    def plain(self, value) -> bool:
        """No call that may change an array: arithmetic, pure calls, the tape's pop."""
        for node in nodes.walk_terms(value):
            if isinstance(node, ast.Call) and not self.pure_call(node) and not self.is_pop(node):
                return False
        return True



_MOST_NESTED, _MOST_CALLS = 2, 3           # helper calls one fused statement may hold
_WIDEST = 76                                # and its value's characters, about


def _width(node) -> int:
    """About how many characters `node` takes written out (without parentheses)."""
    kind = node.__class__
    if kind is ast.Name:
        return len(node.id)
    if kind is ast.Constant:
        return len(repr(node.value))
    if kind is ast.Attribute:
        return _width(node.value) + 1 + len(node.attr)
    if kind is ast.BinOp:
        return _width(node.left) + 3 + _width(node.right)
    if kind is ast.UnaryOp:
        return 1 + _width(node.operand)
    if kind is ast.Call:
        parts = [_width(a) for a in node.args] + [len(k.arg or '') + 1 + _width(k.value)
                                                  for k in node.keywords]
        return _width(node.func) + 2 + sum(parts) + 2 * max(len(parts) - 1, 0)
    return sum(_width(child) + 2 for child in nodes.children(node))


def copy_blocks(stmts, rewrite) -> list:
    """A copy of the block `stmts` whose compound statements are copies with their
    blocks rewritten by `rewrite` (a block -> a new block); the others shared."""
    stmts = list(stmts)
    for k, stmt in enumerate(stmts):
        if isinstance(getattr(stmt, 'body', None), list):
            stmt = stmts[k] = nodes.shallow_copy(stmt)
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    setattr(stmt, field, rewrite(inner))
    return stmts


def _replaced(tree, old, new):
    """A copy of `tree` with the node `old` replaced by `new`: the nodes on the path
    from `tree` to `old` are copied, the rest shared."""
    if tree is old:
        return new
    for field in tree._fields:
        value = getattr(tree, field, None)
        if isinstance(value, ast.AST):
            replaced = _replaced(value, old, new)
            if replaced is not value:
                tree = nodes.shallow_copy(tree)
                setattr(tree, field, replaced)
                return tree
        elif isinstance(value, list):
            for k, item in enumerate(value):
                if isinstance(item, ast.AST):
                    replaced = _replaced(item, old, new)
                    if replaced is not item:
                        tree = nodes.shallow_copy(tree)
                        setattr(tree, field, value[:k] + [replaced] + value[k + 1:])
                        return tree
    return tree


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): each generated function fused, with
    the names `ctx.fusion_options()` gives; nothing without optimization."""
    if ctx.optimize:
        options = ctx.fusion_options()
        facts = {}                      # the functions share most statements
        tree.body = [transform(fdef, **options, facts=facts) for fdef in tree.body]
    return tree
