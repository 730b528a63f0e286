"""Read a function's source and parse it with gast.

Guarantees: the returned FunctionDef carries `Key.ORIGIN` (line and column in
the user's file) on every node, and `Source` says which file that is. The
source read is the function's own, never that of a function it wraps
(`__wrapped__`, which `inspect` follows): a decorator's wrapper is what a
call runs. `pass_through_target` says when a wrapper only passes its
arguments on, so that the wrapped function may be read in its place.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import linecache
import textwrap
import types
import weakref

import gast

from tapeflow.syntax import freshness, nodes, sourcemap
from tapeflow.syntax.anno import Key, setanno
from tapeflow.syntax.naming import identifier
from tapeflow.syntax.errors import SourceUnavailableError, TapeflowError, UnsupportedError
from tapeflow.syntax.resolve import bindings_of


@dataclasses.dataclass
class Source:
    node: gast.FunctionDef
    filename: str
    first_line: int          # line of `def` in the file (1-based)
    text: str                # dedented source of the function

    def error(self, node, reason: str) -> UnsupportedError:
        """A located error for `node` of this function (in generated code differentiated
        again, at the user's line behind it)."""
        filename, lineno, col = sourcemap.user_location(self.filename, *_origin(node))
        text = linecache.getline(filename, lineno).rstrip() or None
        return UnsupportedError(reason, filename, lineno, col, text)


def _origin(node):
    from tapeflow.syntax.anno import getanno
    where = getanno(node, Key.ORIGIN)
    return where if where is not None else (0, 0)


def parse_function(fn) -> Source:
    """The gast FunctionDef of `fn`, its nodes located in `fn`'s file; its positional-only
    parameters made ordinary ones (generated code takes every argument by position)."""
    source = _parse_function(fn)
    args = source.node.args
    args.args[:0], args.posonlyargs = args.posonlyargs, []
    return source


def _parse_function(fn) -> Source:
    lifted = getattr(fn, '__tapeflow_source__', None)
    if lifted is not None:                 # a nested def, lifted by desugar
        return dataclasses.replace(lifted, node=copy.deepcopy(lifted.node))
    code = getattr(fn, '__code__', None)
    own = code if isinstance(code, types.CodeType) else fn     # getsourcelines(fn) unwraps
    try:
        lines, first_line = inspect.getsourcelines(own)
        filename = inspect.getsourcefile(own) or code.co_filename
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(_no_source(fn, code, e)) from None
    if code is not None and code.co_name == '<lambda>':     # its lines hold more than it
        return _parse_lambda(fn, code, filename, first_line)
    raw = ''.join(lines)
    text = textwrap.dedent(raw)
    freshness.check(fn, code, text, filename, first_line)    # the text is the code that runs
    indent = len(lines[0]) - len(lines[0].lstrip()) - (len(text.splitlines()[0]) - len(text.splitlines()[0].lstrip()))
    try:
        tree = nodes.parse_gast(text)
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
    for n in nodes.walk_terms(node):
        if 'lineno' in n.__dict__:      # hasattr: no gast class has a `lineno` of its own
            setanno(n, Key.ORIGIN, (n.lineno + first_line - 1, n.col_offset + indent))
    node.decorator_list = []
    return Source(node, filename, first_line, text)


# ------------------------------------------------------------------ lambdas

LAMBDA_NAME = identifier(lambda: None)      # `<lambda>` made a name: lambda_


def _parse_lambda(fn, code, filename, first_line) -> Source:
    """A lambda read as the def `def lambda_(<its args>): return <its body>`.

    A lambda's lines may hold more than it (other lambdas, the call it is an
    argument of), so the lambda is picked out of its file's syntax tree by
    where its code says its body is: the span its instructions cover
    (`co_positions`, Python >= 3.11), which no other lambda shares. Without
    column positions (Python 3.10, `-X no_debug_ranges`) it must be the only
    lambda with its parameters on its first line whose text, compiled alone, has
    its instructions, constants and names; anything else is refused, never guessed.
    """
    try:
        lines, _ = inspect.findsource(code)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(_no_source(fn, code, e)) from None
    text = ''.join(lines)
    try:
        tree = _file_tree(text)
    except SyntaxError as e:
        raise UnsupportedError(f'cannot parse the file this lambda is in: {e.msg}; write it as a def',
                               filename, first_line, 0) from None
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +      # argcount
                              bool(code.co_flags & inspect.CO_VARARGS) +       # holds posonly
                              bool(code.co_flags & inspect.CO_VARKEYWORDS)]
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and
                  n.lineno == code.co_firstlineno and _lambda_params(n) == params]
    span = _body_span(code)
    if span is not None:
        candidates = [n for n in candidates if _span(n.body) == span]
    elif len(candidates) > 1:       # Python 3.10: the one whose text compiles to its code
        candidates = [n for n in candidates if _compiles_to(n, text, code)]
    if len(candidates) != 1:
        line = linecache.getline(filename, first_line)
        why = ('no lambda on this line matches its code' if not candidates else
               f'{len(candidates)} lambdas on this line match its code and this Python '
               f'gives no column to tell them apart')
        raise UnsupportedError(f'cannot tell which lambda this is ({why}); write it as a def',
                               filename, first_line, max(line.find('lambda'), 0))
    lam = gast.ast_to_gast(copy.deepcopy(candidates[0]))
    ret = gast.Return(value=lam.body)
    node = gast.FunctionDef(name=LAMBDA_NAME, args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    for n in (ret, node):
        gast.copy_location(n, lam)
        n.end_lineno, n.end_col_offset = lam.end_lineno, lam.end_col_offset
    for n in nodes.walk_terms(node):
        if hasattr(n, 'lineno'):
            setanno(n, Key.ORIGIN, (n.lineno, n.col_offset))
    segment = ast.get_source_segment(text, candidates[0]) or ''
    freshness.check(fn, code, f'({segment})\n', filename, candidates[0].lineno)
    return Source(node, filename, candidates[0].lineno, segment)


_TREES: dict = {}


def _file_tree(text: str):
    """The (stdlib) syntax tree of a file's text, parsed once per text."""
    tree = _TREES.get(text)
    if tree is None:
        tree = nodes.parse_ast(text)
        if len(_TREES) > 32:
            _TREES.clear()
        _TREES[text] = tree
    return tree


def _compiles_to(node, text, code) -> bool:
    """Whether the lambda `node` of `text`, compiled alone, has `code`'s instructions,
    constants and names (a lambda reading its enclosing function's names does not)."""
    segment = ast.get_source_segment(text, node)
    try:
        compiled = compile(f'({segment})', '<lambda>', 'eval')
    except (SyntaxError, TypeError, ValueError):
        return False
    own = next((c for c in compiled.co_consts if isinstance(c, types.CodeType)), None)
    return own is not None and (own.co_code, own.co_consts, own.co_names, own.co_varnames) == \
        (code.co_code, code.co_consts, code.co_names, code.co_varnames)


def _lambda_params(node) -> tuple:
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return tuple(names)


def _span(node):
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _body_span(code):
    """The span of source a lambda's body covers, from its instructions' positions;
    None where this Python records no columns."""
    positions = getattr(code, 'co_positions', None)
    if positions is None:
        return None
    spans = [p for p in positions()
             if None not in p and (p[0], p[2]) != (p[1], p[3])]     # not RESUME's (l, l, 0, 0)
    if not spans:
        return None
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    return start + end


def _no_source(fn, code, error) -> str:
    """Why `fn`'s source cannot be read, and what to do instead: one line.

    Source is read from the file a function was defined in, or from what
    `linecache` holds under that name (IPython and Jupyter register every
    cell there, Python 3.13's prompt every input). The plain Python prompt
    before 3.13, `python -c` and `exec` of a string register nothing.
    """
    name = getattr(fn, '__name__', None) or repr(fn)
    what = f'cannot read the source of {getattr(fn, "__qualname__", name)!r}'
    if not isinstance(code, types.CodeType):
        return (f'{what}: it is not a Python function ({type(fn).__name__}); differentiate a def, '
                f'or give it a derivative rule with tapeflow.defvjp')
    where = f'{code.co_filename}:{code.co_firstlineno}: {what}'
    filename = code.co_filename
    instead = f'define {name} in a file (and import it) or in a notebook or IPython cell'
    if code.co_name == '<lambda>':
        instead = 'write the lambda as a def in a file (and import it) or in a notebook or IPython cell'
    if filename == '<stdin>':
        return (f'{where}: functions typed at the plain Python prompt have no source to read; '
                f'{instead}')
    if filename == '<string>':
        return (f'{where}: functions made by exec() or python -c have no source to read; '
                f'{instead} (or compile() the text under a filename and register it in '
                f'linecache.cache)')
    if filename.startswith('<') and filename.endswith('>'):
        return f'{where}: linecache holds no source for {filename}; {instead}'
    return f'{where}: {error} (a .pyc alone has no source); {instead}'


# ------------------------------------------------------------------ wrappers

_PASS_THROUGH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # code -> name or None


def pass_through_target(fn):
    """`fn.__wrapped__` (or, without `functools.wraps`, the Python function it calls)
    when `fn` only passes its arguments on to it, else None.

    A pass-through is exactly

        def wrapper(*args, **kwargs):
            '''a docstring'''                    # optional
            return wrapped(*args, **kwargs)

    where `wrapped`, from the wrapper's closure or globals, is `fn.__wrapped__`.
    Calling such a wrapper is calling the wrapped function; any other wrapper
    may do something of its own (clip, scale, cache under a condition), so it
    is differentiated as written.
    """
    wrapped = getattr(fn, '__wrapped__', None)
    if not isinstance(fn, types.FunctionType) or \
            (wrapped is None and not fn.__code__.co_flags & inspect.CO_VARARGS):
        return None
    code = fn.__code__
    try:
        name = _PASS_THROUGH[code]
    except KeyError:
        name = _PASS_THROUGH[code] = _pass_through_name(fn)
    if name is None:
        return None
    target = bindings_of(fn).lookup(name)
    if wrapped is None:         # written without functools.wraps: the function it calls
        return target if isinstance(target, types.FunctionType) and target is not fn else None
    return wrapped if target is wrapped else None


def _pass_through_name(fn):
    """The name `fn`'s body calls with `*args, **kwargs` when that is all it does."""
    try:
        node = parse_function(fn).node
    except TapeflowError:
        return None
    a = node.args
    if a.args or a.posonlyargs or a.kwonlyargs or a.vararg is None:
        return None
    body = node.body
    if len(body) == 2 and isinstance(body[0], gast.Expr) and \
            isinstance(body[0].value, gast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], gast.Return):
        return None
    call = body[0].value
    if not isinstance(call, gast.Call) or not isinstance(call.func, gast.Name):
        return None
    star = call.args
    if len(star) != 1 or not isinstance(star[0], gast.Starred) or \
            not isinstance(star[0].value, gast.Name) or star[0].value.id != a.vararg.id:
        return None
    if a.kwarg is None:
        if call.keywords:
            return None
    elif len(call.keywords) != 1 or call.keywords[0].arg is not None or \
            not isinstance(call.keywords[0].value, gast.Name) or \
            call.keywords[0].value.id != a.kwarg.id:
        return None
    if call.func.id in (a.vararg.id, getattr(a.kwarg, 'id', None)):
        return None
    return call.func.id


def parse_source_text(text: str, filename: str = '<string>', first_line: int = 1) -> gast.Module:
    """Parse module text (the CLI reads whole files), nodes located in `filename`."""
    tree = nodes.parse_gast(text)
    for n in nodes.walk_terms(tree):
        if hasattr(n, 'lineno'):
            setanno(n, Key.ORIGIN, (n.lineno + first_line - 1, n.col_offset))
    return tree


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`): `ctx.fn` parsed; the context starts from it."""
    return ctx.start(parse_function(ctx.fn))
