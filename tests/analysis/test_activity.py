"""Activity and liveness on small functions."""
import gast
import numpy as np

from tapeflow.analysis.activity import active_names
from tapeflow.analysis.kinds import scalar_names
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


def test_scalar_kinds_follow_arithmetic_not_arrays():
    def f(x, a):
        y = x * 2.0
        z = np.sum(a)
        w = y + z
        i = len(a)
        return w * i
    node = front(f)
    scalars = scalar_names(node, {'x'})
    assert {'x', 'y', 'i'} <= scalars
    assert 'z' not in scalars and 'w' not in scalars and 'a' not in scalars


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
