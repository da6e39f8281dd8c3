"""secant.random's distributions beyond uniform/normal (gamma, beta, dirichlet, poisson,
binomial, multinomial, t, chisquare, f, pareto, weibull_min, rayleigh, wald, maxwell,
double_sided_maxwell, triangular, geometric, laplace, logistic, cauchy, lognormal, orthogonal,
rademacher, ball, generalized_normal, multivariate_normal, clone).

Expected values and gradients are jax.random's (jax 0.10.2, `jax.grad` for the gradients),
pasted as literals; jax itself is never imported here. Eagerly (NumPy's log, tan, pow) values
agree to a few ulps; under jit (XLA, as jax) the samplers outside the gamma family agree bit
for bit. Beside them: vmap over keys against a Python loop, moments against closed forms on
large samples, and gradients against float64 finite differences of the inverse CDF or
closed forms.
"""
import math

import numpy as np
import pytest
import scipy.special as sp

import secant
import secant.numpy as snp
from secant import random as R
from secant.backends.errors import SecantError

K = R.PRNGKey


A4 = np.array([0.3, 1.0, 2.5, 7.0], np.float32)
MEAN = np.array([1.0, -1.0], np.float32)
COV = np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)
CASES = {
    "cauchy": lambda k: R.cauchy(k, (5,)),
    "laplace": lambda k: R.laplace(k, (2, 3)),
    "logistic": lambda k: R.logistic(k, (5,)),
    "rademacher": lambda k: R.rademacher(k, (6,)),
    "maxwell": lambda k: R.maxwell(k, (4,)),
    "orthogonal": lambda k: R.orthogonal(k, 3),
    "orthogonal_wide": lambda k: R.orthogonal(k, 2, (2,), m=3),
    "geometric": lambda k: R.geometric(k, 0.3, (6,)),
    "poisson": lambda k: R.poisson(k, np.float32([0.5, 3.0, 12.0, 50.0, 0.0])),
    "poisson_shape": lambda k: R.poisson(k, 4.0, (2, 3)),
    "binomial": lambda k: R.binomial(k, np.float32([5., 20., 100., 40.]),
                                     np.float32([0.3, 0.6, 0.2, 0.9])),
    "multinomial": lambda k: R.multinomial(k, 10., np.float32([0.2, 0.3, 0.5])),
    "multinomial_batch": lambda k: R.multinomial(k, np.float32([5., 30.]),
                                                 np.float32([[0.1, 0.9], [0.5, 0.5]])),
    "gamma": lambda k: R.gamma(k, A4),
    "gamma_shape": lambda k: R.gamma(k, 2.0, (2, 3)),
    "loggamma": lambda k: R.loggamma(k, np.float32([0.01, 0.3, 1.0, 2.5])),
    "beta": lambda k: R.beta(k, A4, 2.0),
    "dirichlet": lambda k: R.dirichlet(k, np.float32([0.5, 1.0, 3.0]), (2,)),
    "chisquare": lambda k: R.chisquare(k, A4),
    "f": lambda k: R.f(k, A4, 5.0),
    "t": lambda k: R.t(k, A4),
    "pareto": lambda k: R.pareto(k, A4),
    "lognormal": lambda k: R.lognormal(k, 0.5, (4,)),
    "weibull_min": lambda k: R.weibull_min(k, 2.0, 1.5, (4,)),
    "rayleigh": lambda k: R.rayleigh(k, A4),
    "wald": lambda k: R.wald(k, A4),
    "triangular": lambda k: R.triangular(k, 0.0, 0.3, 2.0, (4,)),
    "double_sided_maxwell": lambda k: R.double_sided_maxwell(k, 1.0, 2.0, (4,)),
    "generalized_normal": lambda k: R.generalized_normal(k, 1.5, (4,)),
    "ball": lambda k: R.ball(k, 3, 2, (2,)),
    "multivariate_normal": lambda k: R.multivariate_normal(k, MEAN, COV, (3,)),
    "multivariate_normal_eigh": lambda k: R.multivariate_normal(k, MEAN, COV, method="eigh"),
}


# gradients at the key PRNGKey(5), at the parameters listed
K5 = K(5)
GRAD_CASES = {
    "gamma": (lambda a: R.gamma(K5, a).sum(), [0.3, 1.0, 2.5, 7.0]),
    "loggamma": (lambda a: R.loggamma(K5, a).sum(), [0.05, 0.3, 1.0, 2.5]),
    "beta": (lambda a: (R.beta(K5, a, a[::-1]) ** 2).sum(), [0.5, 1.0, 2.5, 4.0]),
    "dirichlet": (lambda a: (R.dirichlet(K5, a) * np.float32([1.0, 2.0, 3.0])).sum(),
                  [0.5, 1.0, 3.0]),
    "chisquare": (lambda a: R.chisquare(K5, a).sum(), [0.5, 1.0, 3.0]),
    "f": (lambda a: R.f(K5, a, a + 1.0).sum(), [1.5, 2.0, 6.0]),
    "t": (lambda a: R.t(K5, a).sum(), [1.5, 3.0, 10.0]),
    "pareto": (lambda a: R.pareto(K5, a).sum(), [1.5, 3.0, 10.0]),
    "lognormal": (lambda a: R.lognormal(K5, a).sum(), [0.5, 1.0, 2.0]),
    "weibull_min": (lambda a: R.weibull_min(K5, a, a * 2.0, (3,)).sum(), [0.5, 1.0, 2.0]),
    "rayleigh": (lambda a: R.rayleigh(K5, a).sum(), [0.5, 1.0, 2.0]),
    "wald": (lambda a: R.wald(K5, a).sum(), [0.5, 1.0, 2.0]),
    "triangular": (lambda a: R.triangular(K5, a[0], a[1], a[2], (4,)).sum(), [-1.0, 0.5, 2.0]),
    "double_sided_maxwell": (lambda a: R.double_sided_maxwell(K5, a[0], a[1], (3,)).sum(),
                             [1.0, 2.0]),
    "generalized_normal": (lambda a: (R.generalized_normal(K5, a[0], (4,)) ** 2).sum(), [1.5]),
    "multivariate_normal": (lambda a: (R.multivariate_normal(
        K5, a[:2], snp.array([[a[2], 0.3], [0.3, 1.0]]), (3,)) ** 2).sum(), [1.0, -1.0, 2.0]),
}


# jax.random's values: (name, seed) -> (dtype, shape, values)
EXPECTED = {
    ('cauchy', 0): ('float32', (5,), [6.0274944, 14.837895, -0.58172226, -0.09874987, 0.22315963]),
    ('cauchy', 7): ('float32', (5,), [0.6088751, 12.513639, -0.71298087, -0.17790125, 0.8865813]),
    ('laplace', 0): ('float32', (2, 3), [-2.2569816, -3.1502788, 0.40859544, 0.06471242, -0.15056418, 1.1056185]),
    ('laplace', 7): ('float32', (2, 3), [-0.42798662, -2.980525, 0.5013916, 0.1188769, -0.61947525, -0.30362076]),
    ('logistic', 0): ('float32', (5,), [2.896376, 3.8217716, -0.6978392, -0.12549055, 0.2813971]),
    ('logistic', 7): ('float32', (5,), [0.726742, 3.6479602, -0.8337934, -0.22511172, 0.99912536]),
    ('rademacher', 0): ('int32', (6,), [-1, -1, 1, 1, -1, 1]),
    ('rademacher', 7): ('int32', (6,), [-1, -1, 1, 1, -1, -1]),
    ('maxwell', 0): ('float32', (4,), [2.6310966, 0.99103284, 0.9649306, 3.0782752]),
    ('maxwell', 7): ('float32', (4,), [2.0702868, 0.7144703, 1.4999796, 1.705673]),
    ('orthogonal', 0): ('float32', (3, 3), [0.9554101, 0.29413575, 0.025995579, -0.046289816, 0.23614088, -0.9706156, -0.29163137, 0.9261326, 0.23922686]),
    ('orthogonal', 7): ('float32', (3, 3), [0.9206921, 0.34078068, -0.19024861, -0.28757206, 0.9218923, 0.2596481, -0.26387176, 0.18434578, -0.9467779]),
    ('orthogonal_wide', 0): ('float32', (2, 2, 3), [0.96083665, -0.25675002, 0.10427104, 0.18604839, 0.3188112, -0.92937905, -0.21241558, 0.28491512, 0.9347209, 0.07759596, -0.9486112, 0.30678275]),
    ('orthogonal_wide', 7): ('float32', (2, 2, 3), [0.48973513, -0.5602856, 0.66801167, 0.869762, 0.3672174, -0.32964438, -0.08512771, -0.97259504, -0.21636172, -0.1015641, -0.20754851, 0.97293806]),
    ('geometric', 0): ('int32', (6,), [1, 1, 4, 3, 2, 6]),
    ('geometric', 7): ('int32', (6,), [2, 1, 4, 3, 1, 2]),
    ('poisson', 0): ('int32', (5,), [0, 0, 7, 57, 0]),
    ('poisson', 7): ('int32', (5,), [2, 1, 11, 64, 0]),
    ('poisson_shape', 0): ('int32', (2, 3), [0, 1, 5, 5, 2, 2]),
    ('poisson_shape', 7): ('int32', (2, 3), [4, 1, 1, 4, 2, 8]),
    ('binomial', 0): ('float32', (4,), [2., 15., 15., 37.]),
    ('binomial', 7): ('float32', (4,), [2., 9., 19., 34.]),
    ('multinomial', 0): ('float32', (3,), [1., 1., 8.]),
    ('multinomial', 7): ('float32', (3,), [2., 4., 4.]),
    ('multinomial_batch', 0): ('float32', (2, 2), [0., 5., 16., 14.]),
    ('multinomial_batch', 7): ('float32', (2, 2), [0., 5., 16., 14.]),
    ('gamma', 0): ('float32', (4,), [0.6292697, 0.7262849, 1.5440423, 10.622705]),
    ('gamma', 7): ('float32', (4,), [0.0000005715881, 0.21791683, 1.3155578, 10.075584]),
    ('gamma_shape', 0): ('float32', (2, 3), [1.5897877, 1.7599413, 1.1290071, 3.974334, 2.9546, 1.9788084]),
    ('gamma_shape', 7): ('float32', (2, 3), [2.072419, 0.86365986, 0.93690395, 3.6211073, 0.7773278, 1.0894324]),
    ('loggamma', 0): ('float32', (4,), [-11.478928, -0.28003234, -1.0469409, 1.5479994]),
    ('loggamma', 7): ('float32', (4,), [-438.77298, -1.841815, -1.3752441, 1.4638858]),
    ('beta', 0): ('float32', (4,), [0.14511426, 0.33743465, 0.84806144, 0.8831656]),
    ('beta', 7): ('float32', (4,), [0.0012585266, 0.23778991, 0.427386, 0.85871875]),
    ('dirichlet', 0): ('float32', (2, 3), [0.24713923, 0.20291731, 0.54994345, 0.0155561315, 0.3350609, 0.649383]),
    ('dirichlet', 7): ('float32', (2, 3), [0.000121358964, 0.11317272, 0.88670594, 0.5276351, 0.04035973, 0.4320052]),
    ('chisquare', 0): ('float32', (4,), [0.7324711, 2.058155, 1.0705074, 12.185385]),
    ('chisquare', 7): ('float32', (4,), [0.00000000000044062467, 0.6042268, 0.8189889, 11.335663]),
    ('f', 0): ('float32', (4,), [0.0053632064, 0.000102750455, 0.11981054, 0.5867016]),
    ('f', 7): ('float32', (4,), [1.9959407, 0.0538132, 1.6181008, 1.128706]),
    ('t', 0): ('float32', (4,), [15.137823, -140.09967, -1.9337534, -1.4768523]),
    ('t', 7): ('float32', (4,), [1.1398917, 0.68028545, -0.50479114, -0.5909652]),
    ('pareto', 0): ('float32', (4,), [18652.963, 46.685074, 1.1753447, 1.0945446]),
    ('pareto', 7): ('float32', (4,), [41.97661, 39.396263, 1.1552285, 1.0874599]),
    ('lognormal', 0): ('float32', (4,), [2.2508795, 2.752838, 0.8050932, 0.9614539]),
    ('lognormal', 7): ('float32', (4,), [1.2530963, 2.6557455, 0.7725027, 0.9319556]),
    ('weibull_min', 0): ('float32', (4,), [4.1139336, 4.9072957, 1.0928195, 1.4734783]),
    ('weibull_min', 7): ('float32', (4,), [2.158415, 4.7617164, 1.013516, 1.401992]),
    ('rayleigh', 0): ('float32', (4,), [0.098363504, 0.20810027, 3.7110355, 8.618018]),
    ('rayleigh', 7): ('float32', (4,), [0.26644048, 0.22676343, 3.8641605, 8.9206705]),
    ('wald', 0): ('float32', (4,), [0.17426285, 0.41566527, 0.8132444, 0.6077533]),
    ('wald', 7): ('float32', (4,), [0.5472364, 1.1520158, 1.1185877, 2.351543]),
    ('triangular', 0): ('float32', (4,), [1.5781798, 1.7301326, 0.49327874, 0.65592885]),
    ('triangular', 7): ('float32', (4,), [0.9473394, 1.706227, 0.4604118, 0.6250305]),
    ('double_sided_maxwell', 0): ('float32', (4,), [4.091442, 4.1482553, -3.165061, 5.5848346]),
    ('double_sided_maxwell', 7): ('float32', (4,), [-1.477191, -4.1701055, 3.7603445, 5.8724093]),
    ('generalized_normal', 0): ('float32', (4,), [1.0603918, 0.08920828, -1.3751338, 0.5591429]),
    ('generalized_normal', 7): ('float32', (4,), [-0.11314882, -0.78606486, 0.058673814, 0.3168769]),
    ('ball', 0): ('float32', (2, 3), [0.91715974, 0.39274216, 0.011653502, -0.8613651, 0.31684825, -0.06285544]),
    ('ball', 7): ('float32', (2, 3), [-0.36388415, 0.3945854, 0.119758196, -0.48726168, 0.1332288, -0.14461814]),
    ('multivariate_normal', 0): ('float32', (3, 2), [3.2947626, 1.4681523, 0.38680488, -1.2268386, 1.2490301, -1.8470488]),
    ('multivariate_normal', 7): ('float32', (3, 2), [1.6381428, 0.9868218, 0.26992714, -1.3143559, 1.8704438, -0.46966463]),
    ('multivariate_normal_eigh', 0): ('float32', (2,), [-1.2268403, -3.486308]),
    ('multivariate_normal_eigh', 7): ('float32', (2,), [-1.5274396, -2.4818053]),
}

# jax.grad of GRAD_CASES
GRADS = {
    'gamma': [3.2206113, 0.9635612, 1.1647146, 1.3636084],
    'loggamma': [25.798029, 8.643314, 1.0919938, 0.26021957],
    'beta': [-0.18437383, -0.131767, 0.072934255, 0.00828621],
    'dirichlet': [-0.50730586, -0.041244116, 0.1371325],
    'chisquare': [3.5678413, 0.9230328, 1.2156614],
    'f': [0.278245, -0.23862624, -1.4992156],
    't': [-0.325655, -0.0019265804, -0.0062895915],
    'pareto': [-0.4242985, -0.65657437, -0.015205998],
    'lognormal': [-0.08088769, 5.785402, 2.224855],
    'weibull_min': [0.9201882, 0.8513926, 0.99731874],
    'rayleigh': [1.2351152, 0.4060158, 0.7833047],
    'wald': [0.6379021, 0.1677602, 0.23150036],
    'triangular': [1.2297685, 1.2632802, 1.5069513],
    'double_sided_maxwell': [3., 5.192825],
    'generalized_normal': [-5.658026],
    'multivariate_normal': [11.416552, -4.088543, 3.8908088],
}

# jax's values under jax_enable_x64 (PRNGKey(1)); float16 and float32 asked for explicitly
X64 = [
    ('gamma', lambda k: R.gamma(k, np.array([0.3, 1.0, 2.5, 7.0])), 'float64',
     [0.5441703677287321, 0.4857371503601997, 1.7146706515236512, 4.827396165931032]),
    ('beta', lambda k: R.beta(k, 2.0, 3.0, (3,)), 'float64',
     [0.48933091748476093, 0.3243465838838159, 0.38598512256812056]),
    ('pareto', lambda k: R.pareto(k, 3.0, (3,)), 'float64',
     [1.0428018686801186, 1.2233155626509373, 1.3233986901358437]),
    ('poisson', lambda k: R.poisson(k, np.array([2.0, 30.0])), 'int64', [4, 31]),
    ('binomial', lambda k: R.binomial(k, 50.0, 0.4, (3,)), 'float64', [18.0, 19.0, 23.0]),
    ('cauchy', lambda k: R.cauchy(k, (3,)), 'float64',
     [-2.569232864834515, -0.1463018108528719, 0.2187568239658422]),
    ('t', lambda k: R.t(k, 4.0, (3,)), 'float64',
     [1.0646376699466251, 0.36212997537051966, -0.9894822140466116]),
    ('gamma_f32', lambda k: R.gamma(k, 2.0, (3,), np.float32), 'float32',
     [1.1647965908050537, 1.3505915403366089, 3.7021079063415527]),
    ('laplace_f16', lambda k: R.laplace(k, (3,), np.float16), 'float16',
     [0.81689453125, 2.765625, -0.53857421875]),
]

# the samplers whose float arithmetic XLA may fuse differently from jax's program (gamma's
# rejection loop and what is built on it): a few ulps under jit too
GAMMA_FAMILY = {"gamma", "gamma_shape", "loggamma", "beta", "dirichlet", "chisquare", "f", "t",
                "generalized_normal", "ball", "double_sided_maxwell", "multivariate_normal_eigh",
                "wald"}

# the samplers built on a QR factorisation: its Householder rounding under jit depends on the
# host CPU's kernels (3.4e-6 relative on an AMD EPYC against the values jax recorded elsewhere)
QR_FAMILY = {"orthogonal", "orthogonal_wide"}


def _expected(name, seed):
    dt, shape, vals = EXPECTED[(name, seed)]
    return np.array(vals, dtype=dt).reshape(shape)


def _close(got, want, rtol):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    if rtol is None or want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-2)


# compiled once each (the rest share their code: beta, f, ball, ... are gamma and ops)
JIT = {"cauchy", "laplace", "logistic", "rademacher", "maxwell", "orthogonal_wide", "geometric",
       "poisson", "binomial", "gamma", "pareto", "lognormal", "weibull_min", "rayleigh",
       "triangular", "wald", "multivariate_normal"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_jax_eagerly_and_under_jit(name):
    fn = CASES[name]
    jitted = secant.jit(fn) if name in JIT else None
    for seed in (0, 7):
        want = _expected(name, seed)
        _close(fn(K(seed)), want, 5e-6)
        if jitted is not None:
            _close(jitted(K(seed)), want, 2e-6 if name in GAMMA_FAMILY else
                   5e-6 if name in QR_FAMILY else None)


@pytest.mark.parametrize("name,fn,dtype,expected", X64, ids=[c[0] for c in X64])
def test_values_are_jax_in_x64_and_other_dtypes(name, fn, dtype, expected, x64):
    want = np.array(expected, dtype)
    rtol = 1e-3 if dtype == "float16" else 1e-12 if dtype == "float64" else 5e-6
    _close(fn(K(1)), want, None if dtype == "int64" else rtol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_over_keys_equals_a_python_loop(name):
    fn = CASES[name]
    keys = R.split(K(3), 3)
    loop = np.stack([np.asarray(fn(keys[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(secant.vmap(fn)(keys)), loop, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["gamma"])
def test_jit_of_vmap_over_keys_equals_a_python_loop(name):
    fn = CASES[name]
    keys = R.split(K(4), 3)
    loop = np.stack([np.asarray(fn(keys[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(fn))(keys)), loop, rtol=2e-6)


def test_vmap_over_parameters_equals_a_python_loop():
    a = np.array([0.4, 1.0, 3.0, 9.0], np.float32)
    for fn in (lambda x: R.gamma(K(2), x, (3,)), lambda x: R.pareto(K(2), x, (3,)),
               lambda x: R.beta(K(2), x, 2.0, (2,)), lambda x: R.t(K(2), x, (2,))):
        loop = np.stack([np.asarray(fn(v)) for v in a])
        np.testing.assert_allclose(np.asarray(secant.vmap(fn)(a)), loop, rtol=1e-6)
    lam = np.array([1.0, 4.0, 25.0], np.float32)
    fn = lambda x: R.poisson(K(2), x, (5,))  # noqa: E731
    loop = np.stack([np.asarray(fn(v)) for v in lam])
    np.testing.assert_array_equal(np.asarray(secant.vmap(fn)(lam)), loop)


# --- gradients ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_are_jax(name):
    fn, x = GRAD_CASES[name]
    got = secant.grad(fn)(np.array(x, np.float32))
    np.testing.assert_allclose(np.asarray(got), np.array(GRADS[name], np.float32),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["gamma"])
def test_gradients_under_jit_are_jax(name):
    fn, x = GRAD_CASES[name]
    got = secant.jit(secant.grad(fn))(np.array(x, np.float32))
    np.testing.assert_allclose(np.asarray(got), np.array(GRADS[name], np.float32),
                               rtol=1e-4, atol=1e-5)


def _d_inverse_cdf(a, x, h=1e-6):
    """d x / d a at the fixed probability u = P(a, x): float64 central differences of SciPy's
    gammaincinv."""
    u = sp.gammainc(a, x)
    return (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)


def test_gamma_gradient_is_the_inverse_cdfs_derivative(x64):
    a = np.array([0.2, 0.7, 1.0, 2.5, 10.0, 40.0])
    k = K(11)
    x = np.asarray(R.gamma(k, a))
    got = np.asarray(secant.grad(lambda a: snp.sum(R.gamma(k, a)))(a))
    np.testing.assert_allclose(got, _d_inverse_cdf(a, x), rtol=1e-5)
    # loggamma: d log x / d a
    log_x = np.asarray(R.loggamma(k, a))
    got = np.asarray(secant.grad(lambda a: snp.sum(R.loggamma(k, a)))(a))
    np.testing.assert_allclose(got, _d_inverse_cdf(a, np.exp(log_x)) / np.exp(log_x), rtol=1e-5)
    # jvp, and vmap of grad over keys, agree with it
    _, tangent = secant.jvp(lambda a: R.gamma(k, a), (a,), (np.ones_like(a),))
    np.testing.assert_allclose(np.asarray(tangent), _d_inverse_cdf(a, x), rtol=1e-5)
    keys = R.split(k, 2)
    per_key = secant.vmap(secant.grad(lambda a, kk: snp.sum(R.gamma(kk, a))),
                          in_axes=(None, 0))(a, keys)
    for i in range(2):
        xi = np.asarray(R.gamma(keys[i], a))
        np.testing.assert_allclose(np.asarray(per_key)[i], _d_inverse_cdf(a, xi), rtol=1e-5)


def test_gradients_of_closed_form_transforms(x64):
    k = K(12)
    b = np.array([1.5, 3.0, 8.0])
    x = np.asarray(R.pareto(k, b))              # x = exp(E / b): dx/db = -x log(x) / b
    got = secant.grad(lambda b: snp.sum(R.pareto(k, b)))(b)
    np.testing.assert_allclose(np.asarray(got), -x * np.log(x) / b, rtol=1e-10)
    s = np.array([0.5, 1.0, 2.0])
    x = np.asarray(R.rayleigh(k, s))            # x = s * sqrt(-2 log u): dx/ds = x / s
    got = secant.grad(lambda s: snp.sum(R.rayleigh(k, s)))(s)
    np.testing.assert_allclose(np.asarray(got), x / s, rtol=1e-10)
    x = np.asarray(R.lognormal(k, s))           # x = exp(s n): dx/ds = x log(x) / s
    got = secant.grad(lambda s: snp.sum(R.lognormal(k, s)))(s)
    np.testing.assert_allclose(np.asarray(got), x * np.log(x) / s, rtol=1e-10)
    c = np.array([0.7, 1.5, 3.0])               # x = 2 E^(1/c): dx/dc = -x log(E) / c**2
    x = np.asarray(R.weibull_min(k, 2.0, c, (3,)))
    got = secant.grad(lambda c: snp.sum(R.weibull_min(k, 2.0, c, (3,))))(c)
    np.testing.assert_allclose(np.asarray(got), -x * np.log((x / 2.0) ** c) / c ** 2, rtol=1e-10)
    lo, hi = -1.0, 3.0                          # triangular: the inverse CDF in closed form
    u = np.asarray(R.uniform(k, (4,), np.float64))
    grads = secant.grad(lambda m: snp.sum(R.triangular(k, lo, m, hi, (4,))))(0.5)

    def inverse_cdf(m):
        fc = (m - lo) / (hi - lo)
        return np.where(u < fc, lo + np.sqrt(u * (hi - lo) * (m - lo)),
                        hi - np.sqrt((1 - u) * (hi - lo) * (hi - m)))
    np.testing.assert_allclose(float(grads), np.sum(inverse_cdf(0.5 + 1e-6)
                                                     - inverse_cdf(0.5 - 1e-6)) / 2e-6,
                               rtol=1e-6)


def test_integer_samplers_are_constants_for_grad():
    # poisson/geometric/rademacher give integers: a differentiated parameter has no effect
    def f(lam):
        return lam * snp.sum(R.poisson(K(1), lam, (4,)).astype(np.float32))
    counts = np.asarray(R.poisson(K(1), 3.0, (4,))).sum()
    assert float(secant.grad(f)(3.0)) == pytest.approx(counts)


# --- statistics --------------------------------------------------------------------------------
N = 20000


def _moments(x, mean, var, axis=0):
    x = np.asarray(x, np.float64)
    m = x.mean(axis)
    np.testing.assert_array_less(np.abs(m - mean), 5 * np.sqrt(np.asarray(var) / x.shape[axis]))
    np.testing.assert_allclose(x.var(axis), var, rtol=0.08)


def test_moments_match_closed_forms():
    k = K(21)
    a = np.array([0.3, 1.0, 4.0], np.float32)
    _moments(R.gamma(k, a, (N, 3)), a, a)
    _moments(R.beta(k, 2.0, 5.0, (N,)), 2 / 7, 10 / (49 * 8))
    _moments(R.chisquare(k, 3.0, (N,)), 3.0, 6.0)
    _moments(R.t(k, 6.0, (N,)), 0.0, 6 / 4)
    _moments(R.f(k, 4.0, 12.0, (N,)), 12 / 10, 2 * 144 * 14 / (4 * 100 * 8))
    _moments(R.pareto(k, 6.0, (N,)), 6 / 5, 6 / (25 * 4))
    _moments(R.lognormal(k, 0.5, (N,)), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25))
    _moments(R.weibull_min(k, 2.0, 1.5, (N,)), 2 * math.gamma(1 + 1 / 1.5),
             4 * (math.gamma(1 + 2 / 1.5) - math.gamma(1 + 1 / 1.5) ** 2))
    _moments(R.rayleigh(k, 2.0, (N,)), 2 * np.sqrt(np.pi / 2), (4 - np.pi) / 2 * 4)
    _moments(R.wald(k, 1.5, (N,)), 1.5, 1.5 ** 3)
    _moments(R.triangular(k, 0.0, 1.0, 4.0, (N,)), 5 / 3, (16 + 1 - 4) / 18)
    _moments(R.maxwell(k, (N,)), 2 * np.sqrt(2 / np.pi), (3 * np.pi - 8) / np.pi)
    _moments(R.double_sided_maxwell(k, 1.0, 2.0, (N,)), 1.0, 3 * 4)
    _moments(R.laplace(k, (N,)), 0.0, 2.0)
    _moments(R.logistic(k, (N,)), 0.0, np.pi ** 2 / 3)
    _moments(R.generalized_normal(k, 1.5, (N,)), 0.0, math.gamma(3 / 1.5) / math.gamma(1 / 1.5))
    _moments(R.rademacher(k, (N,)), 0.0, 1.0)
    _moments(R.geometric(k, 0.25, (N,)), 4.0, 0.75 / 0.0625)
    lam = np.array([0.5, 4.0, 30.0, 200.0], np.float32)
    _moments(R.poisson(k, lam, (N, 4)), lam, lam)
    n, p = np.array([8.0, 30.0, 400.0, 60.0], np.float32), np.array([0.3, 0.5, 0.2, 0.9],
                                                                    np.float32)
    _moments(R.binomial(k, n, p, (N, 4)), n * p, n * p * (1 - p))
    log_g = R.loggamma(k, a, (N, 3))
    _moments(log_g, sp.digamma(a), sp.polygamma(1, a))
    c = np.asarray(R.cauchy(k, (N,)))
    np.testing.assert_allclose(np.percentile(c, [25, 50, 75]), [-1, 0, 1], atol=0.05)


def test_vector_samplers_moments_and_constraints():
    k = K(22)
    alpha = np.array([0.5, 2.0, 3.5], np.float32)
    d = np.asarray(R.dirichlet(k, alpha, (N,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    _moments(d, alpha / 6, alpha * (6 - alpha) / (36 * 7))
    m = np.asarray(R.multinomial(k, 20.0, np.array([0.2, 0.3, 0.5], np.float32), shape=(N, 3)))
    np.testing.assert_array_equal(m.sum(-1), 20.0)
    _moments(m, 20 * np.array([0.2, 0.3, 0.5]), 20 * np.array([0.16, 0.21, 0.25]))
    x = np.asarray(R.multivariate_normal(k, MEAN, COV, (N,)), np.float64)
    np.testing.assert_allclose(np.cov(x.T), COV, atol=0.06)
    np.testing.assert_allclose(x.mean(0), MEAN, atol=0.05)
    for method in ("eigh", "svd"):
        y = np.asarray(R.multivariate_normal(k, MEAN, COV, (N,), method=method), np.float64)
        np.testing.assert_allclose(np.cov(y.T), COV, atol=0.06)
    q = np.asarray(R.orthogonal(k, 4, (5,)), np.float64)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (5, 4, 4)),
                               atol=1e-5)
    w = np.asarray(R.orthogonal(k, 2, (), m=5), np.float64)
    assert w.shape == (2, 5)
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-5)
    b = np.asarray(R.ball(k, 3, 2, (N,)), np.float64)
    r = np.linalg.norm(b, axis=-1)
    assert r.max() <= 1.0 and abs(r.mean() - 3 / 4) < 0.01     # E|x| = d / (d + 1)
    b1 = np.asarray(R.ball(k, 2, 1, (100,)))
    assert np.abs(b1).sum(-1).max() <= 1.0


def test_clone_is_the_same_key():
    k = K(3)
    np.testing.assert_array_equal(np.asarray(R.clone(k)), np.asarray(k))
    np.testing.assert_array_equal(np.asarray(R.normal(R.clone(k), (2,))),
                                  np.asarray(R.normal(k, (2,))))


def test_parameter_errors_are_clear():
    k = K(0)
    with pytest.raises(SecantError, match="alpha.ndim >= 1"):
        R.dirichlet(k, 1.0)
    with pytest.raises(SecantError, match="must broadcast to the shape"):
        R.gamma(k, np.ones(3, np.float32), (2,))
    with pytest.raises(SecantError, match="method must be one of"):
        R.multivariate_normal(k, MEAN, COV, method="qr")
    with pytest.raises(SecantError, match="mean of shape"):
        R.multivariate_normal(k, MEAN, np.eye(3, dtype=np.float32))
    with pytest.raises(SecantError, match="must be a float dtype"):
        R.beta(k, 1.0, 1.0, dtype=np.int32)
    with pytest.raises(SecantError, match="PRNG key"):
        R.gamma(np.zeros(2, np.float32), 1.0)
    with pytest.raises(SecantError, match="PRNG key"):
        R.pareto(np.zeros(2, np.float32), 1.0)
