"""jax.scipy.stats.norm: the normal distribution; the tails through log_ndtr and ndtri."""
import math

import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    z = snp.true_divide(x - loc, scale)
    return -0.5 * z * z - _LOG_SQRT_2PI - snp.log(scale)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return special.ndtr(snp.true_divide(x - loc, scale))


def logcdf(x, loc=0, scale=1):
    return special.log_ndtr(snp.true_divide(x - loc, scale))


def sf(x, loc=0, scale=1):
    return special.ndtr(snp.true_divide(loc - x, scale))


def logsf(x, loc=0, scale=1):
    return special.log_ndtr(snp.true_divide(loc - x, scale))


def ppf(q, loc=0, scale=1):
    return loc + scale * special.ndtri(snp.asarray(q) * 1.0)     # (an int q: a float, as JAX's)


def isf(q, loc=0, scale=1):
    return loc - scale * special.ndtri(snp.asarray(q) * 1.0)
