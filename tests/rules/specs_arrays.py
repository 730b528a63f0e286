"""Spec table: reductions, order statistics, shape, joining, indexing."""
import operator
import typing

import numpy as np

from rulecheck import A, F, L, Spec
from tapeflow.rules import (array_ops, fields, indexing, mutation, numpy_binary, numpy_methods,
                            numpy_reductions, numpy_shape, operators, shapes)
from tapeflow.rules.registry import available

X3 = A((2, 3, 4))


class Fields(typing.NamedTuple):       # `p.w` of a NamedTuple (rules.fields)
    w: object
    b: object


FIELDS = Fields(np.zeros((2, 3)), 0.0)
MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])
WITH_ZEROS = [[1.5, 0.0, -2.0, 0.5], [0.0, 0.0, 1.2, -0.7], [0.3, 1.1, -0.4, 2.0]]
TIES = [[1.0, 3.0, 3.0], [2.0, -1.0, 0.0]]
WITH_NANS = [[1.5, np.nan, -2.0, 0.5], [0.2, 0.9, np.nan, -0.7], [0.3, 1.1, -0.4, 2.0]]

SPECS = []

# ---------------------------------------------------------------- reductions
for fn in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.ptp, np.var,
           np.std, np.nansum, np.nanmean, np.nanprod, np.nanmax, np.nanmin, np.nanvar,
           np.nanstd, np.median, np.nanmedian):
    name = fn.__name__
    SPECS += [
        Spec(fn, (X3,), name=f'{name}()'),
        Spec(fn, (X3,), {'axis': 1}, name=f'{name}(axis=1)'),
        Spec(fn, (X3,), {'axis': (0, 2)}, name=f'{name}(axis=(0,2))'),
        Spec(fn, (X3,), {'axis': -1, 'keepdims': True}, name=f'{name}(axis=-1,keepdims)'),
        Spec(fn, (A(()),), name=f'{name}(0-d)'),
    ]
for fn in (np.sum, np.mean, np.prod, np.max, np.min, np.var, np.std):
    extra = {'initial': -10.0} if fn is np.max else {'initial': 10.0} if fn is np.min else {}
    SPECS.append(Spec(fn, (A((3, 4)),), {'axis': 1, 'where': MASK, **extra},
                      name=f'{fn.__name__}(where)'))
for fn in (np.nansum, np.nanmean, np.nanprod, np.nanmax, np.nanmin, np.nanvar, np.nanstd,
           np.nanmedian, np.nancumsum, np.nancumprod):
    SPECS.append(Spec(fn, (A(value=WITH_NANS),), {'axis': 1}, name=f'{fn.__name__}(nan)', f32=False))
SPECS += [
    Spec(np.sum, (L(F(), F(), F()),), name='sum(list)'),
    Spec(np.prod, (A(value=WITH_ZEROS),), {'axis': 1}, name='prod(zeros)'),
    Spec(np.prod, (A(value=WITH_ZEROS),), name='prod(zeros, all)'),
    Spec(np.var, (X3,), {'axis': 1, 'ddof': 1}, name='var(ddof)'),
    Spec(np.std, (X3,), {'axis': (0, 1), 'correction': 1}, name='std(correction)'),
    Spec(np.var, (A((4,), complex_=True),), name='var(complex)'),
    Spec(np.max, (A(value=[[1.0, 3.0, 3.0], [2.0, -1.0, 0.0]]),), {'axis': 1}, name='max(ties)',
         second=False),   # the tie is a kink: the VJP itself jumps there
    Spec(np.average, (X3,), name='average()'),
    Spec(np.average, (X3, 1, A((3,), 0.5, 2)), name='average(1-D weights)'),
    Spec(np.average, (X3, (0, 2), A((2, 3, 4), 0.5, 2)), {'keepdims': True}, name='average(full weights)'),
    Spec(np.average, (A((3, 4)), 0, A((3,), 0.5, 2), True), name='average(returned)'),
    Spec(np.median, (A((3, 5)),), {'axis': 1}, name='median(odd)'),
    Spec(np.median, (A((3, 6)),), {'axis': 1}, name='median(even)'),
    Spec(np.quantile, (X3, 0.3), name='quantile'),
    Spec(np.quantile, (X3, np.array([0.1, 0.75])), {'axis': (0, 2), 'keepdims': True}, name='quantile(q array)'),
    Spec(np.percentile, (A((4, 5)), 40.0), {'axis': 1, 'method': 'midpoint'}, name='percentile(midpoint)'),
    Spec(np.percentile, (A((4, 5)), [10.0, 90.0]), {'axis': 0, 'method': 'lower'}, name='percentile(lower)'),
    Spec(np.quantile, (A((4, 5)), 0.4), {'axis': 1, 'method': 'higher'}, name='quantile(higher)'),
    Spec(np.nanquantile, (A(value=WITH_NANS), 0.35), {'axis': 1}, name='nanquantile', f32=False),
    Spec(np.nanpercentile, (A(value=WITH_NANS), [20.0, 60.0]), name='nanpercentile', f32=False),
    # q differentiated too (piecewise linear in q)
    Spec(np.quantile, (X3, F(0.1, 0.9)), name='quantile(q)'),
    Spec(np.quantile, (X3, A((2,), 0.1, 0.9)), {'axis': (0, 2), 'keepdims': True},
         name='quantile(q array, in q)'),
    Spec(np.percentile, (A((4, 5)), A((2,), 10.0, 90.0)), {'axis': 1}, name='percentile(q)'),
    Spec(np.quantile, (A((4, 5)), F(0.1, 0.9)), {'axis': 1, 'method': 'lower'},
         name='quantile(lower, q)'),
    Spec(np.nanquantile, (A(value=WITH_NANS), F(0.1, 0.9)), {'axis': 1}, name='nanquantile(q)',
         f32=False),
    Spec(np.nanpercentile, (A(value=WITH_NANS), F(10.0, 90.0)), name='nanpercentile(q)',
         f32=False),
    # arange: the count stays put over these ranges
    Spec(np.arange, (F(0.0, 0.1), F(3.5, 3.6), F(1.0, 1.05)), name='arange(start, stop, step)'),
    Spec(np.arange, (F(0.0, 0.1), F(3.5, 3.6)), name='arange(start, stop)'),
    Spec(np.arange, (F(3.5, 3.6),), name='arange(stop)'),
]
for fn in (np.cumsum, np.cumprod, np.nancumsum, np.nancumprod):
    SPECS += [Spec(fn, (A((3, 4)),), name=f'{fn.__name__}()'),
              Spec(fn, (X3,), {'axis': 1}, name=f'{fn.__name__}(axis=1)')]
SPECS += [
    Spec(np.cumprod, (A(value=WITH_ZEROS),), {'axis': 1}, name='cumprod(zeros)'),
    Spec(np.cumsum, (A((4,)),), {'axis': 0}, name='cumsum(axis=0)'),
    Spec(np.cumulative_sum, (A((3, 4)),), {'axis': 1, 'include_initial': True}, name='cumulative_sum'),
    Spec(np.cumulative_prod, (A((3, 4)),), {'axis': 0, 'include_initial': True}, name='cumulative_prod'),
    Spec(np.diff, (A((3, 5)),), name='diff'),
    Spec(np.diff, (X3,), {'n': 2, 'axis': 1}, name='diff(n=2)'),
    Spec(np.diff, (A((3, 5)),), {'axis': 1, 'prepend': 0.0, 'append': np.ones((3, 2))}, name='diff(prepend)'),
    Spec(np.ediff1d, (A((2, 3)),), {'to_begin': [1.0, 2.0], 'to_end': 5.0}, name='ediff1d'),
    Spec(np.trapezoid, (A((3, 5)),), name='trapezoid'),
    Spec(np.trapezoid, (A((3, 5)),), {'x': np.array([0.0, 0.5, 1.5, 2.0, 4.0]), 'axis': 1}, name='trapezoid(x)'),
    Spec(np.trapezoid, (A((5, 3)),), {'dx': 0.3, 'axis': 0}, name='trapezoid(dx)'),
    Spec(np.gradient, (A((6,)),), name='gradient(1-D)'),
    Spec(np.gradient, (A((4, 5)), 0.5, np.array([0.0, 1.0, 1.5, 3.0, 4.0])), name='gradient(spacings)'),
    Spec(np.gradient, (A((4, 5)),), {'axis': 1, 'edge_order': 2}, name='gradient(axis,edge2)'),
]

# ---------------------------------------------------------------- shape
SPECS += [
    Spec(np.reshape, (X3, (4, -1)), name='reshape'),
    Spec(np.reshape, (X3, (6, 4)), {'order': 'F'}, name='reshape(F)'),
    Spec(np.ravel, (X3,), {'order': 'F'}, name='ravel(F)'),
    Spec(numpy_shape.flatten, (X3,), name='flatten'),
    Spec(np.transpose, (X3,), name='transpose'),
    Spec(np.transpose, (X3, (1, -1, 0)), name='transpose(axes)'),
    Spec(np.matrix_transpose, (X3,), name='matrix_transpose'),
    Spec(np.swapaxes, (X3, 0, -1), name='swapaxes'),
    Spec(np.moveaxis, (X3, (0, 1), (-1, 0)), name='moveaxis'),
    Spec(np.rollaxis, (X3, 2, 0), name='rollaxis'),
    Spec(np.rollaxis, (X3, 0, 3), name='rollaxis(end)'),
    Spec(np.expand_dims, (A((2, 3)), (0, 3)), name='expand_dims'),
    Spec(np.squeeze, (A((1, 3, 1)),), name='squeeze'),
    Spec(np.squeeze, (A((1, 3, 1)), 2), name='squeeze(axis)'),
    Spec(np.flip, (X3,), name='flip'),
    Spec(np.flip, (X3, (0, 2)), name='flip(axes)'),
    Spec(np.fliplr, (A((2, 3)),), name='fliplr'),
    Spec(np.flipud, (A((2, 3)),), name='flipud'),
    Spec(np.roll, (X3, 2), name='roll'),
    Spec(np.roll, (X3, (1, -1), (0, 2)), name='roll(tuple)'),
    Spec(np.rot90, (X3,), name='rot90'),
    Spec(np.rot90, (X3, 3, (2, 0)), name='rot90(k,axes)'),
    Spec(np.triu, (X3,), name='triu'),
    Spec(np.tril, (A((3, 4)), -1), name='tril(k)'),
    Spec(np.tile, (A((2, 3)), 2), name='tile'),
    Spec(np.tile, (A((3,)), (2, 1, 2)), name='tile(more dims)'),
    Spec(np.tile, (X3, (2, 1)), name='tile(fewer reps)'),
    Spec(np.repeat, (A((2, 3)), 2), name='repeat'),
    Spec(np.repeat, (A((2, 3)), 3, 1), name='repeat(axis)'),
    Spec(np.repeat, (A((2, 3)), [1, 0, 2], 1), name='repeat(array)'),
    Spec(np.broadcast_to, (A((3,)), (2, 3)), name='broadcast_to'),
    Spec(np.broadcast_to, (A((2, 1)), (4, 2, 3)), name='broadcast_to(size 1)'),
    Spec(np.broadcast_arrays, (A((3,)), A((2, 1)), F()), name='broadcast_arrays'),
    Spec(np.atleast_1d, (A(()),), name='atleast_1d'),
    Spec(np.atleast_2d, (A((3,)),), name='atleast_2d'),
    Spec(np.atleast_3d, (A((2, 3)),), name='atleast_3d'),
    Spec(np.atleast_2d, (A((3,)), A(()), A((2, 2))), name='atleast_2d(several)'),
    Spec(np.copy, (A((2, 3)),), name='copy'),
    Spec(np.astype, (A((2, 3)), np.float64), name='astype'),
    Spec(numpy_shape.astype, (A((2, 3)), np.complex128), name='astype(method, complex)', f32=False),
    Spec(np.array, (L(F(), F(), F()),), name='array(floats)'),
    Spec(np.array, (L(L(F(), F()), L(F(), F())),), name='array(nested)'),
    Spec(np.array, (L(A((3,)), A((3,))),), name='array(arrays)'),
    Spec(np.array, (L(F(), F()),), {'ndmin': 2}, name='array(ndmin)'),
    Spec(np.asarray, (A((2, 3)),), name='asarray'),
    Spec(np.asarray, (L(F(), A(()), F()),), name='asarray(mixed)'),
    Spec(np.ascontiguousarray, (A((2, 3)),), name='ascontiguousarray'),
    Spec(np.full, ((2, 3), F()), name='full'),
    Spec(np.full, ((2, 3), A((3,))), name='full(array)'),
    Spec(np.full_like, (A((2, 3)), F()), name='full_like'),
    Spec(np.linspace, (F(), F(), 5), name='linspace'),
    Spec(np.linspace, (A((2,)), A((3, 1)), 4), {'endpoint': False, 'axis': 1}, name='linspace(arrays)'),
    Spec(np.linspace, (F(), F(), 5), {'retstep': True}, name='linspace(retstep)'),
    Spec(np.meshgrid, (A((3,)), A((4,))), name='meshgrid'),
    Spec(np.meshgrid, (A((3,)), A((4,)), A((2,))), {'indexing': 'ij', 'sparse': True}, name='meshgrid(ij,sparse)'),
]

# ---------------------------------------------------------------- join, split
SPECS += [
    Spec(np.concatenate, (L(A((2, 3)), A((1, 3))),), name='concatenate'),
    Spec(np.concatenate, (L(A((2, 3)), A((2, 1)), tuple_=True), 1), name='concatenate(tuple)'),
    Spec(np.concatenate, (L(A((2, 3)), A((4,))),), {'axis': None}, name='concatenate(None)'),
    Spec(np.stack, (L(A((2, 3)), A((2, 3))),), {'axis': 1}, name='stack'),
    Spec(np.hstack, (L(A((3,)), A(()), A((2,))),), name='hstack(1-D)'),
    Spec(np.hstack, (L(A((2, 3)), A((2, 1))),), name='hstack(2-D)'),
    Spec(np.vstack, (L(A((3,)), A((2, 3))),), name='vstack'),
    Spec(np.dstack, (L(A((3,)), A((1, 3, 2))),), name='dstack'),
    Spec(np.column_stack, (L(A((3,)), A((3, 2))),), name='column_stack'),
    Spec(np.append, (A((2, 3)), A((4,))), name='append'),
    Spec(np.append, (A((2, 3)), A((1, 3))), {'axis': 0}, name='append(axis)'),
    Spec(np.split, (A((6, 2)), 3), name='split'),
    Spec(np.split, (A((2, 7)), [1, 4]), {'axis': 1}, name='split(indices)'),
    Spec(np.array_split, (A((7,)), 3), name='array_split'),
    Spec(np.hsplit, (A((2, 4)), 2), name='hsplit'),
    Spec(np.vsplit, (A((4, 2)), [1]), name='vsplit'),
    Spec(np.dsplit, (A((1, 2, 4)), 2), name='dsplit'),
    Spec(np.unstack, (A((3, 2)),), {'axis': 1}, name='unstack'),
]
SPECS += [Spec(fn, (L(A((3,)), A((2, 3))),), name='row_stack')  # NumPy < 2.5
          for fn in available(np, ['row_stack'])]

# ---------------------------------------------------------------- indexing
for idx_name, idx in [
        ('int', 1), ('-1', -1), ('slice', slice(None, None, -2)), ('slice,int', (slice(1, None), 2)),
        ('None', (None, 0)), ('Ellipsis', (Ellipsis, 1)), ('ints repeated', np.array([0, 0, 1, 0])),
        ('list', [1, 1]), ('bool', np.array([True, False])), ('fancy 2-D', (np.array([0, 1, 1]), np.array([2, 2, 0]))),
        ('slice+fancy', (slice(None), np.array([2, 0, 2]))), ('mask 2-D', MASK[:2, :3]),
        ('0-d', ())]:
    x = A(()) if idx_name == '0-d' else A((2, 3))
    SPECS.append(Spec(operator.getitem, (x, idx), name=f'getitem[{idx_name}]'))
SPECS += [
    Spec(operator.getitem, (X3, (slice(None, None, -1), None, np.array([1, 0]), slice(1, 3))), name='getitem[mix]'),
    Spec(operator.getitem, (L(F(), A((2,)), F()), 1), name='getitem(list, int)'),
    Spec(operator.getitem, (L(F(), F(), F(), tuple_=True), slice(None, None, -2)), name='getitem(tuple, slice)'),
    Spec(np.take, (A((3, 4)), [0, 2, 2]), name='take'),
    Spec(np.take, (A((3, 4)), np.array([[1, 1], [3, 0]])), {'axis': 1}, name='take(axis)'),
    Spec(np.take, (A((3, 4)), [5, -1]), {'axis': 1, 'mode': 'wrap'}, name='take(wrap)'),
    Spec(np.take_along_axis, (A((3, 4)), np.array([[0, 0], [3, 1], [2, 2]]), 1), name='take_along_axis'),
    Spec(np.compress, ([True, False, True], A((3, 2))), {'axis': 0}, name='compress'),
    Spec(numpy_methods.compress, (A((3, 2)), [False, True]), {'axis': 1}, name='compress(method)'),
    Spec(numpy_methods.item, (A((3, 2)), 4), name='item(flat)', f32=False),
    Spec(numpy_methods.item, (A((3, 2)), 1, 0), name='item(per axis)', f32=False),
    Spec(np.extract, (MASK, A((3, 4))), name='extract'),
    Spec(np.diagonal, (X3,), name='diagonal'),
    Spec(np.diagonal, (X3, 1, 2, 0), name='diagonal(offset,axes)'),
    Spec(np.diag, (A((3,)), 1), name='diag(1-D)'),
    Spec(np.diag, (A((3, 4)), -1), name='diag(2-D)'),
    Spec(np.diagflat, (A((2, 2)),), name='diagflat'),
    Spec(np.trace, (A((3, 4)),), name='trace'),
    Spec(np.trace, (X3, 1, 0, 2), name='trace(offset,axes)'),
    Spec(np.linalg.trace, (X3,), {'offset': -1}, name='linalg.trace'),
    Spec(np.linalg.diagonal, (X3,), name='linalg.diagonal'),
    Spec(np.resize, (A((2, 3)), (4, 4)), name='resize'),
    Spec(np.delete, (A((3, 4)), [0, 2], 1), name='delete'),
    Spec(np.insert, (A((3, 4)), 1, 7.0), {'axis': 1}, name='insert'),
    Spec(np.pad, (A((2, 3)), ((1, 0), (2, 1))), name='pad'),
    Spec(np.pad, (A((2, 3)), 1), {'constant_values': 3.0}, name='pad(constant)'),
    Spec(np.pad, (A((3, 4)), 2, 'edge'), name='pad(edge)'),
    Spec(np.pad, (A((3, 4)), (1, 2), 'reflect'), name='pad(reflect)'),
    Spec(np.pad, (A((3, 4)), 2, 'symmetric'), name='pad(symmetric)'),
    Spec(np.pad, (A((3, 4)), 3, 'wrap'), name='pad(wrap)'),
    Spec(np.fft.fftshift, (A((3, 4)),), name='fftshift'),
    Spec(np.fft.ifftshift, (A((3, 5)),), {'axes': 1}, name='ifftshift'),
    Spec(np.sort, (A((3, 4)),), name='sort'),
    Spec(np.sort, (X3,), {'axis': 0}, name='sort(axis=0)'),
    Spec(np.sort, (A((3, 4)),), {'axis': None}, name='sort(None)'),
    Spec(np.partition, (A((7,)), 3), name='partition'),
    Spec(np.partition, (A((3, 5)), (1, 3), 1), name='partition(2-D)'),
    Spec(np.select, ([MASK, ~MASK & (np.arange(4) > 1)], L(A((3, 4)), A((4,))), F()), name='select'),
    Spec(np.choose, (np.array([[0, 1, 2, 1]]), L(A((3, 4)), A((4,)), A((1, 4)))), name='choose'),
    Spec(array_ops.assign, (A((3, 4)), (np.array([0, 2, 0]), np.array([1, 1, 1])), A((3,))), name='assign(repeated)'),
    Spec(array_ops.assign, (A((3, 4)), (slice(None), 2), F()), name='assign(slice, float)'),
    Spec(array_ops.assign, (A((3, 4)), MASK, A(())), name='assign(mask)'),
    Spec(array_ops.add_at, (A((3, 4)), (np.array([0, 2, 0]), np.array([1, 1, 1])), A((3,))), name='add_at(repeated)'),
    # the item is not one of the list's own objects here: the identity, item unused
    Spec(mutation.refresh_items, (L(A((2,)), A((3,))), A((2,))), name='refresh_items',
         tensor=False, f32=False),
    # an item not held before the write, and a number no slot holds: itself, the list unused
    Spec(mutation.reread_item, (L(A((2,)), A((3,))), A((2,)), False, 'why', 'f.py', 1, 0),
         name='reread_item', tensor=False, f32=False),
    Spec(mutation.reread_item, (L(A((2,)), F()), F(), True, 'why', 'f.py', 1, 0),
         name='reread_item(number)', tensor=False, f32=False),
    # an object no slot holds (made anew by a write): the slot read again, `old` unused
    Spec(mutation.reread_slot, (L(F(), A((3,))), -1, A((3,))), name='reread_slot',
         tensor=False, f32=False),
    Spec(mutation.like_layout, (A((2, 3)), np.zeros((2, 3))), name='like_layout'),
    Spec(mutation.like_layout, (A((2, 3)), np.asfortranarray(np.zeros((2, 3)))),
         name='like_layout(Fortran order)'),
    Spec(array_ops.add_at, (A((5,)), np.array([4, 4, 4, 0]), A(())), name='add_at(broadcast)'),
    Spec(shapes.unbroadcast, (A((2, 4, 3)), np.zeros((4, 1))), name='unbroadcast'),
    Spec(shapes.unbroadcast, (A((2, 3)), 1.5), name='unbroadcast(to float)'),
    Spec(shapes.broadcast_tangent, (A((3,)), np.zeros((2, 3))), name='broadcast_tangent'),
    Spec(shapes.fit, (A((2, 4, 3)), np.zeros((4, 1))), name='fit'),
    Spec(shapes.fit, (A((2, 3)), [1.0, 2.0, 3.0]), name='fit(list)'),
    Spec(shapes.dense, (A((2, 3)), np.zeros((2, 3))), name='dense'),
    Spec(indexing.untake, (A((3,)), np.zeros((2, 3)), (1, slice(None))), name='untake'),
    Spec(indexing.untake, (A((4,)), np.zeros(3), np.array([0, 0, 2, 0])), name='untake(repeated)'),
    # (generated code reads fields; the eager tape never does: no FakeTensor run)
    Spec(fields.field, (L(A((2, 3)), F(), tuple_=Fields), 'w'), name='field(.w)', tensor=False),
    Spec(fields.field, (L(A((2, 3)), F(), tuple_=Fields), 'b'), name='field(.b)', tensor=False),
    Spec(fields.field_cotangent, (A((2, 3)), FIELDS, 'w'), name='field_cotangent', tensor=False),
    Spec(fields.field_tangent, (L(A((2, 3)), F(), tuple_=True), FIELDS, 'w'),
         name='field_tangent', tensor=False),
    Spec(numpy_reductions.expand, (A((2, 4)), np.zeros((2, 3, 4)), 1), name='expand'),
    Spec(numpy_reductions.expand, (A((1, 3)), np.zeros((2, 3)), 0, True), name='expand(keepdims)'),
    Spec(numpy_reductions.grad_of_sum, (A((2, 4)), np.zeros((2, 3, 4)), 1), name='grad_of_sum'),
    Spec(numpy_reductions.grad_of_sum, (A((2, 1, 4)), np.zeros((2, 3, 4)), -2, True),
         name='grad_of_sum(keepdims)'),
    Spec(numpy_reductions.grad_of_sum, (F(), np.zeros((3, 4))), name='grad_of_sum(all, float)'),
    Spec(numpy_reductions.grad_of_sum, (A((3,)), np.zeros((3, 4)), 1), {'where': MASK},
         name='grad_of_sum(where)'),
    Spec(numpy_reductions.grad_of_sum, (A(()), [1.0, 2.0, 3.0]), name='grad_of_sum(list)'),
    Spec(numpy_reductions.grad_of_mean, (A((3,)), np.zeros((2, 3, 4)), (0, 2)),
         name='grad_of_mean'),
    Spec(numpy_reductions.grad_of_mean, (A((1, 1)), np.zeros((3, 4)), None, True),
         name='grad_of_mean(all, keepdims)'),
    Spec(numpy_reductions.grad_of_mean, (A((3,)), np.zeros((3, 4)), 1), {'where': MASK},
         name='grad_of_mean(where)'),
    Spec(numpy_reductions.grad_of_max, (A((2,)), np.array(TIES), np.max(TIES, 1), 1),
         name='grad_of_max(ties)'),
    Spec(numpy_reductions.grad_of_max, (A((2, 1)), np.array(TIES), np.min(TIES, 1, keepdims=True),
                                        -1, True), name='grad_of_max(min, keepdims)'),
    Spec(numpy_reductions.grad_of_max, (F(), np.array(TIES), 3.0), name='grad_of_max(all)'),
    Spec(numpy_reductions.grad_of_max, (A((3,)), np.array(WITH_ZEROS), np.array([1.5, 1.2, 2.0]), 1),
         {'where': MASK}, name='grad_of_max(where)'),
    Spec(operators.grad_of_matmul_a, (A((2, 4)), np.zeros((2, 3)), A((3, 4))), name='grad_of_matmul_a'),
    Spec(operators.grad_of_matmul_a, (A((2,)), np.zeros((2, 3)), A((3,))), name='grad_of_matmul_a(2,1)'),
    Spec(operators.grad_of_matmul_a, (A((4,)), np.zeros(3), A((3, 4))), name='grad_of_matmul_a(1,2)'),
    Spec(operators.grad_of_matmul_a, (A((5, 2, 4)), np.zeros((2, 3)), A((5, 3, 4))),
         name='grad_of_matmul_a(batched)'),
    Spec(operators.grad_of_matmul_b, (A((2, 4)), A((2, 3)), np.zeros((3, 4))), name='grad_of_matmul_b'),
    Spec(operators.grad_of_matmul_b, (A((2,)), A((2, 3)), np.zeros(3)), name='grad_of_matmul_b(2,1)'),
    Spec(operators.grad_of_matmul_b, (A((4,)), A((3,)), np.zeros((3, 4))), name='grad_of_matmul_b(1,2)'),
    Spec(operators.grad_of_matmul_b, (A((5, 2, 4)), A((5, 2, 3)), np.zeros((3, 4))),
         name='grad_of_matmul_b(batched)'),
    Spec(numpy_binary._share, (A((2, 3)), A((3,)), A((2, 3)), A((2, 3))), name='_share'),
    Spec(array_ops.gather, (A((3, 4)), np.array([[0, -1], [11, 11]])), name='gather'),
    Spec(array_ops.scatter_add, (A((2, 2)), np.array([[0, -1], [3, 3]]), (2, 3)), name='scatter_add'),
]
