"""jax.scipy.stats.uniform: the uniform distribution on [loc, loc + scale]."""
import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    out = -snp.log(scale + 0.0 * x)
    return snp.where((x < loc) | (x > loc + scale), -snp.inf, out)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return snp.clip(snp.true_divide(x - loc, scale), 0, 1)


def ppf(q, loc=0, scale=1):
    return snp.where((q < 0) | (q > 1), snp.nan, loc + q * scale)
