"""Random draws in code that a gradient runs again: what generated code replays, or a refusal.

A checkpointed loop reruns its trips, a `tf.checkpoint` function's forward runs
again in the reverse sweep: each must draw the numbers the forward sweep drew
(`runtime.randomness`). Here, while compiling, the plan of that code
(`random_plans.plan_of`: what the user's instructions draw from) becomes the
expression generated code evaluates to get its random sources,

    random_sources(<flags>, (<rng>, <cfg.rng>, <helper>, ...))

the global and closure values named as the user's code names them (their
objects bound in the namespace where the generated module does not see them
by that name), or None where nothing draws; and a draw no rerun can find
again (a generator made from fresh entropy, one held by a local the code
computed) is refused at its line.

What must run first: `resolve` (the bindings), and the function's source must
be the code that runs (`syntax.parse` checks it), so that lines of the user's
file are lines of its instructions.
"""
from __future__ import annotations

import linecache

from tapeflow.runtime import random_plans
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno
from tapeflow.syntax.errors import UnsupportedError

__all__ = ['loop_plan', 'function_plan', 'sources_expression', 'refuse', 'replayed_call',
           'is_draw']


def loop_plan(loop, fn) -> random_plans.Plan:
    """What the user's lines of `loop` (a statement of `fn`'s code) may draw from; each
    variable of the loop counts as a value passed in (its snapshots hold them)."""
    own = _user_function(fn)
    if own is None:
        return random_plans.NOTHING
    lines = _lines(loop)
    if lines is None or own.__code__.co_filename != _filename(own):
        return random_plans.plan_of(own, None, True)
    return random_plans.plan_of(own, lines, True)


def function_plan(fn) -> random_plans.Plan:
    own = _user_function(fn)
    return random_plans.NOTHING if own is None else random_plans.plan_of(own)


def _user_function(fn):
    """The user's function whose instructions `fn` runs (a variant: its original's)."""
    original = getattr(fn, '__tapeflow_variant_of__', None)
    if original is not None:
        fn = original[0]
    return fn if getattr(fn, '__code__', None) is not None else None


def _filename(fn):
    return fn.__code__.co_filename


def _lines(stmt):
    """The first and last line of the user's file that `stmt` and its body cover."""
    lines = [where[0] for n in nodes.walk_terms(stmt)
             for where in (getanno(n, Key.ORIGIN),) if where is not None]
    return (min(lines), max(lines)) if lines else None


def refuse(plan, what, fix):
    """The located error of `plan.refusal`: `what` cannot be recomputed, and `fix`."""
    filename, line, col, why = plan.refusal
    text = linecache.getline(filename, line).rstrip() or None
    return UnsupportedError(f'{what}: it draws random numbers, and {why}; {fix}',
                            filename, line, col, text)


def sources_expression(plan, fn, bindings, namespace, namer):
    """`random_sources(flags, (roots...))` for `plan` (of `fn`), or None if it draws nothing."""
    if not plan.draws:
        return None
    own = _user_function(fn)
    roots = []
    for path in plan.roots:
        kind, name, *attrs = path
        value = random_plans.follow(own, (kind, name))
        if value is random_plans.MISSING:
            continue
        bound = bindings.values.get(name, random_plans.MISSING) if bindings is not None \
            else random_plans.MISSING
        if bound is value and name not in bindings.renamed:
            expr = nodes.name(name)
        elif bound is value:
            expr = nodes.name(bindings.renamed[name])
        else:                       # not a name the generated module binds: its object
            alias = namer.new('_' + name.lstrip('_'))
            namespace[alias] = value
            expr = nodes.name(alias)
        for attr in attrs:
            if attr == '[]':
                break
            expr = nodes.attribute(expr, attr)
        roots.append(expr)
    return nodes.call('random_sources', nodes.const(plan.flags), nodes.tuple_(*roots))


def replayed_call(fn, call, pair, namer):
    """For `y = fn(...)` run again in the reverse sweep (`tf.checkpoint`): None where `fn`
    draws nothing; else (the push, before the call, of its random sources and their
    states; the pop and replay before the rerun; the restore after it)."""
    plan = function_plan(fn)
    if plan.refusal is not None:
        raise refuse(plan, f'cannot run {getattr(fn, "__name__", "it")}() again in the reverse '
                           f'sweep (tf.checkpoint)', 'give it a seed, or pass the generator in '
                           'as an argument, or call it without tf.checkpoint')
    if not plan.draws:
        return None
    captured, token = namer.new('_drawn'), namer.new('_replayed')
    push, pop = pair(nodes.call('capture_random', nodes.const(0), nodes.tuple_(nodes.clone(call.func)),
                                nodes.tuple_(*[nodes.clone(a) for a in call.args],
                                             *[nodes.clone(k.value) for k in call.keywords])),
                     restore_target=captured)
    replay = nodes.assign(token, nodes.call('replay_random', captured))
    restore = nodes.expr_stmt(nodes.call('restore_random', token))
    return push, [pop, replay], restore


def is_draw(node) -> bool:
    """A call of `np.random.<f>` or of a generator's method (`rng.normal()`), as generated
    code spells it (the native path refuses it: Numba draws from a generator of its own)."""
    owner = getattr(getattr(node, 'func', None), 'value', None) if isinstance(node, ast.Call) else None
    if isinstance(owner, ast.Attribute) and owner.attr == 'random':
        return getattr(owner.value, 'id', None) == 'np'
    return isinstance(owner, ast.Name) and node.func.attr in random_plans.GENERATOR_METHODS \
        and owner.id != 'math'
