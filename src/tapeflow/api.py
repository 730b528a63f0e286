"""The functional API: grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, source.

Each transformation compiles the function once per set of differentiated
inputs (`compilation.compile`, cached) and calls the generated code; gradients
come back with the type and shape of their argument. Arguments and results are
pytrees (`runtime.pytree`: a dataclass's gradient is a dataclass); keyword
arguments are put in their places and never differentiated; a bound method is
read as a function of its other parameters, its object a constant.

The transformations live in modules of their own, gathered here:

    gradients    grad, value_and_grad, checkpoint, source
    products     vjp, jvp (and the sweeps they run: forward_value, backward_tapes)
    jacobians    jacfwd, jacrev, jacobian, hessian, hvp
    compilation  Spec, compile (compile_adjoint, compile_tangent: its fields as keywords)
    callables    python_function_of: what the compiler reads for a callable
    arguments    what a call's arguments make of the compilation's key, and their checks
    conversions  gradients in the type of their argument (like_argument, real_like)
"""
from __future__ import annotations

from tapeflow.arguments import (FunctionArgument, argument_kinds, array_shapes,  # noqa: F401
                                check_libraries, scalar_positions)
from tapeflow.callables import python_function_of  # noqa: F401
from tapeflow.compilation import Spec, compile, compile_adjoint, compile_tangent  # noqa: F401
from tapeflow.conversions import like_argument, real_like  # noqa: F401
from tapeflow.gradients import checkpoint, grad, source, value_and_grad  # noqa: F401
from tapeflow.jacobians import hessian, hvp, jacfwd, jacobian, jacrev  # noqa: F401
from tapeflow.products import backward_tapes, forward_value, jvp, vjp  # noqa: F401

__all__ = ['grad', 'value_and_grad', 'vjp', 'jvp', 'source', 'compile_adjoint', 'compile_tangent']

