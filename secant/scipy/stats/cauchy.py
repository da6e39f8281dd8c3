"""jax.scipy.stats.cauchy: the Cauchy distribution."""
import math

import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    z = snp.true_divide(x - loc, scale)
    return -math.log(math.pi) - snp.log(scale) - snp.log1p(z * z)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return 0.5 + snp.arctan(snp.true_divide(x - loc, scale)) / math.pi


def logcdf(x, loc=0, scale=1):
    return snp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    return 0.5 - snp.arctan(snp.true_divide(x - loc, scale)) / math.pi


def logsf(x, loc=0, scale=1):
    return snp.log(sf(x, loc, scale))


def _cot_pi(q):
    """1 / tan(pi q) for q in [0, 1] (nan outside), as -tan(pi (q - 1/2)) without rounding q - 1/2."""
    lower = q <= 0.5
    out = snp.where(lower, 1 / snp.tan(math.pi * q), -1 / snp.tan(math.pi * (1 - q)))
    return snp.where((q >= 0) & (q <= 1), out, snp.nan)


def ppf(q, loc=0, scale=1):
    return loc - scale * _cot_pi(q)


def isf(q, loc=0, scale=1):
    return loc + scale * _cot_pi(q)
