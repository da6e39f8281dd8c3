"""jax.scipy.stats.poisson: logpmf, pmf and cdf in the rate mu (k is a count)."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpmf(k, mu, loc=0):
    x = k - loc
    out = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
    return snp.where((x < 0) | (x != snp.floor(x)), -snp.inf, out)


def pmf(k, mu, loc=0):
    return snp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    x = snp.floor(k - loc)
    return snp.where(x < 0, 0.0, special.gammaincc(snp.maximum(x, 0) + 1, mu))


_ENTROPY_TERMS = 400          # k = 0 .. 399 hold all but ~1e-30 of the mass for mu < 200


def entropy(mu, loc=0):
    """The Shannon entropy -sum_k p(k) log p(k) (loc shifts nothing): the sum itself for
    mu < 200, above it the asymptotic expansion log(2 pi e mu) / 2 - 1/(12 mu) - 1/(24 mu^2)
    - 19/(360 mu^3) (its next term is below 1e-9 of the value there); 0 at mu = 0, nan below,
    as SciPy's. (JAX's sums to mu + 20 below 10, to 250 below 100, and keeps two terms of the
    expansion above: within 1e-5.)"""
    mu = snp.asarray(mu) * 1.0
    shape = snp.broadcast_shapes(snp.shape(mu), snp.shape(loc))
    mu = snp.broadcast_to(mu, shape)
    small = mu < 200
    rate = snp.where(small & (mu > 0), mu, 1.0)
    k = snp.reshape(snp.arange(_ENTROPY_TERMS), (_ENTROPY_TERMS,) + (1,) * len(shape)) * 1.0
    log_p = special.xlogy(k, rate) - special.gammaln(k + 1) - rate
    p = snp.exp(log_p)
    summed = -snp.sum(snp.where(p > 0, p * log_p, 0.0), axis=0)
    big = snp.where(small, 200.0, mu)
    expansion = (0.5 * snp.log(2 * snp.pi * snp.e * big) - 1 / (12 * big)
                 - 1 / (24 * big * big) - 19 / (360 * big * big * big))
    out = snp.where(small, summed, expansion)
    return snp.where(mu == 0, 0.0, snp.where((mu < 0) | snp.isnan(mu), snp.nan, out))
