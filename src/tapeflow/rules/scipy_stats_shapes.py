"""Rules for scipy.stats' t, gamma and beta: location-scale families with shape parameters.

logpdf, pdf, cdf, logcdf, sf, logsf in x, loc and scale; logpdf and pdf also in the shape
parameters (t's df, gamma's a, beta's a and b), whose derivatives need digamma. The cdf
family has no rule in a shape parameter: the regularized incomplete beta and gamma
functions have no closed-form derivative in their parameters (differentiating there is a
located error). Outside the support (gamma: z <= 0; beta: z outside (0, 1)) each method
is a constant and its derivative 0. Written and registered as `scipy_stats` writes
norm's: one partial per argument, z = (x - loc) / scale.
"""
import numpy as np

from tapeflow.rules.scipy_stats import location_scale, slope_scale, slope_shape, slope_x, within
from tapeflow.rules.shapes import fit  # noqa: F401  (the VJPs' template: fit(<partial>, x))

try:
    import scipy.special as sc
    import scipy.stats as st
except ImportError:  # pragma: no cover - SciPy is optional
    sc = st = None


# ---------------------------------------------------------------- t (df)

def _t_logp(z, df):
    return sc.gammaln(0.5 * (df + 1.0)) - sc.gammaln(0.5 * df) - 0.5 * np.log(df * np.pi) \
        - 0.5 * (df + 1.0) * np.log1p(z * z / df)


def _t_dx(ans, x, df, loc, scale, method):
    z = (x - loc) / scale
    return slope_x(method, ans, scale, z == z, _t_logp(z, df), -(df + 1.0) * z / (df + z * z))


def _t_dscale(ans, x, df, loc, scale, method):
    z = (x - loc) / scale
    return slope_scale(method, ans, scale, z == z, z, _t_dx(ans, x, df, loc, scale, method))


def _t_ddf(ans, x, df, loc, scale, method):
    z = (x - loc) / scale
    q = z * z / df
    dlogp = 0.5 * (sc.digamma(0.5 * (df + 1.0)) - sc.digamma(0.5 * df) - 1.0 / df
                   - np.log1p(q) + (df + 1.0) * q / (df + z * z))
    return slope_shape(method, ans, z == z, dlogp)


def t_logpdf_x(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dx(ans, x, df, loc, scale, 'logpdf')
def t_logpdf_df(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_ddf(ans, x, df, loc, scale, 'logpdf')
def t_logpdf_loc(g, ans, x, df, loc=0.0, scale=1.0):
    return -g * _t_dx(ans, x, df, loc, scale, 'logpdf')
def t_logpdf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'logpdf')
def t_pdf_x(g, ans, x, df, loc=0.0, scale=1.0): return g * _t_dx(ans, x, df, loc, scale, 'pdf')
def t_pdf_df(g, ans, x, df, loc=0.0, scale=1.0): return g * _t_ddf(ans, x, df, loc, scale, 'pdf')
def t_pdf_loc(g, ans, x, df, loc=0.0, scale=1.0): return -g * _t_dx(ans, x, df, loc, scale, 'pdf')
def t_pdf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'pdf')
def t_cdf_x(g, ans, x, df, loc=0.0, scale=1.0): return g * _t_dx(ans, x, df, loc, scale, 'cdf')
def t_cdf_loc(g, ans, x, df, loc=0.0, scale=1.0): return -g * _t_dx(ans, x, df, loc, scale, 'cdf')
def t_cdf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'cdf')
def t_logcdf_x(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dx(ans, x, df, loc, scale, 'logcdf')
def t_logcdf_loc(g, ans, x, df, loc=0.0, scale=1.0):
    return -g * _t_dx(ans, x, df, loc, scale, 'logcdf')
def t_logcdf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'logcdf')
def t_sf_x(g, ans, x, df, loc=0.0, scale=1.0): return g * _t_dx(ans, x, df, loc, scale, 'sf')
def t_sf_loc(g, ans, x, df, loc=0.0, scale=1.0): return -g * _t_dx(ans, x, df, loc, scale, 'sf')
def t_sf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'sf')
def t_logsf_x(g, ans, x, df, loc=0.0, scale=1.0): return g * _t_dx(ans, x, df, loc, scale, 'logsf')
def t_logsf_loc(g, ans, x, df, loc=0.0, scale=1.0):
    return -g * _t_dx(ans, x, df, loc, scale, 'logsf')
def t_logsf_scale(g, ans, x, df, loc=0.0, scale=1.0):
    return g * _t_dscale(ans, x, df, loc, scale, 'logsf')


# ---------------------------------------------------------------- gamma (a; support z > 0)

def _gamma_dx(ans, x, a, loc, scale, method):
    z = (x - loc) / scale
    inside = z > 0.0
    zs = within(inside, z, 1.0)
    logp = (a - 1.0) * np.log(zs) - zs - sc.gammaln(a)
    return slope_x(method, ans, scale, inside, logp, (a - 1.0) / zs - 1.0)


def _gamma_dscale(ans, x, a, loc, scale, method):
    z = (x - loc) / scale
    return slope_scale(method, ans, scale, z > 0.0, z, _gamma_dx(ans, x, a, loc, scale, method))


def _gamma_da(ans, x, a, loc, scale, method):
    z = (x - loc) / scale
    inside = z > 0.0
    return slope_shape(method, ans, inside, np.log(within(inside, z, 1.0)) - sc.digamma(a))


def gamma_logpdf_x(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dx(ans, x, a, loc, scale, 'logpdf')
def gamma_logpdf_a(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_da(ans, x, a, loc, scale, 'logpdf')
def gamma_logpdf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'logpdf')
def gamma_logpdf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'logpdf')
def gamma_pdf_x(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dx(ans, x, a, loc, scale, 'pdf')
def gamma_pdf_a(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_da(ans, x, a, loc, scale, 'pdf')
def gamma_pdf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'pdf')
def gamma_pdf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'pdf')
def gamma_cdf_x(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dx(ans, x, a, loc, scale, 'cdf')
def gamma_cdf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'cdf')
def gamma_cdf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'cdf')
def gamma_logcdf_x(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dx(ans, x, a, loc, scale, 'logcdf')
def gamma_logcdf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'logcdf')
def gamma_logcdf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'logcdf')
def gamma_sf_x(g, ans, x, a, loc=0.0, scale=1.0): return g * _gamma_dx(ans, x, a, loc, scale, 'sf')
def gamma_sf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'sf')
def gamma_sf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'sf')
def gamma_logsf_x(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dx(ans, x, a, loc, scale, 'logsf')
def gamma_logsf_loc(g, ans, x, a, loc=0.0, scale=1.0):
    return -g * _gamma_dx(ans, x, a, loc, scale, 'logsf')
def gamma_logsf_scale(g, ans, x, a, loc=0.0, scale=1.0):
    return g * _gamma_dscale(ans, x, a, loc, scale, 'logsf')


# ---------------------------------------------------------------- beta (a, b; support 0 < z < 1)

def _beta_inside(x, loc, scale):
    z = (x - loc) / scale
    return (z > 0.0) & (z < 1.0)


def _beta_dx(ans, x, a, b, loc, scale, method):
    inside = _beta_inside(x, loc, scale)
    zs = within(inside, (x - loc) / scale, 0.5)
    logp = (a - 1.0) * np.log(zs) + (b - 1.0) * np.log1p(-zs) - sc.betaln(a, b)
    return slope_x(method, ans, scale, inside, logp, (a - 1.0) / zs - (b - 1.0) / (1.0 - zs))


def _beta_dscale(ans, x, a, b, loc, scale, method):
    return slope_scale(method, ans, scale, _beta_inside(x, loc, scale), (x - loc) / scale,
                       _beta_dx(ans, x, a, b, loc, scale, method))


def _beta_da(ans, x, a, b, loc, scale, method):
    inside = _beta_inside(x, loc, scale)
    zs = within(inside, (x - loc) / scale, 0.5)
    return slope_shape(method, ans, inside, np.log(zs) - sc.digamma(a) + sc.digamma(a + b))


def _beta_db(ans, x, a, b, loc, scale, method):
    inside = _beta_inside(x, loc, scale)
    zs = within(inside, (x - loc) / scale, 0.5)
    return slope_shape(method, ans, inside, np.log1p(-zs) - sc.digamma(b) + sc.digamma(a + b))


def beta_logpdf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'logpdf')
def beta_logpdf_a(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_da(ans, x, a, b, loc, scale, 'logpdf')
def beta_logpdf_b(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_db(ans, x, a, b, loc, scale, 'logpdf')
def beta_logpdf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'logpdf')
def beta_logpdf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'logpdf')
def beta_pdf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'pdf')
def beta_pdf_a(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_da(ans, x, a, b, loc, scale, 'pdf')
def beta_pdf_b(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_db(ans, x, a, b, loc, scale, 'pdf')
def beta_pdf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'pdf')
def beta_pdf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'pdf')
def beta_cdf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'cdf')
def beta_cdf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'cdf')
def beta_cdf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'cdf')
def beta_logcdf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'logcdf')
def beta_logcdf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'logcdf')
def beta_logcdf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'logcdf')
def beta_sf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'sf')
def beta_sf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'sf')
def beta_sf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'sf')
def beta_logsf_x(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dx(ans, x, a, b, loc, scale, 'logsf')
def beta_logsf_loc(g, ans, x, a, b, loc=0.0, scale=1.0):
    return -g * _beta_dx(ans, x, a, b, loc, scale, 'logsf')
def beta_logsf_scale(g, ans, x, a, b, loc=0.0, scale=1.0):
    return g * _beta_dscale(ans, x, a, b, loc, scale, 'logsf')


if st is not None:
    location_scale('t', globals(), ('df',))
    location_scale('gamma', globals(), ('a',))
    location_scale('beta', globals(), ('a', 'b'))
