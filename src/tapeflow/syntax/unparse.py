"""Turn gast back into source text, and source text into a live module.

Generated code is compiled under a real-looking filename registered with
`linecache`, so tracebacks and `inspect.getsource` show the generated lines.
"""
from __future__ import annotations

import itertools
import linecache
import math
import os
import types
import weakref

import gast

from tapeflow.syntax import sourcemap
from tapeflow.syntax.anno import Key, getanno

_counter = itertools.count()


def unparse(node) -> str:
    """Source text of a node or list of statements (it gets line numbers, nothing else changes)."""
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    _number_statements(node)
    text = _SharingUnparser().visit(node) if _SharingUnparser is not None \
        else gast.unparse(_signs_apart(node))
    return text.strip() + '\n'


def unparse_together(trees) -> list:
    """`[unparse(tree) for tree in trees]`, each statement the trees share printed once.

    The functions of one compilation share their statements (the combined function
    holds the forward and the backward sweeps). A top-level statement of a body is
    printed once and its text used again at the same indentation, where what it read
    of the printer's state (the precedence of a node it did not set) is the same.
    """
    printed = {}
    texts = []
    for tree in trees:
        node = gast.Module(body=tree, type_ignores=[]) if isinstance(tree, list) else tree
        _number_statements(node)
        printer = _SharingUnparser(printed) if _SharingUnparser is not None else None
        text = printer.visit(node) if printer is not None else gast.unparse(_signs_apart(node))
        texts.append(text.strip() + '\n')
    return texts


class _Precedences(dict):
    """The printer's precedences while it prints one statement: what the statement
    sets stays in this dict, what it reads that it did not set (from `base`) is noted
    in `read`. (Made empty, its two slots set by the printer: no __init__ to call.)"""
    __slots__ = ('base', 'read')

    def get(self, node, default=None):
        if node in self:
            return self[node]
        value = self.base.get(node, default)
        self.read.setdefault(node, value)
        return value


_REALS = (int, float)


def _signs_apart(tree):
    """A copy of `tree` whose negative numbers are `-c` (gast's own printer writes a
    negative constant as `-1.0`, whatever binds it: `-1.0 ** 2` is -1.0)."""
    from tapeflow.syntax import nodes
    tree = nodes.clone(tree)
    for node in list(gast.walk(tree)):
        for field, value in gast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for k, item in enumerate(items):
                if isinstance(item, gast.Constant) and item.value.__class__ in _REALS \
                        and math.copysign(1, item.value) < 0:
                    signed = gast.UnaryOp(op=gast.USub(), operand=gast.Constant(-item.value, None))
                    if isinstance(value, list):
                        value[k] = signed
                    else:
                        setattr(node, field, signed)
    return tree


def _sharing_unparser():
    try:
        from gast.unparser import _Precedence, _Unparser, nullcontext
    except ImportError:         # another gast: print every tree in full
        return None
    default = _Precedence.TEST
    nothing = nullcontext()

    class Delimit:
        """`_Unparser.delimit` without a generator: `start`, the block, `end`."""
        __slots__ = ('printer', 'start', 'end')

        def __init__(self, printer, start, end):
            self.printer, self.start, self.end = printer, start, end

        def __enter__(self):
            self.printer.write(self.start)

        def __exit__(self, *exc_info):
            self.printer.write(self.end)

    class SharingUnparser(_Unparser):
        """gast's printer, which keeps the text of the statements of a function's body
        (`printed`: id -> (statement, indentation, text, precedences set, read)) and
        writes it again where the statement reads the same precedences. (Also faster at
        what it prints: the method for a class of node is looked up once.)"""
        _methods = {}          # node class -> the function that prints it

        def __init__(self, printed=None):
            super().__init__()
            self._printed = printed     # None: print every statement

        def traverse(self, node):
            if isinstance(node, list):
                for item in node:
                    self.traverse(item)
                return
            method = self._methods.get(node.__class__)
            if method is None:
                method = self._methods[node.__class__] = getattr(
                    type(self), 'visit_' + node.__class__.__name__, type(self).generic_visit)
            method(self, node)

        def delimit(self, start, end):
            return Delimit(self, start, end)

        def visit_Constant(self, node):
            # A negative number prints as `-1.0`, which binds like a unary minus: the
            # base of a power (`-1.0 ** 2` is -1.0) or an attribute's object needs
            # parentheses, as `-(1.0)` would get them.
            value = node.value
            if value.__class__ in _REALS and math.copysign(1, value) < 0:
                with self.require_parens(_Precedence.FACTOR, node):
                    return super().visit_Constant(node)
            return super().visit_Constant(node)

        def delimit_if(self, start, end, condition):
            return Delimit(self, start, end) if condition else nothing

        def _write_docstring_and_traverse_body(self, node):
            docstring = self.get_raw_docstring(node)
            if docstring:
                self._write_docstring(docstring)
            for stmt in node.body[1:] if docstring else node.body:
                self._statement(stmt)

        def _statement(self, node):
            if self._printed is None or not self._source or self._in_try_star or self._type_ignores \
                    or isinstance(self._precedences, _Precedences):
                return self.traverse(node)
            base = self._precedences
            known = self._printed.get(id(node))
            if known is not None and known[0] is node and known[1] == self._indent \
                    and all(base.get(n, default) == p for n, p in known[4].items()):
                self._source.extend(known[2])
                base.update(known[3])
                return None
            start = len(self._source)
            self._precedences = recording = _Precedences()
            recording.base, recording.read = base, {}
            try:
                self.traverse(node)
            finally:
                self._precedences = base
            base.update(recording)
            self._printed[id(node)] = (node, self._indent, self._source[start:],
                                       dict(recording), recording.read)
            return None

    return SharingUnparser


_SharingUnparser = _sharing_unparser()


def _number_statements(node):
    """The unparser reads `lineno` of statements only (for type comments): give it one."""
    stack = [node]
    while stack:
        n = stack.pop()
        if 'lineno' not in n.__dict__:
            n.lineno, n.col_offset = 1, 0
            n.end_lineno, n.end_col_offset = 1, 0
        for field in ('body', 'orelse', 'finalbody', 'handlers'):
            block = getattr(n, field, None)
            if isinstance(block, list):
                stack.extend(block)


def load_module(text: str, namespace: dict, label: str, display: str | None = None,
                code=None) -> dict:
    """Execute `text` in `namespace` (updated in place); return it.

    `display` (the same lines, with trailing comments: the source map) is what
    tracebacks and `inspect` show for it. `code`: `text` compiled already, under
    any file name (the disk cache keeps it so); it gets this module's name.
    """
    filename = f'<tapeflow {label} #{next(_counter)}>'
    shown = display if display is not None else text
    linecache.cache[filename] = (len(shown), None, shown.splitlines(True), filename)
    code = compile(text, filename, 'exec') if code is None else _renamed(code, filename)
    exec(code, namespace)
    namespace['__tapeflow_filename__'] = filename
    _Lines(filename, [v.__code__ for v in namespace.values() if isinstance(v, types.FunctionType)
                      and v.__code__.co_filename == filename])
    return namespace


class _Lines:
    """A generated module's lines in `linecache` (and its source map), kept while a
    function it defined lives: a module made for one call (`linearize`'s `f_jvp`, the
    caller of a `grad(f)` made anew) leaves nothing behind."""
    __slots__ = ('filename', 'alive', '__weakref__')

    def __init__(self, filename, codes):
        self.filename, self.alive = filename, len(codes)
        for c in codes:
            weakref.finalize(c, self.release)

    def release(self):
        self.alive -= 1
        if self.alive == 0:
            linecache.cache.pop(self.filename, None)
            sourcemap.forget(self.filename)


def label_of(filename: str) -> str:
    """The `label` a module loaded under `filename` was given."""
    return filename[len('<tapeflow '):filename.rindex(' #')]


def _renamed(code, filename):
    """`code` and the code nested in it, told to come from `filename`."""
    consts = tuple(_renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


# ------------------------------------------------------------------ rendering with origins

_COMMENT_COLUMN_MAX = 56     # comments start here at the latest (unless the code is longer)


def render(tree, filename=None, annotate=True, label=os.path.basename):
    """`tree` as source text; with `annotate`, each statement ends with `# file:line`.

    Returns (text, line_map): line_map maps a line of the text (1-based) to
    (filename, user line). The lines are exactly `unparse`'s, so the annotated
    text can stand for the compiled one in tracebacks. Where the layout cannot
    be followed (a statement printed on several lines), no line is mapped.
    """
    return _annotated(unparse(tree), tree, filename, annotate, label)


def annotate(plain, tree, filename=None, label=os.path.basename, origins=None):
    """`render` for a tree already unparsed to `plain` (the same lines, commented);
    `origins`: `origins(tree)`, where the caller has it."""
    return _annotated(plain, tree, filename, True, label, origins)


def origins(tree) -> list:
    """One entry per line `unparse` prints for `tree`: the user location, or None."""
    found = []
    _origins_of(tree, found)
    return found


def _annotated(plain, tree, filename, annotate_lines, label, origins=None):
    lines = plain.rstrip('\n').split('\n')
    if origins is None:
        origins = []
        _origins_of(tree, origins)
    origins = _aligned(lines, origins)
    if origins is None:
        return plain, {}
    line_map = {i + 1: (filename, o[0]) for i, o in enumerate(origins) if o is not None}
    if not annotate_lines or filename is None or not line_map:
        return plain, line_map
    width = max((len(line) for line, o in zip(lines, origins) if o), default=0)
    column = min(width, _COMMENT_COLUMN_MAX) + 2
    tag = label(filename)
    out = [f'{line.ljust(column - 2)}  # {tag}:{origin[0]}' if origin else line
           for line, origin in zip(lines, origins)]
    return '\n'.join(out) + '\n', line_map


def _origins_of(stmt, origins):
    """One entry per line `unparse` prints for `stmt`: the user location, or None."""
    origin = getanno(stmt, Key.ORIGIN)
    body = getattr(stmt, 'body', None)
    if not isinstance(body, list):
        origins.append(origin)                      # a simple statement: one line
        return
    origins.append(origin)                          # def / if / for / while header
    for child in body:
        _origins_of(child, origins)
    orelse = getattr(stmt, 'orelse', None) or []
    while isinstance(stmt, gast.If) and len(orelse) == 1 and isinstance(orelse[0], gast.If):
        stmt = orelse[0]                            # printed as `elif`
        origins.append(getanno(stmt, Key.ORIGIN))
        for child in stmt.body:
            _origins_of(child, origins)
        orelse = stmt.orelse or []
    if orelse:
        origins.append(None)                        # `else:`
        for child in orelse:
            _origins_of(child, origins)


def line_origins(plain, tree, first_line=1, origins=None) -> dict:
    """{line of `plain` (counted from `first_line`): the user's (line, column)} for the
    statements of `tree` that have a location; empty where the layout is not followed.
    `origins`: `origins(tree)`, where the caller has it."""
    if origins is None:
        origins = []
        _origins_of(tree, origins)
    origins = _aligned(plain.rstrip('\n').split('\n'), origins)
    if origins is None:
        return {}
    return {first_line + i: tuple(o) for i, o in enumerate(origins) if o is not None}


def _aligned(lines, origins):
    """`origins` (one per statement line) spread over the printed `lines`: the blank line
    the printer may put before a nested def gets none. None where they cannot match."""
    if len(origins) == len(lines):
        return origins
    filled = [k for k, line in enumerate(lines) if line.strip()]
    if len(filled) != len(origins):
        return None
    out = [None] * len(lines)
    for k, origin in zip(filled, origins):
        out[k] = origin
    return out
