"""Pytrees and arguments as JAX users expect: structured arguments and results (dataclasses,
NamedTuples, registered classes), bound methods, keyword arguments, tuple argnums, Jacobians
of structures, has_aux, check_grads' modes, a loss without its return.

Every value is checked against the plain Python value and central differences along random
directions (the flattening here is the test's own, independent of `tapeflow.runtime.pytree`).
"""
import dataclasses
import typing

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.runtime import pytree, structure

EPS = 1e-6


# ------------------------------------------------------------------ structures used below

@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


class Pair(typing.NamedTuple):
    w: np.ndarray
    b: float


class Linear:
    """A user class registered as a pytree: its children are (w, b); `name` is aux data."""

    def __init__(self, w, b, name='lin'):
        self.w, self.b, self.name = w, b, name


tf.register_pytree(Linear, lambda m: ((m.w, m.b), m.name),
                   lambda name, children: Linear(*children, name=name))


def _leaves(tree):
    """The test's own flattening: (leaves, rebuild)."""
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [_leaves(tree[k]) for k in keys]
        return ([x for p in parts for x in p[0]],
                lambda xs: {k: r(xs[sum(len(q[0]) for q in parts[:i]):][:len(parts[i][0])])
                            for i, (k, (_, r)) in enumerate(zip(keys, parts))})
    if isinstance(tree, Linear):
        fields = [tree.w, tree.b]
        make = lambda vs: Linear(*vs, name=tree.name)        # noqa: E731
    elif dataclasses.is_dataclass(tree):
        fields = [getattr(tree, f.name) for f in dataclasses.fields(tree)]
        make = lambda vs: type(tree)(*vs)                    # noqa: E731
    elif isinstance(tree, tuple) and hasattr(tree, '_fields'):
        fields, make = list(tree), lambda vs: type(tree)(*vs)  # noqa: E731
    elif isinstance(tree, (list, tuple)):
        fields, make = list(tree), type(tree)
    else:
        return [tree], lambda xs: xs[0]
    parts = [_leaves(f) for f in fields]

    def rebuild(xs):
        out, at = [], 0
        for leaves, r in parts:
            out.append(r(xs[at:at + len(leaves)]))
            at += len(leaves)
        return make(out)
    return [x for p in parts for x in p[0]], rebuild


def _random_like(tree, rng):
    leaves, rebuild = _leaves(tree)
    return rebuild([rng.standard_normal(np.shape(x)) if np.ndim(x) else float(rng.standard_normal())
                    for x in leaves])


def _inner(a, b):
    return sum(float(np.sum(np.asarray(x) * np.asarray(y)))
               for x, y in zip(_leaves(a)[0], _leaves(b)[0]))


def _moved(tree, v, step):
    leaves, rebuild = _leaves(tree)
    return rebuild([x + step * d for x, d in zip(leaves, _leaves(v)[0])])


def _directional(f, args, k, v, **kwargs):
    plus, minus = list(args), list(args)
    plus[k], minus[k] = _moved(args[k], v, EPS), _moved(args[k], v, -EPS)
    return (float(np.sum(f(*plus, **kwargs))) - float(np.sum(f(*minus, **kwargs)))) / (2 * EPS)


def _assert_gradient(f, g, args, k, seed=0, trials=2, **kwargs):
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        v = _random_like(args[k], rng)
        assert np.isclose(_inner(g, v), _directional(f, args, k, v, **kwargs),
                          rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ 1. one pytree model

def test_the_pytree_model_flattens_and_rebuilds_every_kind():
    tree = {'b': [1.0, (2.0, None)], 'a': Params(np.ones(2), 3.0),
            'c': Pair(np.zeros(1), 4.0), 'd': Linear(5.0, 6.0, name='x')}
    leaves, treedef = pytree.flatten(tree)
    # dicts by sorted key, None a node without children (as JAX)
    assert [np.ndim(x) for x in leaves] == [1, 0, 0, 0, 1, 0, 0, 0]
    assert leaves[1:4] == [3.0, 1.0, 2.0] and leaves[5:] == [4.0, 5.0, 6.0]
    back = treedef.unflatten([x * 2 for x in leaves])
    assert list(back) == ['b', 'a', 'c', 'd']                 # the user's key order kept
    assert isinstance(back['a'], Params) and back['a'].b == 6.0
    assert isinstance(back['c'], Pair) and back['c'].b == 8.0
    assert isinstance(back['d'], Linear) and (back['d'].w, back['d'].b, back['d'].name) == \
        (10.0, 12.0, 'x')
    assert back['b'][1][1] is None
    with pytest.raises(ValueError, match='too few leaves'):
        treedef.unflatten(leaves[:-1])
    assert pytree.path_text('p', pytree.leaves_with_paths(tree)[1][0]) == "p['a'].b"


def test_tf_nest_keeps_none_a_leaf_and_reads_dataclasses():
    assert structure.flatten([1, None, {'b': 2, 'a': 3}]) == [1, None, 3, 2]
    p = Params(1.0, 2.0)
    assert structure.flatten(p) == [1.0, 2.0]
    q = structure.pack_sequence_as(p, [3.0, 4.0])
    assert isinstance(q, Params) and (q.w, q.b) == (3.0, 4.0)
    with pytest.raises(ValueError, match='do not match'):
        structure.flatten_up_to({'a': 1}, [1])


def test_the_eager_tape_differentiates_a_dataclass_of_variables():
    p = Params(tf.Variable(np.array([1.0, -2.0])), tf.Variable(0.5))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(p.w * p.w) + p.b * p.b * 3.0
    g = tape.gradient(y, p)
    assert isinstance(g, Params)
    np.testing.assert_allclose(g.w.numpy(), 2 * np.array([1.0, -2.0]))
    assert float(g.b.numpy()) == pytest.approx(3.0)


def test_the_eager_jacobian_of_a_structured_target():
    x = tf.Variable(np.array([1.0, 2.0]))
    with tf.GradientTape() as tape:
        y = {'a': x * 3.0, 'b': tf.reduce_sum(x * x)}
    jac = tape.jacobian(y, [x])
    np.testing.assert_allclose(jac['a'][0].numpy(), 3.0 * np.eye(2))
    np.testing.assert_allclose(jac['b'][0].numpy(), [2.0, 4.0])


# ------------------------------------------------------------------ 2. structured arguments

def field_loss(p, x):
    return np.sum(np.tanh(p.w * x)) + p.b * p.b * np.sum(x)


def mixed_loss(p, x):
    return np.sum(p.w * p[0] * x) + p[1] * p.b        # a NamedTuple: fields and positions


def helper(p, x):
    return np.sum(np.sin(p.w) * x)


def loss_through_callee(p, x):
    return helper(p, x) * p.b


def nested_loss(tree, x):
    return np.sum(tree['layer'].w * x) + tree['layer'].b * tree['scale']


@pytest.mark.parametrize('make', [Params, Pair, Linear], ids=['dataclass', 'namedtuple',
                                                               'registered'])
@pytest.mark.parametrize('loss', [field_loss, loss_through_callee])
def test_a_structured_argument_gets_a_gradient_of_its_type(make, loss):
    p, x = make(np.array([0.3, -0.2, 0.5]), 0.7), np.array([1.0, 2.0, -1.0])
    g = tf.grad(loss)(p, x)
    assert type(g) is make
    assert isinstance(g.w, np.ndarray) and g.w.shape == (3,)
    _assert_gradient(loss, g, (p, x), 0)
    value, g2 = tf.value_and_grad(loss)(p, x)
    assert value == pytest.approx(loss(p, x))
    np.testing.assert_allclose(g2.w, g.w)


def test_a_namedtuple_read_by_field_and_by_position():
    p, x = Pair(np.array([0.5, 1.5]), 2.0), np.array([1.0, -3.0])
    g = tf.grad(mixed_loss)(p, x)
    assert type(g) is Pair
    np.testing.assert_allclose(g.w, 2 * p.w * x)
    assert g.b == pytest.approx(2 * p.b)
    _assert_gradient(mixed_loss, g, (p, x), 0)


def test_a_dataclass_inside_a_dict_and_both_arguments():
    tree = {'layer': Params(np.array([1.0, 2.0]), 0.5), 'scale': 3.0}
    x = np.array([0.5, -1.0])
    gt, gx = tf.grad(nested_loss, argnums=(0, 1))(tree, x)
    assert isinstance(gt['layer'], Params)
    _assert_gradient(nested_loss, gt, (tree, x), 0)
    _assert_gradient(nested_loss, gx, (tree, x), 1)


def test_jvp_and_check_grads_take_structured_arguments():
    p, x = Params(np.array([0.3, -0.2]), 0.7), np.array([1.0, 2.0])
    t = Params(np.array([1.0, 0.5]), -2.0)
    value, tangent = tf.jvp(field_loss, (p, x), (t, np.zeros(2)))
    assert value == pytest.approx(field_loss(p, x))
    assert tangent == pytest.approx(_directional(field_loss, (p, x), 0, t), rel=1e-5)
    for make in (Params, Pair, Linear):
        tf.check_grads(field_loss, (make(np.array([0.3, -0.2]), 0.7), x))


def test_the_hessian_of_a_dataclass_argument_nests_as_jax():
    p, x = Params(np.array([0.3, -0.2]), 0.7), np.array([1.0, 2.0])
    h = tf.hessian(field_loss)(p, x)
    assert isinstance(h, Params) and isinstance(h.w, Params)
    assert h.w.w.shape == (2, 2) and h.w.b.shape == (2,) and np.shape(h.b.b) == ()
    # d2/dw2 of sum(tanh(w x)) is diag(-2 tanh(w x) (1 - tanh^2) x^2); b enters as b^2 sum(x)
    th = np.tanh(p.w * x)
    np.testing.assert_allclose(h.w.w, np.diag(-2 * th * (1 - th ** 2) * x ** 2), atol=1e-12)
    assert float(h.b.b) == pytest.approx(2 * np.sum(x))
    np.testing.assert_allclose(h.w.b, 0.0)


def test_a_registered_attribute_outside_its_children_is_refused():
    class Hidden:
        def __init__(self, w, extra):
            self.w, self.extra = w, extra

    tf.register_pytree(Hidden, lambda h: ((h.w,), h.extra), lambda extra, ch: Hidden(ch[0], extra))

    def loss(h):
        return h.w * h.extra
    with pytest.raises(TypeError, match=r'attribute \.extra of a Hidden, which is not one of the '
                                        r'children'):
        tf.grad(loss)(Hidden(2.0, 3.0))


def test_an_object_that_is_no_pytree_is_refused_as_a_differentiated_argument():
    class Plain:
        w = 2.0

    def loss(obj, x):
        return obj.w * x
    with pytest.raises(TypeError, match=r'argument 0: it is a Plain, not a float'):
        tf.grad(loss)(Plain(), 3.0)
    assert tf.grad(loss, argnums=1)(Plain(), 3.0) == pytest.approx(2.0)


def array_attribute(x):
    return np.sum(x.flat)


def test_an_unknown_attribute_of_an_array_is_not_a_field():
    with pytest.raises(TypeError, match=r'no derivative rule for the attribute \.flat'):
        tf.grad(array_attribute)(np.ones(3))


# ------------------------------------------------------------------ 3. bound methods

class Model:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def predict(self, x):
        return np.tanh(self.w * x) + self.b

    def loss(self, x, target=1.0):
        return np.sum((np.tanh(self.w * x) + self.b - target) ** 2)

    def loss_via_helper(self, x):
        return helper(self, x)


def test_a_bound_method_is_differentiated_with_its_object_constant():
    m = Model(np.array([0.5, -1.0, 2.0]), 0.25)
    x = np.array([0.3, 0.1, -0.4])
    g = tf.grad(m.loss)(x)
    _assert_gradient(m.loss, g, (x,), 0)
    value, g2 = tf.value_and_grad(m.loss)(x, target=2.0)
    assert value == pytest.approx(m.loss(x, target=2.0))
    _assert_gradient(m.loss, g2, (x,), 0, target=2.0)
    g3 = tf.grad(m.loss_via_helper)(x)
    np.testing.assert_allclose(g3, np.sin(m.w))
    m.w = m.w * 2.0                                 # the object read at call time, not cached stale
    _assert_gradient(m.loss, tf.grad(m.loss)(x), (x,), 0)
    tf.check_grads(m.loss, (x,))
    np.testing.assert_allclose(tf.jacfwd(m.predict)(x), np.diag((1 - np.tanh(m.w * x) ** 2) * m.w))


# ------------------------------------------------------------------ 4. keyword arguments

def powered(x, n=1, scale=1.0):
    return scale * x ** n


def star(*xs):
    return xs[0] * xs[1]


def keyword_only(x, *, n=2):
    return x ** n


def test_keyword_arguments_pass_through_every_entry_point():
    assert tf.grad(powered)(2.0, n=2) == pytest.approx(4.0)
    assert tf.grad(powered)(2.0, scale=3.0, n=3) == pytest.approx(36.0)
    assert tf.value_and_grad(powered)(2.0, n=2) == (pytest.approx(4.0), pytest.approx(4.0))
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tf.jacfwd(powered)(x, n=2), np.diag(2 * x))
    np.testing.assert_allclose(tf.jacrev(powered)(x, n=2), np.diag(2 * x))
    assert tf.hessian(powered)(2.0, n=3) == pytest.approx(12.0)


def test_keyword_arguments_are_not_differentiated_and_misuse_is_a_type_error():
    with pytest.raises(TypeError, match=r'argnums=0 requires at least 1 positional'):
        tf.grad(powered)(x=2.0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'm'"):
        tf.grad(powered)(2.0, m=2)
    with pytest.raises(TypeError, match=r"multiple values for argument 'n'"):
        tf.grad(powered)(2.0, 2, n=2)


def star_and_keywords(*xs, **options):
    return xs[0] * xs[1]


def test_star_and_keyword_signatures_differentiate_at_every_entry_point():
    assert tf.grad(star, argnums=(0, 1))(2.0, 3.0) == (3.0, 2.0)      # made for two values
    assert tf.grad(star_and_keywords, argnums=(0, 1))(2.0, 3.0, w=1.0) == (3.0, 2.0)
    assert tf.grad(keyword_only)(2.0) == pytest.approx(4.0)
    assert tf.grad(keyword_only)(2.0, n=3) == pytest.approx(12.0)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tf.jacfwd(keyword_only)(x, n=3), np.diag(3 * x ** 2))
    np.testing.assert_allclose(tf.jacrev(keyword_only)(x, n=3), np.diag(3 * x ** 2))
    assert tf.hessian(keyword_only)(2.0, n=3) == pytest.approx(12.0)
    with pytest.raises(TypeError, match=r"keyword_only\(\) too many positional arguments"):
        tf.grad(keyword_only)(2.0, 3)          # as Python: n is keyword-only


# ------------------------------------------------------------------ 5/6. argnums and Jacobians

def two(x, y):
    return np.sin(x) * y, np.sum(x * x)


def dict_out(p):
    return {'u': p['a'] * p['b'], 'v': np.sum(p['a'] ** 2)}


def scalar_two(x, y):
    return np.sum(x * x * y) + np.sum(np.sin(y))


def _numeric_jacobian(fn, x):
    """d fn / d x by central differences, shape out.shape + x.shape (array in, array out)."""
    cols = []
    for k in range(np.size(x)):
        e = np.zeros(np.size(x))
        e[k] = EPS
        e = e.reshape(np.shape(x))
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * EPS))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(fn(x)) + np.shape(x))


@pytest.mark.parametrize('jac', [tf.jacfwd, tf.jacrev])
def test_tuple_argnums_and_tuple_outputs(jac):
    x, y = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    j = jac(two, argnums=(0, 1))(x, y)
    assert isinstance(j, tuple) and len(j) == 2 and all(isinstance(r, tuple) for r in j)
    np.testing.assert_allclose(j[0][0], _numeric_jacobian(lambda a: two(a, y)[0], x), atol=1e-7)
    np.testing.assert_allclose(j[0][1], _numeric_jacobian(lambda b: two(x, b)[0], y), atol=1e-7)
    np.testing.assert_allclose(j[1][0], 2 * x)
    np.testing.assert_allclose(j[1][1], np.zeros(2))
    single = jac(two)(x, y)
    assert isinstance(single, tuple) and single[0].shape == (2, 2)


@pytest.mark.parametrize('jac', [tf.jacfwd, tf.jacrev])
def test_a_jacobian_of_a_dict_wrt_a_dict_is_a_dict_of_dicts(jac):
    p = {'a': np.array([1.0, 2.0]), 'b': np.array([3.0, -4.0])}
    j = jac(dict_out)(p)
    assert set(j) == {'u', 'v'} and all(set(j[k]) == {'a', 'b'} for k in j)
    assert j['u']['a'].shape == (2, 2) and j['v']['b'].shape == (2,)
    for out in ('u', 'v'):
        for inp in ('a', 'b'):
            def part(z, out=out, inp=inp):
                return dict_out({**p, inp: z})[out]
            np.testing.assert_allclose(j[out][inp], _numeric_jacobian(part, p[inp]), atol=1e-7)


@pytest.mark.parametrize('jac', [tf.jacfwd, tf.jacrev])
def test_a_jacobian_wrt_a_list_and_a_dataclass(jac):
    def f(xs):
        return xs[0] * xs[1]
    j = jac(f)([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    assert isinstance(j, list)
    np.testing.assert_allclose(j[0], np.diag([3.0, 4.0]))
    np.testing.assert_allclose(j[1], np.diag([1.0, 2.0]))
    p, x = Params(np.array([0.3, -0.2]), 0.7), np.array([1.0, 2.0])
    jp = jac(field_loss)(p, x)
    g = tf.grad(field_loss)(p, x)
    assert isinstance(jp, Params)
    np.testing.assert_allclose(jp.w, g.w)
    assert float(jp.b) == pytest.approx(g.b)


def test_hessian_with_tuple_argnums_is_a_tuple_of_tuples():
    x, y = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    h = tf.hessian(scalar_two, argnums=(0, 1))(x, y)
    assert len(h) == 2 and all(len(r) == 2 for r in h)
    np.testing.assert_allclose(h[0][0], np.diag(2 * y))
    np.testing.assert_allclose(h[0][1], np.diag(2 * x))
    np.testing.assert_allclose(h[1][0], np.diag(2 * x))
    np.testing.assert_allclose(h[1][1], np.diag(-np.sin(y)))
    hd = tf.hessian(lambda_free_dict)({'a': x, 'b': y})
    np.testing.assert_allclose(hd['a']['b'], np.diag(2 * x))
    np.testing.assert_allclose(hd['b']['b'], np.diag(-np.sin(y)))


def lambda_free_dict(p):
    return scalar_two(p['a'], p['b'])


# ------------------------------------------------------------------ 7. has_aux

def with_aux(x):
    return np.sin(x) * 2.0, {'x': x, 'n': 3}


def test_has_aux_on_jvp_jacfwd_jacrev_and_vjp():
    x = np.array([0.5, 1.5])
    out, tangent, aux = tf.jvp(with_aux, (x,), (np.ones(2),), has_aux=True)
    np.testing.assert_allclose(out, 2 * np.sin(x))
    np.testing.assert_allclose(tangent, 2 * np.cos(x))
    assert aux['n'] == 3 and np.array_equal(aux['x'], x)
    for jac in (tf.jacfwd, tf.jacrev):
        j, aux = jac(with_aux, has_aux=True)(x)
        np.testing.assert_allclose(j, np.diag(2 * np.cos(x)))
        assert aux['n'] == 3
    out, pullback, aux = tf.vjp(with_aux, x, has_aux=True)
    np.testing.assert_allclose(pullback(np.array([1.0, -1.0]))[0], 2 * np.cos(x) * [1.0, -1.0])
    assert aux['n'] == 3


# ------------------------------------------------------------------ 8. check_grads modes

def wrong_jvp_square(x):
    return x * x


tf.defvjp(wrong_jvp_square, lambda g, ans, x: g * 2.0 * x,
          lambda t, ans, x: t * 3.0 * x)                  # deliberately wrong forward rule


def uses_wrong_jvp(x):
    return np.sum(wrong_jvp_square(x))


def test_check_grads_modes_with_jax_keywords():
    x = np.array([0.3, -0.7])
    tf.check_grads(field_loss, (Params(x, 0.4), x), order=2, modes=('fwd', 'rev'))
    tf.check_grads(uses_wrong_jvp, (x,), order=1, modes=('rev',))      # the reverse rule is right
    with pytest.raises(AssertionError, match=r'first derivative \(forward mode\)'):
        tf.check_grads(uses_wrong_jvp, (x,), order=1, modes=('fwd',))
    with pytest.raises(AssertionError, match='forward mode'):
        tf.check_grads(uses_wrong_jvp, (x,), order=1)                    # JAX's default: both
    with pytest.raises(ValueError, match="modes are 'fwd' and 'rev'"):
        tf.check_grads(uses_wrong_jvp, (x,), modes=('backward',))
    tf.check_grads(field_loss, (Params(x, 0.4), x), 2, ('rev',), atol=1e-6, rtol=1e-5, eps=1e-6)


# ------------------------------------------------------------------ 9. a loss without a return

def forgot_return(x):
    np.sum(x * x)


def returns_an_int(x):
    return 3


def test_a_loss_without_a_return_is_a_type_error_like_any_non_float_output():
    with pytest.raises(TypeError, match=r'grad requires real-valued outputs .* '
                                        r'forgot_return\(\) returned NoneType'):
        tf.grad(forgot_return)(np.ones(2))
    with pytest.raises(TypeError, match=r'grad requires real-valued outputs .* '
                                        r'returns_an_int\(\) returned'):
        tf.grad(returns_an_int)(1.0)
    with pytest.raises(TypeError, match=r'grad requires real-valued outputs'):
        tf.value_and_grad(forgot_return)(1.0)


@tf.function
def compiled_power(x, n=2, scale=1.0):
    return scale * x ** n


def test_keyword_arguments_of_a_compiled_function_under_a_tape():
    x = tf.Variable(np.array([1.5, -0.5]))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(compiled_power(x, scale=2.0, n=3))
    np.testing.assert_allclose(y.numpy(), np.sum(2.0 * x.numpy() ** 3))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 6.0 * x.numpy() ** 2)
    assert compiled_power(2.0, n=3) == pytest.approx(8.0)


class Aliased:
    """Registered; `alias` is the same array as the child `w`."""

    def __init__(self, w, b):
        self.w, self.b, self.alias = w, b, w


tf.register_pytree(Aliased, lambda m: ((m.w, m.b), None), lambda _, ch: Aliased(*ch))


def aliased_loss(m, x):
    return np.sum(m.alias ** 3 * x) + m.b ** 2 * np.sum(m.w)


def test_a_registered_child_read_through_another_attribute():
    m, x = Aliased(np.array([1.0, 2.0]), 0.5), np.array([0.3, -1.0])
    g = tf.grad(aliased_loss)(m, x)
    assert isinstance(g, Aliased)
    np.testing.assert_allclose(g.w, 3 * m.w ** 2 * x + m.b ** 2)
    assert g.b == pytest.approx(2 * m.b * np.sum(m.w))
    tf.check_grads(aliased_loss, (m, x), modes=('fwd', 'rev'))        # reverse over reverse too
    np.testing.assert_allclose(tf.hessian(aliased_loss)(m, x).w.w, np.diag(6 * m.w * x))


def test_a_child_returned_twice_by_flatten_is_ambiguous_and_refused():
    same = 1.5

    def loss(m):
        return m.w * m.b
    with pytest.raises(TypeError, match=r'same object as its children \[0, 1\]'):
        tf.grad(loss)(Aliased(same, same))


def write_through_field(p, x):
    w = p.w
    w *= x
    return np.sum(p.w)


def test_an_in_place_write_through_a_field_is_refused_where_located():
    with pytest.raises(tf.UnsupportedError, match=r'test_pytrees\.py:\d+:\d+: w shares memory '
                                                  r'with p'):
        tf.grad(write_through_field, argnums=(0, 1))(Params(np.ones(2), 1.0), 3.0)


class Scaler:
    def __init__(self, w):
        self.w = w

    def scaled_in_place(self, x):
        w = self.w
        w *= x                                 # changes self.w, which is read next
        return np.sum(self.w)


def test_a_method_writing_into_its_objects_field_is_refused_not_a_zero_gradient():
    m = Scaler(np.ones(2))
    with pytest.raises(tf.UnsupportedError, match=r'test_pytrees\.py:\d+:\d+: w shares memory '
                                                  r'with \w*self'):
        tf.grad(m.scaled_in_place)(3.0)


def tuple_loss(xs):
    return np.sum(xs[0] ** 2 * xs[1]) + np.sum(np.cos(xs[1]))


def test_the_hessian_of_a_tuple_argument_is_a_tuple_of_tuples():
    x, y = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    h = tf.hessian(tuple_loss)((x, y))
    assert isinstance(h, tuple) and all(isinstance(r, tuple) for r in h)
    np.testing.assert_allclose(h[0][0], np.diag(2 * y))
    np.testing.assert_allclose(h[0][1], np.diag(2 * x))
    np.testing.assert_allclose(h[1][0], np.diag(2 * x))
    np.testing.assert_allclose(h[1][1], np.diag(-np.cos(y)))
    j = tf.jacfwd(tuple_loss)((x, y))
    g = tf.grad(tuple_loss)((x, y))
    assert isinstance(j, tuple)
    np.testing.assert_allclose(j[0], g[0])
    np.testing.assert_allclose(j[1], g[1])


def test_the_eager_tape_differentiates_a_registered_class_of_variables():
    m = Linear(tf.Variable(np.array([1.0, 2.0])), tf.Variable(3.0))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(m.w * m.b)
    g = tape.gradient(y, m)
    assert isinstance(g, Linear) and g.name == 'lin'
    np.testing.assert_allclose(g.w.numpy(), [3.0, 3.0])
    assert float(g.b.numpy()) == pytest.approx(3.0)


@dataclasses.dataclass
class Regressor:
    w: np.ndarray
    b: float

    def loss(self, x, y):
        return np.sum((self.w * x + self.b - y) ** 2)


def test_a_method_read_as_a_function_of_its_dataclass_object():
    m = Regressor(np.array([0.5, -1.0]), 0.25)
    x, y = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    g = tf.grad(Regressor.loss)(m, x, y)                 # the object is differentiated
    assert isinstance(g, Regressor)
    r = m.w * x + m.b - y
    np.testing.assert_allclose(g.w, 2 * r * x)
    assert g.b == pytest.approx(2 * np.sum(r))
    _assert_gradient(Regressor.loss, g, (m, x, y), 0)
    gx = tf.grad(m.loss)(x, y)                           # the bound method: the object constant
    np.testing.assert_allclose(gx, 2 * r * m.w)
