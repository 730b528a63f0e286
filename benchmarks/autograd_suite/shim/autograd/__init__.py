"""autograd's API, mapped onto tapeflow's: what autograd's own tests import.

Only the names autograd's test files use are here. `autograd.numpy` is NumPy
itself (tapeflow differentiates plain NumPy calls), and `tuple` is the builtin
(tapeflow differentiates tuples as they are).
"""
import builtins

import tapeflow as _tf

tuple = builtins.tuple
list = builtins.list
dict = builtins.dict
isinstance = builtins.isinstance


def grad(fun, argnum=0):
    return _tf.grad(fun, argnums=argnum)


def value_and_grad(fun, argnum=0):
    return _tf.value_and_grad(fun, argnums=argnum)
