"""jax.scipy.stats.beta: logpdf and pdf (-inf outside [0, 1]); cdf, logcdf, sf and logsf
through the regularised incomplete beta function (differentiable in x; in a and b neither here
nor in JAX: special.betainc)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, a, b, loc=0, scale=1):
    y = snp.true_divide(x - loc, scale)
    log_linear = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
    out = log_linear - special.betaln(a, b) - snp.log(scale)
    return snp.where((y < 0) | (y > 1), -snp.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    return snp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    return special.betainc(a, b, snp.clip(snp.true_divide(x - loc, scale), 0.0, 1.0))


def logcdf(x, a, b, loc=0, scale=1):
    return snp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """1 - cdf, computed as I_(1-y)(b, a) (accurate where the cdf is near 1)."""
    return special.betainc(b, a, 1 - snp.clip(snp.true_divide(x - loc, scale), 0.0, 1.0))


def logsf(x, a, b, loc=0, scale=1):
    return snp.log(sf(x, a, b, loc, scale))
