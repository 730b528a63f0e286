"""Generated code as a product: source maps, and gradient modules that run without tapeflow.

`generate(fn, wrt)` compiles `fn` (and every user function it calls) and keeps,
beside the text, the gast trees of the generated functions, so each generated
statement can name the user's line it comes from (`Key.ORIGIN`).
`render(tree)` prints a tree with those lines as trailing comments, aligned:

    out = out * x                 # loop.py:7

`export_source(fn, wrt)` writes one module that computes the value and the
gradient with NumPy alone: the generated functions (annotated, so a traceback
through them names the user's line), then every helper they use (tapeflow's
runtime helpers, derivative rules that were not inlined, the user's own
globals), copied with `inspect`. A value that cannot be written as source
raises `ExportError` naming it.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import inspect
import linecache
import os
import textwrap
import traceback

import tapeflow.compilation as compilation
from tapeflow.module_writer import ExportError, ModuleWriter, free_globals
from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import render, unparse
from tapeflow.transforms import pipeline

__all__ = ['ExportError', 'Unit', 'generate', 'render', 'annotated_source', 'export_source']


# ------------------------------------------------------------------ compiling, keeping the trees

@dataclasses.dataclass
class Unit:
    """One compiled function: the pipeline's result and the trees of what it generated."""
    compiled: pipeline.Compiled
    trees: dict                         # 'forward' / 'backward' / 'combined' -> gast.FunctionDef
    callees: list                       # Units of the user functions it calls

    @property
    def name(self):
        return self.compiled.fn.__name__

    def all_units(self):
        """This unit and every unit it reaches, each once, callers first."""
        seen, order, pending = set(), [], [self]
        while pending:
            unit = pending.pop(0)
            if id(unit) not in seen:
                seen.add(id(unit))
                order.append(unit)
                pending.extend(unit.callees)
        return order


def generate(fn, wrt=(0,), optimize=True, record_passes=False, mode='reverse') -> Unit:
    """Compile `fn` for the parameters at positions `wrt`, keeping the generated trees.

    Reverse mode keeps 'combined', 'forward' and 'backward'; forward mode 'jvp'.
    Not cached: each call compiles afresh (`compilation.compile(..., fresh=True)`:
    the one compile path, outside the caches, whose entries may have no trees).
    """
    spec = compilation.Spec(mode, tuple(wrt), optimize=optimize)
    compiled = compilation.compile(fn, spec, fresh=True, record_passes=record_passes)
    units = {}

    def unit_of(compiled):
        unit = units.get(id(compiled))
        if unit is None:                            # (recursion: the unit being built)
            unit = units[id(compiled)] = Unit(compiled, dict(compiled.trees), [])
            unit.callees = [unit_of(callee) for callee in compiled.callees]
        return unit
    return unit_of(compiled)


# ------------------------------------------------------------------ rendering with origins

def _render_unit(unit, roles, annotate=True):
    """The texts of the generated functions `roles` of `unit`, annotated when possible."""
    filename = inspect.getsourcefile(unit.compiled.fn) or unit.compiled.fn.__code__.co_filename
    parts = []
    for role in roles:
        tree = unit.trees.get(role)
        if tree is None:
            parts.append(_fallback_text(unit, role))
            continue
        parts.append(render(tree, filename, annotate)[0])
    return parts


def _fallback_text(unit, role):
    """Without a captured tree: the function `role` cut out of the module text."""
    name = unit.name
    wanted = {'combined': 'd' + name, 'forward': name + '_forward', 'backward': name + '_backward',
              'jvp': name + '_jvp'}[role]
    module = nodes.parse_ast(unit.compiled.module_source)
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == wanted:
            return ast.get_source_segment(unit.compiled.module_source, node) + '\n'
    raise ExportError(f'the generated code of {name}() has no function {wanted}()')


def annotated_source(fn, argnums=0, optimize=True, mode='reverse') -> str:
    """What `tapeflow.source` prints, each statement ending with `# file:line`."""
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    unit = generate(fn, wrt, optimize, mode=mode)
    if mode == 'forward':
        return '\n\n'.join(part for u in unit.all_units() for part in _render_unit(u, ['jvp']))
    parts = _render_unit(unit, ['combined'])
    for callee in unit.all_units()[1:]:
        parts += _render_unit(callee, ['forward', 'backward'])
    return '\n\n'.join(parts)


# ------------------------------------------------------------------ exporting a module

def export_source(fn, argnums=0, optimize=True) -> str:
    """A module computing `fn`'s value and gradient with NumPy alone, as text."""
    wrt = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    unit = generate(fn, wrt, optimize)
    writer = ModuleWriter()
    units = unit.all_units()
    generated = []
    for u in reversed(units):                  # callees first: callers read best last
        roles = ['combined'] if u is unit else ['forward', 'backward']
        generated.append((u, roles, _render_unit(u, roles)))
    # A generated function is named by the first call that needs it: a function
    # called with two activity patterns has two pairs, which callers name apart.
    for u, roles, texts in generated:
        for k, role in enumerate(roles):
            obj = _generated_object(u, role)
            if u is unit:
                writer.reserve(_def_name(u, role), obj)
            else:
                writer.generated[id(obj)] = functools.partial(_rename_def, texts, k, _def_name(u, role))
    for u, roles, texts in generated:
        for text in list(texts):
            for name in free_globals(text):
                writer.require(name, _lookup(u, name), f'the generated code of {u.name}()')
    params = ', '.join(unit.compiled.params)
    name = unit.name
    combined = unit.trees.get('combined')
    seed = combined.args.args[-1].id if combined is not None else 'bout'

    filename = inspect.getsourcefile(unit.compiled.fn) or '<unknown>'
    respect = ', '.join(unit.compiled.params[i] for i in wrt)
    base = os.path.basename(filename)
    header = '\n'.join([
        f'"""Value and gradient of {name}() from {base}, generated by tapeflow.',
        '',
        f'    d{name}({params}, {seed}=1.0) -> (value, gradient)',
        f'    grad_{name}({params}) -> gradient',
        '',
        f'The gradient is with respect to {respect}. Runs with NumPy alone: the',
        'helpers the generated code calls are copied below. Each generated',
        f'statement ends with the line of {base} it comes from.',
        '"""'])
    out = [header, '\n'.join(writer.imports()) if writer.imports() else None]
    if writer.definitions:
        out.append(_banner('helpers the generated code uses, copied'))
        out.extend(writer.definitions)
    for u, roles, texts in generated:
        out.append(_banner(f'generated from {u.name}()'))
        out.extend(t.rstrip('\n') for t in texts)
    out.append(textwrap.dedent(f'''\
        def grad_{name}({_with_defaults(combined, unit.compiled.params)}):
            """The gradient of {name}() alone."""
            return d{name}({params})[1]'''))
    if writer.aliases:
        out.append('\n'.join(writer.aliases))
    return '\n\n\n'.join(part.rstrip('\n') for part in out if part) + '\n'


def _with_defaults(combined, params) -> str:
    """`params` as the signature of the combined function `d<name>` declares them, with the
    defaults it gives them (`k=3.0`, `w=_default`: a name the module binds)."""
    if combined is None:
        return ', '.join(params)
    declared = combined.args.args[:-1]              # (the last is the seed, =1.0)
    defaults = list(combined.args.defaults)[:-1]
    first = len(declared) - len(defaults)
    return ', '.join(p if i < first else f'{p}={unparse(defaults[i - first]).strip()}'
                     for i, p in enumerate(params))


def _rename_def(texts, k, base, name):
    texts[k] = texts[k].replace(f'def {base}(', f'def {name}(', 1)


def _banner(title):
    return f'# ---- {title} '.ljust(79, '-')


def _def_name(unit, role):
    name = unit.name
    return {'combined': 'd' + name, 'forward': name + '_forward', 'backward': name + '_backward'}[role]


def _generated_object(unit, role):
    return getattr(unit.compiled, role)


def _lookup(unit, name):
    namespace = unit.compiled.namespace
    if name in namespace:
        return namespace[name]
    if hasattr(builtins, name):
        return getattr(builtins, name)
    raise ExportError(f'the generated code of {unit.name}() uses {name!r}, which is not defined')


# ------------------------------------------------------------------ tracebacks

def user_line_of(tb, fn, wrt=(0,)):
    """(file, line) of the user's code behind the innermost generated frame of `tb`, or None.

    Compiles `fn` again to recover the trees: generated code is deterministic,
    and the frame's text is compared with the tree's before the map is trusted.
    """
    frames = [(frame, lineno) for frame, lineno in traceback.walk_tb(tb)
              if frame.f_code.co_filename.startswith('<tapeflow ')]
    if not frames:
        return None
    frame, lineno = frames[-1]
    code = frame.f_code
    unit = generate(fn, tuple(wrt))
    for u in unit.all_units():
        for tree in u.trees.values():
            if tree.name != code.co_name:
                continue
            filename = inspect.getsourcefile(u.compiled.fn)
            text, line_map = render(tree, filename, annotate=False)
            offset = lineno - code.co_firstlineno
            generated_line = linecache.getline(code.co_filename, lineno).split('  # ')[0].strip()
            lines = text.splitlines()
            if 0 <= offset < len(lines) and lines[offset].strip() == generated_line:
                return line_map.get(offset + 1)
    return None
