"""jax.scipy.stats.gennorm: the generalized normal distribution, density
beta / (2 Gamma(1 / beta)) exp(-|x|^beta)."""
import numpy as np

import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, beta):
    return snp.log(beta) - np.log(2) - special.gammaln(1 / beta) - snp.abs(x) ** beta


def pdf(x, beta):
    return snp.exp(logpdf(x, beta))


def cdf(x, beta):
    return 0.5 + 0.5 * snp.sign(x) * special.gammainc(1 / beta, snp.abs(x) ** beta)
