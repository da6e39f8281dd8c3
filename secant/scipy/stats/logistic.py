"""jax.scipy.stats.logistic: the logistic distribution, stable in both tails."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    z = snp.abs(snp.true_divide(x - loc, scale))
    return -z - 2 * snp.log1p(snp.exp(-z)) - snp.log(scale)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return special.expit(snp.true_divide(x - loc, scale))


def logcdf(x, loc=0, scale=1):
    return -snp.logaddexp(0.0, snp.true_divide(loc - x, scale))


def sf(x, loc=0, scale=1):
    return special.expit(snp.true_divide(loc - x, scale))


def logsf(x, loc=0, scale=1):
    return -snp.logaddexp(0.0, snp.true_divide(x - loc, scale))


def ppf(q, loc=0, scale=1):
    return loc + scale * special.logit(q)


def isf(q, loc=0, scale=1):
    return loc - scale * special.logit(q)
