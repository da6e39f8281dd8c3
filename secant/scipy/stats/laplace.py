"""jax.scipy.stats.laplace: the Laplace distribution."""
import math

import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, loc=0, scale=1):
    return -snp.true_divide(snp.abs(x - loc), scale) - snp.log(scale) - math.log(2)


def pdf(x, loc=0, scale=1):
    return snp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    z = snp.true_divide(x - loc, scale)
    return snp.where(z < 0, 0.5 * snp.exp(snp.minimum(z, 0)), 1 - 0.5 * snp.exp(-snp.maximum(z, 0)))
