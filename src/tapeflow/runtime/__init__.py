"""The eager runtime: Tensor, Variable, GradientTape, TF-style ops.

Modules (dependencies point up this list only):

    recorders   the active (thread-local) tapes and accumulators; Variable reads
    tensor      Tensor / Variable values, conversion
    recording   how operations reach the active recorders, as nodes
    dispatch    Tensor's operators, NumPy protocol and array methods (recorded)
    pytree      the one model of structured values (JAX's pytrees, register_pytree)
    structure   nested structures (tf.nest), on pytree
    backward    the reverse sweep over recorded nodes, UnconnectedGradients
    tape        GradientTape
    forward     ForwardAccumulator (eager forward mode, nests with tapes)
    custom      stop_gradient, custom_gradient
    ops         TF-style names over NumPy (reduce_sum, multiply, ...)

`support` (and any module for generated code) belongs to the compiler.

For the compiled-function path: `recording.read_call` (one tape) or
`is_watched(x)` / `variable_accessed(v)` decide which inputs a tape
differentiates, `recording.record_fused` records the call as one node,
`wrap(ndarray)` makes an output Tensor without conversion (`Tensor(value)`
converts like `constant`).
"""
from tapeflow import rules as _rules  # noqa: F401  (the rule table must be filled)
from tapeflow.runtime.recorders import (active_tapes, is_recording, is_watched,
                                        variable_accessed)
from tapeflow.runtime.tensor import (Reference, Tensor, Variable, as_value, constant,
                                     convert_to_tensor, wrap)
from tapeflow.runtime.recording import record_node
from tapeflow.runtime import dispatch  # noqa: F401  (gives Tensor its operations)
from tapeflow.runtime.tape import GradientTape, UnconnectedGradients
from tapeflow.runtime.forward import ForwardAccumulator
from tapeflow.runtime.custom import custom_gradient, stop_gradient
from tapeflow.runtime.ops import (  # noqa: A004  (TF's names shadow builtins on purpose)
    abs, add, argmax, argmin, bool, cast, complex64, complex128, concat, cos, divide, exp,
    fill, float16, float32, float64, identity, int8, int16, int32, int64, log, math, matmul,
    maximum, minimum, multiply, negative, ones, ones_like, pow, range, rank, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_sum, reshape, shape, sigmoid, sin, size,
    sqrt, square, stack, subtract, tan, tanh, transpose, truediv, uint8, where, zeros,
    zeros_like)

__all__ = [
    'Tensor', 'Variable', 'Reference', 'constant', 'convert_to_tensor', 'as_value',
    'GradientTape', 'UnconnectedGradients', 'ForwardAccumulator', 'custom_gradient',
    'stop_gradient',
    'record_node', 'variable_accessed', 'is_watched', 'is_recording', 'active_tapes',
    'abs', 'add', 'argmax', 'argmin', 'bool', 'cast', 'complex64', 'complex128', 'concat',
    'cos', 'divide', 'exp', 'fill', 'float16', 'float32', 'float64', 'identity', 'int8',
    'int16', 'int32', 'int64', 'log', 'math', 'matmul', 'maximum', 'minimum', 'multiply',
    'negative', 'ones', 'ones_like', 'pow', 'range', 'rank', 'reduce_max', 'reduce_mean',
    'reduce_min', 'reduce_prod', 'reduce_sum', 'reshape', 'shape', 'sigmoid', 'sin', 'size',
    'sqrt', 'square', 'stack', 'subtract', 'tan', 'tanh', 'transpose', 'truediv', 'uint8',
    'where', 'zeros', 'zeros_like',
]
