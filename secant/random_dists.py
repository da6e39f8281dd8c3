"""jax.random's samplers whose parameters have a derivative: gamma, loggamma, beta, dirichlet,
chisquare, f, t, pareto, lognormal, weibull_min, rayleigh, wald, triangular,
double_sided_maxwell, generalized_normal, ball and multivariate_normal (re-exported by
secant.random).

Each is noise from secant.random's samplers (constants for grad, batched over keys by vmap's
random_batched) transformed by secant.numpy ops, and the transforms read this module like user
code (`__secant_by_source__`), so grad differentiates the transform: the reparameterisation
gradient JAX gives. gamma's sample has no closed form in its parameter: its derivative is the
implicit one, dx/da = -(dP/da) / (dP/dx) at the sample, P(a, x) the regularised incomplete
gamma function (secant.custom_jvp; JAX's random_gamma_grad). The recipes, the order of key
splits and of float operations are jax 0.10.2's, so the numbers are jax.random's.
"""
import functools

import secant
import secant.numpy as snp
import secant.random as _random
from secant import lax
from secant.backends import dtypes
from secant.backends.errors import SecantValueError, where
from secant.nn import softmax
from secant.random import (_dtype, _gamma_sample, _param_shape, _shape, exponential, maxwell,
                           normal, rademacher, split, uniform)
from secant.scipy.special import _igam_da, _igam_density

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "f", "t", "pareto",
           "lognormal", "weibull_min", "rayleigh", "wald", "triangular", "double_sided_maxwell",
           "generalized_normal", "ball", "multivariate_normal"]


def _float(name, dtype):
    return _dtype(name, dtype, "float", dtypes.default_float)


# --- gamma: an implicit reparameterisation gradient ----------------------------------------------
@functools.partial(secant.custom_jvp, nondiff_argnums=(0, 2))
def _gamma(key, a, log_space):
    return _gamma_sample(key, a, log_space)


@_gamma.defjvp
def _gamma_jvp(key, log_space, primals, tangents):
    a, = primals
    a_dot, = tangents
    sample = _gamma(key, a, log_space)
    return sample, a_dot * _gamma_grad(a, sample, log_space)


def _gamma_grad(a, sample, log_space):
    """d sample / d a at fixed noise: -(dP/da) / (dP/dx) at the sample (d log x / d a, i.e.
    divided by x, in log space; x == 0 from rounding is read as the smallest normal float)."""
    x = sample
    if log_space:
        x = snp.exp(sample)
        x = snp.where(x == 0, dtypes.finfo(x.dtype).tiny, x)
    grad = -_igam_da(a, x) / _igam_density(a, x)
    if log_space:
        grad = grad / x
    return grad


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a) floats (unit scale; shape: a's when None). Differentiable in a (implicitly,
    as jax.random.gamma)."""
    dtype = _float("gamma", dtype)
    shape = _param_shape("gamma", shape, snp.shape(a))
    a = snp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    return _gamma(key, a, False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) floats, sampled in log space (accurate for small a, whose samples
    underflow); exp(loggamma(key, a)) is gamma(key, a) to rounding."""
    dtype = _float("loggamma", dtype)
    shape = _param_shape("loggamma", shape, snp.shape(a))
    a = snp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    return _gamma(key, a, True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) floats: G_a / (G_a + G_b), from two log-gamma samples (shifted by their
    maximum, so neither underflows)."""
    dtype = _float("beta", dtype)
    shape = _param_shape("beta", shape, snp.shape(a), snp.shape(b))
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    keys = split(key)
    a = snp.broadcast_to(a, shape)
    b = snp.broadcast_to(b, shape)
    log_gamma_a = loggamma(keys[0], a, shape, dtype)
    log_gamma_b = loggamma(keys[1], b, shape, dtype)
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = snp.exp(log_gamma_a - log_max)
    gamma_b_scaled = snp.exp(log_gamma_b - log_max)
    return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) vectors (alpha's last axis): the softmax of log-gamma samples."""
    dtype = _float("dirichlet", dtype)
    shape = _dirichlet_shape(shape, snp.shape(alpha))
    alpha = lax.convert_element_type(alpha, dtype)
    log_gamma_samples = loggamma(key, alpha, shape + snp.shape(alpha)[-1:], dtype)
    return softmax(log_gamma_samples, -1)


def _dirichlet_shape(shape, alpha_shape):
    if len(alpha_shape) < 1:
        raise SecantValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                                      f"{len(alpha_shape)}{where()}")
    return _param_shape("dirichlet", shape, alpha_shape[:-1])


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) floats: 2 * Gamma(df / 2), sampled in log space."""
    dtype = _float("chisquare", dtype)
    shape = _param_shape("chisquare", shape, snp.shape(df))
    df = lax.convert_element_type(df, dtype)
    half_df = df / 2
    log_g = loggamma(key, half_df, shape, dtype)
    return snp.exp(log_g) * 2


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) floats: the ratio of two chi-squares, each over its degrees of
    freedom."""
    dtype = _float("f", dtype)
    shape = _param_shape("f", shape, snp.shape(dfnum), snp.shape(dfden))
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    keys = split(key)
    chi2_dfn = chisquare(keys[1], dfnum, shape, dtype)
    chi2_dfd = chisquare(keys[0], dfden, shape, dtype)
    return (chi2_dfn / dfnum) / (chi2_dfd / dfden)


def t(key, df, shape=None, dtype=None):
    """Student's t(df) floats: a normal over sqrt(Gamma(df / 2) / (df / 2))."""
    dtype = _float("t", dtype)
    shape = _param_shape("t", shape, snp.shape(df))
    df = lax.convert_element_type(df, dtype)
    keys = split(key)
    n = normal(keys[0], shape, dtype)
    half_df = df / 2
    g = gamma(keys[1], half_df, shape, dtype)
    return n * snp.sqrt(half_df / g)


def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) floats (scale 1, support [1, inf)): exp(E / b), E standard exponential."""
    dtype = _float("pareto", dtype)
    shape = _param_shape("pareto", shape, snp.shape(b))
    b = lax.convert_element_type(b, dtype)
    e = exponential(key, shape, dtype)
    return snp.exp(e / b)


def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal floats: exp(sigma * N), N standard normal."""
    dtype = _dtype("lognormal", dtype, "inexact", dtypes.default_float)
    shape = _param_shape("lognormal", shape, snp.shape(sigma))
    sigma = lax.convert_element_type(sigma, dtype)
    scaled_norm = normal(key, shape, dtype) * sigma
    return snp.exp(scaled_norm)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull floats by the inverse CDF: scale * (-log1p(-u)) ** (1 / concentration)."""
    dtype = _float("weibull_min", dtype)
    shape = _shape("weibull_min", shape)
    random_uniform = uniform(key, shape, dtype, 0, 1)
    return snp.power(-snp.log1p(-random_uniform), 1.0 / concentration) * scale


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh floats: scale * sqrt(-2 log u)."""
    dtype = _float("rayleigh", dtype)
    shape = _param_shape("rayleigh", shape, snp.shape(scale))
    u = uniform(key, shape, dtype)
    scale = snp.broadcast_to(lax.convert_element_type(scale, dtype), shape)
    sqrt_u = lax.sqrt(snp.log(u) * -2)
    return scale * sqrt_u


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, unit shape) floats by Michael, Schucany and Haas's
    transformation of a normal, with a uniform choosing between its two roots."""
    dtype = _float("wald", dtype)
    shape = _param_shape("wald", shape, snp.shape(mean))
    keys = split(key)
    mean = snp.broadcast_to(lax.convert_element_type(mean, dtype), shape)
    v = normal(keys[0], shape, dtype)
    z = uniform(keys[1], shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = snp.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return snp.where(z <= mean / (mean + x), x, mean_sq / x)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular(left, mode, right) floats by the inverse CDF."""
    dtype = _float("triangular", dtype)
    shape = _param_shape("triangular", shape, snp.shape(left), snp.shape(mode),
                         snp.shape(right))
    left = snp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = snp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = snp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = (mode - left) / (right - left)
    u = uniform(key, shape, dtype)
    out1 = left + snp.sqrt(u * (right - left) * (mode - left))
    out2 = right - snp.sqrt((1 - u) * (right - left) * (right - mode))
    return snp.where(u < fc, out1, out2)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell floats: a Maxwell sample with a random sign, scaled and shifted.
    As JAX's, the result's shape is `shape` (the parameters' when empty) followed by the
    parameters' broadcast shape."""
    dtype = _float("double_sided_maxwell", dtype)
    shape = _dsm_shape(_shape("double_sided_maxwell", shape), snp.shape(loc), snp.shape(scale))
    keys = split(key)
    maxwell_rvs = maxwell(keys[0], shape, dtype)
    random_sign = rademacher(keys[1], shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


def _dsm_shape(shape, loc_shape, scale_shape):
    params = _param_shape("double_sided_maxwell", None, loc_shape, scale_shape)
    return (shape if shape else params) + params


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal floats (density proportional to exp(-|x|^p)): a random sign times
    Gamma(1 / p) ** (1 / p)."""
    dtype = _float("generalized_normal", dtype)
    shape = _shape("generalized_normal", shape)
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dtype)
    r = rademacher(keys[1], shape, dtype)
    return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the d-dimensional unit p-norm ball (shape + (d,))."""
    dtype = _float("ball", dtype)
    shape = _shape("ball", shape)
    keys = split(key)
    g = generalized_normal(keys[0], p, (*shape, d), dtype)
    e = exponential(keys[1], shape, dtype)
    return g / snp.expand_dims((snp.sum(snp.abs(g) ** p, axis=-1) + e) ** (1 / p), -1)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with mean `mean` (..., n) and covariance `cov` (..., n, n):
    mean + factor @ z, factor from cov's Cholesky factor (default), 'eigh' or 'svd'."""
    mean = snp.asarray(mean)
    cov = snp.asarray(cov)
    mean = mean * 1.0
    cov = cov * 1.0
    dtype = _mvn_dtype(dtype, mean.dtype, method)
    shape = _mvn_shape(shape, snp.shape(mean), snp.shape(cov))
    if method == "svd":
        u, s, _ = snp.linalg.svd(cov)
        factor = u * snp.sqrt(snp.expand_dims(s, -2))
    elif method == "eigh":
        w, v = snp.linalg.eigh(cov)
        factor = v * snp.sqrt(snp.expand_dims(w, -2))
    else:
        factor = snp.linalg.cholesky(cov)
    normal_samples = normal(key, shape + snp.shape(mean)[-1:], dtype)
    return mean + snp.einsum("...ij,...j->...i", factor, normal_samples)


def _mvn_dtype(dtype, mean_dtype, method):
    if method not in ("svd", "eigh", "cholesky"):
        raise SecantValueError(f"multivariate_normal: method must be one of 'svd', "
                                      f"'eigh', 'cholesky', got {method!r}{where()}")
    return _float("multivariate_normal", mean_dtype if dtype is None else dtype)


def _mvn_shape(shape, mean_shape, cov_shape):
    if len(mean_shape) < 1 or len(cov_shape) < 2 or \
            tuple(cov_shape[-2:]) != (mean_shape[-1], mean_shape[-1]):
        raise SecantValueError(f"multivariate_normal requires mean of shape (..., n) and "
                                      f"cov of shape (..., n, n), got {tuple(mean_shape)} and "
                                      f"{tuple(cov_shape)}{where()}")
    return _param_shape("multivariate_normal", shape, mean_shape[:-1], cov_shape[:-2])


# secant.random's names (this module needs secant.custom_jvp and secant.nn, which come after
# secant.random in secant/__init__.py)
for _name in __all__:
    setattr(_random, _name, globals()[_name])
_random.__all__ = _random.__all__ + [n for n in __all__ if n not in _random.__all__]
