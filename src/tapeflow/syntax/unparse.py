"""Turn gast back into source text, and source text into a live module.

Generated code is compiled under a real-looking filename registered with
`linecache`, so tracebacks and `inspect.getsource` show the generated lines.
"""
from __future__ import annotations

import itertools
import linecache

import gast

_counter = itertools.count()


def unparse(node) -> str:
    """Source text of a node or list of statements (it gets line numbers, nothing else changes)."""
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    gast.fix_missing_locations(node)
    return gast.unparse(node).strip() + '\n'


def load_module(text: str, namespace: dict, label: str) -> dict:
    """Execute `text` in `namespace` (updated in place); return it."""
    filename = f'<tapeflow {label} #{next(_counter)}>'
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, 'exec'), namespace)
    namespace['__tapeflow_filename__'] = filename
    return namespace
