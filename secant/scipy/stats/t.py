"""jax.scipy.stats.t: Student's t distribution (logpdf, pdf, as JAX)."""
import math

import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, df, loc=0, scale=1):
    z = snp.true_divide(x - loc, scale)
    half = 0.5 * (df + 1)
    normalize = (special.gammaln(half) - special.gammaln(0.5 * df)
                 - 0.5 * snp.log(df * math.pi) - snp.log(scale))
    return normalize - half * snp.log1p(z * z / df)


def pdf(x, df, loc=0, scale=1):
    return snp.exp(logpdf(x, df, loc, scale))
