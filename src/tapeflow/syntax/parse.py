"""Read a function's source and parse it with gast.

Guarantees: the returned FunctionDef carries `Key.ORIGIN` (line and column in
the user's file) on every node, and `Source` says which file that is.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import linecache
import textwrap

import gast

from tapeflow.syntax.anno import Key, setanno
from tapeflow.syntax.errors import SourceUnavailableError, UnsupportedError


@dataclasses.dataclass
class Source:
    node: gast.FunctionDef
    filename: str
    first_line: int          # line of `def` in the file (1-based)
    text: str                # dedented source of the function

    def error(self, node, reason: str) -> UnsupportedError:
        """A located error for `node` of this function."""
        lineno, col = _origin(node)
        text = linecache.getline(self.filename, lineno).rstrip() or None
        return UnsupportedError(reason, self.filename, lineno, col, text)


def _origin(node):
    from tapeflow.syntax.anno import getanno
    where = getanno(node, Key.ORIGIN)
    return where if where is not None else (0, 0)


def parse_function(fn) -> Source:
    """The gast FunctionDef of `fn`, its nodes located in `fn`'s file."""
    lifted = getattr(fn, '__tapeflow_source__', None)
    if lifted is not None:                 # a nested def, lifted by desugar
        return dataclasses.replace(lifted, node=copy.deepcopy(lifted.node))
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f'cannot read the source of {getattr(fn, "__qualname__", fn)!r}: {e}') from None
    raw = ''.join(lines)
    text = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) - (len(text.splitlines()[0]) - len(text.splitlines()[0].lstrip()))
    try:
        tree = gast.parse(text)
    except SyntaxError as e:
        raise UnsupportedError(f'cannot parse: {e.msg}', filename,
                               first_line + (e.lineno or 1) - 1, (e.offset or 1) - 1) from None
    defs = [n for n in tree.body if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef))]
    if not defs:
        if any(isinstance(n, gast.Expr) and isinstance(n.value, gast.Lambda) for n in tree.body) or 'lambda' in text:
            raise UnsupportedError('a lambda cannot be differentiated from source; write it as a def',
                                   filename, first_line, 0)
        raise SourceUnavailableError(f'no function definition in the source of {fn!r}')
    node = defs[0]
    for n in gast.walk(node):
        if hasattr(n, 'lineno'):
            setanno(n, Key.ORIGIN, (n.lineno + first_line - 1, n.col_offset + indent))
    node.decorator_list = []
    return Source(node, filename, first_line, text)


def parse_source_text(text: str, filename: str = '<string>', first_line: int = 1) -> gast.Module:
    """Parse module text (the CLI reads whole files), nodes located in `filename`."""
    tree = gast.parse(text)
    for n in gast.walk(tree):
        if hasattr(n, 'lineno'):
            setanno(n, Key.ORIGIN, (n.lineno + first_line - 1, n.col_offset))
    return tree
