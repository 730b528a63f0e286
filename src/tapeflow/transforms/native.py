"""Native: the combined function made Numba-compatible and compiled (`compile='numba'`).

The last pass of both modes; it runs only where the compilation asks for a native
target (`compilation.Spec.compile`: 'numba', or 'auto'). It leaves the Python
unit as `codegen` loaded it (the split pair and the combined function, which callers
under a tape and `source` still read) and adds a native twin of the combined function
(forward mode: of the jvp, which has no tape; only the checks below apply):

- the one tape `_tape` (a list of whatever is pushed) becomes one tape per push/pop
  pair (`Key.TAPE_PAIR`), so each tape holds values of one type, as Numba requires: a
  stack restricted to one pair's pushes and pops is still a stack. A pair pushed
  directly in the body of a top-level `for i in _range` loop, `_range = range(...)`,
  when the value pushed is a number throughout (`analysis.shapes`: shape `()`), gets
  a float64 array allocated at loop entry (`_x_tape = np.empty(len(_range))`, filled
  through a counter); a pair pushed and popped once, both in the function's body
  outside loops and branches (a loop's trip count), a variable (`_trip_count`); any
  other pair a growable list (`_tape.append`, `_tape.pop`);
- the tape's own consistency checks are dropped (each tape is popped as pushed);
- what Numba cannot compile and this pass can see is refused here, located at the
  user's line (`UnsupportedError`): a call of a user function that `native_calls` did
  not put in line, or of a runtime helper without an njit twin, a global or closure
  name (Numba would freeze its value), a nested function, a dict, a lambda, a
  comprehension, an f-string;
  With `compile='auto'`, one warning (at that line) and the NumPy path;
- static-shape array statements become loops (`native_loops`); `reversed(r)`: `reversed_range(r)`.

What Numba finds only when it types the code (an unsupported NumPy call) is told at
the user's line when the first call compiles it, before anything runs
(`runtime.native.Native`). The combined function is `compiled.combined` afterwards,
its text `compiled.native_source` (`tapeflow show --compile numba`). With tapeflow's
disk cache on (`ctx.native_dir`), the function is written to a module file there,
named by its text's hash, and compiled with `njit(cache=True)`: a new process loads
Numba's machine code instead of compiling it again.
"""
from __future__ import annotations

import warnings

from tapeflow.errors import NativeFallbackWarning, UnsupportedError
from tapeflow.runtime import native as native_runtime
from tapeflow.transforms import native_loops
from tapeflow.transforms.draws import is_draw
from tapeflow.transforms.native_shapes import float_valued
from tapeflow.syntax import ast, nodes, sourcemap
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.naming import identifier as _id
from tapeflow.syntax.unparse import annotate, line_origins, load_module, origins, unparse

TARGETS = ('python', 'numba', 'auto')

# Builtins Numba compiles as Python runs them; modules it compiles calls of.
_BUILTINS = frozenset({'range', 'len', 'float', 'int', 'bool', 'abs', 'min', 'max', 'reversed',
                       'slice'})
_MODULES = frozenset({'np', 'math'})
_REFUSED = {ast.Dict: 'a dict', ast.DictComp: 'a dict comprehension', ast.Lambda: 'a lambda',
            ast.SetComp: 'a set comprehension', ast.GeneratorExp: 'a generator expression',
            ast.ListComp: 'a list comprehension', ast.JoinedStr: 'an f-string'}


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`; it runs where `ctx.target` is not
    'python'): the native function, or `tree` (the combined one) where 'auto' fell back."""
    compiled = ctx.compiled
    try:
        fdef = native_tree(tree, ctx)      # (codegen's: the combined function, or the jvp)
    except UnsupportedError as error:
        if ctx.target != 'auto':
            raise
        warnings.warn_explicit(f"{error} (compile='auto': the NumPy path runs {_id(ctx.fn)})",
                               NativeFallbackWarning, error.filename, error.lineno)
        return tree
    text, filename, where = unparse(fdef), ctx.source.filename, origins(fdef)
    module = native_runtime.module_file(text, ctx.native_dir)
    if module is not None:              # a file Numba's disk cache can key on
        function, generated = native_runtime.load_file(module, fdef.name)
        first = native_runtime.HEADER.count('\n') + 1
    else:
        namespace = native_runtime.namespace()
        load_module(text, namespace, _id(ctx.fn) + ' native',
                    display=annotate(text, fdef, filename, origins=where)[0])
        function, generated, first = namespace[fdef.name], namespace['__tapeflow_filename__'], 1
    lines = line_origins(text, fdef, first, where)
    lines.setdefault(first, (ctx.source.first_line, 0))   # the `def`: what nothing locates
    sourcemap.register(generated, filename, lines)
    compiled.native_source = text
    compiled.combined = native_runtime.Native(function, compiled.combined, ctx.target,
                                              filename, generated, lines, module is not None)
    return fdef


def native_tree(combined, ctx):
    """A copy of the combined function in the form the module's docstring gives, or a
    located `UnsupportedError` for what it cannot hold."""
    fdef = nodes.clone(combined)
    # a default bound in the generated module (`k=_default`, an array) is not in Numba's
    # namespace; every caller passes every argument, so such defaults (and those before) go
    bound = [i for i, d in enumerate(fdef.args.defaults) if not isinstance(d, ast.Constant)]
    if bound:
        fdef.args.defaults = fdef.args.defaults[bound[-1] + 1:]
    _check(fdef, ctx)
    tapes = _Tapes(ctx).rewrite(fdef) if ctx.mode == 'reverse' else ()   # (the jvp has none)
    native_loops.lower(fdef, ctx, tapes)
    _Reversed().visit(fdef)
    return fdef


def _refuse(node, ctx, what, instead, near=None):
    """A located `UnsupportedError`: at `node`'s line, else `near` (the statement last
    located before it), else the function's first line."""
    line, col = getanno(node, Key.ORIGIN) or near or (ctx.source.first_line, 0)
    raise UnsupportedError(f"compile='numba': {what}; {instead}",
                           ctx.source.filename, line, col)


def _derivative_of_derivative(ctx, stmt, near):
    """Refuse the derivative of tapeflow's derivative (`jvp(grad(f))`), at `f`'s line."""
    what, instead = ('a derivative of a derivative', "the native path compiles one "
                     "derivative: use compile='python' for a jvp or vjp of grad")
    adjoint = getattr(ctx.fn, '__tapeflow_adjoint__', None)
    code = getattr(adjoint[1], '__code__', None) if adjoint else None
    if code is None:
        _refuse(stmt, ctx, what, instead, near)
    raise UnsupportedError(f"compile='numba': {what} ({code.co_name}); {instead}",
                           code.co_filename, code.co_firstlineno, 0)


def _is_generated(fn) -> bool:
    return getattr(getattr(fn, '__code__', None), 'co_filename', '').startswith('<tapeflow')


def _located(node, stmt):
    return node if getanno(node, Key.ORIGIN) else stmt


def _check(fdef, ctx):
    """Refuse, at its line, the first construct Numba cannot compile that shows in the text."""
    params = {a.id for a in fdef.args.args}
    local = nodes.store_names(fdef.body) | params
    names = getattr(ctx, 'names', None)
    tape = {names.tape, names.push, names.pop} if ctx.mode == 'reverse' else set()
    callees = {name: fn for fn, *_, bound in ctx.compiled.links for name in bound.values()}
    twins, near = native_runtime.TWINS, None
    for stmt in nodes.statements(fdef.body):
        near = getanno(stmt, Key.ORIGIN) or near
        if isinstance(stmt, ast.FunctionDef):
            _refuse(stmt, ctx, f'the function {stmt.name} defined inside, which Numba does '
                    'not compile', "define it at module level and pass what it reads, or use "
                    "compile='python'", near)
        for node in nodes.own_nodes(stmt):
            kind = _REFUSED.get(node.__class__)
            if kind is not None:
                _refuse(_located(node, stmt), ctx, f'{kind}, which Numba does not compile',
                        "write it with arrays and loops, "
                        "or use compile='python'", near)
            if is_draw(node):       # (and the native gradient runs the forward sweep again)
                _refuse(_located(node, stmt), ctx, 'a random draw, which Numba makes from its '
                        "own generator: another number than NumPy's", "use compile='python'", near)
            if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
                continue
            name = node.id
            if name in local or name in tape or name in _BUILTINS or name in _MODULES \
                    or name in twins:
                continue
            if name in callees and _is_generated(callees[name]):
                _derivative_of_derivative(ctx, stmt, near)
            if name in callees:
                _refuse(stmt, ctx, f'a call of the user function {_id(callees[name])}()',
                        "the native path puts in line only plain functions of the caller's "
                        "file (not recursive ones, closures, *args): inline it, or use "
                        "compile='python'", near)
            if name in ctx.runtime_names or \
                    getattr(ctx.namespace.get(name), '__module__', '').startswith('tapeflow.'):
                _refuse(stmt, ctx, f'the {_derivative(ctx)} of this line calls {name}(), which '
                        f'has no Numba twin yet', "use compile='python' (or 'auto')", near)
            _refuse(stmt, ctx, f'the name {name!r}, from outside the function',
                    'Numba would freeze its value when it compiles (a later change would not '
                    'be seen): pass it as an argument', near)


class _Tapes:
    """One tape per push/pop pair in place of the one `_tape` (see the module's docstring)."""

    def __init__(self, ctx):
        self.ctx, self.names = ctx, ctx.names
        self.tapes = {}          # pair -> its tape's name
        self.arrays = {}         # pair -> (its counter's name, the range it is sized by)
        self.once = set()        # pairs pushed and popped once: a variable holds the value

    def rewrite(self, fdef):
        self.floats = float_valued(fdef, self.names.pop)
        self._plan_arrays(fdef.body)
        self._plan_once(fdef.body)
        fdef.body = self._block(fdef.body, top=True)
        inits = []
        for pair, tape in self.tapes.items():
            if pair not in self.arrays and pair not in self.once:
                inits.append(nodes.assign(tape, nodes.list_()))
        fdef.body[:0] = inits
        left = nodes.loaded_names(fdef) & {self.names.tape, self.names.push, self.names.pop}
        if left:
            _refuse(fdef, self.ctx, 'a use of the tape other than by push/pop pairs',
                    "use compile='python'")
        return set(self.tapes.values())

    def _plan_arrays(self, body):
        """Pairs pushed in the body of a top-level loop over a range known at its entry
        (in its branches too: at most once a trip)."""
        ranges = {}
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name) and _calls(stmt.value, 'range'):
                ranges[stmt.targets[0].id] = stmt
            if isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Name) and \
                    stmt.iter.id in ranges:
                for inner in _outside_loops(stmt.body):
                    pair = getanno(inner, Key.TAPE_PAIR)
                    pushed = self._push_of(inner) if pair is not None else None
                    if isinstance(pushed, ast.Name) and self.scalar(pushed.id):
                        self.arrays[pair] = (None, stmt.iter.id, stmt)

    def scalar(self, name):
        """Whether `name` holds a number throughout (`analysis.shapes`: shape `()`; a
        name taped before its first binding: a float from its placeholder on, where every
        binding is a `math` function's float, `_placeholder`)."""
        return self.shape(name) == () and (name not in self.ctx.undefined or
                                           name in self.floats)

    def shape(self, name):
        """`name`'s static shape (a tuple of ints), or None."""
        shape = (self.ctx.shapes or {}).get(name)
        if shape.__class__ is tuple and all(n.__class__ is int for n in shape):
            return shape
        return None

    def _placeholder(self, stmt):
        """`_sin = None`, where `_sin` is taped before its first binding and holds values
        of one static shape (numbers: floats by construction, `float_valued`): NaN of
        that shape instead, so that its tape has one type (the value is pushed and popped
        back, and nothing reads it: were it read, the NaN would show)."""
        if not _assigns_constant(stmt, None):
            return None
        name = ast.name_id(stmt.targets[0])
        shape = self.shape(name) if name in self.ctx.undefined else None
        if shape is None:
            return None
        if shape == ():         # (an int, `_add = i + 1`, keeps its list and None)
            return nodes.attribute(nodes.name('math'), 'nan') if name in self.floats else None
        return nodes.call(nodes.attribute(nodes.name('np'), 'full'), _shape_node(shape),
                          nodes.attribute(nodes.name('math'), 'nan'))

    def _zeros(self, stmt):
        """`bx = 0.0` at the start of the reverse sweep (before anything is popped: `x`
        holds its last value, the one `bx` is the adjoint of): `zeros_like_adjoint(x)`,
        the number 0.0 for a number and zeros of its shape for an array, so that Numba
        types `bx` with the arrays added to it later (the same numbers)."""
        if not _assigns_constant(stmt, 0.0):
            return None
        primal = (self.ctx.primal_of or {}).get(ast.name_id(stmt.targets[0]))
        if primal is None:
            return None
        return nodes.call('zeros_like_adjoint', nodes.name(primal))

    def _plan_once(self, body):
        """Pairs whose push and pop both stand in the function's body, outside every
        loop and branch (a loop's trip count): each runs once."""
        top = {}
        for stmt in body:
            pair = getanno(stmt, Key.TAPE_PAIR)
            if pair is not None and self._uses_tape(stmt):
                top.setdefault(pair, []).append(stmt)
        inner = [getanno(stmt, Key.TAPE_PAIR) for stmt in nodes.statements(body)
                 if stmt not in body]
        for pair, stmts in top.items():
            if len(stmts) == 2 and pair not in inner and self._push_of(stmts[0]) is not None:
                self.once.add(pair)

    def _block(self, body, top=False):
        out, starts = [], False            # `starts`: the statements after `_value = ...`
        for stmt in body:
            if self._is_tape_binding(stmt):
                continue
            value = self._placeholder(stmt) if top else None
            starts = top and (_assigns(stmt, self.names.value) or
                              starts and _assigns_constant(stmt, 0.0))
            if starts and value is None:
                value = self._zeros(stmt)
            if value is not None:
                stmt.value = value
            if self._checks_tape(stmt):
                continue
            for field in ('body', 'orelse'):
                block = getattr(stmt, field, None)
                if isinstance(block, list) and block:
                    setattr(stmt, field, self._block(block))
            pair = getanno(stmt, Key.TAPE_PAIR)
            if pair is not None and self._uses_tape(stmt):
                out.extend(self._paired(stmt, pair))
            else:
                out.append(stmt)
            if top and isinstance(stmt, ast.For):
                out[-1:-1] = self._allocations(stmt)
        return out

    def _allocations(self, loop):
        """Before a top-level loop: the arrays of the pairs pushed in its body, their counters."""
        made = []
        for pair, (counter, range_name, where) in self.arrays.items():
            if where is loop:
                made.append(nodes.assign(self.tapes[pair], nodes.call(
                    nodes.attribute(nodes.name('np'), 'empty'),
                    nodes.call('len', nodes.name(range_name)))))
                made.append(nodes.assign(counter, 0))
        return made

    def _is_tape_binding(self, stmt):
        """`_tape = []`, `_push = _tape.append`, `_pop = _tape.pop`."""
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            return False
        target = ast.name_id(stmt.targets[0])
        return target in (self.names.tape, self.names.push, self.names.pop) and \
            (target != self.names.tape or isinstance(stmt.value, ast.List))

    def _checks_tape(self, stmt):
        """The tape's consistency checks (`assert not _tape, ...`)."""
        return stmt.__class__.__name__ == 'Assert' and \
            self.names.tape in nodes.loaded_names(stmt)

    def _tape_of(self, pair, stmt):
        if pair not in self.tapes:
            pushed = self._push_of(stmt)
            base = f'_{pushed.id.lstrip("_")}_tape' if isinstance(pushed, ast.Name) else '_tape'
            if pair in self.once:
                base = '_trip_count' if _calls(pushed, 'len') else base.replace('_tape', '_kept')
            self.tapes[pair] = self.ctx.namer.new(base)
            if pair in self.arrays:
                _, range_name, loop = self.arrays[pair]
                self.arrays[pair] = (self.ctx.namer.new(base + '_top'), range_name, loop)
        return self.tapes[pair]

    def _uses_tape(self, stmt):
        """Whether `stmt`'s own expressions push or pop (`optimize` may have dropped them)."""
        return any(_calls(n, self.names.push) or _calls(n, self.names.pop)
                   for n in nodes.own_nodes(stmt))

    def _push_of(self, stmt):
        """The value `stmt` pushes (`_push(value)`), or None."""
        if isinstance(stmt, ast.Expr) and _calls(stmt.value, self.names.push):
            return stmt.value.args[0]
        return None

    def _paired(self, stmt, pair):
        """`stmt`, its push or pops on the pair's own tape."""
        tape = self._tape_of(pair, stmt)
        if pair in self.once:           # _trip_count = len(_range) ... range(_trip_count)
            pushed = self._push_of(stmt)
            if pushed is not None:
                return [nodes.located(nodes.assign(tape, pushed), stmt)]
            return [_Replace(self.names, lambda args: nodes.name(tape), None).visit_own(stmt)]
        if pair in self.arrays:
            counter = self.arrays[pair][0]
            pushed = self._push_of(stmt)
            if pushed is not None:       # _x_tape[_x_tape_top] = x; _x_tape_top += 1
                return [nodes.located(nodes.assign(
                            nodes.subscript(nodes.name(tape), nodes.name(counter), store=True),
                            pushed), stmt),
                        nodes.located(nodes.assign(counter, nodes.binop(
                            nodes.name(counter), ast.Add(), nodes.const(1))), stmt)]
            pop = nodes.located(nodes.assign(counter, nodes.binop(
                nodes.name(counter), ast.Sub(), nodes.const(1))), stmt)
            return [pop, _Replace(self.names, lambda args: nodes.subscript(
                nodes.name(tape), nodes.name(counter)), None).visit_own(stmt)]
        return [_Replace(self.names, lambda args: nodes.call(
            nodes.attribute(nodes.name(tape), 'pop')),
            lambda args: nodes.call(nodes.attribute(nodes.name(tape), 'append'), *args)
        ).visit_own(stmt)]


class _Reversed(nodes.Transformer):
    """`reversed(r)` -> `reversed_range(r)`: Numba iterates a range, not its reversal."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if _calls(node, 'reversed') and len(node.args) == 1:
            node.func = nodes.name('reversed_range')
        return node


class _Replace(nodes.Transformer):
    """`_pop()` and `_push(v)` in a statement's own expressions, replaced."""

    def __init__(self, names, pop, push):
        self.names, self.pop, self.push = names, pop, push

    def visit_own(self, stmt):
        for field in stmt._fields:
            if field in ('body', 'orelse'):
                continue
            value = getattr(stmt, field, None)
            if isinstance(value, ast.AST):
                setattr(stmt, field, self.visit(value))
            elif isinstance(value, list):
                value[:] = [self.visit(v) if isinstance(v, ast.AST) else v for v in value]
        return stmt

    def visit_Call(self, node):
        self.generic_visit(node)
        if _calls(node, self.names.pop):
            return self.pop(node.args)
        if _calls(node, self.names.push) and self.push is not None:
            return self.push(node.args)
        return node


def _outside_loops(body):
    """The statements of `body`, in its branches too, but not in its loops: each runs
    at most once a trip of the loop `body` belongs to."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _outside_loops(stmt.body)
            yield from _outside_loops(stmt.orelse)


def _calls(node, name):
    return isinstance(node, ast.Call) and ast.name_id(node.func) == name


def _assigns_constant(stmt, value):
    """Whether `stmt` is `name = value` (a constant of value's class)."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Constant) and \
        stmt.value.value.__class__ is value.__class__ and stmt.value.value == value


def _shape_node(shape):
    return nodes.tuple_(*[nodes.const(n) for n in shape])


def _assigns(stmt, name):
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        ast.name_id(stmt.targets[0]) == name


def _derivative(ctx):
    return 'gradient' if ctx.mode == 'reverse' else 'tangent'
