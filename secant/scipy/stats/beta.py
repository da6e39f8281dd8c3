"""jax.scipy.stats.beta: logpdf and pdf (-inf outside [0, 1])."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, a, b, loc=0, scale=1):
    y = (x - loc) / scale
    log_linear = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
    out = log_linear - special.betaln(a, b) - snp.log(scale)
    return snp.where((y < 0) | (y > 1), -snp.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    return snp.exp(logpdf(x, a, b, loc, scale))
