"""The one compile path: `compilation.compile(function, spec)`."""
import dataclasses

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cache, compilation, export
from tapeflow.arguments import argument_kinds, array_shapes, scalar_positions
from tapeflow.callables import python_function_of
from tapeflow.compilation import Spec


def helper(x):
    return np.sin(x) * x


def loss(x):
    return np.sum(helper(x)) * 2.0


def spec_for(args, **options):
    return Spec('reverse', (0,), scalar_args=scalar_positions(args), arg_shapes=array_shapes(args),
                kinds=argument_kinds(args), **options)


def test_spec_is_frozen_and_keys_lists_as_tuples():
    spec = Spec('reverse', [0], kinds=[])
    assert spec.wrt == (0,) and spec.key() == Spec('reverse', (0,)).key()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.wrt = (1,)
    assert Spec('reverse', checkpoint=True).key() != Spec('reverse').key()
    assert Spec('forward', batched=True).key() != Spec('forward').key()


def test_compile_is_cached_and_is_what_grad_runs():
    x = np.linspace(0.1, 1.0, 3)
    g = tf.grad(loss)(x)
    compiled = compilation.compile(loss, spec_for((x,)))
    assert compiled is compilation.compile(loss, spec_for((x,)))
    assert compiled is compilation.compile_adjoint(loss, (0,), scalar_args=(), arg_shapes=((0, (3,)),),
                                                   kinds=argument_kinds((x,)))
    value, grads = compiled.combined(x, 1.0)
    assert value == loss(x) and np.array_equal(grads, g)


def test_callees_are_compiled_through_compile_with_the_callers_options():
    compiled = compilation.compile(loss, Spec('reverse', (0,), optimize=False))
    (callee,) = compiled.callees
    assert callee.fn is helper
    assert callee is compilation.compile(helper, Spec('reverse', (0,), kinds=callee_kinds(compiled),
                                                      optimize=False))


def callee_kinds(compiled):
    (link,) = compiled.links
    return link[2]['kinds']


def test_a_fresh_compilation_keeps_its_trees_and_leaves_the_cache_alone():
    before = dict(cache.stats)
    fresh = compilation.compile(loss, Spec('reverse', (0,)), fresh=True, record_passes=True)
    assert cache.stats['compiles'] == before['compiles']
    assert fresh is not compilation.compile(loss, Spec('reverse', (0,)))
    assert set(fresh.trees) == {'forward', 'backward', 'combined'} and fresh.passes
    assert [c.fn for c in fresh.callees] == [helper] and fresh.callees[0].trees


def test_export_generates_through_the_same_path():
    unit = export.generate(loss, (0,))
    cached = compilation.compile(loss, Spec('reverse', (0,)))
    assert unit.compiled.source == cached.source
    assert [u.name for u in unit.all_units()] == ['loss', 'helper']


def test_python_function_of_reads_a_gradient_as_a_def_calling_its_code():
    assert python_function_of(loss) is loss
    caller = python_function_of(tf.grad(loss))
    assert caller.__name__ == 'grad_loss' and caller.__tapeflow_adjoint__[1] is loss


def test_compile_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match='mode'):
        compilation.compile(loss, Spec('sideways'))
