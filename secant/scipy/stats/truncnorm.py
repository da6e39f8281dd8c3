"""jax.scipy.stats.truncnorm: the standard normal restricted to a <= z <= b (z = (x - loc) /
scale); the masses between bounds are taken in whichever tail keeps them accurate."""
import secant.numpy as snp
from secant.scipy import special
from secant.scipy.stats import norm

__secant_by_source__ = True      # transforms read this module like user code


def _log_mass(a, b):
    """log(ndtr(b) - ndtr(a)) for a <= b: from the left tail when b <= 0, the right tail when
    a >= 0 (no cancellation far out), else 1 less both tails. (Integer bounds as floats, as
    JAX's promotion of the arguments: log_ndtr takes floats only.)"""
    a, b = snp.asarray(a) * 1.0, snp.asarray(b) * 1.0
    left = special.log_ndtr(b) + snp.log1p(-snp.exp(special.log_ndtr(a) - special.log_ndtr(b)))
    right = special.log_ndtr(-a) + snp.log1p(-snp.exp(special.log_ndtr(-b)
                                                      - special.log_ndtr(-a)))
    middle = snp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return snp.where(b <= 0, left, snp.where(a >= 0, right, middle))


def _z(x, a, b, loc, scale):
    z = snp.true_divide(x - loc, scale)
    return z, snp.clip(z, a, b)


def logpdf(x, a, b, loc=0, scale=1):
    z, inside = _z(x, a, b, loc, scale)
    out = norm.logpdf(inside) - snp.log(scale) - _log_mass(a, b)
    return snp.where((z < a) | (z > b), -snp.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    return snp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    z, inside = _z(x, a, b, loc, scale)
    out = _log_mass(a, inside) - _log_mass(a, b)
    return snp.where(z < a, -snp.inf, snp.where(z >= b, 0.0, out))


def cdf(x, a, b, loc=0, scale=1):
    return snp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    z, inside = _z(x, a, b, loc, scale)
    out = _log_mass(inside, b) - _log_mass(a, b)
    return snp.where(z <= a, 0.0, snp.where(z > b, -snp.inf, out))


def sf(x, a, b, loc=0, scale=1):
    return snp.exp(logsf(x, a, b, loc, scale))
