"""jax.scipy.stats.expon: the exponential distribution."""
import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    y = snp.true_divide(x - loc, scale)
    return snp.where(y < 0, -snp.inf, -y - snp.log(scale))


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y = snp.maximum(snp.true_divide(x - loc, scale), 0)
    return -snp.expm1(-y)


def logcdf(x, loc=0, scale=1):
    y = snp.true_divide(x - loc, scale)
    return snp.where(y <= 0, -snp.inf, snp.log(-snp.expm1(-snp.maximum(y, 1e-30))))


def sf(x, loc=0, scale=1):
    return snp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    return -snp.maximum(snp.true_divide(x - loc, scale), 0)


def ppf(q, loc=0, scale=1):
    return snp.where((q >= 0) & (q <= 1), loc - scale * snp.log1p(-q), snp.nan)
