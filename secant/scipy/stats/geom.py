"""jax.scipy.stats.geom: the number of Bernoulli(p) trials up to the first success (k >= 1)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, p, loc=0):
    x = k - loc
    out = special.xlog1py(x - 1, -p) + snp.log(p)
    return snp.where((x < 1) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, p, loc=0):
    return snp.exp(logpmf(k, p, loc))
