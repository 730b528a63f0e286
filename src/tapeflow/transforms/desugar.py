"""Desugar: rewrite the function into the smaller language the later passes know.

Runs after `syntax.fence` and `syntax.resolve`. Guarantees on its output:

- no augmented assignment (`x += y` is `x = x + y`, marked `Key.IN_PLACE`;
  `y[i] += v` is `t = y[i]; t = t + v` (marked); `y[i] = t`);
- every `for` loop iterates `range(...)`: loops over sequences, `enumerate`
  and `zip` index their sequences;
- no `continue`, no `break` but the one `if <flags>: break` that ends a loop
  body (marked `Key.LOOP_EXIT`), and a single `return`, the last statement:
  jumps are lowered to flags that guard the statements they skip.

Calls of the user's functions are made for what they are given (a variant for
the number of star arguments, and for the functions passed); `[x] * n` is the
call `repeated([x], n)`. Other expressions are left alone (ANF runs next).
"""
from __future__ import annotations

import builtins
import copy
import dataclasses
import functools
import inspect
import types

from tapeflow.syntax import ast
import numpy as np

from tapeflow.syntax.naming import identifier as _id
from tapeflow.syntax import nodes
from tapeflow.transforms import namespaces
from tapeflow.syntax.anno import Key, copyanno, getanno, hasanno, setanno
from tapeflow.syntax.naming import Namer


def transform(node: ast.FunctionDef, namer: Namer, source=None, fn=None,
              bindings=None) -> ast.FunctionDef:
    if source is not None and bindings is not None:
        namespaces.rewrite(node, namer, source, bindings)       # xp.exp(z) -> exp(xp, z)
    if source is not None:
        _lift_nested_defs(node, source, fn, namer, bindings)
        _LowerNamedOps(source).visit(node)
    if bindings is not None:
        _FoldTransforms(namer, bindings, source).visit(node)
        if source is not None:
            _PullbackCalls(namer, bindings, source).rewrite(node)
    node.body = _AugAssign(namer).visit_body(node.body)
    _ZipValues(namer, source).rewrite(node)
    node.body = _Loops(namer).visit_body(node.body)
    node.body = _Jumps(namer).lower_function(node.body)
    return node


# ------------------------------------------------------------------ nested defs

def _lift_nested_defs(node, source, fn, namer=None, bindings=None):
    """A nested def gets the enclosing locals it reads as extra parameters.

    `def inner(v): return v * k` inside `f` (with `k` a local of `f`) becomes
    `def inner(v, k)`, and each call `inner(x)` becomes `inner(x, k)`. Calls
    are then ordinary calls of a user function: `inner` is compiled on its own
    (from this node, located in the user's file).

    Defaults are values the def statement computes where it stands (`def
    inner(v, k=k)` in a loop keeps each trip's `k`): each becomes a name
    assigned just before the def (`_inner_k = k`), and a call that leaves the
    parameter out passes that name. Calls pass every argument by position.
    """
    from tapeflow.syntax.resolve import local_names, resolve_expression
    from tapeflow.syntax.unparse import load_module, unparse
    outer_locals = None             # the function's locals, read before any def is lifted
    lifted = {}
    for stmt in list(nodes.walk(node)):
        for field in ('body', 'orelse'):
            block = getattr(stmt, field, None)
            if not isinstance(block, list):
                continue
            for child in list(block):
                if isinstance(child, ast.FunctionDef) and child is not node:
                    if outer_locals is None:
                        outer_locals = local_names(node)
                    hoisted = _hoist_defaults(child, namer, outer_locals, bindings)
                    at = block.index(child)
                    block[at:at] = nodes.located(hoisted, child)
                    lifted[child.name] = _lift(child, source, fn, outer_locals, hoisted)
    if not lifted:
        return
    for call in nodes.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in lifted:
            inner_fn, params, defaults, free = lifted[call.func.id]
            call.args = _positional_arguments(call, call.func.id, params, defaults, source) + \
                [nodes.name(n) for n in free]
            call.keywords = []
            setanno(call.func, Key.RESOLVED, inner_fn)


def _hoist_defaults(child, namer, outer_locals, bindings):
    """`_inner_p = <default of p>` for each default of `child`, which keeps none."""
    from tapeflow.syntax.resolve import resolve_expression
    defaults = child.args.defaults
    if not defaults:
        return []
    if namer is None:
        raise TypeError('nested defs with defaults need a namer')
    params = child.args.args[len(child.args.args) - len(defaults):]
    hoisted = []
    for param, default in zip(params, defaults):
        if bindings is not None:
            resolve_expression(default, outer_locals, bindings)
        hoisted.append(nodes.assign(namer.new(f'_{child.name}_{param.id}'), default))
    child.args.defaults = []
    return hoisted


def _lift(child, source, fn, outer_locals, hoisted):
    from tapeflow.syntax.resolve import local_names
    from tapeflow.syntax.unparse import load_module, unparse
    params = [a.id for a in child.args.args]
    defaults = {p: h.targets[0].id for p, h in zip(params[len(params) - len(hoisted):], hoisted)}
    inner_locals = local_names(child)
    free = sorted({n.id for n in nodes.walk(child) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Load)} - inner_locals & outer_locals)
    for name in free:
        param = nodes.name(name)
        param.ctx = ast.Param()
        child.args.args.append(param)
    namespace = dict(fn.__globals__)
    load_module(unparse(child), namespace, child.name)
    inner_fn = namespace[child.name]
    inner_fn.__tapeflow_source__ = dataclasses.replace(source, node=copy.deepcopy(child))
    return inner_fn, params, defaults, free


def _positional_arguments(call, name, params, defaults, source):
    """The arguments of a call of a lifted def, one per parameter, in order."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        raise source.error(call, f'a call of the nested function {name}() with *args or **kwargs '
                                 'is not supported; pass its arguments one by one')
    if len(call.args) > len(params):
        raise source.error(call, f'{name}() takes {len(params)} arguments, '
                                 f'{len(call.args)} are given')
    given = dict(zip(params, call.args))
    for keyword in call.keywords:
        if keyword.arg not in params or keyword.arg in given:
            raise source.error(call, f'{name}() got an unexpected or repeated keyword '
                                     f'argument {keyword.arg!r}')
        given[keyword.arg] = keyword.value
    missing = [p for p in params if p not in given and p not in defaults]
    if missing:
        raise source.error(call, f'{name}() is missing the argument {missing[0]!r}')
    return [given[p] if p in given else nodes.name(defaults[p]) for p in params]


# ------------------------------------------------------------------ tf.multiply & co

class _FoldTransforms(nodes.Transformer):
    """`tf.grad(f)` inside compiled code is computed while compiling.

    A callable marked `__tapeflow_fold__` (tapeflow's `grad`, `jacfwd`...)
    applied to values known at compile time (functions, constants) makes a
    function; the call is replaced by a name bound to it, so `tf.grad(f)(x)`
    is an ordinary call of a user function, differentiated like one.
    """

    def __init__(self, namer, bindings, source):
        self.namer = namer
        self.bindings = bindings
        self.source = source

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = getanno(node.func, Key.RESOLVED)
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
        keywords = [ast.keyword(arg=k, value=bound(v, k)) for k, v in part.keywords.items()
                    if k not in written] + list(node.keywords)
        call = nodes.copy_location(ast.Call(func=func, args=args, keywords=keywords), node)
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
        return nodes.copy_location(ast.Call(func=func, args=[seq, count], keywords=[]), node)

    def user_call(self, fn, node):
        """A call of a user function made for what it is given: its number of star
        arguments, and the functions it is passed."""
        if fn.__code__.co_flags & inspect.CO_VARARGS:
            node = self.star_call(fn, node)
            fn = getanno(node.func, Key.RESOLVED)
        if (getattr(fn, '__module__', None) or '').startswith('tapeflow.'):
            return node                 # tapeflow's own helpers: read as they are
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
        made = arity_variant(fn, count, parse_function)
        return node if made is fn else self._call_made(made, node)

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
            ast.Call(func=ref, args=list(args[1].elts) + list(args[2].elts), keywords=[]), node)


class _PullbackCalls:
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
        for n in nodes.walk(fdef):
            fn = getanno(n.func, Key.RESOLVED) if isinstance(n, ast.Call) else None
            if getattr(fn, '__tapeflow_fold_pullback__', None) is not None:
                raise self._form_error(n, fn)       # returned, passed on, nested: not folded
        if self.pullbacks:
            for n in nodes.walk(fdef):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                        and n.func.id in self.pullbacks:
                    self.call(n)
            for n in nodes.walk(fdef):
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
            name = unparse(ast.Expr(value=call.args[0])).strip()
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
        value = ast.Call(func=call.args[0], args=[nodes.name(n) for n in names], keywords=[])
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


class _LowerNamedOps(nodes.Transformer):
    """`tf.reduce_sum(x, axis=0)` is `np.sum(x, axis=0)` in compiled code.

    An op that says which NumPy function it means (`__tapeflow_numpy__`) is
    called as that function, with its parameters mapped; an argument the
    NumPy function has no place for is a located error.
    """

    def __init__(self, source):
        self.source = source

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = getanno(node.func, Key.RESOLVED)
        spec = getattr(fn, '__tapeflow_numpy__', None)
        if spec is None:
            return node
        numpy_fn, positional, renames, fixed = spec
        if len(node.args) > len(positional):
            raise self.source.error(node, f'{fn.__name__}() takes {len(positional)} positional '
                                          f'arguments in compiled code')
        keywords = []
        for kw in node.keywords:
            if kw.arg == 'name':
                continue
            if kw.arg in positional:
                if positional.index(kw.arg) != len(node.args):
                    raise self.source.error(node, f'pass {kw.arg} of {fn.__name__}() by position')
                node.args.append(kw.value)
                continue
            if kw.arg in fixed or kw.arg not in renames:
                raise self.source.error(kw.value, f'{fn.__name__}(..., {kw.arg}=...) is not '
                                                  f'supported in compiled code')
            keywords.append(ast.keyword(arg=renames[kw.arg], value=kw.value))
        return nodes.copy_location(ast.Call(func=_numpy(numpy_fn), args=node.args,
                                             keywords=keywords), node)

    def visit_Subscript(self, node):
        """`np.r_[a, b]` and `np.c_[a, b]` are concatenations: written as the calls
        they amount to, they are differentiated like any call (read as an index,
        they were constants: a zero gradient)."""
        self.generic_visit(node)
        maker = getanno(node.value, Key.RESOLVED)
        if maker is not np.r_ and maker is not np.c_:
            return node
        which = 'np.r_' if maker is np.r_ else 'np.c_'
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                raise self.source.error(item, f'{which}[...] with a string directive is not '
                                              f'supported; write np.concatenate or np.stack')
            if isinstance(item, ast.Starred):
                raise self.source.error(item, f'{which}[*...] is not supported; write '
                                              f'np.concatenate')
        items = [self._range_of(item, which) if isinstance(item, ast.Slice) else item
                 for item in items]
        if maker is np.r_:
            # r_: every item at least 1-d, joined along the first axis
            parts = [nodes.call(_numpy(np.atleast_1d), item) for item in items]
            axis = 0
        else:
            # c_: a 1-d item is a column, a scalar a 1x1 array, other items stay;
            # transpose(atleast_2d(transpose(a))) is exactly that; joined along the last axis
            parts = [nodes.call(_numpy(np.transpose),
                                nodes.call(_numpy(np.atleast_2d),
                                           nodes.call(_numpy(np.transpose), item)))
                     for item in items]
            axis = -1
        joined = nodes.call(_numpy(np.concatenate), nodes.list_(*parts),
                            keywords=[('axis', nodes.const(axis))])
        return nodes.copy_location(joined, node)

    def _range_of(self, item, which):
        """`start:stop:step` in np.r_/np.c_: np.arange(start, stop, step), or with an
        imaginary step `nj`, np.linspace(start, stop, n) (NumPy's reading of it)."""
        start = item.lower if item.lower is not None else nodes.const(0)
        stop = item.upper
        if stop is None:
            raise self.source.error(item, f'{which}[start:stop] needs its stop')
        step = item.step
        if step is None:
            return nodes.call(_numpy(np.arange), start, stop)
        number = _constant_number(step)
        if number is None:
            raise self.source.error(step, f'the step of a slice in {which}[...] must be a '
                                          f'number written out (1, 0.5, 5j); write np.arange '
                                          f'or np.linspace')
        if isinstance(number, complex):
            return nodes.call(_numpy(np.linspace), start, stop, nodes.const(int(abs(number))))
        return nodes.call(_numpy(np.arange), start, stop, step)


def _is_compiled_function(fn) -> bool:
    """A def or lambda the compiler reads (not a primitive with rules)."""
    from tapeflow.rules.registry import lookup
    return isinstance(fn, types.FunctionType) and lookup(fn) is None


def _constant_number(node):
    """The number a constant expression writes (`5j`, `-0.5`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _constant_number(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)) \
            and not isinstance(node.value, bool):
        return node.value
    return None


def _numpy(fn):
    """`np.<fn>`, resolved."""
    np_ref = nodes.name('np')
    setanno(np_ref, Key.RESOLVED, np)
    func = nodes.attribute(np_ref, fn.__name__)
    setanno(func, Key.RESOLVED, fn)
    return func


# ------------------------------------------------------------------ x += y

class _Rewriter(nodes.Transformer):
    def visit_body(self, body):
        out = []
        for stmt in body:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out


class _AugAssign(_Rewriter):
    """`y += v` is `y = y + v`, marked `Key.IN_PLACE`: the mutation pass decides whether
    the write reaches memory other names see. `y[i] += v` is NumPy's (and Python's)
    `t = y[i]; t += v; y[i] = t`: `t` may be a view, or an element another name holds."""

    def __init__(self, namer):
        self.namer = namer

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Subscript):
            item = self.namer.new('_item')
            value = nodes.binop(item, node.op, node.value)
            update = nodes.assign(item, value)
            setanno(update, Key.IN_PLACE, node.target.value.id)     # the base it is written back to
            out = [nodes.assign(item, nodes.load(node.target)), update,
                   nodes.assign(node.target, item)]
            return [nodes.copy_location(s, node) for s in out]
        value = nodes.binop(nodes.load(node.target), node.op, node.value)
        nodes.copy_location(value, node)
        stmt = nodes.copy_location(nodes.assign(node.target, value), node)
        setanno(stmt, Key.IN_PLACE, True)
        return stmt

    def visit_AnnAssign(self, node):
        if node.value is None:
            return []
        return nodes.copy_location(nodes.assign(node.target, node.value), node)


# ------------------------------------------------------------------ zip(...) as a value

def _loop_zip(iterable, target) -> bool:
    """`for a, b in zip(x, y)`: the form `_Loops` indexes directly."""
    return _resolved(iterable, builtins.zip) and not iterable.keywords and \
        isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args)


class _ZipValues:
    """`zip(x, y)` anywhere but `for a, b in zip(x, y)` is the list of its pairs.

    `list(zip(x, y))`, `tuple(zip(...))`, `dict(zip(...))`, `enumerate(zip(...))`,
    `for pair in zip(...)`: the zip becomes `[(a, b) for a, b in zip(x, y)]`,
    which later passes lower to a loop that indexes `x` and `y` (a zip object has
    no len() and no derivative rule; the list of its pairs has both). This is
    exact where the zip is consumed once, by the call it is passed to or the
    loop it drives. A zip bound to a name (which may be consumed twice, the
    second time empty) or given to `len` (a TypeError in Python) is refused.
    """

    _CONSUMERS = frozenset({builtins.list, builtins.tuple, builtins.dict, builtins.sorted,
                            builtins.sum, builtins.min, builtins.max, builtins.enumerate,
                            builtins.any, builtins.all, builtins.set, builtins.frozenset,
                            builtins.map, builtins.filter})

    def __init__(self, namer, source):
        self.namer = namer
        self.source = source

    def _error(self, node, reason):
        if self.source is None:
            raise TypeError(reason)
        raise self.source.error(node, reason)

    def rewrite(self, fdef):
        loops = set()
        for n in nodes.walk(fdef):
            if isinstance(n, ast.For) and _loop_zip(n.iter, n.target):
                loops.add(id(n.iter))
            if isinstance(n, ast.comprehension) and _loop_zip(n.iter, n.target):
                loops.add(id(n.iter))
        self._visit(fdef, None, loops)

    def _visit(self, node, parent, loops):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        new = self._visit(child, node, loops)
                        if new is not child:
                            value[k] = new
            elif isinstance(value, ast.AST):
                new = self._visit(value, node, loops)
                if new is not value:
                    setattr(node, field, new)
        if not _resolved(node, builtins.zip) or id(node) in loops:
            return node
        return self._pairs(node, parent)

    def _pairs(self, call, parent):
        if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            self._error(call, 'zip() with keywords or *args is not supported in compiled code; '
                              'write zip(x, y, ...) with its sequences one by one')
        if _resolved(parent, builtins.len):
            self._error(call, 'a zip object has no len(); write len(list(zip(...))) '
                              'or min(len(x), len(y))')
        consumed = isinstance(parent, (ast.For, ast.comprehension)) or (
            isinstance(parent, ast.Call) and any(a is call for a in parent.args)
            and _is_one_of(getanno(parent.func, Key.RESOLVED), self._CONSUMERS))
        if not consumed:
            self._error(call, 'zip(...) here is an iterator that is used up by its first pass; '
                              'write list(zip(...)) to keep its pairs, or iterate it where it is '
                              'made (for a, b in zip(x, y))')
        names = [self.namer.new('_z') for _ in call.args]
        target = nodes.tuple_(*[nodes.name(n, store=True) for n in names], store=True)
        pair = nodes.tuple_(*[nodes.name(n) for n in names])
        loop = ast.comprehension(target=target, iter=call, ifs=[], is_async=0)
        pairs = ast.ListComp(elt=pair, generators=[loop])
        for n in nodes.walk(pairs):
            if n is not call and not isinstance(n, ast.comprehension):
                nodes.copy_location(n, call)
        return nodes.copy_location(pairs, call)


def _is_one_of(fn, functions) -> bool:
    try:
        return fn in functions
    except TypeError:           # an unhashable callable
        return False


# ------------------------------------------------------------------ for loops

def _resolved(node, obj) -> bool:
    return isinstance(node, ast.Call) and getanno(node.func, Key.RESOLVED) is obj


class _Loops(_Rewriter):
    """`for v in xs` becomes `for i in range(len(xs)): v = xs[i]`."""

    def __init__(self, namer):
        self.namer = namer

    def visit_For(self, node):
        node.body = self.visit_body(node.body)
        iterable = node.iter
        if isinstance(iterable, ast.Call) and len(iterable.args) == 1 and not iterable.keywords \
                and getattr(getanno(iterable.func, Key.RESOLVED), '__tapeflow_loop_marker__', False):
            node.iter = iterable = iterable.args[0]       # `tf.checkpoint(range(n))`
            setanno(node, Key.CHECKPOINT, True)
        if _resolved(iterable, builtins.range):
            return node
        prologue, heads = [], []
        if _resolved(iterable, builtins.enumerate) and not iterable.keywords and \
                isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2:
            counter, item = node.target.elts
            seq, length = self._sequence(iterable.args[0], prologue, node)
            start = iterable.args[1] if len(iterable.args) > 1 else None
            index = counter if start is None and isinstance(counter, ast.Name) else \
                nodes.name(self.namer.new('_i'), store=True)
            if index is not counter:
                heads.append(nodes.assign(counter, nodes.binop(index.id, ast.Add(), start or 0)))
            heads.append(nodes.assign(item, seq(index.id)))
        elif _resolved(iterable, builtins.zip) and not iterable.keywords and \
                isinstance(node.target, ast.Tuple) and len(node.target.elts) == len(iterable.args):
            seqs = [self._sequence(a, prologue, node) for a in iterable.args]
            index = nodes.name(self.namer.new('_i'), store=True)
            for target, (seq, _) in zip(node.target.elts, seqs):
                heads.append(nodes.assign(target, seq(index.id)))
            lengths = [length for _, length in seqs]
            length = lengths[0] if len(lengths) == 1 else nodes.call(_builtin('min'), *lengths)
        else:
            seq, length = self._sequence(iterable, prologue, node)
            index = nodes.name(self.namer.new('_i'), store=True)
            heads.append(nodes.assign(node.target, seq(index.id)))
        loop = nodes.for_(index, nodes.call(_builtin('range'), length), heads + node.body)
        copyanno(node, loop, Key.CHECKPOINT)
        nodes.located(heads, node)
        nodes.located(prologue, node)
        nodes.copy_location(loop, node)
        return prologue + [loop]

    def _sequence(self, expr, prologue, node):
        """(item, length): `item(i)` reads the i-th element `expr` iterates, `length`
        counts them. `reversed(xs)` reads `xs[n - 1 - i]` with `n = len(xs)` taken once,
        as its iterator does (it has no len() of its own)."""
        if _resolved(expr, builtins.reversed) and len(expr.args) == 1 and not expr.keywords:
            seq = self._named(expr.args[0], prologue)
            count = self.namer.new('_n')
            prologue.append(nodes.assign(count, nodes.call(_builtin('len'), seq)))
            return (lambda i: nodes.subscript(
                seq, nodes.binop(nodes.binop(count, ast.Sub(), 1), ast.Sub(), i))), \
                nodes.name(count)
        seq = self._named(expr, prologue)
        return (lambda i: nodes.subscript(seq, i)), nodes.call(_builtin('len'), seq)

    def _named(self, expr, prologue):
        if isinstance(expr, ast.Name):
            return expr.id
        seq = self.namer.new('_seq')
        prologue.append(nodes.assign(seq, expr))
        return seq


def _builtin(name):
    ref = nodes.name(name)
    setanno(ref, Key.RESOLVED, getattr(builtins, name))
    return ref


# ------------------------------------------------------------------ jumps

def _contains(stmts, types, into_loops=True):
    for stmt in stmts:
        for n in _walk_stmt(stmt, into_loops):
            if isinstance(n, types):
                return True
    return False


def _walk_stmt(stmt, into_loops):
    """Statements under `stmt`, not entering nested defs (nor loops, unless asked)."""
    yield stmt
    if isinstance(stmt, ast.FunctionDef):
        return
    if isinstance(stmt, (ast.For, ast.While)) and not into_loops:
        return
    for field in ('body', 'orelse'):
        for child in getattr(stmt, field, ()) or ():
            yield from _walk_stmt(child, into_loops)


class _Jumps:
    """Lower break/continue/return to flags.

    A statement after which a flag may be set is followed by the rest of its
    block under `if not flag:`; a loop whose body may set its break flag (or
    the return flag) ends its body with `if flag: break`.
    """

    def __init__(self, namer):
        self.namer = namer
        self.ret_flag = None
        self.ret_value = None
        self.loops = []         # stack of (break_flag, continue_flag) per loop

    def lower_function(self, body):
        final_return = bool(body) and isinstance(body[-1], ast.Return)
        if not _contains(body[:-1] if final_return else body, ast.Return):
            lowered, _ = self.block(body)         # only loops' jumps
            return lowered
        self.ret_flag = self.namer.new('_returned')
        self.ret_value = self.namer.new('_retval')
        prologue = [nodes.assign(self.ret_flag, False), nodes.assign(self.ret_value, None)]
        for stmt in prologue:
            setanno(stmt, Key.SYNTHETIC, True)
        lowered, _ = self.block(body)
        return prologue + lowered + [nodes.return_(self.ret_value)]

    def block(self, stmts):
        """Lower a block; return it and the set of flags it may leave set."""
        out, raised = [], set()
        for k, stmt in enumerate(stmts):
            new, flags = self.statement(stmt)
            out.extend(new)
            if flags:
                raised |= flags
                rest, rest_flags = self.block(stmts[k + 1:])
                raised |= rest_flags
                if rest:
                    guard = nodes.if_(self._none_of(flags), rest)
                    setanno(guard, Key.SYNTHETIC, True)
                    nodes.located(guard, stmts[k + 1])
                    out.append(guard)
                return out, raised
        return out, raised

    def _none_of(self, flags):
        names = [nodes.name(f) for f in sorted(flags)]
        test = names[0] if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=names)
        return ast.UnaryOp(op=ast.Not(), operand=test)

    def statement(self, stmt):
        if isinstance(stmt, ast.Return):
            if self.ret_flag is None:
                return [stmt], set()
            new = [nodes.assign(self.ret_value, stmt.value if stmt.value is not None else nodes.const(None)),
                   nodes.assign(self.ret_flag, True)]
            nodes.located(new, stmt)
            return new, {self.ret_flag}
        if isinstance(stmt, ast.Break):
            flag = self.loops[-1][0]
            return [nodes.located(nodes.assign(flag, True), stmt)], {flag}
        if isinstance(stmt, ast.Continue):
            flag = self.loops[-1][1]
            return [nodes.located(nodes.assign(flag, True), stmt)], {flag}
        if isinstance(stmt, ast.If):
            stmt.body, body_flags = self.block(stmt.body)
            stmt.orelse, else_flags = self.block(stmt.orelse)
            if not stmt.body:
                stmt.body = [nodes.pass_()]
            return [stmt], body_flags | else_flags
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt)
        return [stmt], set()

    def loop(self, stmt):
        has_break = _contains(stmt.body, ast.Break, into_loops=False)
        has_continue = _contains(stmt.body, ast.Continue, into_loops=False)
        brk = self.namer.new('_break') if has_break else None
        cont = self.namer.new('_continue') if has_continue else None
        self.loops.append((brk, cont))
        body, flags = self.block(stmt.body)
        self.loops.pop()
        prologue = []
        if brk:
            prologue.append(nodes.assign(brk, False))
        if cont:
            body.insert(0, nodes.assign(cont, False))
        exits = sorted(f for f in flags if f in (brk, self.ret_flag) and f)
        if exits:
            names = [nodes.name(f) for f in exits]
            test = names[0] if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=names)
            exit_stmt = nodes.if_(test, [nodes.break_()])
            setanno(exit_stmt, Key.LOOP_EXIT, True)
            body.append(exit_stmt)
        for s in prologue + body:
            if getanno(s, Key.ORIGIN) is None:
                nodes.located(s, stmt)
        stmt.body = body
        escaping = {f for f in flags if f == self.ret_flag}
        return prologue + [stmt], escaping


def run(tree, ctx):
    """The pass protocol (`transforms.pipeline`)."""
    return transform(tree, ctx.namer, ctx.source, ctx.fn, ctx.bindings)
