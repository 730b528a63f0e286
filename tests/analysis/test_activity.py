"""Activity and liveness on small functions."""
import gast
import numpy as np

from tapeflow.analysis.activity import active_names
from tapeflow.analysis.shapes import infer
from tapeflow.analysis.liveness import Liveness
from tests.transforms.passes import front


def mixed(x, n, w):
    k = n * 2
    y = x * w
    unused = x * 3.0
    label = len(w)
    z = y + k
    flag = z > 0
    return z


def test_active_is_varied_and_useful():
    node = front(mixed)
    assert active_names(node, {'x'}) == {'x', 'y', 'z'}
    assert active_names(node, {'w'}) == {'w', 'y', 'z'}
    assert active_names(node, {'n'}) == {'n', 'k', 'z'}   # `unused`, `label`, `flag` never are


def via_list(x):
    ys = []
    ys.append(x * 2.0)
    return ys[0]


def test_activity_flows_through_list_append():
    assert active_names(front(via_list), {'x'}) == {'x', '_mul', 'ys', '_item'}


def shapes_example(x, a, W, n):
    y = x * 2.0
    z = np.sum(a)
    w = y + z
    i = len(a)
    h = np.zeros((3, 4))
    for t in range(n):
        h = np.tanh(h @ W + a[t])
    v = a[0]
    return w * i + np.sum(h) + v


def test_shapes_follow_arithmetic_matmul_reductions_and_loops():
    shapes = infer(front(shapes_example), {'x': (), 'a': (5, 4), 'W': (4, 4)})
    assert shapes['y'] == () and shapes['z'] == () and shapes['w'] == () and shapes['i'] == ()
    assert shapes['h'] == (3, 4)                 # loop-carried: the fixpoint agrees
    assert shapes['v'] == (4,)                   # a[0] drops the first dimension
    assert 'n' not in shapes                     # an argument of unknown shape


def test_shapes_disagreeing_assignments_are_unknown():
    def f(x, a):
        y = x
        if x > 0:
            y = a
        return y
    assert 'y' not in infer(front(f), {'x': (), 'a': (3,)})


def test_liveness_through_a_loop():
    def f(x, n):
        s = 0.0
        t = 1.0
        for i in range(n):
            s = s + t
            t = t * x
        return s
    node = front(f)
    live = Liveness(node.body, set())
    loop = next(s for s in node.body if isinstance(s, gast.For))
    assert {'s', 't', 'x', 'n'} <= live.live_after[id(node.body[1])] | {'n'}
    assert 't' in live.live_after[id(loop.body[0])]        # t is read by the next trip
    assert live.live_in >= {'x', 'n'}
