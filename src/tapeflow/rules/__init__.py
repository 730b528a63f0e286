"""Derivative rules, one module per family of primitives (VJP and JVP side by side).

Importing this package fills the table in `registry`; nothing else does. The
family of an optional library (SciPy's) is registered when a lookup first needs it.
"""
import numpy as np

from tapeflow.rules import registry
from tapeflow.rules.registry import (RULES, ATTRIBUTES, METHODS, MissingRule, Primitive,
                                     defjvp, defvjp, jvp_rule, lookup, nondifferentiable,
                                     vjp_rule)
from tapeflow.rules.shapes import unbroadcast
from tapeflow.rules import operators, powers  # noqa: F401  (register)
from tapeflow.rules import (  # noqa: F401  (each registers its family)
    array_ops, indexing, numpy_elementwise, numpy_binary, numpy_reductions, numpy_statistics,
    numpy_scans, numpy_order, numpy_shape, numpy_constructors, numpy_join, numpy_products,
    numpy_interp, numpy_einsum, numpy_linalg, numpy_norms, numpy_fft, numpy_nondiff, numpy_methods,
    math_rules, user, fields, array_api, array_api_complex, sequence_ops, iterators, closures,
    dicts,
)


def _register_scipy_special():
    import importlib
    importlib.import_module('tapeflow.rules.scipy_special')


# scipy.special's rules (and np.i0's, which needs scipy's i1): when first needed
registry.lazily('scipy.special', _register_scipy_special, np.i0)


def _register_scipy_stats():
    import importlib
    for family in ('scipy_stats', 'scipy_stats_shapes', 'scipy_stats_mvn'):
        importlib.import_module(f'tapeflow.rules.{family}')


# scipy.stats' distributions (norm.logpdf...): when first needed, once scipy.stats is imported
registry.lazily('scipy.stats', _register_scipy_stats)


def _register_scipy_integrate():
    import importlib
    importlib.import_module('tapeflow.rules.scipy_integrate')


# scipy.integrate.odeint: when first needed, once scipy.integrate is imported
registry.lazily('scipy.integrate', _register_scipy_integrate)

__all__ = ['registry', 'RULES', 'ATTRIBUTES', 'METHODS', 'MissingRule', 'Primitive',
           'defvjp', 'defjvp', 'vjp_rule', 'jvp_rule', 'lookup', 'nondifferentiable',
           'unbroadcast']
