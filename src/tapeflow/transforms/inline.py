"""Emit a derivative rule into generated code: inline its body, or call it.

A rule written as `def rule(g, ans, x, y): return unbroadcast(g * y, x)` is
inlined: its expression, with the parameters replaced by the generated code's
names, so `bx = bx + unbroadcast(by * w, x)` reads like a hand-written
adjoint. So is a lambda a rule helper marked (`rules.entries.elementwise`),
and the math twin of a NumPy rule is written with `math`'s functions where the
rule has NumPy's (`rules.entries.StandIn`). A rule that cannot be inlined (a
plain lambda, several statements, names the generated module already uses for
something else) is called by a name bound in the generated module's namespace.
"""
from __future__ import annotations

import functools
import inspect
import linecache
import textwrap
import types
from typing import NamedTuple

from tapeflow.errors import TapeflowError
from tapeflow.rules.entries import StandIn
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.parse import parse_function

_NOT_INLINABLE = object()
_NOT_A_PARAMETER = object()


class Template(NamedTuple):
    """A rule's single returned expression and what it needs."""
    params: list            # every parameter, positional then keyword-only
    positional: list
    defaults: dict          # parameter -> default expression
    expr: object            # the returned expression (never modified: `_rewrite` copies)
    free: set               # the names it reads besides its parameters
    fixed: dict             # names a stand-in's spellings use -> their objects
    scope: object           # the function whose globals the free names are read in


@functools.lru_cache(maxsize=None)
def _rule_template(rule):
    """The rule's Template, or _NOT_INLINABLE.

    A `def` whose body is one `return` is inlinable; so is a lambda that a rule helper
    marked (`entries.inlinable`): a lambda given to `defvjp` as it stands is called.
    `entries.def_elementwise` builds `g * derivative(ans, x)`: its template is `g *`
    the derivative's expression; `entries.binary` builds `fit(partial(g, ans, x, y), x)`:
    `fit(` the partial's expression `, x)`.
    """
    how = getattr(rule, '__tapeflow_inline__', None)
    if isinstance(how, tuple):
        composed = {'scale': _scaled_template, 'fit': _fitted_template}.get(how[0])
        return _NOT_INLINABLE if composed is None else composed(*how[1:])
    code = getattr(rule, '__code__', None)
    if code is not None and code.co_name == '<lambda>':
        fdef = _marked_lambda(rule)
    else:
        fdef = _single_def(rule)
    if fdef is None:
        return _NOT_INLINABLE
    body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    args = fdef.args
    if len(body) != 1 or not isinstance(body[0], ast.Return) or args.vararg or args.kwarg \
            or args.posonlyargs:
        return _NOT_INLINABLE
    expr = body[0].value
    if any(isinstance(n, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp,
                          ast.SetComp, ast.NamedExpr)) for n in nodes.walk(expr)):
        return _NOT_INLINABLE
    params = [a.id for a in args.args] + [a.id for a in args.kwonlyargs]
    positional = [a.id for a in args.args]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    try:
        expr, fixed = _spell(expr, set(params), rule.__globals__)
    except _Unspellable:                # the stand-in namespace itself used as a value
        return _NOT_INLINABLE
    free = {n.id for n in nodes.walk(expr) if isinstance(n, ast.Name)} - set(params)
    return Template(params, positional, defaults, expr, free, fixed, rule)


def _scaled_template(derivative):
    """The template of `g * derivative(ans, x)`: the derivative's expression, scaled."""
    inner = _rule_template(derivative)
    if inner is _NOT_INLINABLE or len(inner.positional) != 2 or inner.params != inner.positional:
        return _NOT_INLINABLE
    g = 'g'
    while g in inner.params or g in inner.free:
        g += '_'
    expr = nodes.binop(nodes.name(g), ast.Mult(), inner.expr)
    return inner._replace(params=[g] + inner.params, positional=[g] + inner.positional,
                          expr=expr)


def _fitted_template(partial, argnum):
    """The template of `fit(partial(g, ans, *args), args[argnum])`."""
    inner = _rule_template(partial)
    if inner is _NOT_INLINABLE or len(inner.positional) < argnum + 3 \
            or 'fit' in inner.params or 'fit' not in inner.scope.__globals__:
        return _NOT_INLINABLE
    operand = nodes.name(inner.positional[argnum + 2])
    return inner._replace(expr=nodes.call(nodes.name('fit'), inner.expr, operand),
                          free=inner.free | {'fit'})


def _single_def(rule):
    """The undecorated FunctionDef of `rule`, or None."""
    try:
        source = textwrap.dedent(inspect.getsource(rule))
        tree = nodes.parse_gast(source)
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef) or fdef.decorator_list:
        return None
    return fdef


def _marked_lambda(rule):
    """A marked lambda, read as `def lambda_(<its args>): return <its body>`, or None.

    Its body is the text its instructions' positions span (Python >= 3.11; on 3.10,
    which has none, its source is parsed: `parse_function`): taken only when that text
    stands between the lambda's `:` and what ends it and compiles to the lambda's own
    names and constants; a lambda sharing its line with others is so told apart, and
    anything unsure is called, not inlined. A lambda reading a name of the function it
    was made in (a closure) is called."""
    code = rule.__code__
    if not getattr(rule, '__tapeflow_inline__', False) or rule.__closure__ \
            or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
            or code.co_kwonlyargcount or code.co_posonlyargcount:
        return None
    if not hasattr(code, 'co_positions'):   # Python 3.10: the lambda's source, parsed
        try:
            return parse_function(rule).node
        except (TapeflowError, OSError, TypeError, SyntaxError):
            return None
    body = _body_text(code)
    defaults = rule.__defaults__ or ()
    if body is None or any(d is not None and d.__class__ not in (bool, int, float, str)
                           for d in defaults):
        return None
    params = list(code.co_varnames[:code.co_argcount])
    for i, value in enumerate(defaults, len(params) - len(defaults)):
        params[i] += f'={value!r}'
    signature = ', '.join(params)
    try:
        check = compile(f'lambda {signature}: ({body})', '<rule>', 'eval')
        tree = nodes.parse_gast(f'def lambda_({signature}):\n    return ({body})\n')
    except SyntaxError:
        return None
    own = next(c for c in check.co_consts if isinstance(c, types.CodeType))
    if (own.co_names, own.co_consts, own.co_varnames) != (code.co_names, code.co_consts,
                                                          code.co_varnames):
        return None
    return tree.body[0]


def _body_text(code):
    """The text of a lambda's body: the span of its instructions' positions, which
    must stand after the lambda's `:` (or an opening parenthesis) and before what ends
    it. Else None."""
    spans = [p for p in code.co_positions() if None not in p and p[2:] != (0, 0)]
    if not spans:
        return None
    line, col = min((p[0], p[2]) for p in spans)
    end_line, end_col = max((p[1], p[3]) for p in spans)
    lines = [text.encode('utf-8') for text in
             linecache.getlines(code.co_filename)[line - 1:end_line]]
    if len(lines) != end_line - line + 1:
        return None
    before = b''.join(linecache.getline(code.co_filename, n).encode('utf-8')
                      for n in range(max(line - 3, 1), line)) + lines[0][:col]
    after = lines[-1][end_col:]
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    if not before.rstrip().endswith((b':', b'(')) or \
            after.strip()[:1] not in (b'', b',', b')', b']', b'}', b'#'):
        return None
    try:
        return b''.join(lines).decode('utf-8')
    except UnicodeDecodeError:
        return None


def _spell(expr, params, globals_):
    """`expr` with each `space.attr` of a stand-in namespace (a global `StandIn`: the
    math twin of a NumPy rule reads `np.cos` as `math.cos`) written as the stand-in
    says; and the names those spellings use, with their objects."""
    spaces = {n.id for n in nodes.walk(expr) if isinstance(n, ast.Name) and n.id not in params
              and isinstance(globals_.get(n.id), StandIn)}
    if not spaces:
        return expr, {}
    fixed = {}

    def spell(node):
        if isinstance(node, ast.Attribute) and ast.name_id(node.value) in spaces:
            try:
                name, obj, attr = globals_[node.value.id].spelling(node.attr)
            except KeyError:
                raise _Unspellable from None
            fixed[name] = obj
            return nodes.name(name) if attr is None else nodes.attribute(nodes.name(name), attr)
        if isinstance(node, ast.Name) and node.id in spaces:
            raise _Unspellable
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                setattr(node, field, spell(value))
            elif isinstance(value, list):
                setattr(node, field, [spell(v) if isinstance(v, ast.AST) else v for v in value])
        return node
    return spell(nodes.clone(expr)), fixed


class _Unspellable(Exception):
    pass


class RuleEmitter:
    """Emits rules into one generated module; owns the names rules need there."""

    def __init__(self, namespace: dict, namer):
        self.namespace = namespace
        self.namer = namer
        self.called = {}            # rule -> its name in the namespace

    def emit(self, rule, g, ans, args, keywords=(), same_shapes=False, label=None):
        """An expression computing `rule(g, ans, *args, **keywords)`.

        `g`, `ans` and `args` are gast expressions (or names); `keywords` is a
        list of (name, expression). `same_shapes` says which operands have the
        output's shape (True: all; or a predicate on a name): an inlined
        `unbroadcast(e, x)` of such an `x` is just `e`.
        """
        how = getattr(rule, '__tapeflow_inline__', None)
        if isinstance(how, tuple) and how[0] == 'apply' and how[2] < len(args):
            fn, argnum = how[1], how[2]                 # def_linear's JVP: fn at the tangent
            return nodes.call(self._spelling(fn), *args[:argnum], g, *args[argnum + 1:],
                              keywords=list(keywords))
        template = _rule_template(rule)
        if template is not _NOT_INLINABLE:
            inlined = self._inline(rule, template, g, ans, args, dict(keywords), same_shapes)
            if inlined is not None:
                return inlined
        return nodes.call(self.bind(rule, label), g, ans, *args, keywords=list(keywords))

    def _inline(self, rule, template, g, ans, args, keywords, same_shapes=False):
        params, positional, defaults, expr, free, fixed, scope = template
        values = [g, ans] + list(args)
        if len(values) > len(positional):
            return None
        subs = dict(zip(positional, values))
        for name in params:
            if name in subs:
                continue
            if name in keywords:
                subs[name] = keywords.pop(name)
            elif name in defaults:
                subs[name] = defaults[name]
            else:
                return None
        if keywords:
            return None                      # a keyword the rule does not take
        globals_ = {**scope.__globals__, **fixed} if fixed else scope.__globals__
        for name in free:
            if name not in globals_:
                import builtins
                if hasattr(builtins, name):
                    continue
                return None
            obj = globals_[name]
            if self.namespace.get(name, obj) is not obj or (
                    name in self.namer.taken and self.namespace.get(name) is not obj):
                return None                  # the name means something else here
        for name in free:
            if name in globals_:
                self.namespace[name] = globals_[name]
                self.namer.reserve(name)
        same = same_shapes if callable(same_shapes) else (lambda name: bool(same_shapes))
        return _rewrite(expr, subs, globals_, same)

    def _spelling(self, fn):
        """`fn` as generated code names it: its own name, or `np.flip` where a module
        the generated code sees holds it under its name, else a name bound to it."""
        attr = getattr(fn, '__name__', None)
        if attr and self.namespace.get(attr) is fn:
            return nodes.name(attr)
        for name, value in list(self.namespace.items()):
            if isinstance(value, types.ModuleType) and attr and getattr(value, attr, None) is fn:
                return nodes.attribute(nodes.name(name), attr)
        return nodes.name(self.bind(fn))

    def zero_safe(self, rule) -> bool:
        """Whether `rule` takes the symbolic zero 0.0 for its cotangent: an inlined rule
        whose cotangent only meets arithmetic on its way to `unbroadcast`/`fit`."""
        return _zero_safe(rule)

    def constant(self, value, hint='value'):
        """An expression for `value` in generated code: a literal, or a bound name."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return nodes.const(value)
        name = self.namer.new(f'_default_{hint}')
        self.namespace[name] = value
        return nodes.name(name)

    def bind(self, rule, label=None):
        """The name the rule is called by in the generated module."""
        if rule not in self.called:
            base = getattr(rule, '__name__', 'rule')
            if base == '<lambda>' or not base.isidentifier():
                base = label or 'rule'
            name = self.namer.new(base if base.startswith('_') else '_' + base)
            self.namespace[name] = rule
            self.called[rule] = name
        return self.called[rule]


_ZERO_SAFE_CALLS = frozenset({'unbroadcast', 'fit', 'broadcast_tangent', 'match_complex'})


@functools.lru_cache(maxsize=None)
def _zero_safe(rule) -> bool:
    template = _rule_template(rule)
    if template is _NOT_INLINABLE or not template.positional:
        return False
    g, expr = template.positional[0], template.expr

    def safe(node):
        """Every `g` under `node` reaches the result through arithmetic only."""
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                                 ast.Div)):
            return safe(node.left) and safe(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return safe(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _ZERO_SAFE_CALLS and node.args:
            return safe(node.args[0]) and all(
                g not in nodes.names_in(a) for a in node.args[1:] + [k.value for k in node.keywords])
        return g not in nodes.names_in(node)
    return safe(expr)


def _rewrite(node, subs, globals_, same):
    """A copy of the rule expression `node` fit for the generated code, in one pass:

    - parameters replaced by the generated code's expressions (`subs`: a node, copied
      where it is used, a name or a constant);
    - `helper(g, x, None, False, where=True)` -> `helper(g, x)` where those are
      the helper's defaults;
    - `unbroadcast(e, x)` -> `e` where `same(x)`: `x` has the result's shape.
    """
    if isinstance(node, ast.Name):
        sub = subs.get(node.id, _NOT_A_PARAMETER)       # (None: a default, the constant)
        if sub is _NOT_A_PARAMETER:
            return nodes.clone(node)
        return nodes.clone(sub) if isinstance(sub, ast.AST) else _as_node(sub)
    if isinstance(node, list):
        return [_rewrite(n, subs, globals_, same) for n in node]
    if not isinstance(node, ast.AST):
        return node
    new = node.__class__.__new__(node.__class__)
    fields = new.__dict__
    for field in node._fields:
        value = getattr(node, field, None)
        fields[field] = value if value is None or value.__class__ in nodes.ATOMS \
            else _rewrite(value, subs, globals_, same)
    if isinstance(new, ast.Call):
        return _simplify_call(new, globals_, same)
    return new


def _simplify_call(node, globals_, same):
    func = node.func
    if isinstance(func, ast.Name) and func.id in ('unbroadcast', 'broadcast_tangent') \
            and len(node.args) == 2 and isinstance(node.args[1], ast.Name) and same(node.args[1].id):
        return node.args[0]
    fn = globals_.get(func.id) if isinstance(func, ast.Name) else None
    defaults = _defaults_of(fn)
    if not defaults:
        return node
    node.keywords = [k for k in node.keywords if not (
        isinstance(k.value, ast.Constant) and k.arg in defaults
        and _same_constant(defaults[k.arg], k.value.value))]
    names = _parameter_names(fn)
    while node.args and len(node.args) <= len(names) and isinstance(node.args[-1], ast.Constant) \
            and names[len(node.args) - 1] in defaults \
            and _same_constant(defaults[names[len(node.args) - 1]], node.args[-1].value):
        node.args.pop()
    return node


@functools.lru_cache(maxsize=None)
def _parameter_names(fn):
    return list(inspect.signature(fn).parameters)


@functools.lru_cache(maxsize=None)
def _defaults_cached(fn):
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _defaults_of(fn):
    if fn is None or not callable(fn):
        return {}
    try:
        return _defaults_cached(fn)
    except TypeError:                       # unhashable
        return {}


def _same_constant(a, b) -> bool:
    return type(a) is type(b) and a == b


def _as_node(value):
    if isinstance(value, str):
        return nodes.name(value)
    if isinstance(value, ast.AST):
        return value
    return nodes.const(value)
