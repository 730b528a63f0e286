"""What an ANF operation applies, and to which arguments: shared by both modes.

`operation_of(value)` reads the value of an ANF assignment (see `anf`) and
says which primitive it applies (an operator, a NumPy function, a method, an
attribute, a subscript), a copy, a tuple or list display, a call of a user
function, or nothing differentiable. `rules_for` then gives, for the
arguments that carry derivatives, the rule of the chosen mode (`'vjp'` or
`'jvp'`), raising a located error where one is missing. The reverse and the
forward transformation differ only in what they do with the rules.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import operator
import sys
import types

from tapeflow.syntax import ast
import numpy as np

from tapeflow.analysis.activity import NONDIFF_ATTRIBUTES
from tapeflow.rules import fields, registry
from tapeflow.rules import mutation as mutators
from tapeflow.syntax import nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.transforms import constructors

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.MatMult: operator.matmul,
          ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv}
UNARYOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos}


@dataclasses.dataclass
class Operation:
    kind: str                       # 'none', 'copy', 'pack', 'primitive', 'user' or 'dynamic'
    fn: object = None
    args: list = dataclasses.field(default_factory=list)
    keywords: list = dataclasses.field(default_factory=list)   # (name, atom)
    label: str = ''
    static: frozenset = frozenset()


NONE = Operation('none')


class Sweep:
    """What the reverse and forward transformers share: their context, errors, activity."""

    def __init__(self, ctx):
        self.ctx = ctx

    def error(self, node, reason):
        return self.ctx.source.error(node, reason)

    def is_active(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id in self.ctx.active

    def keyword_checks(self, stmt, call, fn) -> list:
        """A user function called with a keyword argument that carries a derivative:
        refused (pass it by position), or, in code whose every tape value counts as
        moving, a check that it does not move when the code runs."""
        checks = []
        for k in call.keywords:
            if self.is_active(k.value):
                message = (f'differentiating {fn.__name__}() with respect to the keyword '
                           f'argument {k.arg!r} is not supported; pass it by position')
                if not self.ctx.check_static:
                    raise self.error(stmt, message)
                checks.append(nodes.located(nodes.expr_stmt(nodes.call(
                    'static_argument', k.value, nodes.const(message))), stmt))
        return checks


def operation_of(value, error) -> Operation:
    """The operation of an ANF value; `error(reason)` builds the located error to raise."""
    if isinstance(value, ast.Name):
        return Operation('copy', args=[value])
    if isinstance(value, (ast.Constant, ast.Compare, ast.BoolOp)):
        return NONE
    if isinstance(value, ast.Attribute) and getanno(value, Key.RESOLVED) is not None:
        return NONE
    if isinstance(value, ast.BinOp):
        return Operation('primitive', BINOPS.get(type(value.op)), [value.left, value.right],
                         label=_op_name(value.op))
    if isinstance(value, ast.UnaryOp):
        fn = UNARYOPS.get(type(value.op))
        return Operation('primitive', fn, [value.operand], label=_op_name(value.op)) if fn else NONE
    if isinstance(value, (ast.Tuple, ast.List)):
        return Operation('pack', args=list(value.elts))
    if isinstance(value, ast.Dict) and all(isinstance(k, (ast.Constant, ast.Name)) for k in value.keys):
        # (a key of a name: its value when the code runs, the slot's cotangent read by it)
        return Operation('pack', args=list(value.values),
                         keywords=[(k.value if isinstance(k, ast.Constant) else k, None)
                                   for k in value.keys])
    if isinstance(value, ast.Subscript) and _makes_values(getanno(value.value, Key.RESOLVED)):
        # np.mgrid[a:b:nj] computes from its bounds: not an index, and no rule
        maker = getanno(value.value, Key.RESOLVED)
        bounds = sorted({n.id for n in nodes.walk_terms(value.slice) if isinstance(n, ast.Name)})
        return Operation('primitive', maker, [nodes.name(n) for n in bounds],
                         label=f'np.{_MAKERS[type(maker)]}[...] with bounds that carry derivatives; '
                               'write np.linspace')
    if isinstance(value, ast.Subscript):
        return Operation('primitive', operator.getitem, [value.value, index_value(value.slice)],
                         label='subscript', static=frozenset({1}))
    if isinstance(value, ast.Attribute):
        if value.attr in NONDIFF_ATTRIBUTES:
            return NONE
        fn = registry.ATTRIBUTES.get(value.attr)
        if fn is None:          # a field of a dataclass, NamedTuple, pytree class, object
            return Operation('primitive', fields.field, [value.value, nodes.const(value.attr)],
                             label=f'.{value.attr}', static=frozenset({1}))
        return Operation('primitive', fn, [value.value], label=f'.{value.attr}')
    if isinstance(value, ast.Call):
        return _call(value, error)
    raise error(f'cannot differentiate a {type(value).__name__} expression')


def _call(call, error) -> Operation:
    fn = getanno(call.func, Key.RESOLVED)
    keywords = [(k.arg, k.value) for k in call.keywords]
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):          # f(*args), f(**d): as it runs
        return dynamic(call, keywords, callable_name(fn) if fn is not None else 'the function')
    if fn is None and isinstance(call.func, ast.Attribute):      # x.method(...)
        method = call.func.attr
        entry = registry.METHODS.get(method)
        if entry is None and method in _MUTATORS:
            raise error(f'no derivative rule for the method .{method}()')
        if entry is None:           # a method of an object: `self.predict(x)`
            return dynamic(call, keywords, f'.{method}()')
        fn, varargs = entry
        args = list(call.args)
        if varargs and len(args) > 1:
            args = [nodes.tuple_(*args)]
        return Operation('primitive', fn, [call.func.value] + args, keywords, f'.{method}()')
    if fn is None:                  # a function computed while the code runs: `fns[i](x)`
        return dynamic(call, keywords, 'the function called')
    if getattr(fn, '__tapeflow_dispatcher__', False):
        refused = error('reverse mode over a gradient (grad of grad, vjp of grad) through a '
                        'call whose function is known only when it runs (a function from a '
                        'list, an argument, an object\'s method) is not supported; tf.grad '
                        'of it runs forward mode, and tf.hessian, tf.hvp and jvp(grad) do')
        refused.by_forward_mode = True
        raise refused
    if getattr(fn, '__tapeflow_closure__', False):      # a nested def as a value: its values
        return Operation('pack', args=list(call.args[3:]))
    if user_function(call) is not None:
        return Operation('user', fn, list(call.args), keywords, fn.__name__)
    if getattr(fn, '__tapeflow_attempt__', False):
        return dynamic(call, keywords, 'a guarded body (try)')
    entry = registry.lookup(fn)
    if entry is None and _users_class(fn):
        entry = constructors.construction_entry(fn)    # `__init__` only stores its arguments
    if entry is None and is_dynamic_callee(fn):
        return dynamic(call, keywords, callable_name(fn))
    args = list(call.args)
    if entry is not None and entry.keyword_argnums:
        args, keywords = _in_position(entry.keyword_argnums, args, keywords)
    return Operation('primitive', fn, args, keywords, callable_name(fn))


def _users_class(fn) -> bool:
    """A class of the user's (not a library's, not a builtin type)."""
    return isinstance(fn, type) and \
        (fn.__module__ or '').split('.')[0] not in _LIBRARY_CODE + ('builtins',)


def _in_position(positions, args, keywords):
    """The keyword arguments a primitive differentiates as positional ones
    (`registry.positional_keywords`: odeint's `args=`) moved to their positions, each
    where every argument before it is given."""
    given, moved = dict(keywords), set()
    for name, at in sorted(positions.items(), key=lambda item: item[1]):
        if at == len(args) and name in given:
            args.append(given[name])
            moved.add(name)
    return args, [(k, v) for k, v in keywords if k not in moved]


def is_dynamic_call(call) -> bool:
    """Whether `operation_of` reads the call `call` as one resolved at run time (cheap, and
    never raises: what the expression statements and analyses ask first)."""
    if not isinstance(call, ast.Call):
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return True
    fn = getanno(call.func, Key.RESOLVED)
    if fn is None:
        if isinstance(call.func, ast.Attribute):
            return call.func.attr not in registry.METHODS and call.func.attr not in _MUTATORS
        return True
    if getattr(fn, '__tapeflow_attempt__', False):
        return True                 # a guarded body (`try`): run by the dispatcher
    if getattr(fn, '__tapeflow_dispatcher__', False) or getattr(fn, '__tapeflow_closure__', False) \
            or user_function(call) is not None:
        return False
    return registry.lookup(fn) is None and is_dynamic_callee(fn)


def dynamic_active(op, is_active) -> list:
    """What of a dynamic call carries derivatives: 0 its callee (a name, or the object of
    `obj.method`), k its k-th argument, '*s' all of them from the s-th on (`f(a, *rest)`:
    '*1'), a keyword argument's name, ('**', the names written out) the items of a `**`
    dict."""
    callee = op.args[0]
    receiver = callee.value if isinstance(callee, ast.Attribute) and \
        getanno(callee, Key.RESOLVED) is None else callee
    active = [0] if is_active(receiver) else []
    active += [f'*{k - 1}' if isinstance(a, ast.Starred) else k
               for k, a in enumerate(op.args[1:], 1)
               if is_active(a.value if isinstance(a, ast.Starred) else a)]
    active += [name for name, value in op.keywords if name is not None and is_active(value)]
    if any(name is None and is_active(value) for name, value in op.keywords):
        # f(a, k=v, **d): d's items, the keywords the call does not write out
        active.append(('**', tuple(name for name, _ in op.keywords if name is not None)))
    return active


def plain_dynamic(stmt, call, op, varied):
    """A dynamic call through which nothing flows, run as written; where what it is given
    varies (`varied`: what depends on the inputs), through `call_plain`, which refuses a
    callee that writes into it (the caller could not follow that write)."""
    callee = op.args[0]
    operands = [callee.value if isinstance(callee, ast.Attribute) else callee] + \
        [a.value if isinstance(a, ast.Starred) else a for a in op.args[1:]] + \
        [value for _, value in op.keywords]
    if not any(isinstance(a, ast.Name) and a.id in varied for a in operands):
        return stmt
    checked = nodes.call('call_plain', call.func, *call.args, keywords=call.keywords)
    if isinstance(stmt, ast.Expr):
        return nodes.copy_location(nodes.expr_stmt(checked), stmt)
    return nodes.copy_location(nodes.assign(stmt.targets[0].id, checked), stmt)


def dynamic(call, keywords, label) -> Operation:
    """A call whose callee the dispatcher reads when it runs (`tapeflow.calls`): its
    arguments are the callee (a name, or `obj.method`) and the call's own."""
    return Operation('dynamic', None, [call.func] + list(call.args), keywords, label)


_LIBRARIES = ('numpy', 'scipy', 'tapeflow', 'dask', 'cupy')
# Libraries whose Python functions are primitives, never read as source: one without a rule
# that is given a derivative is refused at the user's call (`rules_for`), not in its own file
# (scipy.integrate.quad). (tapeflow's own TF-style functions are read as source.)
_LIBRARY_CODE = ('numpy', 'scipy', 'dask', 'cupy')
# Methods that write into their object (`ys.append(v)`, `d.update(...)`, `a.fill(0)`):
# `transforms.mutation` lowers or refuses them where they are written, never at run time.
_MUTATORS = frozenset(mutators.LIST_METHODS) | frozenset(mutators.DICT_METHODS) | \
    frozenset(mutators.ARRAY_METHODS)


def is_dynamic_callee(fn) -> bool:
    """A callee known when compiling that is read as a Python function when the call runs:
    a bound method, a partial, a callable object of the user's (a library's own functions
    without a rule are refused instead: tapeflow does not read their source)."""
    if isinstance(fn, types.MethodType):
        target = fn.__func__
    elif isinstance(fn, functools.partial):
        return is_dynamic_callee(fn.func) or isinstance(fn.func, types.FunctionType) and \
            registry.lookup(fn.func) is None
    elif isinstance(fn, (type, types.FunctionType, types.BuiltinFunctionType)) or \
            not callable(fn):
        return False
    else:
        target = getattr(type(fn), '__call__', None)
    if not isinstance(target, types.FunctionType):
        return False
    module = (getattr(target, '__module__', None) or '').split('.')[0]
    return module not in _LIBRARIES


_MAKERS = {type(np.mgrid): 'mgrid', type(np.ogrid): 'ogrid'}


def _makes_values(obj) -> bool:
    """`obj[...]` computes an array from the numbers in its index (np.r_ and np.c_
    are lowered to concatenations by `desugar`)."""
    return type(obj) in _MAKERS


def user_function(call):
    """The Python function a call applies when it has no rule (it is transformed too).
    A library's function without a rule is not one (`is_library_code`)."""
    fn = getanno(call.func, Key.RESOLVED)
    if isinstance(fn, types.FunctionType) and registry.lookup(fn) is None and \
            not is_library_code(fn) and \
            not getattr(fn, '__tapeflow_dispatcher__', False) and \
            not getattr(fn, '__tapeflow_closure__', False) and \
            not getattr(fn, '__tapeflow_attempt__', False):
        return fn
    return None


def rules_for(op: Operation, is_active, mode: str, error, guard=None,
              keyword_guard=None) -> list:
    """[(argnum, rule, entry)] for the active arguments of a primitive operation.

    An active keyword argument, or an active argument the primitive has no rule
    for, is refused; with `guard` (generated code differentiated again, where
    every value popped off the tape counts as active, integers and axes too)
    `guard(node, message)` is called instead, for a check when the code runs that the
    value carries no float, else raises `message` (`runtime.support.static_argument`).
    `keyword_guard` does so for keyword arguments alone: in a user's code, an axis that
    counts as active only because it shares a tuple with an array (`axes=dots`).
    """
    entry = registry.lookup(op.fn) if op.fn is not None else None
    static = set(op.static) | (entry.static_argnums if entry is not None else set())
    active = [i for i, a in enumerate(op.args) if is_active(a) and i not in static]
    for name, value in op.keywords:
        if is_active(value):
            message = (f'differentiating {op.label} with respect to its keyword '
                       f'argument {name!r} is not supported') if entry is not None else \
                f'no derivative rule for {op.label} (argument {name!r})'
            check = guard or keyword_guard
            if check is None:
                raise error(message)
            check(value, message)
    if not active or (entry is not None and entry.nondiff):
        return []
    if entry is None and _users_class(op.fn):
        raise error(f'an instance of {op.fn.__name__} made from a value that carries a '
                    f'derivative (argument {active[0]}) cannot be differentiated: its '
                    f'__init__ does more than store its arguments as attributes; keep the '
                    f'value out of the object and pass it to the methods that use it')
    if entry is None:
        raise error(f'no derivative rule for {op.label} (argument {active[0]})')
    rules = entry.vjps if mode == 'vjp' else entry.jvps
    out = []
    for i in active:
        rule = rules.get(i)
        if rule is None:
            which = 'derivative' if mode == 'vjp' else 'forward-mode'
            message = f'no {which} rule for argument {i} of {entry.name}'
            if guard is None:
                raise error(message)
            guard(op.args[i], message)
            continue
        out.append((i, rule, entry))
    return out


def index_value(index):
    """The index of a subscript as a value expression (`1:n` is `slice(1, n, None)`)."""
    if isinstance(index, ast.Slice):
        return nodes.call('slice', *(nodes.const(None) if p is None else p
                                     for p in (index.lower, index.upper, index.step)))
    if isinstance(index, ast.Tuple):
        return nodes.tuple_(*(index_value(i) for i in index.elts))
    return index


def rule_label(entry, argnum, kind) -> str:
    """A readable name for a called (not inlined) rule: `_sin_vjp`, `_where_jvp2`."""
    base = entry.name.rsplit('.', 1)[-1]
    base = ''.join(c if c.isalnum() else '_' for c in base).strip('_') or 'rule'
    return f'_{base}_{kind}' + (str(argnum) if argnum else '')


def _op_name(op) -> str:
    return {ast.Add: '+', ast.Sub: '-', ast.Mult: '*', ast.Div: '/', ast.Pow: '**',
            ast.MatMult: '@', ast.Mod: '%', ast.FloorDiv: '//', ast.USub: 'unary -',
            ast.UAdd: 'unary +'}.get(type(op), type(op).__name__)


def callable_name(fn) -> str:
    entry = registry.lookup(fn)
    if entry is not None:
        return entry.name
    module = getattr(fn, '__module__', None) or ''
    name = getattr(fn, '__qualname__', None) or getattr(fn, '__name__', repr(fn))
    if isinstance(fn, type(builtins.len)) and module == 'builtins':
        return name
    public = module.split('._')[0]         # scipy.integrate for scipy.integrate._quadpack_py
    if public != module and getattr(sys.modules.get(public), name, None) is fn:
        module = public
    return f'{module}.{name}' if module else name


def is_library_code(fn) -> bool:
    """Whether `fn` is a Python function of a library (`_LIBRARY_CODE`): a primitive, with
    its rule or none, never a function whose source the compiler reads."""
    return isinstance(fn, types.FunctionType) and \
        (fn.__module__ or '').split('.')[0] in _LIBRARY_CODE
