"""Turn gast back into source text, and source text into a live module.

Generated code is compiled under a real-looking filename registered with
`linecache`, so tracebacks and `inspect.getsource` show the generated lines.
"""
from __future__ import annotations

import itertools
import linecache
import os

import gast

from tapeflow.syntax.anno import Key, getanno

_counter = itertools.count()


def unparse(node) -> str:
    """Source text of a node or list of statements (it gets line numbers, nothing else changes)."""
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    _number_statements(node)
    return gast.unparse(node).strip() + '\n'


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
    return namespace


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


def annotate(plain, tree, filename=None, label=os.path.basename):
    """`render` for a tree already unparsed to `plain` (the same lines, commented)."""
    return _annotated(plain, tree, filename, True, label)


def _annotated(plain, tree, filename, annotate_lines, label):
    lines = plain.rstrip('\n').split('\n')
    origins = []
    _origins_of(tree, origins)
    if len(origins) != len(lines):
        return plain, {}
    line_map = {i + 1: (filename, o[0]) for i, o in enumerate(origins) if o is not None}
    if not annotate_lines or filename is None or not line_map:
        return plain, line_map
    width = max((len(line) for line, o in zip(lines, origins) if o), default=0)
    column = min(width, _COMMENT_COLUMN_MAX) + 2
    out = [f'{line.ljust(column - 2)}  # {label(filename)}:{origin[0]}' if origin else line
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


def line_origins(plain, tree, first_line=1) -> dict:
    """{line of `plain` (counted from `first_line`): the user's (line, column)} for the
    statements of `tree` that have a location; empty where the layout is not followed."""
    origins = []
    _origins_of(tree, origins)
    if len(origins) != len(plain.rstrip('\n').split('\n')):
        return {}
    return {first_line + i: tuple(o) for i, o in enumerate(origins) if o is not None}
