"""jax.scipy.stats.binom: logpmf and pmf in the probability p (and, through gammaln, in n)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, n, p, loc=0):
    y = k - loc
    comb = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    out = comb + special.xlogy(y, p) + special.xlog1py(n - y, -p)
    return snp.where((y < 0) | (y > n) | (y != snp.floor(y)), -snp.inf, out)


def pmf(k, n, p, loc=0):
    return snp.exp(logpmf(k, n, p, loc))
