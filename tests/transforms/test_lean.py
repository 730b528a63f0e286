"""Lean generated code: literals folded, shape arithmetic in one expression, shapes read
through `x.shape` -- and the same numbers, of the same types, bit for bit."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache
from tapeflow.analysis import shapes as shape_analysis
from tapeflow.api import compile_adjoint
from tapeflow.rules import operators
from tapeflow.rules.powers import _slope_exponent as slope_exponent
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, setanno
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import factor, fold, nest, witness
from tests.corpus import CASES
from tests.gradcheck import checked_against_plain
from tests.transforms.passes import front, text


def rnn_loss(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return 0.5 * np.sum(h * h) / h.shape[0]


def rnn_args(rng=np.random.default_rng(5), steps=4, batch=3, n_in=5, n_hidden=6):
    return (rng.standard_normal((n_in, n_hidden)), rng.standard_normal((n_hidden, n_hidden)) / 3,
            rng.standard_normal(n_hidden), rng.standard_normal((steps, batch, n_in)),
            np.zeros((batch, n_hidden)))


def zeros_like_product(x, W):
    h = np.zeros((x.shape[1], W.shape[0]))
    h = h + x[0] @ W.T
    return np.sum(h ** 2) + np.sum(x ** 3) * x.ndim


def powers(x):
    return np.sum(x ** 2 + x ** (3 - 1) + x ** 1 + x ** 0 - x ** -(2 - 3) * (0.5 * 2))


def scalar_powers(x):
    return x ** 2 + 3.0 * x ** (2 - 1)


def rnn_step(h, x, W, b):
    return np.tanh(x @ W + h + b)


def rnn_with_helper(W, b, xs):
    h = xs[0] @ W
    for t in range(1, xs.shape[0]):
        h = rnn_step(h, xs[t], W, b)
    return np.sum(h * h)


def sized(x):
    n = x.size - 1
    return np.sum(x[1:] * x[:n]) / n


# Beyond the corpus: float32 arrays, Python floats and complex numbers through the
# folded exponents; shape arithmetic read by loops and array constructors.
EXTRA = [
    (powers, lambda rng: (rng.uniform(0.5, 1.5, 4).astype(np.float32),), (0,)),
    (powers, lambda rng: (rng.uniform(0.5, 1.5, 4),), (0,)),
    (scalar_powers, lambda rng: (float(rng.uniform(0.5, 1.5)),), (0,)),
    (scalar_powers, lambda rng: (complex(rng.uniform(0.5, 1.5), -0.0),), (0,)),
    (scalar_powers, lambda rng: (np.complex128(0.5 - 1j),), (0,)),
    (zeros_like_product, lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((5, 4))), (0,)),
    (sized, lambda rng: (rng.standard_normal(6),), (0,)),
    (rnn_loss, rnn_args, (0, 1, 2)),
    (rnn_with_helper, lambda rng: (rng.standard_normal((4, 4)) / 2, rng.standard_normal(4),
                                   rng.standard_normal((5, 3, 4))), (0, 1)),
    (rnn_with_helper, lambda rng: (rng.standard_normal((4, 4)).astype(np.float32),
                                   rng.standard_normal(4), rng.standard_normal((5, 3, 4))), (0, 1)),
]
ALL = [(c.fn, c.make_args, c.wrt) for c in CASES] + EXTRA


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(a, type):
        return a == b
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True) \
        and np.asarray(a).dtype == np.asarray(b).dtype \
        and np.array_equal(np.signbit(np.real(a)), np.signbit(np.real(b)))


def _outcome(run):
    try:
        return run()
    except Exception as error:              # a refusal: the same one either way
        return 'raised', type(error), str(error)


def _results(fn, make_args, wrt):
    cache.clear()
    args = make_args(np.random.default_rng(3))
    tangents = [np.ones_like(a) if isinstance(a, np.ndarray) else
                type(a)(1) if isinstance(a, (float, complex)) else a for a in args]
    outcomes = (_outcome(lambda: tf.value_and_grad(fn, argnums=wrt)(*args)),
                _outcome(lambda: compile_adjoint(fn, wrt).combined(*args)),
                _outcome(lambda: tf.jvp(fn, args, tangents)))
    cache.clear()
    return outcomes


def _without_lean_passes(monkeypatch):
    monkeypatch.setattr(fold, 'transform', lambda node, namespace=None: node)
    monkeypatch.setattr(fold, 'expression', lambda expr, namespace=None: expr)
    monkeypatch.setattr(nest, 'transform', lambda fdef, **kw: fdef)
    monkeypatch.setattr(witness, 'transform', lambda forward, *args: forward)
    value = shape_analysis._Shapes.value

    def without_shape_attributes(self, v):
        if isinstance(v, ast.Attribute) and v.attr in ('shape', 'ndim', 'size'):
            return None
        return value(self, v)
    monkeypatch.setattr(shape_analysis._Shapes, 'value', without_shape_attributes)


@pytest.mark.parametrize('fn, make_args, wrt', ALL,
                         ids=[f'{fn.__name__}-{k}' for k, (fn, _, _) in enumerate(ALL)])
def test_lean_code_computes_the_same_bits(fn, make_args, wrt, monkeypatch):
    """Values, gradients and tangents (specialised, generic, forward mode) with folding,
    nesting and shapes through `.shape` equal those without, types included (factoring,
    which rounds otherwise, off in both: `test_factor`)."""
    monkeypatch.setattr(factor, 'transform', lambda *args: None)
    lean = _results(fn, make_args, wrt)
    _without_lean_passes(monkeypatch)
    plain = _results(fn, make_args, wrt)
    assert _same(lean, plain)


# ------------------------------------------------------------------ shapes through loops

def test_shapes_read_through_shape_attributes():
    def f(x):
        s = x.shape
        n = x.shape[0]
        m = s[1] - 1
        k = x.ndim + x.size
        return x * n
    shapes = shape_analysis.infer(front(f), {'x': (3, 4)})
    assert shapes['s'] == (2,)
    assert shapes['n'] == shapes['m'] == shapes['k'] == ()


def test_rnn_specialised_code_keeps_only_the_broadcast_it_needs():
    """The RNN's shapes hold on every trip (a fixpoint over the loop): the specialised
    code drops every `unbroadcast` but the bias's, which really broadcasts; the loss's
    division by `h.shape[0]` keeps none either."""
    args = rnn_args()
    generic = tf.source(rnn_loss, argnums=(0, 1, 2))
    specialised = tf.source(rnn_loss, argnums=(0, 1, 2), args=args)
    assert generic.count('unbroadcast(') >= 6
    assert specialised.count('unbroadcast(') == 1
    assert 'bb = bb + unbroadcast(badd2, b)' in specialised
    assert '_hs[t] = h' in specialised and '_add' not in specialised    # h kept, by the trip


# ------------------------------------------------------------------ constant folding

def _folded(source, namespace=None):
    return unparse(fold.expression(nodes.parse_expression(source), namespace)).strip()


def test_arithmetic_on_literals_folds():
    assert _folded('2 - 1') == '1'
    assert _folded('-(2 * 3)') == '-6'
    assert _folded('2.5 * 2') == '5.0'
    assert _folded('x ** (3 - 1)') == 'x ** 2'


@pytest.mark.parametrize('source', ['x ** 1', 'x * 1.0', 'x + 0.0', '1 / 2', '2 ** 3', 'True + 1',
                                    '1j * 2', '1e308 * 10', '-x', 'f(2)'])
def test_what_could_change_a_value_or_type_stays(source):
    assert _folded(source) == unparse(nodes.parse_expression(source)).strip()


def test_the_rules_pure_helpers_fold_on_literals():
    slope = {'_slope_exponent': slope_exponent}
    assert _folded('x ** (_slope_exponent(2) - 1)', slope) == 'x ** 1'
    assert _folded('x ** (_slope_exponent(0) - 1)', slope) == 'x ** 0.0'
    assert _folded('_slope_exponent(y) - 1', slope) == '_slope_exponent(y) - 1'
    other = {'_slope_exponent': lambda y: 7}                  # not the rules' helper
    assert _folded('_slope_exponent(2) - 1', other) == '_slope_exponent(2) - 1'


def test_generated_powers_read_as_written():
    code = tf.source(powers)
    assert '_slope_exponent' not in code
    assert 'x ** 1' in code and 'x ** 2' in code
    assert '_slope_exponent' not in tf.source(powers, mode='forward')
    assert '_pow2 = x ** 1\n' in text(scalar_powers)            # (2 - 1) folded by ANF


def test_folded_exponents_keep_types():
    assert type(tf.grad(scalar_powers)(1.5)) is float
    g32 = tf.grad(powers)(np.linspace(0.5, 1.5, 4, dtype=np.float32))
    assert g32.dtype == np.float32


# ------------------------------------------------------------------ shape arithmetic nested

def test_shape_arithmetic_stays_one_expression():
    code = tf.source(zeros_like_product)
    assert '    h = np.zeros((x.shape[1], W.shape[0]))\n' in code
    assert '_range = range(xs.shape[0])' in tf.source(rnn_loss, argnums=(0, 1, 2))
    assert 'for t in range(xs.shape[0]):' in tf.source(rnn_loss, argnums=(0, 1, 2), mode='forward')
    assert '_shape' not in tf.source(sized)


def _nested(source, located=None):
    fdef = nodes.parse_gast(source).body[0]
    for k, line in (located or {}).items():
        setanno(fdef.body[k], Key.ORIGIN, (line, 0))
    return unparse(nest.transform(fdef)).strip()


def test_nesting_chains_of_shape_temporaries():
    assert _nested('def f(x, W):\n    _shape = x.shape\n    _item = _shape[1]\n'
                   '    _item2 = W.shape[0] - 1\n    _arg = (_item, _item2)\n    h = np.zeros(_arg)\n'
                   '    return h') == 'def f(x, W):\n    h = np.zeros((x.shape[1], W.shape[0] - 1))\n' \
                                      '    return h'


@pytest.mark.parametrize('source', [
    # read twice
    'def f(x):\n    _n = x.shape[0]\n    y = range(_n)\n    return (y, _n)',
    # an operand rebound in between
    'def f(x, y):\n    _n = x.shape[0]\n    x = y\n    z = range(_n)\n    return z',
    # a call in between (it may change x's shape)
    'def f(x):\n    _n = x.shape[0]\n    x.resize(3)\n    z = range(_n)\n    return z',
    # not a shape: an array's element
    'def f(x, t):\n    _item = x[t]\n    z = np.sin(_item)\n    return z',
    # the user's own name
    'def f(x):\n    n = x.shape[0]\n    z = range(n)\n    return z',
    # the reader calls something else first
    'def f(x):\n    _n = x.shape[0]\n    z = g(h(x), _n)\n    return z',
    # a reader that is no assignment or loop
    'def f(x):\n    _n = x.shape[0]\n    return _n',
])
def test_nesting_refuses_what_could_read_another_value(source):
    assert _nested(source) == unparse(nodes.parse_gast(source).body[0]).strip()


def test_nesting_stays_on_one_user_line():
    source = 'def f(x):\n    _n = x.shape[0]\n    z = range(_n)\n    return z'
    assert '_n = x.shape[0]' in _nested(source, {0: 3, 1: 4})
    assert _nested(source, {0: 3, 1: 3}) == 'def f(x):\n    z = range(x.shape[0])\n    return z'


# ------------------------------------------------------------------ shape witnesses

WITNESSED = [np.ones((3, 4)), np.arange(6.0, dtype=np.float32).reshape(2, 3),
             np.ones((2, 1), np.complex64), np.arange(4), np.ones((2, 3), '>f8')]


@pytest.mark.parametrize('x', WITNESSED, ids=lambda x: f'{x.dtype}{x.shape}')
def test_a_witness_is_all_unbroadcast_reads(x):
    from tapeflow.rules.shapes import shape_witness, unbroadcast
    w = shape_witness(x)
    assert w.__class__ is np.ndarray and w.shape == x.shape and w.dtype == x.dtype
    assert not w.flags.writeable and w.strides == (0,) * x.ndim and not w.any()
    for g in (np.ones((5,) + x.shape), np.ones(x.shape, np.complex128), np.float64(2.0), 2.0,
              np.full(x.shape[-1:], 3.0, np.float32)):
        assert _same(_outcome(lambda: unbroadcast(g, w)), _outcome(lambda: unbroadcast(g, x)))


@pytest.mark.parametrize('x', [1.5, 2, 1j, np.float64(2.0), np.array(2.0), [1.0, 2.0], None,
                               np.array(['a'])])
def test_what_is_no_array_of_numbers_is_its_own_witness(x):
    from tapeflow.rules.shapes import shape_witness
    assert shape_witness(x) is x


def test_generic_code_pushes_witnesses_of_arrays_only():
    rnn = tf.source(rnn_loss, argnums=(0, 1, 2))
    for name in ('_add', '_matmul', '_matmul2'):              # read back only as shapes
        assert f'_push(shape_witness({name}))' in rnn
    assert '_hs[t] = h' in rnn                               # read back as a value (`slots`)
    assert '_push(_item2)' not in rnn and rnn.count('_item2 = xs[t]') == 2  # computed again
    helper = tf.source(rnn_with_helper, argnums=(0, 1))
    assert '_push((W, shape_witness(_add), shape_witness(_matmul), _tanh, b, h, x))' in helper
    assert 'shape_witness' not in tf.source(scalar_powers)    # Python numbers: nothing to free
    assert 'shape_witness' not in tf.source(rnn_loss, argnums=(0, 1, 2), args=rnn_args())


def _second_order(W, b, xs):
    return tf.hessian(rnn_with_helper, argnums=1)(W, b, xs), \
        tf.grad(lambda_free_second_order)(b, W, xs)


def lambda_free_second_order(b, W, xs):
    return np.sum(tf.grad(rnn_with_helper, argnums=1)(W, b, xs) ** 2)


def test_witnesses_differentiate_again_to_the_same_bits(monkeypatch):
    rng = np.random.default_rng(0)
    args = rng.standard_normal((4, 4)) / 2, rng.standard_normal(4), rng.standard_normal((5, 3, 4))
    cache.clear()
    lean = _second_order(*args)
    _without_lean_passes(monkeypatch)
    cache.clear()
    plain = _second_order(*args)
    cache.clear()
    assert _same(lean, plain)


# ------------------------------------------------------------------ shapes through reductions

def test_shapes_of_reductions_over_constant_axes():
    def f(x):
        a = np.sum(x, axis=1)
        b = np.max(x, axis=-1, keepdims=True)
        c = np.mean(x, (0, 2))
        d = np.sum(x, axis=None, keepdims=True)
        e = np.std(x, axis=0, ddof=1)
        u = np.sum(x, axis=3)                 # no such axis: NumPy raises; no shape
        k = 1
        v = np.sum(x, axis=k)                 # not a constant: unknown
        w = np.sum(x, axis=0, where=x > 0)   # where= masks, the shape stays; not followed
        return a, b, c, d, e, u, v, w
    shapes = shape_analysis.infer(front(f), {'x': (2, 3, 4)})
    assert (shapes['a'], shapes['b'], shapes['c'], shapes['d'], shapes['e']) == \
        ((2, 4), (2, 3, 1), (3,), (1, 1, 1), (3, 4))
    assert not {'u', 'v', 'w'} & shapes.keys()


def softmax_rows(x, Y):
    z = x - np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(Y * (z - lse), axis=1)) + np.sum(np.mean(x, axis=(0,)) ** 2)


def column_scaled(x, w):
    s = np.sum(x * x, axis=0)
    return np.sum(x / s * w) + np.max(np.sum(x, 1, keepdims=True) * x)


@pytest.mark.parametrize('fn, shapes', [(softmax_rows, ((5, 4), (5, 4))),
                                        (column_scaled, ((3, 4), (4,)))],
                         ids=['softmax_rows', 'column_scaled'])
def test_reductions_over_axes_differentiate_right_where_unbroadcast_is_dropped(fn, shapes):
    """Specialised (shapes followed through `axis=`/`keepdims=`) and generic code: the
    function's value and gradients against central differences, the same bits both."""
    rng = np.random.default_rng(11)
    args = tuple(rng.standard_normal(s) for s in shapes)
    specialised = tf.source(fn, argnums=(0, 1), args=args)
    assert specialised.count('unbroadcast(') < tf.source(fn, argnums=(0, 1)).count('unbroadcast(')
    grads = checked_against_plain(fn, args, (0, 1), rng)
    generic = compile_adjoint(fn, (0, 1)).combined(*args)[1]
    for g, h in zip(grads, generic):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-14)
