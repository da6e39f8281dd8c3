"""jax.scipy.stats: one module per distribution (`norm.logpdf(x, loc, scale)`, ...), each
written with secant.numpy's ops and secant.scipy.special, read by the transforms through its
source (`__secant_by_source__`), so grad, jvp and vmap of every function follow from its ops."""
from secant.scipy.stats import (bernoulli, beta, binom, cauchy, chi2, dirichlet, expon,  # noqa: F401
                                gamma, laplace, logistic, multivariate_normal, norm, poisson, t,
                                uniform)
from secant.scipy.stats import (betabinom, gennorm, geom, gumbel_l, gumbel_r,  # noqa: F401
                                multinomial, nbinom, pareto, truncnorm, vonmises, wrapcauchy)
from secant.scipy.stats._kde import gaussian_kde  # noqa: F401
from secant.scipy.stats._core import ModeResult, mode, rankdata, sem  # noqa: F401
