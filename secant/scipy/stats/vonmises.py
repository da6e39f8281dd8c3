"""jax.scipy.stats.vonmises: the circular normal distribution, exp(kappa cos x) / (2 pi I0(kappa))
for kappa > 0 (nan otherwise, as SciPy)."""
import numpy as np

import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, kappa):
    # exp(-kappa) I0(kappa) is i0e: no overflow for large kappa
    out = kappa * (snp.cos(x) - 1) - np.log(2 * np.pi) - snp.log(special.i0e(kappa))
    return snp.where(kappa > 0, out, snp.nan)


def pdf(x, kappa):
    return snp.exp(logpdf(x, kappa))
