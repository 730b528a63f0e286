"""The shape of the code, checked: layers depend downward only, gast is spoken in
`syntax/` alone, no module reaches into another's privates, no import cycles, no
module longer than a reader can hold (issue 16)."""
import ast
import collections
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / 'src'
LONGEST = 450


def _modules():
    found = {}
    for path in sorted(SRC.rglob('*.py')):
        name = '.'.join(path.relative_to(SRC).with_suffix('').parts)
        found[name.removesuffix('.__init__')] = path
    return found


MODULES = _modules()
TREES = {name: ast.parse(path.read_text()) for name, path in MODULES.items()}


def _imports(tree, top_level_only=False):
    """(module imported, names taken from it, line) of each tapeflow import."""
    nodes = tree.body if top_level_only else ast.walk(tree)
    stack = list(nodes) if top_level_only else None
    seen = []
    if top_level_only:
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue         # imported when called: no cycle at import time
            seen.append(node)
            stack.extend(ast.iter_child_nodes(node))
    else:
        seen = list(nodes)
    for node in seen:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith('tapeflow'):
            yield node.module, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno


def test_gast_is_spoken_in_syntax_alone():
    outside = [f'{MODULES[name]}:{line}' for name, tree in TREES.items()
               if not name.startswith('tapeflow.syntax')
               for module, _, line in _imports(tree) if module.split('.')[0] == 'gast']
    assert outside == []


def test_no_private_names_taken_from_other_modules():
    taken = [f'{MODULES[name]}:{line}: {module}.{n}' for name, tree in TREES.items()
             for module, names, line in _imports(tree) if module.startswith('tapeflow')
             for n in names if n.startswith('_') and not n.startswith('__')]
    assert taken == []


def test_no_import_cycles():
    graph = collections.defaultdict(set)
    for name, tree in TREES.items():
        for module, names, _ in _imports(tree, top_level_only=True):
            for n in names or [None]:       # a submodule, else the module itself
                target = f'{module}.{n}' if f'{module}.{n}' in MODULES else module
                if target in MODULES:
                    graph[name].add(target)
    cycles, index, low, stack, on = [], {}, {}, [], set()

    def connect(v):                         # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in MODULES:
        if v not in index:
            connect(v)
    assert cycles == []


@pytest.mark.parametrize('name', sorted(MODULES))
def test_module_is_short(name):
    lines = MODULES[name].read_text().count('\n')
    assert lines <= LONGEST, f'{MODULES[name]} has {lines} lines'


def test_layers_depend_downward():
    """`syntax` knows nothing of derivatives; `rules` and `runtime` never see a tree."""
    below = {'tapeflow.syntax': ('tapeflow.rules', 'tapeflow.runtime', 'tapeflow.transforms',
                                 'tapeflow.analysis', 'tapeflow.api'),
             'tapeflow.runtime': ('tapeflow.syntax', 'tapeflow.transforms', 'tapeflow.analysis'),
             'tapeflow.rules': ('tapeflow.syntax', 'tapeflow.transforms', 'tapeflow.analysis')}
    wrong = [f'{MODULES[name]}:{line}: {module}' for name, tree in TREES.items()
             for layer, forbidden in below.items() if name.startswith(layer)
             for module, _, line in _imports(tree) if module.startswith(forbidden)
             or (layer != 'tapeflow.syntax' and module == 'gast')]
    assert wrong == []
