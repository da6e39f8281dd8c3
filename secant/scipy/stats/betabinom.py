"""jax.scipy.stats.betabinom: binomial counts of n trials whose success rate is Beta(a, b)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, n, a, b, loc=0):
    x = k - loc
    out = special.gammaln(n + 1) - special.gammaln(x + 1) - special.gammaln(n - x + 1) \
        + special.betaln(x + a, n - x + b) - special.betaln(a, b)
    return snp.where((x < 0) | (x > n) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, n, a, b, loc=0):
    return snp.exp(logpmf(k, n, a, b, loc))
