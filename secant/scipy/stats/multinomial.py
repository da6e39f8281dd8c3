"""jax.scipy.stats.multinomial: counts x (last axis) of n draws from the categories' p."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(x, n, p):
    out = special.gammaln(n + 1) + snp.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                           axis=-1)
    return snp.where(snp.sum(x, axis=-1) == n, out, -snp.inf)


def pmf(x, n, p):
    return snp.exp(logpmf(x, n, p))
