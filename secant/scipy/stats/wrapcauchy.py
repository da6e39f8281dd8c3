"""jax.scipy.stats.wrapcauchy: the wrapped Cauchy distribution on [0, 2 pi], 0 < c < 1 (nan
otherwise, as SciPy)."""
import numpy as np

import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, c):
    out = snp.log1p(-c * c) - np.log(2 * np.pi) - snp.log1p(c * c - 2 * c * snp.cos(x))
    out = snp.where((x < 0) | (x > 2 * np.pi), -snp.inf, out)
    return snp.where((c > 0) & (c < 1), out, snp.nan)


def pdf(x, c):
    return snp.exp(logpdf(x, c))
