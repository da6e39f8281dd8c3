"""jax.scipy.stats.gumbel_r: the (right-skewed) Gumbel distribution of maxima."""
import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def _z(x, loc, scale):
    return snp.true_divide(x - loc, scale)


def logpdf(x, loc=0, scale=1):
    z = _z(x, loc, scale)
    return -z - snp.exp(-z) - snp.log(scale)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return -snp.exp(-_z(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return snp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    return -snp.expm1(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    return snp.log(sf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    return loc - scale * snp.log(-snp.log(p))
