"""jax.scipy.stats.nbinom: the number of failures before the n-th Bernoulli(p) success."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, n, p, loc=0):
    x = k - loc
    out = special.gammaln(n + x) - special.gammaln(x + 1) - special.gammaln(n) \
        + special.xlogy(n, p) + special.xlog1py(x, -p)
    return snp.where((x < 0) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, n, p, loc=0):
    return snp.exp(logpmf(k, n, p, loc))
