"""Each pass on small functions, against the text it must produce."""
import textwrap

import numpy as np

from tests.transforms.passes import text


def dedent(s):
    return textwrap.dedent(s).lstrip('\n')


def augassign(x, y):
    x += y
    y[0] *= x
    return x


def test_desugar_augmented_assignment():
    # `y[0] *= x` is Python's `t = y[0]; t *= x; y[0] = t`: `t` may be an element
    # (or view) other names hold, which the in-place multiply changes
    assert text(augassign, 'desugar') == dedent('''
        def augassign(x, y):
            x = x + y
            _item = y[0]
            _item = _item * x
            y[0] = _item
            return x
        ''')


def loops(xs, ys):
    s = 0.0
    for i, v in enumerate(xs):
        s = s + v * i
    for a, b in zip(xs, ys):
        s = s + a * b
    return s


def test_desugar_loops_index_their_sequences():
    assert text(loops, 'desugar') == dedent('''
        def loops(xs, ys):
            s = 0.0
            for i in range(len(xs)):
                v = xs[i]
                s = s + v * i
            for _i in range(min(len(xs), len(ys))):
                a = xs[_i]
                b = ys[_i]
                s = s + a * b
            return s
        ''')


def jumps(x):
    for i in range(10):
        if i == 2:
            continue
        x = x * 2.0
        if x > 5.0:
            return x
    return -x


def test_desugar_lowers_jumps_to_flags():
    assert text(jumps, 'desugar') == dedent('''
        def jumps(x):
            _returned = False
            _retval = None
            for i in range(10):
                _continue = False
                if i == 2:
                    _continue = True
                if not _continue:
                    x = x * 2.0
                    if x > 5.0:
                        _retval = x
                        _returned = True
                if _returned:
                    break
            if not _returned:
                _retval = -x
                _returned = True
            return _retval
        ''')


def nested(x, w):
    y = np.sin(x * w) + w[0] ** 2
    z = y if y > 0 else -y
    a, b = z, 2.0 * z
    return np.sum(a * b)


def test_anf_one_operation_per_statement():
    assert text(nested) == dedent('''
        def nested(x, w):
            _mul = x * w
            _sin = np.sin(_mul)
            _item = w[0]
            _pow = _item ** 2
            y = _sin + _pow
            _cond = y > 0
            if _cond:
                z = y
            else:
                z = -y
            _mul2 = 2.0 * z
            _tuple = (z, _mul2)
            a = _tuple[0]
            b = _tuple[1]
            _mul3 = a * b
            _sum = np.sum(_mul3)
            return _sum
        ''')


def comprehension(xs):
    return [v * 2.0 for v in xs if v > 0]


def test_anf_list_comprehension_becomes_a_loop():
    assert text(comprehension) == dedent('''
        def comprehension(xs):
            _list = []
            for _i in range(len(xs)):
                v2 = xs[_i]
                _cond = v2 > 0
                if _cond:
                    _mul = v2 * 2.0
                    _list.append(_mul)
            return _list
        ''')


def short_circuit(x, xs):
    if len(xs) > 0 and xs[0] > x:
        return 1.0
    return x


def test_anf_keeps_short_circuit_of_calls():
    out = text(short_circuit)
    assert 'if _and:' in out            # xs[0] is evaluated only when len(xs) > 0
    assert out.index('_len = len(xs)') < out.index('if _and:') < out.index('_item = xs[0]')


def chained(x):
    return 0.0 < x < 1.0


def test_anf_chained_comparison_evaluates_middle_once():
    assert text(chained) == dedent('''
        def chained(x):
            _cmp = 0.0 < x
            if _cmp:
                _cmp = x < 1.0
            return _cmp
        ''')
