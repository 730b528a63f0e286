"""Spec table: scipy.stats distributions (their methods are bound methods, each spec's
function the very object the rule table is keyed on)."""
import numpy as np

from rulecheck import A, F, Spec
from specs_linalg import spd
from tapeflow.rules.registry import lookup

METHODS = ('logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf')


def registered(method):
    """The rule table's own key for a distribution's method (`norm.logpdf`)."""
    return lookup(method).fn


def _location_scale(dist, x, shapes, loc, scale, methods=METHODS, tag='', fixed=()):
    """Specs of every method of `dist` at broadcasting x, shape parameters, loc, scale.
    The cdf family has no derivative in the shape parameters: there they are `fixed`."""
    out = []
    for method in methods:
        fn = registered(getattr(dist, method))
        given = shapes if method in ('logpdf', 'pdf') or not fixed else fixed
        out.append(Spec(fn, (x, *given, loc, scale), name=f'stats.{dist.name}.{method}{tag}'))
    return out


def _scipy_stats_specs():
    try:
        import scipy.stats as st
    except ImportError:  # pragma: no cover
        return []
    out = []
    out += _location_scale(st.norm, A((2, 3), -3.0, 3.0), (), A((3,), -1.0, 1.0),
                           A((2, 1), 0.5, 2.0))
    out += _location_scale(st.norm, F(-2.0, 2.0), (), F(-1.0, 1.0), F(0.5, 2.0),
                           tag='(floats)')
    out += [Spec(registered(st.norm.logpdf), (A((3,)),), {'loc': 0.3, 'scale': 1.5},
                 name='stats.norm.logpdf(keywords)'),
            Spec(registered(st.norm.cdf), (A((3,)), 0.3), {'scale': 1.5},
                 name='stats.norm.cdf(scale=)'),
            Spec(registered(st.norm.logcdf), (A(value=[-30.0, -8.0, 0.5, 8.0]), A((4,))),
                 name='stats.norm.logcdf(tails)', rtol=1e-4),
            Spec(registered(st.norm.logsf), (A(value=[-8.0, 0.5, 8.0, 30.0]), A((4,))),
                 name='stats.norm.logsf(tails)', rtol=1e-4)]
    out += _location_scale(st.t, A((2, 3), -3.0, 3.0), (A((3,), 1.5, 8.0),),
                           A((3,), -1.0, 1.0), A((2, 1), 0.5, 2.0),
                           fixed=(np.array([1.7, 3.0, 6.5]),))
    out += [Spec(registered(st.t.logpdf), (A((3,)),), {'df': 4.0},
                 name='stats.t.logpdf(df=)')]
    out += _location_scale(st.gamma, A((2, 3), 0.5, 4.0), (A((3,), 0.5, 4.0),),
                           A((3,), -1.0, 0.0), A((2, 1), 0.5, 2.0),
                           fixed=(np.array([0.7, 1.5, 3.2]),))
    out += _location_scale(st.beta, A((2, 3), 0.1, 1.2), (A((3,), 0.5, 4.0), A((2, 1), 0.5, 4.0)),
                           A((3,), -0.2, 0.0), A((2, 1), 1.5, 2.0),
                           fixed=(np.array([0.7, 1.5, 3.2]), np.array([[0.6], [2.5]])))
    out += _location_scale(st.expon, A((2, 3), 0.5, 4.0), (), A((3,), -1.0, 0.0),
                           A((2, 1), 0.5, 2.0))
    out += _location_scale(st.uniform, A((2, 3), 0.1, 0.9), (), A((3,), -0.05, 0.0),
                           A((2, 1), 1.0, 1.2))
    # outside the support each method is a constant (logpdf and logcdf: -inf, whose finite
    # differences are NaN: left out)
    outside = ('pdf', 'cdf', 'sf', 'logsf')
    out += _location_scale(st.expon, A(value=[-1.0, -0.3, 0.4, 2.0]), (), 0.0, A((), 0.8, 1.2),
                           methods=outside, tag='(outside)')
    out += _location_scale(st.gamma, A(value=[-1.0, 0.4, 2.0]), (2.5,), 0.0,
                           A((), 0.8, 1.2), methods=outside, tag='(outside)')
    out += _location_scale(st.beta, A(value=[-0.5, 0.4, 1.5]), (A((), 1.5, 3.0), 2.0), 0.0,
                           A((), 0.8, 1.2), methods=('pdf',), tag='(outside)')
    out += _location_scale(st.beta, A(value=[-0.5, 0.4, 1.5]), (1.5, 2.0), 0.0,
                           A((), 0.8, 1.2), methods=('cdf', 'sf'), tag='(outside)')
    out += _location_scale(st.uniform, A(value=[-0.5, 0.4, 1.5]), (), 0.0, A((), 0.8, 1.2),
                           methods=('pdf', 'cdf', 'sf'), tag='(outside)')
    k = np.array([[0, 1, 3, 5], [2, 2, 7, 0]])
    out += [Spec(registered(st.poisson.logpmf), (k, A((4,), 0.5, 4.0)),
                 name='stats.poisson.logpmf'),
            Spec(registered(st.poisson.pmf), (k, A((4,), 0.5, 4.0)), name='stats.poisson.pmf'),
            Spec(registered(st.poisson.logpmf), (k + 1, A((4,), 0.5, 4.0), 1),
                 name='stats.poisson.logpmf(loc)'),
            Spec(registered(st.poisson.pmf), (np.array([0.5, 1.0, -1.0]), A((3,), 0.5, 4.0)),
                 name='stats.poisson.pmf(off the integers)')]
    for method in ('logpdf', 'pdf'):
        fn = registered(getattr(st.multivariate_normal, method))
        name = f'stats.multivariate_normal.{method}'
        out += [
            Spec(fn, (A((4, 3)), A((3,)), A(value=spd(3))), name=name),
            Spec(fn, (A((3,)), A((3,)), A(value=spd(3))), name=f'{name}(one point)'),
            Spec(fn, (A((2, 1, 3)), A((3,)), A(value=spd(3))), name=f'{name}(squeezed)'),
            Spec(fn, (A((2, 3)), None, A(value=spd(3))), name=f'{name}(mean None)'),
            Spec(fn, (A((2, 3)), A((3,)), A((3,), 0.5, 2.0)), name=f'{name}(diagonal cov)'),
            Spec(fn, (A((2, 3)), A((3,)), F(0.5, 2.0)), name=f'{name}(number cov)'),
            Spec(fn, (A((5,)), F(), F(0.5, 2.0)), name=f'{name}(D=1)'),
            Spec(fn, (F(), F(), F(0.5, 2.0)), name=f'{name}(numbers)'),
        ]
    return out


SPECS = _scipy_stats_specs()
