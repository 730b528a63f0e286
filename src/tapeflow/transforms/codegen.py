"""Codegen: the generated functions unparsed, loaded, and told what they are.

The last pass of both modes. Reverse mode loads its unit of three functions
(`transforms.assemble.ROLES`) as one module, forward mode its one jvp. Every
line is registered with `linecache` (tracebacks and debuggers show it) and
mapped to the user's line it came from. Each generated function carries its
modes for the compiler reading it again (`context.mark_generated`): its order of
differentiation and the tapes its code pushes values on. Returns the function
users are shown (the combined one, or the jvp).
"""
from __future__ import annotations

from tapeflow.syntax import ast, sourcemap
from tapeflow.syntax.naming import identifier as _id
from tapeflow.syntax.unparse import (annotate, line_origins, load_module, origins, unparse,
                                     unparse_together)
from tapeflow.transforms.assemble import ROLES, tapes_made, unit_roles
from tapeflow.transforms.context import mark_generated


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`)."""
    if isinstance(tree, ast.Module):
        return _load_unit(tree, ctx)
    return _load_jvp(tree, ctx)


def _load_unit(tree, ctx):
    """Load the unit's functions: all three, or the combined one alone and later the split
    pair (`assemble.defer`), each time as one module."""
    unit = unit_roles(tree, ctx)
    trees = tuple(unit.values())
    name, namespace, compiled = _id(ctx.fn), ctx.namespace, ctx.compiled
    filename = ctx.source.filename
    plain = unparse_together(trees)
    located = [origins(t) for t in trees]                      # of each line
    rendered = [annotate(text, t, filename, origins=where)
                for text, t, where in zip(plain, trees, located)]
    load_module('\n\n'.join(plain), namespace, name, display='\n\n'.join(r[0] for r in rendered))
    _register_lines(namespace, filename, plain, trees, located)
    texts = dict(zip(unit, plain))
    split = texts['forward'] + '\n\n' + texts['backward'] if 'forward' in texts else ''
    if 'combined' in texts:
        compiled.source = texts['combined']
        made = unit                         # (a split set aside is not complete yet: not read)
    else:
        made = {**compiled.trees, **unit}
    compiled.split_source = split
    compiled.module_source = split + '\n\n' + compiled.source if split else compiled.source
    compiled.trees = {role: made[role] for role in ROLES if role in made}
    tapes = tapes_made(ctx)
    for role, fdef in unit.items():
        setattr(compiled, role, namespace[fdef.name])
        mark_generated(namespace[fdef.name], ctx.order, tapes)
    return unit.get('combined', tree)


def _load_jvp(fdef, ctx):
    namespace, compiled, filename = ctx.namespace, ctx.compiled, ctx.source.filename
    text = unparse(fdef)
    load_module(text, namespace, _id(ctx.fn) + ' jvp', display=annotate(text, fdef, filename)[0])
    _register_lines(namespace, filename, [text], [fdef])
    compiled.trees = {'jvp': fdef}
    compiled.source = compiled.module_source = compiled.split_source = text
    compiled.combined = namespace[fdef.name]
    mark_generated(compiled.combined, ctx.order, ctx.tapes)   # tangents ride the same tapes
    return fdef


def _register_lines(namespace, filename, texts, trees, located=None):
    """Errors in the module just loaded (`texts` joined by blank lines) speak of the user's
    lines; `located`: `origins` of each tree, where the caller has them."""
    lines, first = {}, 1
    for k, (text, tree) in enumerate(zip(texts, trees)):
        lines.update(line_origins(text, tree, first, located[k] if located else None))
        first += text.count('\n') + 2
    sourcemap.register(namespace['__tapeflow_filename__'], filename, lines)
