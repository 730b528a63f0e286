"""Desugar, calls made while compiling: `tf.grad(f)(x)`, `functools.partial`,
`[x] * n`, a user function called with functions or star arguments, and
`out, pb = tf.vjp(f, x)` with `pb(u)` called there.

`FoldTransforms` replaces each by an ordinary call of a function made while
compiling (bound in `bindings.computed`); `PullbackCalls` turns a pullback's
calls into calls of `f`'s adjoint caller. Runs after `syntax.resolve`.
"""
from __future__ import annotations

import functools
import inspect
import types

from tapeflow.rules.standins import __name__ as standins_module
from tapeflow.rules.standins import first, standin
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, hasanno, setanno
from tapeflow.syntax.naming import identifier as _id


class FoldTransforms(nodes.Transformer):
    """`tf.grad(f)` inside compiled code is computed while compiling.

    A callable marked `__tapeflow_fold__` (tapeflow's `grad`, `jacfwd`...)
    applied to values known at compile time (functions, constants) makes a
    function; the call is replaced by a name bound to it, so `tf.grad(f)(x)`
    is an ordinary call of a user function, differentiated like one.
    """

    def __init__(self, namer, bindings, source, fn=None):
        self.namer = namer
        self.bindings = bindings
        self.source = source
        self.fn = fn

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = getanno(node.func, Key.RESOLVED)
        if fn is next and _first_item(node):     # next(iter(xs)): the first item of xs
            node.args[0] = node.args[0].args[0]
            fn = first
        elif fn is dict and node.keywords and not node.args and all(k.arg for k in node.keywords):
            return nodes.copy_location(ast.Dict(keys=[nodes.const(k.arg) for k in node.keywords],
                                                values=[k.value for k in node.keywords]), node)
        if sum(k.arg is None for k in node.keywords) > 1:      # f(**a, **b): one dict
            node.keywords = [k for k in node.keywords if k.arg is not None] + [
                nodes.keyword(None, self._spread([k.value for k in node.keywords
                                                  if k.arg is None], node))]
        made = standin(fn) if fn is not None else None
        if fn is first:
            made = first
        if made is not None and getattr(self.fn, '__module__', None) != standins_module:
            node = self._call_made(made, node)      # `functools.reduce`: Python in its place
            fn = made
        if getattr(fn, '__tapeflow_fold_call__', None) is not None:
            return self.fold_call(fn, node)
        if isinstance(fn, functools.partial):
            return self.partial_call(fn, node)
        if not getattr(fn, '__tapeflow_fold__', False):
            return self.user_call(fn, node) if _is_compiled_function(fn) else node
        try:
            args = [_static_value(a) for a in node.args]
            kwargs = {k.arg: _static_value(k.value) for k in node.keywords}
        except _NotStatic as missing:
            if self.source is None:
                raise
            raise self.source.error(missing.node, f'{fn.__name__}() in compiled code needs '
                                                  f'arguments known when compiling (functions, '
                                                  f'constants)') from None
        value = fn(*args, **kwargs)
        name = self.namer.new('_' + _id(fn) + '_' + _id(args[0])
                              if args else '_' + _id(fn))
        self.bindings.computed[name] = value
        ref = nodes.copy_location(nodes.name(name), node)
        setanno(ref, Key.RESOLVED, value)
        return ref


    def partial_call(self, part, node):
        """`g(x)` with `g = functools.partial(f, a, k=c)`: `f(_a, x, k=_c)`, the bound
        values constants named while compiling (keywords written at the call win)."""
        def bound(value, what):
            name = self.namer.new(f'_{_id(part.func)}_{what}')
            self.bindings.computed[name] = value
            ref = nodes.copy_location(nodes.name(name), node)
            setanno(ref, Key.RESOLVED, value)
            return ref
        func = bound(part.func, 'fn')
        args = [bound(a, f'arg{k}') for k, a in enumerate(part.args)] + list(node.args)
        written = {k.arg for k in node.keywords}
        keywords = [nodes.keyword(k, bound(v, k)) for k, v in part.keywords.items()
                    if k not in written] + list(node.keywords)
        call = nodes.copy_location(nodes.call(func, *args, keywords=keywords), node)
        inner = part.func
        return self.partial_call(inner, call) if isinstance(inner, functools.partial) else call

    def visit_BinOp(self, node):
        """`[x] * n`, `n * (x,)`: repetition, written as the call it is (`*`'s rules scale)."""
        self.generic_visit(node)
        if not isinstance(node.op, ast.Mult):
            return node
        if isinstance(node.left, (ast.List, ast.Tuple)):
            seq, count = node.left, node.right
        elif isinstance(node.right, (ast.List, ast.Tuple)):
            seq, count = node.right, node.left
        else:
            return node
        from tapeflow.rules.math_rules import repeated
        name = next((n for n, v in self.bindings.computed.items() if v is repeated), None)
        if name is None:
            name = self.namer.new('_repeated')
            self.bindings.computed[name] = repeated
        func = nodes.copy_location(nodes.name(name), node)
        setanno(func, Key.RESOLVED, repeated)
        return nodes.copy_location(nodes.call(func, seq, count), node)

    def user_call(self, fn, node):
        """A call of a user function made for what it is given: its number of star
        arguments, and the functions it is passed."""
        if (getattr(fn, '__module__', None) or '').startswith('tapeflow.') and \
                not getattr(fn, '__tapeflow_standin__', False):
            return node                 # tapeflow's own helpers: read as they are
        if _stands_for_another(fn):
            return node                 # (a gradient function, a pass-through wrapper)
        from tapeflow.transforms.variants import keyword_parameters
        if keyword_parameters(fn):
            node = self.keyword_call(fn, node)
            fn = getanno(node.func, Key.RESOLVED)
        elif fn.__code__.co_flags & inspect.CO_VARARGS:
            node = self.star_call(fn, node)
            fn = getanno(node.func, Key.RESOLVED)
        bound = self._function_arguments(fn, node)
        return self.bound_call(fn, bound, node) if bound else node

    def star_call(self, fn, node):
        """`g(a, b, c)` of `def g(x, *rest)`: a call of `g` made for two values in `rest`
        (`variants.arity_variant`), a function of named parameters."""
        from tapeflow.syntax.parse import parse_function
        from tapeflow.transforms.variants import arity_variant
        if any(isinstance(a, ast.Starred) for a in node.args):
            return node                      # the fence has said where
        count = max(len(node.args) - fn.__code__.co_argcount, 0)
        self._not_growing(fn, count, node)
        made = arity_variant(fn, count, parse_function)
        return node if made is fn else self._call_made(made, node)

    def keyword_call(self, fn, node):
        """`g(a, b, k=v, w=u)` of `def g(x, *rest, k=1, **kw)`: a call of `g` made with named
        parameters only (`variants.keyword_variant`), `rest`'s values by position, `k` by
        keyword and the `**` dict written out, `kw={'w': u}`, as Python binds them."""
        from tapeflow.syntax.parse import parse_function
        from tapeflow.transforms.variants import keyword_variant
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return node                      # the fence has said where
        code = fn.__code__
        star = code.co_flags & inspect.CO_VARARGS
        count = max(len(node.args) - code.co_argcount, 0) if star else 0
        self._not_growing(fn, count, node)
        made = keyword_variant(fn, count, parse_function)
        if made is fn:                       # (a wrapper passing its `**kwargs` on)
            return node
        names = code.co_varnames[:code.co_argcount]
        kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        extra = code.co_varnames[code.co_argcount + code.co_kwonlyargcount + bool(star)] \
            if code.co_flags & inspect.CO_VARKEYWORDS else None
        if len(node.args) > len(names) and not star:
            raise self.source.error(node, f'{fn.__name__}() takes {len(names)} positional '
                                          f'arguments but {len(node.args)} were given')
        given, packed = {}, []
        keyed = names[code.co_posonlyargcount:]     # (a positional-only one goes to `**`)
        for k in node.keywords:
            if k.arg in keyed[:len(node.args) - code.co_posonlyargcount] or k.arg in given:
                raise self.source.error(node, f'{fn.__name__}() got multiple values for '
                                              f'argument {k.arg!r}')
            if k.arg in keyed or k.arg in kwonly:
                given[k.arg] = k.value
            elif extra is not None:
                packed.append(k)
            else:
                raise self.source.error(node, f'{fn.__name__}() got an unexpected keyword '
                                              f'argument {k.arg!r}')
        defaults = dict(zip(names[len(names) - len(fn.__defaults__ or ()):], fn.__defaults__ or ()))
        defaults.update(fn.__kwdefaults__ or {})
        args = list(node.args[:len(names)])
        for name in names[len(node.args):] + kwonly:
            if name in given:
                args.append(given[name])
            elif name in defaults:
                args.append(self._constant(name, defaults[name], node))
            else:
                raise self.source.error(node, f'{fn.__name__}() missing a required argument: '
                                              f'{name!r}')
        rest = list(node.args[len(names):])
        args = args[:len(names)] + rest + args[len(names):]
        if extra is not None:
            table = ast.Dict(keys=[nodes.const(k.arg) for k in packed],
                             values=[k.value for k in packed])
            args.append(nodes.copy_location(table, node))
        node.args, node.keywords = args, []       # every one by position, in the variant's order
        return self._call_made(made, node)

    def _not_growing(self, fn, count, node):
        """Refuse a function that calls itself with more values for its star parameter than
        it was given: each count is a function of its own, and how many there will be is
        known only when it runs."""
        own = getattr(self.fn, '__tapeflow_star_of__', None)
        if own is not None and own[0] is fn and count > own[1]:
            raise self.source.error(node, f'{fn.__name__}() calls itself with more values for '
                                          f'its star parameter ({count}) than it was given '
                                          f'({own[1]}): how many is known only when it runs; '
                                          f'pass them as one tuple or list')

    def _spread(self, dicts, node):
        """`spread_keywords(a, b)`: the `**` dicts of one call as one, Python's TypeError
        where a key is in two."""
        from tapeflow.rules.dicts import spread_keywords
        name = self.namer.new('_spread_keywords')
        self.bindings.computed[name] = spread_keywords
        func = nodes.copy_location(nodes.name(name), node)
        setanno(func, Key.RESOLVED, spread_keywords)
        return nodes.copy_location(nodes.call(func, *dicts), node)

    def _constant(self, name, value, node):
        """A name for `value` (a parameter's default), resolved to it."""
        ref = nodes.copy_location(nodes.name(self.namer.new(f'_default_{name}')), node)
        self.bindings.computed[ref.id] = value
        setanno(ref, Key.RESOLVED, value)
        return ref

    @staticmethod
    def _function_arguments(fn, node):
        """{parameter position: function} for the arguments of `node` that are functions
        known while compiling (`g(x, np.tanh)`, `g(x, act=relu)`)."""
        from tapeflow.transforms.variants import is_function
        params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
        given = list(enumerate(node.args)) + [(params.index(k.arg), k.value) for k in node.keywords
                                              if k.arg in params]
        found = {i: getanno(a, Key.RESOLVED) for i, a in given
                 if not isinstance(a, ast.Starred) and is_function(getanno(a, Key.RESOLVED))}
        if not any(isinstance(a, ast.Starred) for a in node.args):
            defaults = fn.__defaults__ or ()
            passed = {i for i, _ in given}
            for i in range(len(params) - len(defaults), len(params)):    # left to its default
                value = defaults[i - len(params) + len(defaults)]
                if i not in passed and is_function(value):
                    found[i] = value
        return found

    def bound_call(self, fn, bound, node):
        """`g(x, np.tanh)`: a call of `g` made for that function (`variants.bound_variant`;
        `bound`: {position: function}), whose calls of its parameter are calls of np.tanh."""
        from tapeflow.syntax.parse import parse_function
        from tapeflow.transforms.variants import bound_variant
        made = bound_variant(fn, bound, parse_function)
        if made is fn:
            return node
        params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
        renamed = made.__code__.co_varnames[:len(params)]
        for keyword in node.keywords:            # the unread parameter's new name
            if keyword.arg in params:
                keyword.arg = renamed[params.index(keyword.arg)]
        return self._call_made(made, node)

    def _call_made(self, made, node):
        name = self.namer.new('_' + made.__name__)
        self.bindings.computed[name] = made
        func = nodes.copy_location(nodes.name(name), node.func)
        setanno(func, Key.RESOLVED, made)
        node.func = func
        return node

    def fold_call(self, fn, node):
        """`jvp(f, (x, y), (u, v))` -> `jvp_f(x, y, u, v)`, a function made while compiling."""
        args = node.args
        if len(args) != 3 or node.keywords or not all(isinstance(a, ast.Tuple) for a in args[1:]) \
                or len(args[1].elts) != len(args[2].elts) or not hasanno(args[0], Key.RESOLVED):
            raise self.source.error(node, f'{fn.__name__}() in compiled code takes a function known '
                                          f'when compiling and two tuples written out, '
                                          f'{fn.__name__}(f, (x, ...), (v, ...))')
        caller = fn.__tapeflow_fold_call__(getanno(args[0], Key.RESOLVED), len(args[1].elts))
        name = self.namer.new(caller.__name__)
        self.bindings.computed[name] = caller
        ref = nodes.copy_location(nodes.name(name), node)
        setanno(ref, Key.RESOLVED, caller)
        return nodes.copy_location(
            nodes.call(ref, *args[1].elts, *args[2].elts), node)


class PullbackCalls:
    """`out, pb = tf.vjp(f, x, y)` inside compiled code, `pb` only ever called.

    Becomes `_x = x; _y = y; out = f(_x, _y)`, and each `pb(u)` a call of
    `f`'s adjoint caller, `vjp_f(_x, _y, u)` (made while compiling): calls of
    user functions like any other, so they are differentiated too.
    """

    def __init__(self, namer, bindings, source):
        self.namer = namer
        self.bindings = bindings
        self.source = source
        self.pullbacks = {}          # name -> (adjoint caller's name, its object, primal names)

    def rewrite(self, fdef):
        fdef.body = self.block(fdef.body)
        for n in nodes.walk_terms(fdef):
            fn = getanno(n.func, Key.RESOLVED) if isinstance(n, ast.Call) else None
            if getattr(fn, '__tapeflow_fold_pullback__', None) is not None:
                raise self._form_error(n, fn)       # returned, passed on, nested: not folded
        if self.pullbacks:
            for n in nodes.walk_terms(fdef):
                if ast.called_name(n) in self.pullbacks:
                    self.call(n)
            for n in nodes.walk_terms(fdef):
                if isinstance(n, ast.Name) and n.id in self.pullbacks:
                    raise self.source.error(n, f'the pullback {n.id!r} of vjp() can only be '
                                               f'called where vjp() is, in compiled code (not '
                                               f'returned, stored or passed on); return '
                                               f'{n.id}(cotangent) instead, or call vjp() '
                                               f'where the pullback is used')

    def _form_error(self, node, fn):
        return self.source.error(node, f'{fn.__name__}() in compiled code is written '
                                       f'`out, pullback = {fn.__name__}(f, x, ...)`, with f '
                                       f'known when compiling, and the pullback called there')

    def block(self, stmts):
        out = []
        for stmt in stmts:
            for field in ('body', 'orelse'):
                inner = getattr(stmt, field, None)
                if inner and not isinstance(stmt, ast.FunctionDef):
                    setattr(stmt, field, self.block(inner))
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt):
        call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        fn = getanno(call.func, Key.RESOLVED) if isinstance(call, ast.Call) else None
        make_caller = getattr(fn, '__tapeflow_fold_pullback__', None)
        if make_caller is None:
            return [stmt]
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)) \
                or not call.args or call.keywords or not hasanno(call.args[0], Key.RESOLVED):
            raise self._form_error(stmt, fn)
        f = getanno(call.args[0], Key.RESOLVED)
        if not isinstance(f, types.FunctionType):
            from tapeflow.syntax.unparse import unparse
            name = unparse(nodes.expr_stmt(call.args[0])).strip()
            raise self.source.error(call.args[0], f'{fn.__name__}() in compiled code takes a '
                                                  f'function written with def, not {name}; '
                                                  f'write `def f(x): return {name}(x)` and '
                                                  f'pass f')
        primals = call.args[1:]
        caller = make_caller(f, len(primals))
        caller_name = self.namer.new(caller.__name__)
        self.bindings.computed[caller_name] = caller
        names = [self.namer.new('_primal') for _ in primals]
        out = [nodes.copy_location(nodes.assign(n, p), stmt) for n, p in zip(names, primals)]
        value = nodes.call(call.args[0], *names)
        out.append(nodes.copy_location(nodes.assign(target.elts[0].id, value), stmt))
        self.pullbacks[target.elts[1].id] = (caller_name, caller, names)
        return out

    def call(self, node):
        caller_name, caller, names = self.pullbacks[node.func.id]
        if len(node.args) != 1 or node.keywords:
            raise self.source.error(node, 'a pullback takes one cotangent')
        func = nodes.copy_location(nodes.name(caller_name), node.func)
        setanno(func, Key.RESOLVED, caller)
        node.func = func
        node.args = [nodes.name(n) for n in names] + node.args


class _NotStatic(Exception):
    def __init__(self, node):
        super().__init__()
        self.node = node


def _static_value(node):
    """The value of an argument known when compiling: a resolved name, a constant, a tuple."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_static_value(e) for e in node.elts)
    if not hasanno(node, Key.RESOLVED):
        raise _NotStatic(node)
    return getanno(node, Key.RESOLVED)


def _stands_for_another(fn) -> bool:
    """Whether the compiler reads another function for a call of `fn` (`callables.
    python_function_of`): a function `grad` made, or one carrying its marks (a wrapper that
    copied them), a pullback, a wrapper that only compiles, caches or passes on. Made for
    its arguments, it would be read as its own text."""
    from tapeflow import wrappers
    return any(wrappers.own(fn, mark) is not None for mark in (
        '__tapeflow_transform__', '__tapeflow_pullback__', '__tapeflow_jacobian__')) or \
        wrappers.inner_function(fn) is not None


def _first_item(call) -> bool:
    """`next(iter(xs))`, `next(iter(xs), default)`."""
    inner = call.args[0] if call.args and len(call.args) <= 2 and not call.keywords else None
    return isinstance(inner, ast.Call) and getanno(inner.func, Key.RESOLVED) is iter and \
        len(inner.args) == 1 and not inner.keywords and not isinstance(inner.args[0], ast.Starred)


def _is_compiled_function(fn) -> bool:
    """A def or lambda the compiler reads (not a primitive with rules, nor a library's
    function: `operations.is_library_code`)."""
    from tapeflow.rules.registry import lookup
    from tapeflow.transforms.operations import is_library_code
    return isinstance(fn, types.FunctionType) and lookup(fn) is None and not is_library_code(fn)
