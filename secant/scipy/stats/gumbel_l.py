"""jax.scipy.stats.gumbel_l: the left-skewed Gumbel distribution (of minima), gumbel_r
mirrored: x's distribution is that of -x under gumbel_r(-loc, scale)."""
import secant.numpy as snp
from secant.scipy.stats import gumbel_r

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    return gumbel_r.logpdf(-x, -loc, scale)


def pdf(x, loc=0, scale=1):
    return gumbel_r.pdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    return gumbel_r.logcdf(-x, -loc, scale)


def sf(x, loc=0, scale=1):
    return gumbel_r.cdf(-x, -loc, scale)


def cdf(x, loc=0, scale=1):
    return gumbel_r.sf(-x, -loc, scale)


def logcdf(x, loc=0, scale=1):
    return gumbel_r.logsf(-x, -loc, scale)


def ppf(p, loc=0, scale=1):
    return loc + scale * snp.log(-snp.log1p(-p))
