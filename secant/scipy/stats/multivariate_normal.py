"""jax.scipy.stats.multivariate_normal: logpdf and pdf of x (..., n) for a mean (n,) and a
positive definite covariance (n, n) (a scalar mean and variance: the univariate normal)."""
import math

import secant.numpy as snp
from secant.scipy.stats._linalg import cholesky_lower, log_diagonal_sum, solve_lower

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, mean, cov, allow_singular=None):
    x = snp.asarray(x)
    mean = snp.asarray(mean)
    cov = snp.asarray(cov)
    if mean.ndim == 0:
        z = (x - mean) / snp.sqrt(cov)
        out = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - 0.5 * snp.log(cov)
    else:
        n = mean.shape[-1]
        lower = cholesky_lower(cov)
        z = solve_lower(lower, x - mean)
        out = (-0.5 * snp.sum(z * z, axis=-1) - n / 2 * math.log(2 * math.pi)
               - log_diagonal_sum(lower))
    return out


def pdf(x, mean, cov, allow_singular=None):
    return snp.exp(logpdf(x, mean, cov, allow_singular))
