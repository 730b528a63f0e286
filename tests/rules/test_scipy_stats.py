"""scipy.stats distributions through the compiler, written as a user writes them.

Each case is a module of the user's (`from scipy.stats import norm`, then
`norm.logpdf(x, mu, sigma)`: the method read off the distribution object), differentiated
in every argument that has a derivative, at inputs inside the support: `tf.grad`'s value
against the plain call and its gradient against central differences along random
directions, `tf.jvp`'s tangent against the same differences, and the eager tape over a
`tf.function` against `tf.grad`. norm and multivariate_normal also to second order
(`tf.hessian`, and both modes of `check_grads`). Then the edges: keyword arguments,
arguments without a derivative (located errors), the lazy registration.
"""
import itertools
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest

import tapeflow as tf
from specs_linalg import spd
from tests.gradcheck import check_gradient, check_grads, numeric_directional
from tests.user_module import write_module

st = pytest.importorskip('scipy.stats')

METHODS = ('logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf')
IMPORTS = ('import numpy as np\n'
           'from scipy.stats import norm, t, gamma, beta, expon, uniform, poisson\n'
           'from scipy.stats import multivariate_normal as mvn\n\n\n')


def _uniform(lo, hi, shape=()):
    return lambda rng: rng.uniform(lo, hi, shape) if shape else float(rng.uniform(lo, hi))


# distribution -> its arguments (name, a draw inside the support), in order
LOCATION_SCALE = {
    'norm': [('x', _uniform(-3, 3, (2, 3))), ('loc', _uniform(-1, 1, (3,))),
             ('scale', _uniform(0.5, 2, (2, 1)))],
    't': [('x', _uniform(-3, 3, (2, 3))), ('df', _uniform(1.5, 8, (3,))),
          ('loc', _uniform(-1, 1)), ('scale', _uniform(0.5, 2, (2, 1)))],
    'gamma': [('x', _uniform(0.5, 4, (2, 3))), ('a', _uniform(0.5, 4, (3,))),
              ('loc', _uniform(-1, 0, (3,))), ('scale', _uniform(0.5, 2))],
    'beta': [('x', _uniform(0.1, 1.2, (2, 3))), ('a', _uniform(0.5, 4, (3,))),
             ('b', _uniform(0.5, 4, (2, 1))), ('loc', _uniform(-0.2, 0)),
             ('scale', _uniform(1.5, 2, (2, 1)))],
    'expon': [('x', _uniform(0.5, 4, (2, 3))), ('loc', _uniform(-1, 0, (3,))),
              ('scale', _uniform(0.5, 2, (2, 1)))],
    'uniform': [('x', _uniform(0.1, 0.9, (2, 3))), ('loc', _uniform(-0.05, 0, (3,))),
                ('scale', _uniform(1.0, 1.2, (2, 1)))],
}
SHAPES = {'df', 'a', 'b'}


def _cases():
    cases = []
    for dist, arguments in LOCATION_SCALE.items():
        for method in METHODS:
            names = [n for n, _ in arguments]
            # the cdf family has no derivative in a shape parameter: it stays a constant
            wrt = [n for n in names if method in ('logpdf', 'pdf') or n not in SHAPES]
            cases.append((f'{dist}.{method}', f'{dist}.{method}', arguments, wrt))
    k = np.array([[0, 1, 3, 5], [2, 2, 7, 0]])
    for method in ('logpmf', 'pmf'):
        cases.append((f'poisson.{method}', f'poisson.{method}',
                      [('k', lambda rng: k), ('mu', _uniform(0.5, 4, (4,)))], ['mu']))
    cases += [(f'mvn.{method}{tag}', f'mvn.{method}', arguments, [n for n, _ in arguments])
              for method in ('logpdf', 'pdf') for tag, arguments in MVN.items()]
    return cases


MVN = {
    '': [('x', _uniform(-2, 2, (4, 3))), ('mean', _uniform(-1, 1, (3,))),
         ('cov', lambda rng: spd(3))],
    '(one point)': [('x', _uniform(-2, 2, (3,))), ('mean', _uniform(-1, 1, (3,))),
                    ('cov', lambda rng: spd(3))],
    '(batch of batches)': [('x', _uniform(-2, 2, (2, 2, 3))), ('mean', _uniform(-1, 1, (3,))),
                           ('cov', lambda rng: spd(3) / 3.0)],
    '(diagonal cov)': [('x', _uniform(-2, 2, (2, 3))), ('mean', _uniform(-1, 1, (3,))),
                       ('cov', _uniform(0.5, 2, (3,)))],
    '(number cov)': [('x', _uniform(-2, 2, (2, 3))), ('mean', _uniform(-1, 1, (3,))),
                     ('cov', _uniform(0.5, 2))],
    '(D=1)': [('x', _uniform(-2, 2, (5,))), ('mean', _uniform(-1, 1)),
              ('cov', _uniform(0.5, 2))],
}
CASES = _cases()
_counter = itertools.count()


def _module(folder, call, arguments, wrt, rng):
    """`user(<wrt>)`: the weighted sum of `call(<arguments>)`, the others constants."""
    constants = {f'C_{n}': draw(rng) for n, draw in arguments if n not in wrt}
    values = {n: draw(rng) for n, draw in arguments if n in wrt}
    args = ', '.join(n if n in wrt else f'C_{n}' for n, _ in arguments)
    text = IMPORTS + (f'def user({", ".join(wrt)}):\n'
                      f'    return np.sum(W * {call}({args}))\n')
    module = write_module(folder, f'stats_user_{next(_counter)}', text)
    for name, value in constants.items():
        setattr(module, name, value)
    module.W = rng.standard_normal(np.shape(_plain(module, call, arguments, wrt, values)))
    return module, [values[n] for n in wrt]


def _plain(module, call, arguments, wrt, values):
    dist, method = call.split('.')
    fn = getattr(getattr(module, dist), method)
    return fn(*[values[n] if n in wrt else getattr(module, f'C_{n}') for n, _ in arguments])


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp('stats_modules')


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_value_gradient_tangent_and_tape_against_the_plain_call(case, folder):
    name, call, arguments, wrt = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    module, args = _module(folder, call, arguments, wrt, rng)
    argnums = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)      # inside the support: no inf, nan
        value, grads = tf.value_and_grad(module.user, argnums=argnums)(*args)
        np.testing.assert_allclose(value, module.user(*args), rtol=1e-12)
        for arg, grad in zip(args, grads):
            assert np.shape(grad) == np.shape(arg), (name, np.shape(grad), np.shape(arg))
            assert isinstance(grad, float) or not isinstance(arg, float), (name, type(grad))
        check_gradient(module.user, list(grads), args, argnums, rng, trials=3)

        tangents = [rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray)
                    else float(rng.standard_normal()) for a in args]
        out, tangent = tf.jvp(module.user, tuple(args), tuple(tangents))
        np.testing.assert_allclose(out, value, rtol=1e-12)
        numeric = numeric_directional(module.user, args, argnums, tangents)
        assert np.isclose(tangent, numeric, rtol=1e-5, atol=1e-6), (name, tangent, numeric)
        reverse = sum(float(np.sum(g * v)) for g, v in zip(grads, tangents))
        assert np.isclose(tangent, reverse, rtol=1e-10, atol=1e-12), (name, tangent, reverse)

        variables = [tf.Variable(np.array(a, dtype=np.float64)) for a in args]
        compiled = tf.function(module.user)
        with tf.GradientTape() as tape:
            y = compiled(*variables)
        taped = tape.gradient(y, variables)
        np.testing.assert_allclose(y.numpy(), value, rtol=1e-12)
        for got, expected in zip(taped, grads):
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------- second order

def logpdf_norm(x, mu, log_sigma):
    return np.sum(st.norm.logpdf(x, mu, np.exp(log_sigma)))


def cdf_norm(x, mu, sigma):
    return np.sum(np.log(st.norm.cdf(x, mu, sigma)) + st.norm.logsf(x, mu, sigma) * x)


def logpdf_mvn(y, mean, cov):
    return np.sum(st.multivariate_normal.logpdf(y, mean, cov))


def pdf_mvn(y, mean, cov):
    return np.sum(st.multivariate_normal.pdf(y, mean, cov) * y[..., 0])


RNG = np.random.default_rng(29)
X = RNG.uniform(-2, 2, (2, 3))
POINTS = RNG.uniform(-1, 1, (4, 3))
MEAN = RNG.uniform(-0.5, 0.5, 3)
COV = spd(3) / 3.0


def logpdf_norm_packed(p): return logpdf_norm(p[0], p[1], p[2])
def cdf_norm_packed(p): return cdf_norm(p[0], p[1], p[2])
def logpdf_mvn_packed(p): return logpdf_mvn(p[0], p[1], p[2])
def pdf_mvn_packed(p): return pdf_mvn(p[0], p[1], p[2])


@pytest.mark.parametrize('f, args', [
    (logpdf_norm_packed, (X, np.array([0.2, -0.3, 0.1]), 0.3)),
    (cdf_norm_packed, (X, 0.4, 1.3)),
    (logpdf_mvn_packed, (POINTS, MEAN, COV)),
    (pdf_mvn_packed, (POINTS, MEAN, COV)),
], ids=['norm.logpdf', 'norm.cdf/logsf', 'mvn.logpdf', 'mvn.pdf'])
def test_second_order_in_both_modes(f, args):
    rng = np.random.default_rng(zlib.crc32(f.__name__.encode()))
    check_grads(f, args, rng, order=2, what=f.__name__)


@pytest.mark.parametrize('f, args', [
    (logpdf_norm, (X, np.array([0.2, -0.3, 0.1]), 0.3)),
    (logpdf_mvn, (POINTS, MEAN, COV)),
], ids=['norm.logpdf', 'mvn.logpdf'])
def test_hessian_against_differences_of_the_gradient(f, args):
    for i in range(len(args)):
        hessian = tf.hessian(f, argnums=i)(*args)
        grad = tf.grad(f, argnums=i)
        x = args[i]
        shape = np.shape(x)
        assert np.shape(hessian) == shape + shape
        rng = np.random.default_rng(i)
        v = rng.standard_normal(shape) if shape else float(rng.standard_normal())
        h = 1e-6

        def moved(step):
            out = list(args)
            out[i] = x + step * v
            return np.asarray(grad(*out))
        numeric = (moved(h) - moved(-h)) / (2 * h)
        exact = np.tensordot(hessian, v, axes=len(shape)) if shape else hessian * v
        np.testing.assert_allclose(exact, numeric, rtol=1e-5, atol=1e-6)


def test_the_example_of_the_issue():
    from scipy.stats import norm

    def g(x, mu, s):
        return np.sum(norm.logpdf(x, mu, s))
    x = np.array([0.3, -1.2])
    gx, gmu, gs = tf.grad(g, argnums=(0, 1, 2))(x, 0.5, 2.0)
    z = (x - 0.5) / 2.0
    np.testing.assert_allclose(gx, -z / 2.0)
    assert isinstance(gmu, float) and isinstance(gs, float)
    np.testing.assert_allclose(gmu, np.sum(z / 2.0))
    np.testing.assert_allclose(gs, np.sum((z * z - 1.0) / 2.0))


def test_log_std_parameterisation_and_a_symmetric_cov_gradient():
    from scipy.stats import multivariate_normal as mvn

    def loss(mean, cov):
        return np.sum(mvn.logpdf(POINTS, mean, cov))
    gmean, gcov = tf.grad(loss, argnums=(0, 1))(MEAN, COV)
    precision = np.linalg.inv(COV)
    w = (POINTS - MEAN) @ precision
    symmetric = -0.5 * (len(POINTS) * precision - w.T @ w)
    np.testing.assert_allclose(gmean, w.sum(axis=0))
    # SciPy reads cov's lower triangle: the cotangent lives there (as np.linalg.cholesky's)
    np.testing.assert_allclose(gcov, np.tril(2.0 * symmetric) - np.diag(np.diag(symmetric)))
    np.testing.assert_allclose(np.triu(gcov, 1), 0.0)


# ---------------------------------------------------------------- keywords and edges

def keywords_not_differentiated(x):
    return np.sum(st.norm.logpdf(x, loc=0.3, scale=1.5) + st.t.cdf(x, df=4.0, scale=2.0))


def keyword_differentiated(x, mu):
    return np.sum(st.norm.logpdf(x, loc=mu))


def test_keyword_arguments_reach_the_rules_when_not_differentiated():
    x = np.array([0.2, -1.0, 2.5])
    grad = tf.grad(keywords_not_differentiated)(x)
    check_gradient(keywords_not_differentiated, [grad], [x], [0], np.random.default_rng(1))


def test_a_differentiated_keyword_argument_is_refused_at_its_line():
    with pytest.raises(tf.errors.UnsupportedError) as error:
        tf.grad(keyword_differentiated, argnums=(0, 1))(np.array([0.2, 1.0]), 0.5)
    message = str(error.value)
    assert "keyword argument 'loc'" in message and 'test_scipy_stats.py' in message


def cdf_in_df(x, df):
    return np.sum(st.t.cdf(x, df))


def poisson_in_k(k, mu):
    return np.sum(st.poisson.logpmf(k, mu))


@pytest.mark.parametrize('f, args, what', [
    (cdf_in_df, (np.array([0.3, 1.0]), 3.0), 'argument 1 of scipy.stats.t.cdf'),
    (poisson_in_k, (np.array([1.0, 2.0]), 2.0), 'argument 0 of scipy.stats.poisson.logpmf'),
])
def test_an_argument_without_a_derivative_is_a_located_error(f, args, what):
    with pytest.raises(tf.errors.UnsupportedError) as error:
        tf.grad(f, argnums=(0, 1))(*args)
    assert what in str(error.value) and 'test_scipy_stats.py' in str(error.value)


def mvn_with_a_covariance_object(x):
    return np.sum(st.multivariate_normal.logpdf(x, np.zeros(2),
                                                st.Covariance.from_diagonal([1.0, 2.0])))


def test_a_covariance_object_is_refused():
    with pytest.raises(NotImplementedError, match='Covariance'):
        tf.grad(mvn_with_a_covariance_object)(np.array([0.3, 0.4]))


def test_outside_the_support_a_constant_has_zero_derivative():
    def f(x, scale):
        return np.sum(st.expon.pdf(x, 0.0, scale) + st.gamma.cdf(x, 2.0, 0.0, scale)
                      + st.uniform.sf(x, 0.0, scale) + st.beta.logsf(x, 2.0, 3.0, 0.0, scale))
    x = np.array([-1.0, -0.2])
    gx, gscale = tf.grad(f, argnums=(0, 1))(x, 1.0)
    np.testing.assert_array_equal(gx, 0.0)
    assert gscale == 0.0


def test_scipy_stats_rules_wait_for_scipy_stats(tmp_path):
    script = tmp_path / 'lazy_stats.py'
    script.write_text('import sys, tapeflow as tf, numpy as np\n'
                      'print("scipy.stats" in sys.modules)\n'
                      'from scipy.stats import norm\n\n\n'
                      'def f(x):\n'
                      '    return norm.logcdf(x, 0.5, 2.0)\n\n\n'
                      'print(round(float(tf.grad(f)(0.3)), 12))\n')
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    z = (0.3 - 0.5) / 2.0
    expected = st.norm.pdf(z) / st.norm.cdf(z) / 2.0
    assert result.stdout.split() == ['False', str(round(float(expected), 12))]
