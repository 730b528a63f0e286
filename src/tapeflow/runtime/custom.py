"""User-controlled derivatives on the eager tape: `stop_gradient`, `custom_gradient`.

`custom_gradient` is TF's form: the decorated `f` returns `(y, grad_fn)`;
under a tape, the call is recorded as one node (via `record_node`) whose
backward is `grad_fn(*upstream)` -> one gradient per positional argument. As
in TF's eager mode, `f` itself runs while the tapes record, so values it
computes and `grad_fn` closes over stay connected for higher-order
derivatives. Trainable Variables `f` reads (that are not arguments) are
passed to `grad_fn(*upstream, variables=[...])`, which then returns
`(input_grads, variable_grads)`.
"""
from __future__ import annotations

import functools
import inspect

from tapeflow.rules import registry
from tapeflow.runtime.recorders import collecting_variable_reads, state
from tapeflow.runtime.recording import record_node
from tapeflow.runtime.structure import flatten, map_structure, pack_sequence_as
from tapeflow.runtime.tensor import Tensor, to_numpy_value, wrap

__all__ = ['stop_gradient', 'custom_gradient']


def stop_gradient(input, name=None):
    """The same values, through which no derivative flows."""
    return map_structure(_stop, input)


def _stop(x):
    if isinstance(x, Tensor):
        return wrap(x._value)
    return x


# The compiler reads the rule table: a call of stop_gradient carries no derivative.
registry.nondifferentiable(stop_gradient)


def custom_gradient(f=None):
    """Decorator: `f(*args)` returns `(y, grad_fn)`; `grad_fn(*dy)` gives d(args)."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if not state.tapes:
            result, _ = f(*args, **kwargs)
            return result
        with collecting_variable_reads() as watcher:
            result, grad_fn = f(*args, **kwargs)
        inputs = flatten(args)
        variables = _variables_read(watcher, inputs)
        if variables and not _accepts_variables(grad_fn):
            raise TypeError('@custom_gradient grad_fn must accept keyword argument '
                            f"'variables', since function uses variables: {variables}")
        flat_result = flatten(result)
        outputs = [wrap(to_numpy_value(r)) for r in flat_result]

        def backward(cotangents):
            upstream = [c if isinstance(c, Tensor) else wrap(c) for c in cotangents]
            if variables:
                input_grads, variable_grads = grad_fn(*upstream, variables=variables)
                variable_grads = list(variable_grads)
                if len(variable_grads) != len(variables):
                    raise ValueError('Must return gradient for each variable from '
                                     '@custom_gradient grad_fn.')
            else:
                input_grads = grad_fn(*upstream)
                variable_grads = []
            flat_grads = flatten(input_grads)
            if len(flat_grads) != len(inputs):
                raise ValueError(f'custom_gradient function expected to return {len(inputs)} '
                                 f'gradients, but returned {len(flat_grads)} instead.')
            return flat_grads + variable_grads

        record_node(inputs + variables, outputs, backward)
        return pack_sequence_as(result, outputs)

    decorated.__tapeflow_opaque__ = (
        'a @custom_gradient function gives its gradient to the eager tape (GradientTape) '
        'only; the compiler (grad, function, source) cannot read it: give the function its '
        'rule with tapeflow.defvjp instead')
    return decorated


def _variables_read(watcher, inputs):
    seen, found = set(), []
    for v in watcher:
        if v._trainable and id(v) not in seen and not any(v is x for x in inputs):
            seen.add(id(v))
            found.append(v)
    return found


def _accepts_variables(fn):
    try:
        spec = inspect.getfullargspec(fn)
    except TypeError:
        return True
    return 'variables' in spec.args or 'variables' in spec.kwonlyargs or spec.varkw is not None

