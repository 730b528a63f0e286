"""A guarded body (`try`, `with`) that raised after it changed a value the code after it
reads: the part that ran, differentiated as a body that completes.

Where the body raised, what it changed was computed by the statements that ran before the
one that raised. `prefix(body, values)` finds how many those were, running the body again
as Python with a counter before each statement (`_counted`): it raises again at the same
statement (it draws no random numbers, and wrote into nothing it was given, or it is not
asked), and then makes the body that stops there and gives back what it holds then
(`_truncated`): compiled like any body, it completes, its record stays on the tape, and
the values the code after it reads have their derivatives. A body that draws random
numbers, or that does not raise again where it did, is left to the refusal.

`as_one(body, pairs)`: a body given one object under two names, starting by binding the
one to the other, so that its own analysis sees a write into one as a write into both.
"""
from __future__ import annotations

import copy
import dataclasses
import weakref

import numpy as np

from tapeflow.errors import is_tapeflows
from tapeflow.guarded_state import refuse_at, unchanged
from tapeflow.rules.arrays import is_foreign_array
from tapeflow.rules import guards
from tapeflow.rules.closures import Closure
from tapeflow.runtime import random_plans
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.parse import parse_function
from tapeflow.transforms.variants import function_from

__all__ = ['prefix', 'as_one', 'restore', 'half_way', 'ran_as_python', 'same_as_left']

_MADE = weakref.WeakKeyDictionary()        # a body's function -> {limit: the body stopping there}
_KEPT = 16


def prefix(body, values, types):
    """The body `body` stopping before the statement that raised one of `types` when it ran
    on `values` (a function or `Closure` like it), or None where that cannot be told."""
    fn = body.fn if isinstance(body, Closure) else body
    if getattr(fn, '__tapeflow_source__', None) is None or random_plans.plan_of(fn).draws:
        return None
    counted = _made(fn, 'counted')
    box = counted.__closure__[0].cell_contents
    box[0] = 0
    try:
        _call(body, counted, values)
    except types as error:
        if is_tapeflows(error):
            return None
        ran = box[0] - 1                # the statement that raised was counted, not run
    else:
        return None                     # (it did not raise again: not the same run)
    made = _made(fn, ran)
    return Closure(made, body.nparams, body.ndefaults, body.values) \
        if isinstance(body, Closure) else made


def as_one(body, pairs):
    """`body` (a function or `Closure`) given, at parameter j, the object it is given at k
    too, for each (j, k) of `pairs`: it starts by binding j to k, so its own analysis sees
    the one object (a write into k is one into j)."""
    fn = body.fn if isinstance(body, Closure) else body
    made = _made(fn, ('as_one', pairs))
    return Closure(made, body.nparams, body.ndefaults, body.values) \
        if isinstance(body, Closure) else made


def _call(body, fn, values):
    if isinstance(body, Closure):
        return Closure(fn, body.nparams, body.ndefaults, body.values)(*values)
    return fn(*values)


def _made(fn, how):
    table = _MADE.setdefault(fn, {})
    made = table.get(how)
    if made is None:
        if len(table) >= _KEPT:
            table.pop(next(iter(table)))
        made = table[how] = _variant(fn, how)
    return made


def _variant(fn, how):
    """`fn` with a counter before each of its statements: counting into a cell ('counted'),
    or giving back its state where `how` of them have run (an int); or ('as_one', pairs):
    binding parameter j to parameter k first, for each (j, k)."""
    source = parse_function(fn)
    node = copy.deepcopy(source.node)
    if isinstance(how, tuple):
        params = [a.id for a in node.args.args]
        node.body[:0] = nodes.located([nodes.assign(params[j], nodes.name(params[k]))
                                       for j, k in how[1]], node.body[0])
        node.name = f'{node.name}_as_one'
        return _marked(fn, function_from(fn, node), source, node)
    last = node.body[-1]                # `return (0, None, (kept, ...))`
    done = nodes.clone(last)
    if how == 'counted':
        def before(stmt):
            return [nodes.assign(nodes.subscript(nodes.name('_box'), nodes.const(0)),
                                 nodes.binop(nodes.subscript(nodes.name('_box'), nodes.const(0)),
                                             ast.Add(), nodes.const(1)))]
    else:
        def before(stmt):
            stop = nodes.if_(nodes.compare(nodes.name('_steps'), ast.Eq(), nodes.const(how)),
                             [nodes.clone(done)], [])
            return [stop, nodes.assign('_steps', nodes.binop(nodes.name('_steps'), ast.Add(),
                                                             nodes.const(1)))]
    node.body = _counted(node.body[:-1], before) + [last]
    if how != 'counted':
        node.body.insert(0, nodes.assign('_steps', nodes.const(0)))
    nodes.located(node.body, last)
    node.name = f'{node.name}_upto' if how != 'counted' else f'{node.name}_counted'
    made = function_from(fn, node, cells={'_box': [0]} if how == 'counted' else None)
    return _marked(fn, made, source, node)


def _marked(fn, made, source, node):
    made.__tapeflow_source__ = dataclasses.replace(source, node=node)
    for mark in ('__tapeflow_guarded_body__', '__tapeflow_kept__'):
        if hasattr(fn, mark):
            setattr(made, mark, getattr(fn, mark))
    return made


def _counted(stmts, before):
    out = []
    for stmt in stmts:
        if not isinstance(stmt, ast.FunctionDef):
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    setattr(stmt, field, _counted(inner, before))
            for handler in getattr(stmt, 'handlers', None) or ():
                handler.body = _counted(handler.body, before)
        out += before(stmt) + [stmt]
    return out


def half_way(body, kept, k):
    name = guards.kept_names(kept)[k]
    refuse_at(body, f'the guarded body (try, with) wrote into {name}, then raised: tapeflow '
                    f'cannot differentiate a write that stopped half way; write into {name} '
                    f'after the try, or raise before writing')


def ran_as_python(ran, values, body, kept):
    """The stopped body's function; the values it was given and wrote into checked to hold
    what Python's run left in them (a call that wrote and then raised wrote half way)."""
    ran, left = ran
    for k, held in left.items():
        if not _same_contents(held, values[k]):
            half_way(body, kept, k)
    return ran


def _same_contents(held, now) -> bool:
    """Whether `now` holds the numbers `held` (`_contents` of what Python's run left) held:
    the stopped body's run makes objects of its own, so by value, slot by slot."""
    if held is None or isinstance(held, np.ndarray) or is_foreign_array(held):
        return held is None or unchanged(held, now)
    items = list(now.items()) if isinstance(now, dict) else now
    if not isinstance(items, list) or len(items) != len(held):
        return False
    for (slot, inner), item in zip(held, items):
        if isinstance(now, dict):
            if slot[0] != item[0]:
                return False
            slot, item = slot[1], item[1]
        if not (_same_contents(inner, item) if inner is not None else
                slot is item or _equal(slot, item)):
            return False
    return True


def same_as_left(given, error, kept, values, body):
    """The state the stopped body gave back, checked against what the body left when it
    raised (its frame's): the same numbers, or refused."""
    left = guards.left_values(error, kept, values)
    for k, (mine, theirs) in enumerate(zip(given, left)):
        if mine is theirs or _equal(mine, theirs):
            continue
        names = guards.kept_names(kept)
        refuse_at(body, f'the guarded body (try, with) changed {names[k]} and then raised, and '
                        f'running its statements up to the one that raised again did not give '
                        f'what it left: compute {names[k]} before the try, or after it')
    return given


def _equal(a, b) -> bool:
    try:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(x is y or _equal(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
        if isinstance(a, Closure) and isinstance(b, Closure):      # a def or lambda made again
            return a.fn is b.fn and _equal(a.values, b.values)
        if is_foreign_array(a):
            return unchanged(a, b)
        return bool(np.array_equal(a, b, equal_nan=True))
    except (TypeError, ValueError):
        return False


def restore(snapshot, values):
    """The values the body wrote into, as the snapshot taken before it holds them."""
    for k, before in snapshot.items():
        _put_back(values[k], before)


def _put_back(value, before):
    if before is None:
        return
    if isinstance(value, np.ndarray) or is_foreign_array(value):
        value[...] = before
    elif isinstance(value, list):
        value[:] = [item for item, _ in before]
        for item, held in before:
            _put_back(item, held)
    elif isinstance(value, dict):
        value.clear()
        value.update(pair for pair, _ in before)
        for (_, item), held in before:
            _put_back(item, held)
