"""jax.scipy.stats.pareto: density b / y^(b+1) on y = (x - loc) / scale >= 1."""
import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def _y(x, loc, scale):
    return snp.true_divide(x - loc, scale)


def logpdf(x, b, loc=0, scale=1):
    y = _y(x, loc, scale)
    outside = y < 1                    # (y = nan is neither: nan comes out)
    out = snp.log(b) - (b + 1) * snp.log(snp.where(outside, 1.0, y)) - snp.log(scale)
    return snp.where(outside, -snp.inf, out)


def pdf(x, b, loc=0, scale=1):
    return snp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    y = _y(x, loc, scale)
    return snp.where(y < 1, 0.0, -b * snp.log(snp.maximum(y, 1.0)))


def sf(x, b, loc=0, scale=1):
    return snp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    return -snp.expm1(logsf(x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
    return snp.log1p(-sf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    return snp.where((q >= 0) & (q <= 1), loc + scale * snp.power(1 - q, -1 / b), snp.nan)
