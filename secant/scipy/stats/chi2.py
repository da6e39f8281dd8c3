"""jax.scipy.stats.chi2: the chi-squared distribution with df degrees of freedom (the cdf
family is not differentiable in df)."""
import math

import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, df, loc=0, scale=1):
    y = snp.true_divide(x - loc, scale)
    half = 0.5 * df
    out = (special.xlogy(half - 1, y) - 0.5 * y - special.gammaln(half) - half * math.log(2)
           - snp.log(scale))
    return snp.where(y < 0, -snp.inf, out)


def pdf(x, df, loc=0, scale=1):
    return snp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    return special.gammainc(0.5 * df, 0.5 * snp.maximum(snp.true_divide(x - loc, scale), 0))


def logcdf(x, df, loc=0, scale=1):
    return snp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    return special.gammaincc(0.5 * df, 0.5 * snp.maximum(snp.true_divide(x - loc, scale), 0))


def logsf(x, df, loc=0, scale=1):
    return snp.log(sf(x, df, loc, scale))
