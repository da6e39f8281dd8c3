"""jax.scipy.stats.poisson: logpmf, pmf and cdf in the rate mu (k is a count)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, mu, loc=0):
    x = k - loc
    out = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
    return snp.where((x < 0) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, mu, loc=0):
    return snp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    x = snp.floor(k - loc)
    return snp.where(x < 0, 0.0, special.gammaincc(snp.maximum(x, 0) + 1, mu))
