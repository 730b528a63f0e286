"""tapeflow: source-transforming automatic differentiation for Python and NumPy."""
from tapeflow._version import __version__  # noqa: F401
from tapeflow import rules  # noqa: F401  (fills the rule table)
from tapeflow.api import (grad, value_and_grad, vjp, jvp, source, jacfwd, jacrev,  # noqa: E402,F401
                          jacobian, hessian, hvp, checkpoint)
from tapeflow.checking import check_grads  # noqa: E402,F401
from tapeflow.cache import set_cache_size  # noqa: E402,F401
from tapeflow.disk_cache import set_cache_dir  # noqa: E402,F401
from tapeflow.syntax.errors import UnsupportedError, TapeflowError  # noqa: E402,F401
from tapeflow.rules.registry import MissingRule, nondifferentiable  # noqa: E402,F401
from tapeflow.rules.user import defjvp, defvjp  # noqa: E402,F401
from tapeflow.runtime import *  # noqa: E402,F401,F403  (Tensor, GradientTape, TF-style ops)
from tapeflow.runtime import __all__ as _runtime_names  # noqa: E402
from tapeflow.fused import function  # noqa: E402,F401
from tapeflow.mapping import vmap  # noqa: E402,F401
from tapeflow.custom_derivatives import custom_jvp, custom_vjp  # noqa: E402,F401
from tapeflow.linearization import linearize  # noqa: E402,F401
from tapeflow.runtime.pytree import register_pytree  # noqa: E402,F401
from tapeflow import calls as _calls  # noqa: E402,F401  (the run-time dispatcher's names)
from tapeflow import calls_higher as _calls_higher  # noqa: E402,F401  (and its higher orders)
