"""Golden tests of lean generated code: the benchmark workloads W1, W3, W4, W5
(specialised to their benchmark arguments) and the seed's loop with a branch.

Each is held to its hand-written adjoint: no more pushes per loop trip, at most
1.5 times its lines, and no dead statement (one whose targets nothing reads).
"""
import ast
import inspect
import os
import sys

import pytest

import tapeflow as tf
from tests.transforms.test_generated import seed_loop   # its text: EXPECTED_SEED_LOOP there

BENCHMARKS = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks')
sys.path.insert(0, BENCHMARKS)

import w1_scalar_loop  # noqa: E402
import w3_logistic  # noqa: E402
import w4_mlp  # noqa: E402
import w5_rnn  # noqa: E402


def workload(module):
    return module.workloads(None)[0]


def generated(module):
    w = workload(module)
    return tf.source(w.fn, argnums=w.argnums, args=w.args)


def seed_loop_adjoint(x, n):
    """Hand-written: the products the branch overwrites kept, swept back."""
    outputs = []
    out = 1.0
    for i in range(n):
        if i > 1 and i < 5:
            outputs.append(out)
            out = out * x
    bout, bx = 1.0, 0.0
    for i in reversed(range(n)):
        if i > 1 and i < 5:
            previous = outputs.pop()
            bx = bx + bout * previous
            bout = bout * x
    return out, bx


def seed_text():
    return tf.source(seed_loop)


# ---------------------------------------------------------------- measures

def function_of(text):
    return ast.parse(text).body[0]


def pushes_per_trip(text) -> list:
    """For each loop of the forward sweep (the loops before `_value = ...`): the values it
    saves a trip, pushed on the tape or stored in a list by the trip (`_xs[i] = x`: `slots`)."""
    fdef = function_of(text)
    out = []
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], 'id', None) == '_value':
            break
        if isinstance(stmt, (ast.For, ast.While)):
            out.append(sum(isinstance(n, ast.Call) and getattr(n.func, 'id', '').startswith('_push')
                           for n in ast.walk(stmt))
                       + sum(isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Subscript)
                             and getattr(n.targets[0].value, 'id', '').startswith('_')
                             for n in ast.walk(stmt)))
    return out


def hand_pushes_per_trip(fn) -> int:
    """Values the hand-written adjoint stores per trip of its first loop (`xs[i] = ...`,
    `hs.append(...)`)."""
    loop = next(n for n in ast.walk(ast.parse(inspect.getsource(fn))) if isinstance(n, ast.For))
    stores = [n for n in ast.walk(loop) if isinstance(n, ast.Assign)
              and isinstance(n.targets[0], ast.Subscript)]
    appends = [n for n in ast.walk(loop) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr == 'append']
    return len(stores) + len(appends)


def lines(text) -> int:
    """Lines of code, the checks made only under `__debug__` (the tape's depth) aside."""
    fdef = ast.parse(text).body[0]
    fdef.body = [s for s in fdef.body if not isinstance(s, ast.Assert) and not (
        isinstance(s, ast.If) and isinstance(s.test, ast.Name) and s.test.id == '__debug__')]
    return len([line for line in ast.unparse(fdef).splitlines() if line.strip()])


def hand_lines(fn) -> int:
    """Lines of code of the hand-written adjoint (its docstring and comments aside)."""
    fdef = ast.parse(inspect.getsource(fn)).body[0]
    if fdef.body and isinstance(fdef.body[0], ast.Expr) and isinstance(fdef.body[0].value, ast.Constant):
        fdef.body = fdef.body[1:]
    return lines(ast.unparse(fdef))


def dead_statements(text) -> list:
    """Assignments whose targets are read nowhere in the function and not returned."""
    fdef = function_of(text)
    read = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    dead = []
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            targets = {t.id for target in n.targets for t in ast.walk(target)
                       if isinstance(t, ast.Name)}
            if targets and not targets & read:
                dead.append(ast.unparse(n))
    return dead


CASES = {
    'W1': (lambda: generated(w1_scalar_loop), w1_scalar_loop.scalar_loop_adjoint),
    'W3': (lambda: generated(w3_logistic), w3_logistic.logistic_adjoint),
    'W4': (lambda: generated(w4_mlp), w4_mlp.mlp_adjoint),
    'W5': (lambda: generated(w5_rnn), w5_rnn.rnn_adjoint),
    'seed': (seed_text, seed_loop_adjoint),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_lines_within_one_and_a_half_of_the_hand_written_adjoint(name):
    text, hand = CASES[name]
    assert lines(text()) <= 1.5 * hand_lines(hand)


@pytest.mark.parametrize('name', sorted(CASES))
def test_no_dead_statements(name):
    text, _ = CASES[name]
    assert dead_statements(text()) == []


def test_w1_pushes_one_value_per_step():
    assert pushes_per_trip(generated(w1_scalar_loop)) == [1]


def test_w5_pushes_one_value_per_step_as_the_hand_written_adjoint():
    assert pushes_per_trip(generated(w5_rnn)) == [1]
    assert hand_pushes_per_trip(w5_rnn.rnn_adjoint) == 1


def test_w3_and_w4_keep_no_tape():
    for module in (w3_logistic, w4_mlp):
        assert '_tape' not in generated(module)


def test_seed_loop_pushes_only_what_its_branch_overwrites():
    # the old product where the branch changes it; the decision is computed again from i
    assert pushes_per_trip(seed_text()) == [1]
    assert hand_pushes_per_trip(seed_loop_adjoint) == 1


# ---------------------------------------------------------------- the text itself

W1 = '''\
def dscalar_loop(x, bx=1.0):
    _range = range(100)
    _xs = [None] * len(_range)
    for i in _range:
        _xs[i] = x
        x = math.sin(x) * x + 0.5 * x
    _value = x
    for _trip in reversed(_range):
        x = _xs[_trip]
        bx = bx * (0.5 + math.sin(x) + x * math.cos(x))
    return (_value, bx)
'''

W5 = '''\
def drnn_loss(Wx, Wh, b, xs, h0, bout=1.0):
    h = h0
    _range = range(xs.shape[0])
    _hs = [None] * len(_range)
    for t in _range:
        _item2 = xs[t]
        _hs[t] = h
        h = np.tanh(_item2 @ Wx + h @ Wh + b)
    _mul = h * h
    _item3 = h.shape[0]
    _value = 0.5 * np.sum(_mul) / _item3
    bWh = 0.0
    bWx = 0.0
    bb = 0.0
    bmul = uniform_sum(bout / _item3 * 0.5, _mul)
    bh = bmul * h + bmul * h
    for t in reversed(_range):
        badd2 = bh * (1.0 - h * h)
        h = _hs[t]
        bb = bb + unbroadcast(badd2, b)
        bh = grad_of_matmul_a(badd2, h, Wh)
        bWh = bWh + grad_of_matmul_b(badd2, h, Wh)
        _item2 = xs[t]
        bWx = bWx + grad_of_matmul_b(badd2, _item2, Wx)
    return (_value, (bWx, bWh, bb))
'''

# The logistic loss and the MLP, specialised: nothing on a tape; the cotangent of the mean
# kept as one number (`uniform_mean`); shapes followed through the reductions over an
# axis, so no `unbroadcast` where nothing was broadcast; single-use cotangents nested in
# their one reader, as a hand-written adjoint nests them.
W3 = '''\
def dlogistic_loss(w, X, y, bout=1.0):
    z = X @ w
    _exp = np.exp(z)
    _add = 1.0 + _exp
    _sub = np.log(_add) - y * z
    _value = np.mean(_sub)
    bsub = uniform_mean(bout, _sub)
    bw = grad_of_matmul_b(-bsub * y + bsub / _add * _exp, X, w)
    return (_value, bw)
'''

W4 = '''\
def dmlp_loss(W1, b1, W2, b2, X, Y, bout=1.0):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    _exp = np.exp(z)
    _sum = np.sum(_exp, axis=1, keepdims=True)
    lse = np.log(_sum)
    _mul = Y * (z - lse)
    _sum2 = np.sum(_mul, axis=1)
    _value = -np.mean(_sum2)
    bsub = kept_sum(uniform_mean(-bout, _sum2), _mul, 1) * Y
    bz = bsub + kept_sum(unbroadcast(-bsub, lse) / _sum, _exp, 1, True) * _exp
    blogits = bz + grad_of_max(unbroadcast(-bz, m), logits, m, 1, True)
    bb2 = unbroadcast(blogits, b2)
    bW2 = grad_of_matmul_b(blogits, h, W2)
    badd = grad_of_matmul_a(blogits, h, W2) * (1.0 - h * h)
    bb1 = unbroadcast(badd, b1)
    bW1 = grad_of_matmul_b(badd, X, W1)
    return (_value, (bW1, bb1, bW2, bb2))
'''


def test_w1_generated_code():
    assert generated(w1_scalar_loop) == W1


def test_w5_generated_code():
    assert generated(w5_rnn) == W5


def test_w3_generated_code():
    assert generated(w3_logistic) == W3


def test_w4_generated_code():
    assert generated(w4_mlp) == W4
