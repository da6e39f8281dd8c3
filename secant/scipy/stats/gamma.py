"""jax.scipy.stats.gamma: the gamma distribution with shape a (the cdf family is not
differentiable in a: gammainc's derivative in a is not provided)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, a, loc=0, scale=1):
    y = snp.true_divide(x - loc, scale)
    out = special.xlogy(a - 1, y) - y - special.gammaln(a) - snp.log(scale)
    return snp.where(y < 0, -snp.inf, out)


def pdf(x, a, loc=0, scale=1):
    return snp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    return special.gammainc(a, snp.maximum(snp.true_divide(x - loc, scale), 0))


def logcdf(x, a, loc=0, scale=1):
    return snp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    return special.gammaincc(a, snp.maximum(snp.true_divide(x - loc, scale), 0))


def logsf(x, a, loc=0, scale=1):
    return snp.log(sf(x, a, loc, scale))
