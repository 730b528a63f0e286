"""`+` and `*` of lists and tuples: concatenation and repetition, not arithmetic.

`a + b` of two lists (or two tuples) is `concatenated(a, b)`: each part's cotangent is
its slice of the result's. `seq * n` is `math_rules.repeated`. The compiler writes these
where the operands' kinds say sequences (`transforms.mutation`); where it cannot tell (a
value a call computed at run time), `add_any` and `mul_any` decide when the code runs,
by what the operation made: a list or a tuple is concatenation or repetition, anything
else arithmetic, with the arithmetic's own rules.
"""
from __future__ import annotations

import operator

from tapeflow.rules.entries import entry
from tapeflow.rules.math_rules import repeated, repeated_jvp, repeated_vjp
from tapeflow.rules.operators import (add_jvp, add_vjp_x, add_vjp_y, mul_jvp_x, mul_jvp_y,
                                      mul_vjp_x, mul_vjp_y)
from tapeflow.rules.registry import linear_pair
from tapeflow.rules.shapes import zeros_like_value

__all__ = ['concatenated', 'add_any', 'mul_any', 'star_items']

_SEQUENCES = (list, tuple)


def _is_zero(g) -> bool:
    return g.__class__ is float and g == 0.0


def _like(seq, items):
    return list(items) if isinstance(seq, list) else tuple(items)


def concatenated(a, b):
    """`a + b` of two lists or two tuples."""
    return a + b


def concatenated_vjp_a(g, ans, a, b):
    return 0.0 if _is_zero(g) else _like(a, list(g)[:len(a)])


def concatenated_vjp_b(g, ans, a, b):
    return 0.0 if _is_zero(g) else _like(b, list(g)[len(a):])


def concatenated_jvp_a(t, ans, a, b):
    return 0.0 if _is_zero(t) else _like(ans, list(t) + list(zeros_like_value(b)))


def concatenated_jvp_b(t, ans, a, b):
    return 0.0 if _is_zero(t) else _like(ans, list(zeros_like_value(a)) + list(t))


entry(concatenated, (concatenated_vjp_a, concatenated_vjp_b),
      (concatenated_jvp_a, concatenated_jvp_b),
      forms='two lists or two tuples joined (a + b)')
linear_pair(concatenated_vjp_a, concatenated_jvp_a)
linear_pair(concatenated_vjp_b, concatenated_jvp_b)


# ---------------------------------------------------------------- decided when the code runs

def add_any(a, b):
    """`a + b` where the compiler does not know whether it joins sequences or adds numbers."""
    return operator.add(a, b)


def _add_any_vjp_a(g, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return concatenated_vjp_a(g, ans, a, b)
    return add_vjp_x(g, ans, a, b)


def _add_any_vjp_b(g, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return concatenated_vjp_b(g, ans, a, b)
    return add_vjp_y(g, ans, a, b)


def _add_any_jvp_a(t, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return concatenated_jvp_a(t, ans, a, b)
    return add_jvp(t, ans, a, b)


def _add_any_jvp_b(t, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return concatenated_jvp_b(t, ans, a, b)
    return add_jvp(t, ans, a, b)


entry(add_any, (_add_any_vjp_a, _add_any_vjp_b), (_add_any_jvp_a, _add_any_jvp_b),
      forms='numbers, arrays, or two lists or tuples')


def mul_any(a, b):
    """`a * b` where the compiler does not know whether it repeats a sequence or multiplies."""
    return operator.mul(a, b)


def _mul_any_vjp_a(g, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return repeated_vjp(g, ans, a, b) if isinstance(a, _SEQUENCES) else 0.0
    return mul_vjp_x(g, ans, a, b)


def _mul_any_vjp_b(g, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return repeated_vjp(g, ans, b, a) if isinstance(b, _SEQUENCES) else 0.0
    return mul_vjp_y(g, ans, a, b)


def _mul_any_jvp_a(t, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return repeated_jvp(t, ans, a, b) if isinstance(a, _SEQUENCES) else 0.0
    return mul_jvp_x(t, ans, a, b)


def _mul_any_jvp_b(t, ans, a, b):
    if isinstance(ans, _SEQUENCES):
        return repeated_jvp(t, ans, b, a) if isinstance(b, _SEQUENCES) else 0.0
    return mul_jvp_y(t, ans, a, b)


entry(mul_any, (_mul_any_vjp_a, _mul_any_vjp_b), (_mul_any_jvp_a, _mul_any_jvp_b),
      forms='numbers, arrays, or a list or tuple and an int')

REPEATED = repeated


# ---------------------------------------------------------------- a starred target

def star_items(seq, least):
    """What `a, *b, c = seq` reads its values from (`transforms.sugar.unpacking`): `seq`
    itself, a list or a tuple, or the list of what it yields (an array's rows); Python's
    ValueError where it holds fewer than `least` values."""
    if not isinstance(seq, _SEQUENCES + (dict, range, str)) and not hasattr(seq, 'shape'):
        from tapeflow.errors import UnsupportedError
        raise UnsupportedError(f'a starred target unpacking a {type(seq).__name__}: its values '
                               f'are differentiated only from a list, a tuple or an array; '
                               f'write list(...) around it')
    items = seq if isinstance(seq, _SEQUENCES) else list(seq)
    if len(items) < least:
        raise ValueError(f'not enough values to unpack (expected at least {least}, '
                         f'got {len(items)})')
    return items


def star_items_vjp(g, ans, seq, least):
    if _is_zero(g) or isinstance(seq, _SEQUENCES):
        return g
    if not hasattr(seq, 'shape'):          # a dict's keys, a range, a string: no derivative
        return 0.0
    import numpy as np
    return np.stack([np.zeros(np.shape(row)) if _is_zero(part) else part
                     for row, part in zip(seq, g)]) if len(g) else np.zeros(np.shape(seq))


def star_items_jvp(t, ans, seq, least):
    if _is_zero(t) or isinstance(seq, _SEQUENCES):
        return t
    return list(t) if hasattr(seq, 'shape') else 0.0


entry(star_items, star_items_vjp, star_items_jvp, static=(1,),
      forms='a list, a tuple or an array (its rows) unpacked into names and a starred one')
linear_pair(star_items_vjp, star_items_jvp)
