"""Python breadth (transforms/sugar/walrus.py, loop_else.py, match.py): `:=`, loop
`else` blocks, `match` statements and keyword parameters were refused by the fence; they
are now lowered to the constructs tapeflow differentiates. Values against the plain call,
gradients against central differences along random directions, forward mode too; the
forms still refused, against their message and their line."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tapeflow as tf
from tests.gradcheck import check_grads, checked_against_plain, seed_of


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _exact(f, args, wrt=0):
    """Reverse mode against the plain call and central differences; forward mode
    (and reverse again) through `check_grads` in the first argument."""
    rng = np.random.default_rng(seed_of(f.__name__ + repr(args)[:40]))
    grads = checked_against_plain(f, args, wrt, rng)
    rest = args[1:]
    check_grads(lambda x: f(x, *rest), args[0], rng, order=1, what=f.__name__)
    return grads


def _refused(f, args, marker, reason):
    with pytest.raises(tf.UnsupportedError) as info:
        tf.grad(f)(*args)
    error = info.value
    assert error.filename == __file__
    assert error.lineno == _line_of(f, marker), (error.lineno, str(error))
    assert reason in str(error), str(error)
    return error


# ------------------------------------------------------------------ 1. walrus (:=)

def walrus_in_if(x):
    if (y := x * 2.0) > 1.0:
        return y * x
    return x


def walrus_in_while(x, n):
    out = x
    while (n := n - 1) > 0:
        out = out * x
    return out * (n + 2.0)


def walrus_in_comprehension(x, xs):
    ys = [(z := v * x) + 1.0 for v in xs if v > 0]
    return sum(ys) * z            # z: the last item's, bound in the function


def walrus_in_comprehension_condition(x, xs):
    ys = [w for v in xs if (w := np.sin(v * x)) > 0.0]
    return sum(ys) + w


def walrus_in_dict_comprehension(x, keys):
    d = {k: (last := x * k) for k in keys}
    return d[keys[0]] * last


def walrus_short_circuit_and(x, flag):
    r = flag and (b := x * 3.0)
    return (r * b) if flag else x


def walrus_short_circuit_or(x, flag):
    r = flag or (b := x * 3.0)
    return x * 2.0 if flag else r * b


def walrus_in_conditional_expression(x, pick):
    z = (a := x * x) if pick else (a := np.cos(x))
    return z * a


def walrus_reads_before_rebinding(x):
    y = x + (x := x * 2.0) * x      # the first x is the one passed
    return y * x


def walrus_twice_in_one_call(x):
    return np.hypot((a := x * 2.0), (a := a + 1.0)) * a


def walrus_in_array_code(x):
    if (s := np.sum(x * x)) > 1.0:
        x = x / np.sqrt(s)
    return np.sum(np.tanh(x)) + s


def walrus_loop_reads_it(x, n):
    total = 0.0
    for i in range(n):
        if (t := x * i) > 1.0 and (u := t * t) < 50.0:
            total = total + u
        total = total + t
    return total


def walrus_after_a_lambda_default(x):
    k = 2.0
    pair = (lambda v, c=k: v * c, (k := x * 3.0))     # c is the k before the walrus
    return pair[0](x) * k


def walrus_in_nested_def(x):
    def inner(v):
        return (w := v * v) + w * v
    return inner(x) * 2.0


def walrus_in_elif(x):
    if x > 10.0:
        return x
    elif (h := x * 3.0) > 2.0:
        return h * h
    return h


@pytest.mark.parametrize('f, args', [
    (walrus_in_if, (1.5,)), (walrus_in_if, (0.2,)),
    (walrus_in_while, (1.3, 4)), (walrus_in_while, (1.3, 1)),
    (walrus_in_comprehension, (1.5, [1.0, -2.0, 3.0])),
    (walrus_in_comprehension_condition, (0.7, [1.0, 2.0, 3.0, 4.0])),
    (walrus_in_dict_comprehension, (1.2, [1.0, 2.0, 3.0])),
    (walrus_short_circuit_and, (1.5, True)), (walrus_short_circuit_and, (1.5, False)),
    (walrus_short_circuit_or, (1.5, True)), (walrus_short_circuit_or, (1.5, False)),
    (walrus_in_conditional_expression, (0.8, True)),
    (walrus_in_conditional_expression, (0.8, False)),
    (walrus_reads_before_rebinding, (1.5,)),
    (walrus_twice_in_one_call, (0.9,)),
    (walrus_in_array_code, (np.array([0.5, -1.0, 2.0]),)),
    (walrus_in_array_code, (np.array([0.1, 0.2]),)),
    (walrus_loop_reads_it, (1.1, 6)),
    (walrus_in_nested_def, (1.3,)), (walrus_after_a_lambda_default, (1.3,)),
    (walrus_in_elif, (1.5,)), (walrus_in_elif, (0.3,)),
], ids=lambda v: getattr(v, '__name__', None))
def test_walrus_is_exact(f, args):
    _exact(f, args)


def test_walrus_in_a_short_circuit_binds_only_when_evaluated():
    def f(x, flag):
        b = 1.0
        r = flag and (b := x * 3.0)
        return x * b
    assert tf.grad(f)(2.0, False) == 1.0
    assert tf.grad(f)(2.0, True) == 12.0


def walrus_in_lambda(x):
    g = lambda v: (w := v) * 2.0
    return g(x)


def walrus_in_generator_expression(x, xs):
    return sum((w := v * x) for v in xs)


def walrus_in_chained_comparison(x):
    if 0.0 < x < (m := x * 2.0):
        return m
    return x


def walrus_in_subscript_target(x):
    ys = [x, x]
    ys[(i := 1)] = x * 2.0
    return ys[i]


@pytest.mark.parametrize('f, args, marker, reason', [
    (walrus_in_lambda, (1.0,), '(w := v)', 'inside a lambda is not supported; write a nested def'),
    (walrus_in_generator_expression, (1.0, [1.0]), '(w := v * x)',
     'inside a generator expression is not supported; write a list comprehension'),
    (walrus_in_chained_comparison, (1.0,), '(m := x', "in a chained comparison's later"),
    (walrus_in_subscript_target, (1.0,), '(i := 1)', 'in an assignment target'),
], ids=lambda v: getattr(v, '__name__', None))
def test_walrus_forms_refused_located(f, args, marker, reason):
    _refused(f, args, marker, reason)


# ------------------------------------------------------------------ 3. for ... else, while ... else

def for_else_found(x, xs):
    for v in xs:
        if v > 2.0:
            x = x * v
            break
        x = x * np.sin(v)
    else:
        x = x + 100.0 * x
    return x


def for_else_without_break(x, n):
    for i in range(n):
        x = x * 1.1
    else:
        x = x * x
    return x


def while_else(x, n):
    i = 0
    while i < n:
        i += 1
        if i > 4:
            break
        x = x * 1.5
    else:
        x = x * x
    return x


def nested_loop_else_breaks_outer(x, rows):
    for row in rows:
        for v in row:
            if v < 0.0:
                break
            x = x * v
        else:
            continue
        break                          # a row had a negative: stop
    else:
        x = -x
    return x


def for_else_with_return(x, xs):
    for v in xs:
        if v > 5.0:
            return x * v
        if v < 0.0:
            break
    else:
        return x * x
    return x + 1.0


def for_else_with_continue(x, xs):
    for v in xs:
        if v < 1.0:
            continue
        x = x * v
        if x > 50.0:
            break
    else:
        x = x - 1.0
    return x


@pytest.mark.parametrize('f, args', [
    (for_else_found, (1.2, [1.0, 3.0, 4.0])), (for_else_found, (1.2, [1.0, 0.5])),
    (for_else_without_break, (1.2, 3)),
    (while_else, (1.2, 3)), (while_else, (1.2, 9)),
    (nested_loop_else_breaks_outer, (1.2, [[1.0, 2.0], [3.0, -1.0], [5.0]])),
    (nested_loop_else_breaks_outer, (1.2, [[1.0, 2.0], [3.0]])),
    (for_else_with_return, (1.2, [1.0, 6.0])), (for_else_with_return, (1.2, [1.0, -1.0])),
    (for_else_with_return, (1.2, [1.0, 2.0])),
    (for_else_with_continue, (1.2, [0.5, 2.0, 3.0])),
    (for_else_with_continue, (1.2, [9.0, 8.0, 7.0])),
], ids=lambda v: getattr(v, '__name__', None))
def test_loop_else_is_exact(f, args):
    _exact(f, args)


def walrus_while_else(x, n):
    while (n := n - 1) > 0:
        x = x * 1.5
        if x > 10.0:
            break
    else:
        x = x + 1.0
    return x


@pytest.mark.parametrize('args', [(1.2, 3), (1.2, 30)])
def test_walrus_in_a_while_with_else(args):
    _exact(walrus_while_else, args)


# ------------------------------------------------------------------ 2. match

def match_values(x, kind):
    match kind:
        case 0:
            y = x * 2.0
        case 1 | 2:
            y = x * x
        case None:
            y = -x
        case 'sin':
            y = np.sin(x)
        case _:
            y = x
    return y * x


def match_sequences(x, pair):
    match (x, pair):
        case (a, [b, c]) if b > 0:
            return a * b * c
        case (a, [b, *rest]):
            return a + b * sum(rest)
        case (a, _):
            return a * a


def match_star_in_the_middle(x, xs):
    match [x] + xs:
        case [first, *middle, last]:
            return first * last + sum(middle) * x
        case [only]:
            return only * only


def match_mapping_and_class(x, d):
    match d:
        case {'w': w, 'b': float(b)}:
            return w * x + b
        case int() | complex():
            return x * 3.0
        case float(v):
            return v * x
        case str():
            return x
    return x * 0.5


def match_array_is_no_sequence(x):
    match x:                # a sequence for Python's match from NumPy 2.5 on, not before
        case [a, b]:
            return a * b
        case whole:
            return np.sum(whole * whole)


def match_guard_with_walrus(x, n):
    match n:
        case int(k) if (y := x * k) > 2.0:
            return y * y
        case _:
            return x


def match_in_a_loop(x, kinds):
    total = 0.0
    for kind in kinds:
        match kind:
            case 'double':
                total = total + 2.0 * x
            case 'square':
                total = total + x * x
            case 'stop':
                break
            case _:
                continue
        total = total * 1.1
    return total


def match_binds_before_the_guard(x, v):
    match v:
        case [a] if a > 100.0:
            return a
        case _:
            pass
    return x * a                       # a bound by the first case, whose guard failed


scale = 100.0                          # a global the capture below shadows


def match_capture_shadows_a_global(x, v):
    match v:
        case [scale]:
            return scale * x
    return x


@pytest.mark.parametrize('f, args', [
    (match_capture_shadows_a_global, (1.5, [2.0])),
    (match_values, (1.5, 0)), (match_values, (1.5, 2)), (match_values, (1.5, None)),
    (match_values, (1.5, 'sin')), (match_values, (1.5, 7)),
    (match_sequences, (1.5, [2.0, 3.0])), (match_sequences, (1.5, [-2.0, 3.0, 4.0])),
    (match_sequences, (1.5, (2.0,))), (match_sequences, (1.5, 5.0)),
    (match_star_in_the_middle, (1.5, [2.0, 3.0, 4.0])), (match_star_in_the_middle, (1.5, [])),
    (match_mapping_and_class, (1.5, {'w': 2.0, 'b': 1.0})),
    (match_mapping_and_class, (1.5, {'w': 2.0, 'b': 1})),
    (match_mapping_and_class, (1.5, 2.5)), (match_mapping_and_class, (1.5, 'a')),
    (match_mapping_and_class, (1.5, 4)),
    (match_array_is_no_sequence, (np.array([1.0, 2.0]),)),
    (match_guard_with_walrus, (1.5, 3)), (match_guard_with_walrus, (1.5, 1)),
    (match_in_a_loop, (1.5, ['double', 'x', 'square', 'stop', 'double'])),
    (match_binds_before_the_guard, (1.5, [2.0])),
], ids=lambda v: getattr(v, '__name__', None))
def test_match_is_exact(f, args):
    _exact(f, args)


def _subject(v):
    return v * 1.0


def test_match_evaluates_its_subject_once():
    def f(x):
        match _subject(x * 2.0):
            case 1.0:
                return x
            case y:
                return y * x
    assert tf.grad(f)(1.5) == 6.0
    assert tf.source(f).count('= _subject_forward(') == 1     # one call in the forward sweep


def match_or_binding(x, v):
    match v:
        case [a] | (a, _):
            return a * x
    return x


def match_mapping_rest(x, d):
    match d:
        case {'w': w, **others}:
            return w * x
    return x


class Point:
    __match_args__ = ('x', 'y')

    def __init__(self, x, y):
        self.x, self.y = x, y


def match_class_attributes(x, p):
    match p:
        case Point(x=a):
            return a * x
    return x


@pytest.mark.parametrize('f, args, marker, reason', [
    (match_or_binding, (1.0, [1.0]), '(a, _)', 'an alternative (|) that binds names'),
    (match_mapping_rest, (1.0, {'w': 1.0}), "{'w': w, **others}", 'a mapping pattern with **'),
    (match_class_attributes, (1.0, Point(1.0, 2.0)), 'Point(x=a)',
     'write case Point() and read the attributes in its body'),
], ids=lambda v: getattr(v, '__name__', None))
def test_match_forms_refused_located(f, args, marker, reason):
    _refused(f, args, marker, reason)
