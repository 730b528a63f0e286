"""The table of statement constructs and the block generator that draws from it.

Each construct is a row: a name (it tags the lines it writes, so a refusal
or a failure can be traced to the construct), the function that writes it,
a weight, and, for constructs that write into a name, the types it can
write into (the grammar picks the name). The table's order is also the
shrinking order: the choice 0 picks the first row, the plainest statement.
Weights can be overridden (`weights={'view': 0}`) to steer a run.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

from . import arrays, calls, containers, dicts, dynamic, flow, lists, objects, statements
from .scope import Array, ArrayList, Dict, Float, FloatList, Namespace


class Line(NamedTuple):
    text: str
    construct: str


@dataclasses.dataclass(frozen=True)
class Construct:
    name: str
    write: Callable
    weight: float
    target: tuple = ()      # types of the name it writes into; () if it picks its own


CONSTRUCTS = (
    Construct('assign', arrays.assign, 10),
    Construct('augassign', arrays.augassign, 5),
    Construct('alias', arrays.alias, 4),
    Construct('copy', arrays.copy, 2),
    Construct('zeros', arrays.fresh_zeros, 1),
    Construct('view', arrays.view, 6, (Array,)),
    Construct('setitem', arrays.setitem, 6, (Array,)),
    Construct('aug_subscript', arrays.aug_subscript, 5, (Array,)),
    Construct('loop_index_write', arrays.loop_index_write, 2, (Array,)),
    Construct('out_argument', arrays.out_argument, 3, (Array,)),
    Construct('mutating_call', arrays.mutating_call, 4, (Array,)),
    Construct('or_and', arrays.or_and, 1),
    Construct('float_list', lists.float_list, 3),
    Construct('array_list', lists.array_list, 2),
    Construct('list_mutation', lists.list_mutation, 4, (FloatList, ArrayList)),
    Construct('list_element_write', lists.element_write, 2, (ArrayList,)),
    Construct('list_read', lists.list_reads, 2, (FloatList,)),
    Construct('helper_call', calls.helper_call, 3),
    Construct('generated_helper', calls.generated_helper, 2),
    Construct('closure', calls.closure, 2),
    Construct('rebind_constant_call', calls.rebind_to_constant_call, 1),
    Construct('multiple', arrays.multiple, 2),
    Construct('if', flow.if_block, 3),
    Construct('for', flow.for_block, 3),
    # the Python of issue 29: calls resolved at run time, containers as values, loops
    Construct('function_table', dynamic.function_table, 2),
    Construct('method_call', dynamic.method_call, 2),
    Construct('function_value', dynamic.function_value, 2),
    Construct('call_value', dynamic.call_value, 4),
    Construct('star_call', dynamic.star_call, 1.5),
    Construct('keyword_call', dynamic.keyword_call, 1.5),
    Construct('generator_call', dynamic.generator_call, 1.5),
    Construct('dict_build', dicts.dict_build, 2.5),
    Construct('dict_mutation', dicts.dict_mutation, 5, (Dict,)),
    Construct('dict_iteration', dicts.dict_iteration, 2.5, (Dict,)),
    Construct('tuple_state', containers.tuple_state, 2),
    Construct('list_ops', containers.list_ops, 2),
    Construct('worklist', containers.worklist, 1),
    Construct('rebind_iterated', containers.rebind_iterated, 1),
    Construct('delete', containers.delete, 1),
    # the statements of issue 29: exceptions, managers, :=, loop else, match, writes
    # through attributes and through the operator module
    Construct('try_except', statements.try_except, 2.5),
    Construct('try_reraise', statements.try_reraise, 1),
    Construct('try_in_loop', statements.try_in_loop, 1.5),
    Construct('with_block', statements.with_block, 2),
    Construct('walrus', statements.walrus, 2),
    Construct('loop_else', statements.loop_else, 1.5),
    Construct('match', statements.match, 2),
    Construct('attribute_state', objects.attribute_state, 1.5),
    Construct('attribute_write', objects.attribute_write, 2, (Namespace,)),
    Construct('operator_write', objects.operator_write, 2, (Array, FloatList, ArrayList, Dict, Float)),
    Construct('local_import', dynamic.local_import, 1),
    Construct('standin_call', dynamic.standin_call, 1),
    Construct('nonlocal_def', dynamic.nonlocal_def, 1),
    Construct('local_class', dynamic.local_class, 1),
)
NAMES = tuple(construct.name for construct in CONSTRUCTS)
ISSUE_29 = NAMES[NAMES.index('function_table'):]     # the Python of issue 29
MUTATION_ONLY = {name: 0 for name in ISSUE_29}        # weights: the grammar before them
TRIES = 4


def table(weights=None):
    """The constructs with their weights, `weights` (name -> weight) overriding some."""
    weights = weights or {}
    unknown = set(weights) - set(NAMES)
    if unknown:
        raise ValueError(f'unknown constructs {sorted(unknown)}; known: {", ".join(NAMES)}')
    return tuple(dataclasses.replace(c, weight=weights.get(c.name, c.weight)) for c in CONSTRUCTS)


def statement(g, scope):
    """Lines of one statement drawn from the table (a few tries: not every construct applies)."""
    for _ in range(TRIES):
        construct = g.c.weighted([(c, round(10 * c.weight)) for c in g.constructs])
        written = attempt(g, scope, construct)
        if written:
            g.used[construct.name] += 1
            return [Line(item, construct.name) if isinstance(item, str) else item for item in written]
    return []


def attempt(g, scope, construct):
    if not construct.target:
        return construct.write(g, scope)
    names = scope.names(lambda t: isinstance(t, construct.target))
    if not names:
        return None
    return construct.write(g, scope, g.c.pick(names))


def block(g, scope, least, most, more):
    """`least` statements, then another while a coin with chance `more` says so, up to `most`.

    (A coin, not a drawn count: a shrunk record stops where it runs out.)
    """
    lines = []
    for k in range(most):
        start = g.c.position()
        if k >= least and not g.c.chance(more):
            break
        lines += statement(g, scope)
        g.c.note_span(start)
    return lines


def indent(lines):
    return [Line('    ' + item.text, item.construct) if isinstance(item, Line) else '    ' + item
            for item in lines]
