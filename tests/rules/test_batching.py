"""Batched JVPs: every rule, fed a batch of tangents, equals its rows one at a time.

For every spec of the tables and every differentiable argument, a batch of
B = 3 tangents goes through the rule the way batched forward code calls it
(`batch_kind`: the lifted ordinary rule, the primitive's batched rule, or one
call per direction) and must equal the ordinary rule applied to each row,
stacked. List and tuple arguments are checked twice: every leaf batched, and
the first leaf unbatched (the same tangent along every direction).
"""
import builtins
import operator
import warnings
import zlib

import numpy as np
import pytest

from rulecheck import A, F, L, Spec, _is_marker, readonly, realize
from specs_arrays import SPECS as ARRAYS
from specs_elementwise import SPECS as ELEMENTWISE
from specs_linalg import SPECS as LINALG
from test_specs import _ids
from tapeflow.rules import RULES, indexing, operators
from tapeflow.rules.batching import batch_kind, is_batched, jvp_over_batch, lift_tangent, row
from tapeflow.runtime import support
from tapeflow.runtime.support import setitem_batched

X3 = A((2, 3, 4))
MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])


def _untake_spec(shape, idx, name):
    return Spec(indexing.untake, (A(np.zeros(shape)[idx].shape), np.zeros(shape), idx),
                name=f'untake[{name}]')


# Forms the tables leave out where a batch axis could go astray: broadcast batch
# axes of the other operand, advanced indices apart, axes given as arrays.
EXTRA = [
    Spec(operator.matmul, (A((2, 3)), A((5, 3, 4))), name='matmul(2,3)'),
    Spec(operator.matmul, (A((2, 1, 2, 3)), A((3,))), name='matmul(4,1)'),
    Spec(operator.matmul, (A((3,)), A((2, 5, 3, 4))), name='matmul(1,4)'),
    Spec(operators.grad_of_matmul_a, (A((5, 2, 4)), np.zeros((5, 2, 3)), A((3, 4))),
         name='grad_of_matmul_a(3,2)'),
    Spec(operators.grad_of_matmul_a, (A((5, 4)), np.zeros(3), A((5, 3, 4))),
         name='grad_of_matmul_a(1,3)'),
    Spec(operators.grad_of_matmul_a, (A((4, 5, 2, 6)), np.zeros((2, 3)), A((4, 5, 3, 6))),
         name='grad_of_matmul_a(2,4)'),
    Spec(operators.grad_of_matmul_a, (A((5, 2)), np.zeros((5, 2, 3)), A((3,))),
         name='grad_of_matmul_a(3,1)'),
    Spec(operators.grad_of_matmul_b, (A((5, 2, 4)), A((2, 3)), np.zeros((5, 3, 4))),
         name='grad_of_matmul_b(2,3)'),
    Spec(operators.grad_of_matmul_b, (A((5, 4)), A((3,)), np.zeros((5, 3, 4))),
         name='grad_of_matmul_b(1,3)'),
    Spec(operators.grad_of_matmul_b, (A((5, 2)), A((5, 2, 3)), np.zeros(3)),
         name='grad_of_matmul_b(3,1)'),
    Spec(operators.grad_of_matmul_b, (A((4, 5, 2, 6)), A((2, 3)), np.zeros((4, 5, 3, 6))),
         name='grad_of_matmul_b(2,4)'),
    Spec(operators.grad_of_matmul_b, (A(()), A((3,)), np.zeros(3)), name='grad_of_matmul_b(1,1)'),
    Spec(np.dot, (A((2, 3)), A(())), name='dot((2,3),())'),
    Spec(np.dot, (A((4,)), A((2, 4, 3))), name='dot((4,),(2,4,3))'),
    Spec(np.inner, (A((2, 3)), A(())), name='inner((2,3),())'),
    Spec(np.tensordot, (A((2, 3, 4)), A((4, 3))), {'axes': ([2, -2], [0, 1])},
         name='tensordot(back)'),
    Spec(np.vecdot, (A((3,)), A((2, 4, 3))), name='vecdot(broadcast)'),
    Spec(np.matvec, (A((3, 4)), A((2, 5, 4))), name='matvec(broadcast)'),
    Spec(np.vecmat, (A((2, 5, 3)), A((3, 4))), name='vecmat(broadcast)'),
    Spec(operator.getitem, (X3, (np.array([0, 1]), slice(None), np.array([1, 2]))),
         name='getitem[fancy apart]'),
    Spec(operator.getitem, (X3, (0, slice(None), np.array([1, 0, 3]))), name='getitem[int apart]'),
    Spec(operator.getitem, (X3, (Ellipsis, np.array([0, 2]))), name='getitem[...,fancy]'),
    Spec(operator.getitem, (X3, (np.array([[0], [1]]), None, np.array([1, 2]))),
         name='getitem[fancy,None,fancy]'),
    Spec(operator.getitem, (X3, np.arange(24).reshape(2, 3, 4) % 3 == 0),
         name='getitem[full mask]'),
    Spec(operator.getitem, (X3, Ellipsis), name='getitem[...]'),
    Spec(operator.getitem, (L(A((2,)), F(), A((3,)), tuple_=True), slice(1, None)),
         name='getitem(tuple of arrays, slice)'),
    _untake_spec((2, 3, 4), (np.array([0, 1]), slice(None), np.array([1, 2])), 'fancy apart'),
    _untake_spec((2, 3, 4), (0, slice(None), np.array([1, 1, 3])), 'int apart, repeated'),
    _untake_spec((2, 3, 4), (Ellipsis, 1), '...,int'),
    _untake_spec((2, 3, 4), (slice(None, None, -1), None, 2), 'slice,None,int'),
    _untake_spec((3, 4), MASK, 'mask'),
    Spec(indexing.untake, (A((2,)), np.zeros((3, 4)), (1, slice(None, 2))),
         name='untake[int,slice]'),
    Spec(np.transpose, (X3, np.array([2, 0, 1])), name='transpose(array axes)'),
    Spec(np.reshape, (X3, (4, 6)), {'order': 'A'}, name='reshape(A)'),
    Spec(np.moveaxis, (X3, -1, 0), name='moveaxis(ints)'),
    Spec(np.sum, (X3,), {'axis': (-1, 0), 'keepdims': True}, name='sum(negative axes)'),
    Spec(np.mean, (X3,), {'axis': -2}, name='mean(axis=-2)'),
    Spec(np.concatenate, (L(A((2, 3)), A((2, 1))),), {'axis': -1}, name='concatenate(axis=-1)'),
    Spec(np.concatenate, (A((2, 3, 4)),), {'axis': 1}, name='concatenate(an array)'),
    Spec(np.stack, (L(A((2, 3)), A((2, 3)), A((2, 3))),), {'axis': -1}, name='stack(axis=-1)'),
    Spec(np.tile, (A((2, 3)), (2, 1, 2)), name='tile(more reps)'),
    Spec(np.triu, (A((4,)),), name='triu(1-D)'),
    Spec(np.cumsum, (X3,), {'axis': -1}, name='cumsum(axis=-1)'),
    Spec(np.where, (np.array([True, False, True]), A((2, 3)), A(())), name='where(0-d y)'),
    Spec(np.clip, (A((3,), -3, 3), A((2, 1), -2, -0.5), A((2, 3), 0.5, 2)),
         name='clip(broadcast a)'),
    Spec(builtins.sum, (A((4, 2)),), name='sum(an array)'),
    Spec(builtins.max, (A((4,)),), name='max(an array)'),
    Spec(builtins.min, (F(), F(), F()), name='min(a, b, c)'),
    Spec(builtins.sum, (L(A((2,)), A((2,))), A(())), name='sum(list of arrays, start)'),
    Spec(builtins.pow, (A((3,)), 2), name='pow(array, 2)'),
    Spec(float, (A(()),), name='float(0-d)'),
    # the helpers generated code calls, which hessians differentiate in batches
    Spec(support.add_adjoint, (A((2, 3)), A((2, 3))), name='add_adjoint'),
    Spec(support.add_adjoint, (L(A((2,)), F()), L(A((2,)), F())), name='add_adjoint(lists)'),
    Spec(support.getitem_adjoint, (L(A((2,)), F(), A(())), 1), name='getitem_adjoint(list)'),
    Spec(support.getitem_adjoint, (A((3, 4)), 1), name='getitem_adjoint(array)'),
    Spec(support.setitem_value_adjoint, (A((3, 4)), (slice(None), 1), np.zeros(3)),
         name='setitem_value_adjoint'),
    Spec(support.setitem_value_adjoint, (A((3, 4)), (Ellipsis, 1), np.zeros(1)),
         name='setitem_value_adjoint(broadcast)'),
    Spec(support.setitem_value_adjoint, (A((3, 4)), (1, 2), 1.5),
         name='setitem_value_adjoint(float)'),
    Spec(support.setitem_value_adjoint, (L(F(), A((2,))), 1, np.zeros(2)),
         name='setitem_value_adjoint(list)'),
    Spec(support.setitem_clear_adjoint, (A((3, 4)), MASK), name='setitem_clear_adjoint'),
    Spec(support.setitem_clear_adjoint, (L(F(), A((2,))), 1), name='setitem_clear_adjoint(list)'),
    Spec(support.last_adjoint, (L(F(), A((2,))),), name='last_adjoint'),
    Spec(support.drop_last_adjoint, (L(F(), A((2,)), F()),), name='drop_last_adjoint'),
    Spec(support.snapshot, (A((2, 3)),), name='snapshot'),
    Spec(support.old_value, (A((3, 4)), (slice(None), 2)), name='old_value'),
    Spec(support.old_value, (L(F(), A((2,))), 1), name='old_value(list)'),
]

ALL = ELEMENTWISE + ARRAYS + LINALG + EXTRA
B = 3
RTOL, ATOL = 1e-10, 1e-12


def _cases():
    cases = []
    for spec, name in zip(ALL, _ids(ALL)):
        argnums = spec.wrt if spec.wrt is not None else \
            [i for i, a in enumerate(spec.args) if _is_marker(a)]
        for i in argnums:
            cases.append(pytest.param(spec, i, False, id=f'{name}-arg{i}'))
            if isinstance(spec.args[i], L):
                cases.append(pytest.param(spec, i, True, id=f'{name}-arg{i}-mixed'))
    return cases


# ---------------------------------------------------------------- batches and rows

def _sequence(like, items):
    """A sequence of `like`'s type holding `items` (a NamedTuple's too)."""
    return type(like)(*items) if hasattr(like, '_fields') else type(like)(items)


def _batch(x, rng):
    """B random tangents of `x`: `(B,) + shape(x)` per leaf (lists leaf by leaf)."""
    if isinstance(x, (list, tuple)):
        return _sequence(x, [_batch(item, rng) for item in x])
    shape = (B,) + np.shape(x)
    t = rng.standard_normal(shape)
    if np.iscomplexobj(x):
        t = t + 1j * rng.standard_normal(shape)
    return t


def _unbatched(x, rng):
    """One random tangent of `x`, the same along every direction."""
    if isinstance(x, float):
        return float(rng.standard_normal())
    if isinstance(x, (list, tuple)):
        return _sequence(x, [_unbatched(item, rng) for item in x])
    return _batch(x, rng)[0]


def _stack(rows, ans):
    """The rows (tangents of `ans`, one per direction) as a batch, structure by structure."""
    if isinstance(ans, (list, tuple)):
        return [_stack([r[k] if isinstance(r, (list, tuple)) else r for r in rows], a)
                for k, a in enumerate(ans)]
    shape = np.shape(ans)
    return np.stack([np.broadcast_to(0.0 if r is None else r, shape) for r in rows])


def _compare(actual, expected, ans, what):
    if isinstance(ans, (list, tuple)):
        parts = actual if isinstance(actual, (list, tuple)) else [actual] * len(ans)
        assert len(parts) == len(ans), f'{what}: {len(parts)} outputs, expected {len(ans)}'
        for k, (p, e, a) in enumerate(zip(parts, expected, ans)):
            _compare(p, e, a, f'{what}, output {k}')
        return
    shape = (B,) + np.shape(ans)
    if np.ndim(actual) == len(shape):
        assert np.shape(actual)[0] == B, f'{what}: batch of shape {np.shape(actual)}'
    else:
        assert np.ndim(actual) < len(shape), f'{what}: shape {np.shape(actual)} for {shape}'
    got = np.broadcast_to(actual, shape)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg=what)


def _batched_jvp(entry, i, rule, T, x, ans, args, kwargs):
    """The batch of output tangents, computed as batched forward code computes it."""
    kind = batch_kind(entry, i)
    if kind == 'elementwise':
        out = rule(lift_tangent(T, x, ans), ans, *args, **kwargs)
        if isinstance(ans, (list, tuple)):
            return kind, _sequence(ans, [np.broadcast_to(o, (B,) + np.shape(a))
                                         for o, a in zip(out, ans)])
        return kind, np.broadcast_to(out, (B,) + np.shape(ans))
    if kind == 'batched':
        return kind, entry.batched_jvps[i](T, ans, *args, **kwargs)
    return kind, jvp_over_batch(rule, None, T, x, ans, *args, **kwargs)


@pytest.mark.parametrize('spec, i, mixed', _cases())
def test_batched_jvp_equals_one_direction_at_a_time(spec, i, mixed):
    rng = np.random.default_rng(zlib.crc32(spec.id.encode()))
    entry = RULES[spec.fn]
    args = [readonly(realize(a, rng)) for a in spec.args]
    kwargs = spec.kwargs
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        ans = readonly(spec.fn(*args, **kwargs))
        x, rule = args[i], entry.jvp(i)
        T = _batch(x, rng)
        if mixed:
            T = _sequence(T, [_unbatched(x[0], rng)] + list(T[1:]))
        T = readonly(T)
        assert is_batched(T, x)
        expected = _stack([rule(row(T, x, k), ans, *args, **kwargs) for k in range(B)], ans)
        kind, actual = _batched_jvp(entry, i, rule, T, x, ans, args, kwargs)
    _compare(actual, expected, ans, f'{spec.id} arg {i} ({kind})')


# ---------------------------------------------------------------- the helpers themselves

def test_is_batched_compares_ranks_leaf_by_leaf():
    x = np.zeros((2, 3))
    assert is_batched(np.zeros((4, 2, 3)), x)
    assert not is_batched(np.zeros((2, 3)), x)
    assert not is_batched(0.0, x)
    assert is_batched(np.zeros(4), 1.5)
    assert not is_batched(0.0, 1.5)
    assert is_batched([0.0, np.zeros((4, 3))], [1.0, np.zeros(3)])
    assert not is_batched([0.0, np.zeros(3)], [1.0, np.zeros(3)])
    assert is_batched({'a': np.zeros((2, 3))}, {'a': np.zeros(3), 'b': 1.0})


def test_lift_tangent_gives_the_batch_as_many_axes_as_the_output():
    t = np.arange(6.0).reshape(2, 3)
    lifted = lift_tangent(t, np.zeros(3), np.zeros((4, 3)))
    assert lifted.shape == (2, 1, 3)
    np.testing.assert_array_equal(lifted[:, 0], t)
    assert lift_tangent(t, np.zeros(3), np.zeros(3)) is t            # same rank
    assert lift_tangent(np.zeros(3), np.zeros(3), np.zeros((4, 3))).shape == (3,)  # unbatched
    assert lift_tangent(0.0, np.zeros(3), np.zeros((4, 3))) == 0.0
    assert lift_tangent(np.ones(2), 1.5, np.zeros((2, 2))).shape == (2, 1, 1)   # of a float


def _rows_of_setitem(tangent, index, value_tangent, value, container):
    from tapeflow.runtime.support import setitem_tangent
    return np.stack([setitem_tangent(row(tangent, container, k), index,
                                     row(value_tangent, value, k), container)
                     for k in range(B)])


@pytest.mark.parametrize('shape, index, value', [
    ((3, 4), (1, 2), 2.5), ((3, 4), 1, np.ones(4)),
    ((3, 4), (slice(None), slice(1, 3)), np.ones((3, 2))), ((3, 4), (slice(None), 0), np.ones(())),
    ((3, 4), np.array([[True, False, True, False]] * 3), np.ones(6)),
    ((3, 4), (Ellipsis, -1), np.ones(3)), ((3, 4), (np.array([0, 2]), 1), np.ones(2)),
    ((3, 4, 5), (np.array([0, 2]), slice(None), np.array([1, 3])), np.ones((2, 4))),
    ((3, 4, 5), (0, slice(None), np.array([1, 2, 4])), np.ones((3, 4))),
    ((3, 4, 5), (Ellipsis, np.array([0, 2])), np.ones((3, 4, 1)))],
    ids=['scalar', 'row', 'slice', 'column from 0-d', 'mask', 'ellipsis', 'fancy',
         'fancy apart', 'int and fancy apart', 'ellipsis, fancy, broadcast'])
@pytest.mark.parametrize('batched_y, batched_v', [(True, True), (True, False), (False, True)],
                         ids=['both', 'y only', 'v only'])
def test_setitem_batched_equals_one_direction_at_a_time(shape, index, value, batched_y,
                                                        batched_v):
    rng = np.random.default_rng(3)
    y = np.zeros(shape)
    ty = rng.standard_normal((B,) + y.shape) if batched_y else rng.standard_normal(y.shape)
    ty = readonly(ty)
    tv = rng.standard_normal((B,) + np.shape(value)) if batched_v else \
        (float(rng.standard_normal()) if isinstance(value, float) else
         rng.standard_normal(np.shape(value)))
    tv = readonly(tv)
    before = np.array(ty, copy=True)
    out = setitem_batched(ty, index, tv, value, y)
    assert out.shape == (B,) + shape
    np.testing.assert_allclose(out, _rows_of_setitem(ty, index, tv, value, y), rtol=0, atol=0)
    np.testing.assert_array_equal(ty, before)


def test_setitem_batched_symbolic_zero_tangent_and_a_batched_value():
    y = np.zeros((2, 3))
    tv = np.arange(3.0 * B).reshape(B, 3)
    out = setitem_batched(0.0, 1, tv, np.ones(3), y)
    assert out.shape == (B, 2, 3)
    np.testing.assert_array_equal(out[:, 0], 0.0)
    np.testing.assert_array_equal(out[:, 1], tv)


def test_setitem_batched_unbatched_both_is_the_ordinary_update():
    y = np.zeros((2, 3))
    out = setitem_batched(0.0, (0, 1), 2.0, 1.0, y)
    assert out.shape == (2, 3) and out[0, 1] == 2.0 and out.sum() == 2.0


def test_setitem_batched_into_a_list():
    ys = [1.0, np.zeros(2), 3.0]
    t = [0.0, np.ones((B, 2)), 0.0]
    out = setitem_batched(t, 0, np.arange(float(B)), 1.0, ys)
    assert out[0].shape == (B,) and out[1] is t[1] and t[0] == 0.0


def test_jvp_over_batch_with_a_container_tangent():
    x = [1.5, np.arange(3.0), np.ones((2, 3))]
    # the middle item unbatched
    t = [np.arange(float(B)), np.zeros(3), np.arange(6.0 * B).reshape(B, 2, 3)]
    ans = np.concatenate([np.ravel(x[1]), np.ravel(x[2]), [x[0]]])

    def rule(tangent, ans, items):
        scalar, vector, matrix = tangent
        return np.concatenate([np.ravel(vector), np.ravel(matrix), [scalar]])

    out = jvp_over_batch(rule, None, t, x, ans, x)
    assert out.shape == (B,) + ans.shape
    for k in range(B):
        np.testing.assert_array_equal(out[k], rule([t[0][k], t[1], t[2][k]], ans, x))
    # unbatched: the rule once, as it is
    flat = [0.5, np.ones(3), np.ones((2, 3))]
    np.testing.assert_array_equal(jvp_over_batch(rule, None, flat, x, ans, x), rule(flat, ans, x))


def test_jvp_over_batch_prefers_the_batched_rule_and_stacks_tuples():
    x = np.arange(3.0)
    ans = (x * 2, x.sum())
    calls = []

    def rule(t, ans, x):
        calls.append('row')
        return (t * 2, np.sum(t))

    def batched(t, ans, x):
        calls.append('batch')
        return (t * 2, np.sum(t, axis=1))

    t = np.arange(3.0 * B).reshape(B, 3)
    out = jvp_over_batch(rule, batched, t, x, ans, x)
    assert calls == ['batch']
    stacked = jvp_over_batch(rule, None, t, x, ans, x)
    assert calls == ['batch'] + ['row'] * B and isinstance(stacked, tuple)
    for got, want in zip(stacked, out):
        np.testing.assert_allclose(got, want)
