"""jax.scipy.stats.bernoulli: logpmf, pmf, cdf and ppf in the probability p."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, p, loc=0):
    x = k - loc
    out = special.xlogy(x, p) + special.xlog1py(1 - x, -p)
    return snp.where((x < 0) | (x > 1) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, p, loc=0):
    return snp.exp(logpmf(k, p, loc))


def cdf(k, p):
    return snp.where(k < 0, 0.0, snp.where(k < 1, 1 - p, 1.0))


def ppf(q, p):
    out = snp.where(q <= 1 - p, 0.0, 1.0)
    return snp.where((q < 0) | (q > 1) | (p < 0) | (p > 1), snp.nan, out)
