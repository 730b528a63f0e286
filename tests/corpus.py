"""A corpus of user-style functions, control flow heavy, each with its inputs.

Every construct the compiler supports appears here, alone and combined. The
compiler tests check each function's gradient against central finite
differences; the runtime and forward-mode tests run the same corpus through
their paths. A case's `args(rng)` makes its arguments; `wrt` says which
positions are differentiated.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

CASES = []


@dataclasses.dataclass
class Case:
    fn: object
    make_args: object
    wrt: tuple

    @property
    def name(self):
        return self.fn.__name__

    def args(self, rng):
        return self.make_args(rng)


def case(make_args, wrt=(0,)):
    def register(fn):
        CASES.append(Case(fn, make_args, wrt))
        return fn
    return register


def scalar(lo=-1.0, hi=1.0):
    return lambda rng: float(rng.uniform(lo, hi))


def vec(n, lo=-1.0, hi=1.0):
    return lambda rng: rng.uniform(lo, hi, size=n)


def args(*makers):
    return lambda rng: tuple(m(rng) if callable(m) else m for m in makers)


# A module global and a helper, read by the functions below.
SCALE = 1.5
WEIGHTS = np.linspace(0.5, 1.5, 4)


def helper_square(v):
    return v * v


def helper_two(a, b):
    return a * b + np.sin(a)


def poly(x, n):
    if n == 0:
        return 1.0
    return x * poly(x, n - 1)


# ---------------------------------------------------------------- straight line

@case(args(scalar()))
def c_arith(x):
    y = x * x + 3.0 * x - 2.0
    z = y / (1.0 + x * x)
    return -z + y ** 2


@case(args(scalar(0.5, 2.0), scalar(0.5, 2.0)), wrt=(0, 1))
def c_two_args(x, y):
    return x ** y + y / x - x * y


@case(args(scalar()))
def c_augassign(x):
    s = x
    s += x * 2.0
    s *= x
    s -= 1.0
    s /= 2.0
    s **= 2
    return s


@case(args(scalar(), scalar()), wrt=(0, 1))
def c_tuple_unpack(x, y):
    a, b = x * y, x + y
    b, a = a, b
    return a * b


@case(args(scalar(0.2, 1.0)))
def c_math(x):
    return math.sin(x) * math.exp(x) + math.log(x) - math.sqrt(x) + math.tanh(x) * math.cos(x)


@case(args(vec(5)))
def c_numpy_elementwise(x):
    return np.sum(np.sin(x) * np.exp(x) + np.tanh(x) ** 2 - np.cos(x) / 3.0)


@case(args(vec(4, 0.5, 2.0)))
def c_log_sqrt(x):
    return np.sum(np.log(x) + np.sqrt(x) * x)


@case(args(vec(3), vec((2, 3))), wrt=(0, 1))
def c_broadcast_div_pow(a, b):
    return np.sum(b / (2.0 + a) + (1.5 + a * a) ** b)


@case(args(vec((4, 1)), vec(3)), wrt=(0, 1))
def c_broadcast_outer(a, b):
    return np.sum((a - b) ** 2 * a)


@case(args(vec((3, 4)), vec(4)), wrt=(0, 1))
def c_matvec(w, x):
    return np.sum(np.tanh(w @ x))


@case(args(vec((3, 4)), vec((4, 2))), wrt=(0, 1))
def c_matmul_dot(a, b):
    c = a.dot(b)
    return np.sum(c * c) + np.sum(np.dot(a, b))


@case(args(vec((2, 3))))
def c_methods(x):
    return x.sum() + (x * x).mean() + x.T.sum(axis=0)[1] + x.reshape(3, 2)[2, 1] + x.reshape((6,))[0]


@case(args(vec((3, 4))))
def c_reductions_axis(x):
    a = np.sum(x * x, axis=0)
    b = np.mean(x, axis=1, keepdims=True)
    return np.sum(a) + np.sum(b * x) + np.max(x) + np.min(x, axis=0).sum()


@case(args(vec(6)))
def c_where(x):
    return np.sum(np.where(x > 0, x * x, -x))


@case(args(vec(5)))
def c_unary_minus(x):
    y = -x
    return np.sum(+y * x)


# ---------------------------------------------------------------- branches

@case(args(scalar()))
def c_if_else(x):
    if x > 0:
        y = x * x
    else:
        y = -x * 3.0
    return y


@case(args(scalar(-2.0, 2.0)))
def c_elif(x):
    if x > 1.0:
        y = x ** 3
    elif x > 0.0:
        y = 2.0 * x
    elif x > -1.0:
        y = x * x
    else:
        y = -x
    return y + x


@case(args(scalar(), scalar()), wrt=(0, 1))
def c_bool_ops(x, y):
    out = x
    if x > 0 and y > 0:
        out = x * y
    if x < 0 or not y < 0:
        out = out + y * y
    return out


@case(args(scalar()))
def c_ifexp(x):
    y = x * x if x > 0 else x * 3.0
    return y * (2.0 if y > 0.5 else 1.0)


@case(args(scalar(), scalar()), wrt=(0, 1))
def c_chained_compare(x, y):
    if -0.5 < x < 0.5:
        return x * y
    return x + y


@case(args(scalar()))
def c_branch_overwrites(x):
    y = x * 2.0
    if y > 0:
        y = y * y
    y = y + x
    return y


# ---------------------------------------------------------------- loops

@case(args(scalar(), 6))
def c_seed_loop(x, n):
    out = 1.0
    for i in range(n):
        if i > 1 and i < 5:
            out = out * x
    return out


@case(args(scalar(0.2, 0.9)))
def c_range_loop(x):
    for i in range(20):
        x = np.sin(x) * x + 0.5 * x
    return x


@case(args(scalar()))
def c_range_start_step(x):
    s = 0.0
    for i in range(2, 11, 3):
        s = s + x * i
    return s


@case(args(scalar(), 5))
def c_nested_loops(x, n):
    s = 0.0
    for i in range(n):
        for j in range(i):
            s = s + x * j + x * x
    return s


@case(args(vec(5)))
def c_for_over_array(x):
    s = 0.0
    for v in x:
        s = s + v * v
    return s


@case(args(vec(4)))
def c_for_list(x):
    s = 0.0
    for c in [1.0, 2.0, 3.0]:
        s = s + np.sum(x * c)
    return s


@case(args(vec(4)))
def c_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s = s + v * i
    return s


@case(args(vec(4), vec(4)), wrt=(0, 1))
def c_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b
    return s


@case(args(scalar(0.5, 0.9)))
def c_while(x):
    y = x
    while y < 10.0:
        y = y * 1.7 + x
    return y


@case(args(scalar(0.5, 0.9)))
def c_while_counter(x):
    k = 0
    y = x
    while k < 5:
        y = y * x
        k += 1
    return y


@case(args(scalar()))
def c_break(x):
    s = 0.0
    for i in range(10):
        s = s + x * i
        if i >= 3:
            break
    return s


@case(args(scalar()))
def c_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s + x ** 2 * i
    return s


@case(args(scalar(0.5, 0.9)))
def c_while_break(x):
    y = x
    while True:
        y = y * 2.0 + x
        if y > 20.0:
            break
    return y


@case(args(scalar()))
def c_return_in_loop(x):
    s = x
    for i in range(10):
        s = s * 1.1 + x
        if i == 4:
            return s * 2.0
    return s


@case(args(scalar()))
def c_return_in_branch(x):
    if x > 0:
        return x * x
    return -x * 2.0


@case(args(scalar(0.5, 0.9)))
def c_loop_branch_mix(x):
    s = 0.0
    for i in range(8):
        if i % 3 == 0:
            s = s + x
        elif i % 3 == 1:
            s = s * x
        else:
            continue
        if s > 100:
            break
    return s


@case(args(vec(6)))
def c_loop_index_read(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + x[i] * x[i + 1]
    return s


@case(args(vec(6)))
def c_loop_negative_index(x):
    s = 0.0
    for i in range(1, 4):
        s = s + x[-i] * x[i]
    return s


# ---------------------------------------------------------------- calls

@case(args(scalar()))
def c_call_helper(x):
    return helper_square(x) + helper_square(x * 2.0)


@case(args(scalar(), scalar()), wrt=(0, 1))
def c_call_two(x, y):
    a = helper_two(x, y)
    return helper_two(a, x)


@case(args(scalar(), 4))
def c_recursion(x, n):
    return poly(x, n) + x


@case(args(scalar()))
def c_global_read(x):
    return x * SCALE + np.sum(WEIGHTS * x)


def _make_closure():
    k = 2.5

    def c_closure(x):
        return k * x * x
    return c_closure


c_closure = case(args(scalar()))(_make_closure())


@case(args(scalar()))
def c_nested_def(x):
    def inner(v):
        return v * v + 1.0
    return inner(x) * x


@case(args(scalar(), 3))
def c_helper_in_loop(x, n):
    s = x
    for i in range(n):
        s = helper_square(s) * 0.5
    return s


# ---------------------------------------------------------------- lists, subscripts

@case(args(scalar()))
def c_list_append(x):
    ys = []
    for i in range(4):
        ys.append(x * i)
    return ys[0] + ys[1] * ys[2] + ys[3]


@case(args(scalar()))
def c_list_append_negative(x):
    ys = [x]
    for i in range(3):
        ys.append(ys[-1] * x)
    return ys[-1]


@case(args(vec(4)))
def c_list_comprehension(x):
    squares = [v * v for v in x]
    return squares[0] + squares[3] * 2.0


@case(args(vec(5)))
def c_list_comprehension_if(x):
    total = 0.0
    for v in [w * 2.0 for w in x if w > -2.0]:
        total = total + v
    return total


@case(args(vec(8)))
def c_slices(x):
    return np.sum(x[1:5] * x[::2]) + np.sum(x[-3:]) + np.sum(x[::-1][:2]) + x[-1]


@case(args(vec((3, 4))))
def c_2d_index(x):
    return x[1, 2] * x[0, 0] + np.sum(x[:, 1]) + np.sum(x[2]) + np.sum(x[1:, ::2])


@case(args(vec(4)))
def c_setitem(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] * (i + 1.0)
    return np.sum(y * y)


@case(args(vec(5)))
def c_setitem_overwrite(x):
    y = x * 1.0
    y[2] = y[1] * y[3]
    y[0] = 0.0
    return np.sum(y * x)


@case(args(vec((3, 3))))
def c_setitem_slice(x):
    y = np.ones((3, 3))
    y[:, 1] = x[:, 0] * 2.0
    y[0] += x[1]
    return np.sum(y * y)


@case(args(vec(3)))
def c_tuple_return_index(x):
    pair = (x * 2.0, x + 1.0)
    return np.sum(pair[0] * pair[1])


# ---------------------------------------------------------------- non-float args

@case(args(scalar(), 3, True))
def c_int_bool_args(x, n, flag):
    s = x
    for i in range(n):
        if flag:
            s = s * x
    return s


@case(args(vec((2, 3))))
def c_loop_overwrites_a_reshape(x):
    # only the last trip's `a` and `t` are read: the others' cotangents are the symbolic zero
    for i in range(3):
        a = x.reshape(3, 2)
        t = x.T
    return np.sum(a * a) + np.sum(np.sin(t))


@case(args(vec(4), 'sum'))
def c_string_arg(x, mode):
    if mode == 'sum':
        return np.sum(x * x)
    return np.mean(x)


# ---------------------------------------------------------------- combined, larger

@case(args(vec(3), vec((4, 3)), vec(4)), wrt=(0,))
def c_logistic(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p + 1e-9) + (1.0 - y) * np.log(1.0 - p + 1e-9))


@case(args(vec((3, 3)), vec((3, 3)), vec((4, 2, 3))), wrt=(0, 1))
def c_rnn(wh, wx, xs):
    h = np.zeros((2, 3))
    for t in range(4):
        h = np.tanh(h @ wh + xs[t] @ wx)
    return np.sum(h * h)


@case(args(scalar(0.5, 1.5)))
def c_projectile(angle):
    vx = 10.0 * math.cos(angle)
    vy = 10.0 * math.sin(angle)
    x = 0.0
    y = 0.0
    dt = 0.05
    while y >= 0.0:
        x = x + vx * dt
        y = y + vy * dt
        vy = vy - 9.8 * dt
        vx = vx * (1.0 - 0.01 * dt)
    return x


@case(args(vec(4)))
def c_softmax_loop(x):
    m = np.max(x)
    e = np.exp(x - m)
    s = e / np.sum(e)
    total = 0.0
    for i in range(4):
        total = total + s[i] * (i + 1.0)
    return total


@case(args(scalar(0.1, 0.9), 8))
def c_newton_sqrt(a, n):
    x = 1.0
    for _ in range(n):
        x = 0.5 * (x + a / x)
    return x


@case(args(vec(5)))
def c_cumulative(x):
    acc = 0.0
    out = []
    for v in x:
        acc = acc * 0.5 + v
        out.append(acc)
    s = 0.0
    for o in out:
        s = s + o * o
    return s


@case(args(scalar(), scalar()), wrt=(1,))
def c_wrt_second(x, y):
    return x * y * y + np.sin(y)


@case(args(vec(4)))
def c_early_exit_search(x):
    best = 0.0
    for i in range(len(x)):
        if x[i] > 0.9:
            return best + x[i]
        best = best + x[i] * x[i]
    return best


@case(args(vec((2, 2))))
def c_attribute_T(x):
    return np.sum(x.T @ x) + np.sum(x * x.T)


@case(args(scalar()))
def c_constant_branch_unused(x):
    unused = x * 100.0
    y = x + 1.0
    if False:
        y = unused
    return y * y


@case(args(scalar()))
def c_no_dependence(x):
    return 3.0


@case(args(vec(3)))
def c_stack_list(x):
    parts = [x[0] * x[1], x[2] * 2.0, x[0]]
    total = 0.0
    for p in parts:
        total = total + p * p
    return total
