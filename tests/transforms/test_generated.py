"""Generated code, held against expected text: any change to the output shows in review."""
import textwrap

import tapeflow as tf


def seed_loop(x, n):
    out = 1.0
    for i in range(n):
        if i > 1 and i < 5:
            out = out * x
    return out


def branch(x, y):
    z = x * y
    if z > 0:
        z = z * z
    return z / y


def while_loop(x):
    s = 0.0
    while s < 10.0:
        s = s + x
    return s


def early_return(x):
    for i in range(5):
        x = x * 2.0
        if x > 3.0:
            return x
    return -x


EXPECTED_SEED_LOOP = '''\
def dseed_loop(x, n, bout=1.0):
    _tape = []
    _push = _tape.append
    _pop = _tape.pop
    out = 1.0
    _range = range(n)
    for i in _range:
        _cond = i > 1 and i < 5
        if _cond:
            _push(out)
            out = out * x
    _value = out
    bx = 0.0
    for i in reversed(_range):
        _cond = i > 1 and i < 5
        if _cond:
            _bout = bout
            out = _pop()
            bout = unbroadcast(_bout * x, out)
            bx = bx + unbroadcast(_bout * out, x)
    assert not _tape, 'tapeflow internal error: dseed_loop left values on its tape'
    return (_value, bx)
'''


EXPECTED_BRANCH = '''\
def dbranch(x, y, bout=1.0):
    _tape = []
    _push = _tape.append
    _pop = _tape.pop
    z = x * y
    _cond = z > 0
    if _cond:
        _push(z)
        z = z * z
    _push(_cond)
    _div = z / y
    _value = _div
    bz = unbroadcast(bout / y, z)
    by = unbroadcast(-bout * _div / y, y)
    if _pop():
        z = _pop()
        bz = unbroadcast(bz * z, z) + unbroadcast(bz * z, z)
    bx = unbroadcast(bz * y, x)
    by = by + unbroadcast(bz * x, y)
    assert not _tape, 'tapeflow internal error: dbranch left values on its tape'
    return (_value, (bx, by))
'''


EXPECTED_WHILE_LOOP = '''\
def dwhile_loop(x, bs=1.0):
    _tape = []
    _push = _tape.append
    _pop = _tape.pop
    s = 0.0
    _cond = s < 10.0
    _trips = 0
    while _cond:
        _push(s)
        s = s + x
        _cond = s < 10.0
        _trips = _trips + 1
    _push(_trips)
    _value = s
    bx = 0.0
    for _ in range(_pop()):
        _bs = bs
        s = _pop()
        bs = unbroadcast(_bs, s)
        bx = bx + unbroadcast(_bs, x)
    assert not _tape, 'tapeflow internal error: dwhile_loop left values on its tape'
    return (_value, bx)
'''


EXPECTED_EARLY_RETURN = '''\
def dearly_return(x, bout=1.0):
    _tape = []
    _push = _tape.append
    _pop = _tape.pop
    _returned = False
    _retval = None
    _trips = 0
    for i in range(5):
        _push(x)
        x = x * 2.0
        _cond = x > 3.0
        if _cond:
            _retval = x
            _returned = True
        _push(_cond)
        _trips = _trips + 1
        if _returned:
            break
    _push(_trips)
    _not = not _returned
    if _not:
        _retval = -x
        _returned = True
    _push(_not)
    _value = _retval
    bx = 0.0
    if _pop():
        bx = -bout
        bout = 0.0
    for _ in range(_pop()):
        if _pop():
            bx = bx + bout
            bout = 0.0
        x = _pop()
        bx = unbroadcast(bx * 2.0, x)
    assert not _tape, 'tapeflow internal error: dearly_return left values on its tape'
    return (_value, bx)
'''


def test_seed_loop_generated_code():
    assert tf.source(seed_loop, argnums=0) == EXPECTED_SEED_LOOP


def test_branch_generated_code():
    assert tf.source(branch, argnums=(0, 1)) == EXPECTED_BRANCH


def test_while_loop_generated_code():
    assert tf.source(while_loop, argnums=0) == EXPECTED_WHILE_LOOP


def test_early_return_generated_code():
    assert tf.source(early_return, argnums=0) == EXPECTED_EARLY_RETURN


def test_seed_loop_runs_its_range_back_and_decides_again_and_nothing_dead():
    # (issue 16: the loop index recomputed in the reverse loop, not pushed; the
    # decision `i > 1 and i < 5` computed again from it, not pushed each trip)
    text = tf.source(seed_loop)
    assert 'for i in reversed(_range):' in text and '_push(len(_range))' not in text
    assert '_push(_cond)' not in text and text.count('_cond = i > 1 and i < 5') == 2
    assert 'assert not _tape' in text
    # every name the reverse sweep assigns is read afterwards or returned
    compile(text, '<generated>', 'exec')
