"""Rules for scipy.stats distributions, registered only when scipy.stats is imported.

Users write `norm.logpdf(x, mu, sigma)` with `from scipy.stats import norm`; the compiler
resolves `norm.logpdf` to the bound method of the distribution object, and a bound
method equals (and hashes as) any other reading of the same method of the same object,
so the table is keyed on `scipy.stats.norm.logpdf` as read once here.

Covered, each with a VJP and a JVP per positional argument:

* norm, expon, uniform (here), t, gamma, beta (`scipy_stats_shapes`): logpdf, pdf, cdf,
  logcdf, sf, logsf, in x, loc and scale; logpdf and pdf also in the shape parameters
  (df, a, b). Arguments broadcast as SciPy's do; each cotangent has its argument's
  shape. The cdf family has no rule in a shape parameter (the regularized incomplete
  beta and gamma functions have no closed-form derivative in their parameters):
  differentiating there is a located error, never a silent zero.
* poisson.logpmf and pmf in mu; k and loc are integers (no rule: an error if active).
* multivariate_normal.logpdf and pdf in x, mean and cov (`scipy_stats_mvn`).

(`rules/__init__` imports the three modules together, at the first lookup that misses
once scipy.stats is imported: `import tapeflow` never imports SciPy.)

At the edges: outside a distribution's support, where each method is a constant (0, 1
or -inf), the derivative is 0; uniform's pdf and logpdf are constant in x and loc but
at the ends of the support (derivative 0), its cdf is linear in between. Keyword
arguments (`loc=`, `scale=`, `df=`) that are not differentiated reach the rules;
differentiating one is refused at the call (`transforms.operations.rules_for`): pass
the argument positionally, `norm.logpdf(x, mu, sigma)`. The eager tape cannot record
these calls (SciPy converts Tensors with np.asarray, which the tape refuses): call them
inside a `tf.function`.

Each argument's rule is one *partial* `partial(g, ans, *args)`, linear in `g`: the JVP as
it stands (the tangent in `g`'s place), and, summed back to the argument's shape by
`fit`, the VJP (`partials`), as `entries.binary` builds them, keyword arguments
included. A partial is a `def` of one `return` (the compiler inlines it) calling
helpers that read only NumPy and scipy.special functions with rules of their own, so
the compiler differentiates the rules again (second order and beyond).
z = (x - loc) / scale throughout.
"""
import inspect
import math

import numpy as np

from tapeflow.rules.entries import entry
from tapeflow.rules.shapes import fit

try:
    import scipy.stats as st
except ImportError:  # pragma: no cover - SciPy is optional
    st = None

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
METHODS = ('logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf')


# ---------------------------------------------------------------- location-scale slopes

def slope_x(method, ans, scale, inside, logp, dlogp):
    """d method / dx of a location-scale distribution whose standard log density at z is
    `logp` (its derivative in z: `dlogp`), both read at a z inside the support; 0 where
    `inside` is False (each method is a constant there)."""
    if method == 'logpdf':
        return np.where(inside, dlogp / scale, 0.0)
    if method == 'pdf':
        return np.where(inside, ans * dlogp / scale, 0.0)
    if method == 'cdf':
        return np.where(inside, np.exp(logp) / scale, 0.0)
    if method == 'sf':
        return np.where(inside, -np.exp(logp) / scale, 0.0)
    # density / cdf from ans = log cdf: exact far into the tails
    ratio = np.exp(np.where(inside, logp - ans, 0.0)) / scale
    return np.where(inside, ratio if method == 'logcdf' else -ratio, 0.0)


def slope_scale(method, ans, scale, inside, z, dx):
    """d method / dscale from d method / dx: -z dx, less the density's 1/scale factor's
    own derivative for logpdf (1/scale) and pdf (ans/scale)."""
    if method == 'logpdf':
        return -z * dx - np.where(inside, 1.0 / scale, 0.0)
    if method == 'pdf':
        return -z * dx - ans / scale
    return -z * dx


def slope_shape(method, ans, inside, dlogp):
    """d method / d(a shape parameter) for logpdf and pdf, from d logpdf / d(it)."""
    if method == 'logpdf':
        return np.where(inside, dlogp, 0.0)
    return np.where(inside, ans * dlogp, 0.0)


def within(inside, z, fill):
    """z inside the support, `fill` outside: a z the formulas may read anywhere (their
    unselected branch of `np.where` must stay finite, or its derivative would be NaN)."""
    return np.where(inside, z, fill)


# ---------------------------------------------------------------- norm

def _norm_dx(ans, x, loc, scale, method):
    z = (x - loc) / scale
    return slope_x(method, ans, scale, z == z, -0.5 * z * z - LOG_SQRT_2PI, -z)


def _norm_dscale(ans, x, loc, scale, method):
    z = (x - loc) / scale
    return slope_scale(method, ans, scale, z == z, z, _norm_dx(ans, x, loc, scale, method))


def norm_logpdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'logpdf')
def norm_logpdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _norm_dx(ans, x, loc, scale, 'logpdf')
def norm_logpdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _norm_dscale(ans, x, loc, scale, 'logpdf')
def norm_pdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'pdf')
def norm_pdf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _norm_dx(ans, x, loc, scale, 'pdf')
def norm_pdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _norm_dscale(ans, x, loc, scale, 'pdf')
def norm_cdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'cdf')
def norm_cdf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _norm_dx(ans, x, loc, scale, 'cdf')
def norm_cdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _norm_dscale(ans, x, loc, scale, 'cdf')
def norm_logcdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'logcdf')
def norm_logcdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _norm_dx(ans, x, loc, scale, 'logcdf')
def norm_logcdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _norm_dscale(ans, x, loc, scale, 'logcdf')
def norm_sf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'sf')
def norm_sf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _norm_dx(ans, x, loc, scale, 'sf')
def norm_sf_scale(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dscale(ans, x, loc, scale, 'sf')
def norm_logsf_x(g, ans, x, loc=0.0, scale=1.0): return g * _norm_dx(ans, x, loc, scale, 'logsf')
def norm_logsf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _norm_dx(ans, x, loc, scale, 'logsf')
def norm_logsf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _norm_dscale(ans, x, loc, scale, 'logsf')


# ---------------------------------------------------------------- expon (support z >= 0)

def _expon_dx(ans, x, loc, scale, method):
    z = (x - loc) / scale
    inside = z >= 0.0
    return slope_x(method, ans, scale, inside, -within(inside, z, 1.0), -1.0)


def _expon_dscale(ans, x, loc, scale, method):
    z = (x - loc) / scale
    return slope_scale(method, ans, scale, z >= 0.0, z, _expon_dx(ans, x, loc, scale, method))


def expon_logpdf_x(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dx(ans, x, loc, scale, 'logpdf')
def expon_logpdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _expon_dx(ans, x, loc, scale, 'logpdf')
def expon_logpdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'logpdf')
def expon_pdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _expon_dx(ans, x, loc, scale, 'pdf')
def expon_pdf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _expon_dx(ans, x, loc, scale, 'pdf')
def expon_pdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'pdf')
def expon_cdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _expon_dx(ans, x, loc, scale, 'cdf')
def expon_cdf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _expon_dx(ans, x, loc, scale, 'cdf')
def expon_cdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'cdf')
def expon_logcdf_x(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dx(ans, x, loc, scale, 'logcdf')
def expon_logcdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _expon_dx(ans, x, loc, scale, 'logcdf')
def expon_logcdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'logcdf')
def expon_sf_x(g, ans, x, loc=0.0, scale=1.0): return g * _expon_dx(ans, x, loc, scale, 'sf')
def expon_sf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _expon_dx(ans, x, loc, scale, 'sf')
def expon_sf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'sf')
def expon_logsf_x(g, ans, x, loc=0.0, scale=1.0): return g * _expon_dx(ans, x, loc, scale, 'logsf')
def expon_logsf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _expon_dx(ans, x, loc, scale, 'logsf')
def expon_logsf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _expon_dscale(ans, x, loc, scale, 'logsf')


# ---------------------------------------------------------------- uniform (support 0 <= z <= 1)

def _uniform_inside(z, method):
    """Where the method moves with x: the open interval for the cdf family (constant
    outside it); nowhere for pdf and logpdf (constant in x but at the ends)."""
    if method == 'pdf' or method == 'logpdf':
        return z != z
    return (z > 0.0) & (z < 1.0)


def _uniform_dx(ans, x, loc, scale, method):
    z = (x - loc) / scale
    return slope_x(method, ans, scale, _uniform_inside(z, method), 0.0 * z, 0.0)


def _uniform_dscale(ans, x, loc, scale, method):
    z = (x - loc) / scale
    inside = (z >= 0.0) & (z <= 1.0)        # where pdf = 1 / scale
    return slope_scale(method, ans, scale, inside, z, _uniform_dx(ans, x, loc, scale, method))


def uniform_logpdf_x(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dx(ans, x, loc, scale, 'logpdf')
def uniform_logpdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _uniform_dx(ans, x, loc, scale, 'logpdf')
def uniform_logpdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'logpdf')
def uniform_pdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _uniform_dx(ans, x, loc, scale, 'pdf')
def uniform_pdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _uniform_dx(ans, x, loc, scale, 'pdf')
def uniform_pdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'pdf')
def uniform_cdf_x(g, ans, x, loc=0.0, scale=1.0): return g * _uniform_dx(ans, x, loc, scale, 'cdf')
def uniform_cdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _uniform_dx(ans, x, loc, scale, 'cdf')
def uniform_cdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'cdf')
def uniform_logcdf_x(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dx(ans, x, loc, scale, 'logcdf')
def uniform_logcdf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _uniform_dx(ans, x, loc, scale, 'logcdf')
def uniform_logcdf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'logcdf')
def uniform_sf_x(g, ans, x, loc=0.0, scale=1.0): return g * _uniform_dx(ans, x, loc, scale, 'sf')
def uniform_sf_loc(g, ans, x, loc=0.0, scale=1.0): return -g * _uniform_dx(ans, x, loc, scale, 'sf')
def uniform_sf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'sf')
def uniform_logsf_x(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dx(ans, x, loc, scale, 'logsf')
def uniform_logsf_loc(g, ans, x, loc=0.0, scale=1.0):
    return -g * _uniform_dx(ans, x, loc, scale, 'logsf')
def uniform_logsf_scale(g, ans, x, loc=0.0, scale=1.0):
    return g * _uniform_dscale(ans, x, loc, scale, 'logsf')


# ---------------------------------------------------------------- poisson (in mu)

def _poisson_dmu(ans, k, mu, loc, method):
    """d logpmf / dmu = k / mu - 1 at the support's integers k - loc >= 0 (pmf: times ans;
    elsewhere the pmf is 0 and the logpmf -inf: 0)."""
    n = k - loc
    support = (n >= 0) & (n == np.floor(n))
    slope = np.where(support, n / mu - 1.0, 0.0)
    return slope if method == 'logpmf' else ans * slope


def poisson_logpmf_mu(g, ans, k, mu, loc=0): return g * _poisson_dmu(ans, k, mu, loc, 'logpmf')
def poisson_pmf_mu(g, ans, k, mu, loc=0): return g * _poisson_dmu(ans, k, mu, loc, 'pmf')


# ---------------------------------------------------------------- registering

def _vjp_of(partial, argnum):
    """`fit(partial(g, ans, *args), args[argnum])` with the partial's own parameters (the
    compiler inlines it as that expression; where it cannot, generated code calls it, and
    differentiates it again as a function of named parameters)."""
    names = tuple(inspect.signature(partial).parameters)[2:]
    if names == ('x', 'loc', 'scale'):
        def vjp(g, ans, x, loc=0.0, scale=1.0):
            return fit(partial(g, ans, x, loc, scale), (x, loc, scale)[argnum])
    elif names == ('x', 'df', 'loc', 'scale'):
        def vjp(g, ans, x, df, loc=0.0, scale=1.0):
            return fit(partial(g, ans, x, df, loc, scale), (x, df, loc, scale)[argnum])
    elif names == ('x', 'a', 'loc', 'scale'):
        def vjp(g, ans, x, a, loc=0.0, scale=1.0):
            return fit(partial(g, ans, x, a, loc, scale), (x, a, loc, scale)[argnum])
    elif names == ('x', 'a', 'b', 'loc', 'scale'):
        def vjp(g, ans, x, a, b, loc=0.0, scale=1.0):
            return fit(partial(g, ans, x, a, b, loc, scale), (x, a, b, loc, scale)[argnum])
    else:                                       # poisson's (k, mu, loc)
        def vjp(g, ans, k, mu, loc=0):
            return fit(partial(g, ans, k, mu, loc), (k, mu, loc)[argnum])
    vjp.__tapeflow_inline__ = ('fit', partial, argnum)      # fit(<the partial>, arg)
    return vjp


def partials(fn, rules, *, name, forms):
    """Register `fn`'s rules from one partial per positional argument (None: no rule),
    as `entries.binary` does, keyword arguments reaching the partials."""
    vjps = tuple(None if rule is None else _vjp_of(rule, argnum)
                 for argnum, rule in enumerate(rules))
    return entry(fn, vjps, tuple(rules), forms=forms, name=name)


def location_scale(dist, defined, shapes=(), constant_in_x=()):
    """Register the methods of the distribution `dist` (a name in scipy.stats), their rules
    the partials `<dist>_<method>_<argument>` among `defined` (a module's globals): in x,
    the shape parameters (logpdf and pdf only), loc, scale. `constant_in_x`: the methods
    constant in x and loc but at the ends of the support, for the docs."""
    obj = getattr(st, dist)
    arguments = ['x', *shapes, 'loc', 'scale']
    forms = (f'{", ".join(arguments)} broadcast; '
             f'{", ".join(a + "=" for a in arguments[1:])} by keyword when not differentiated')
    for method in METHODS:
        rules = [defined[f'{dist}_{method}_x']]
        rules += [defined.get(f'{dist}_{method}_{s}') for s in shapes]
        rules += [defined[f'{dist}_{method}_loc'], defined[f'{dist}_{method}_scale']]
        described = forms
        if shapes and method not in ('logpdf', 'pdf'):
            function = 'gamma' if dist == 'gamma' else 'beta'
            described += (f'; no derivative in {", ".join(shapes)} (the incomplete {function} '
                          'function in its parameters: an error)')
        if method in constant_in_x:
            described += '; constant in x and loc but at the ends of the support (derivative 0)'
        partials(getattr(obj, method), tuple(rules), name=f'scipy.stats.{dist}.{method}',
                 forms=described)


if st is not None:
    location_scale('norm', globals())
    location_scale('expon', globals())
    location_scale('uniform', globals(), constant_in_x=('pdf', 'logpdf'))
    for _method, _rule in (('logpmf', poisson_logpmf_mu), ('pmf', poisson_pmf_mu)):
        partials(getattr(st.poisson, _method), (None, _rule, None),
                 name=f'scipy.stats.poisson.{_method}',
                 forms='derivative in mu; k and loc are integers (no derivative: an error)')
