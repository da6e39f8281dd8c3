"""jax.scipy.stats.dirichlet: logpdf and pdf of points x (k, ...) on the simplex (-inf off it);
x may leave out its last coordinate (k - 1, ...), as in JAX and SciPy."""
import secant.numpy as snp
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code


def logpdf(x, alpha):
    x = snp.asarray(x)
    alpha = snp.asarray(alpha)
    if x.shape[0] == alpha.shape[0] - 1:
        x = snp.concatenate([x, 1 - snp.sum(x, axis=0, keepdims=True)], axis=0)
    a = snp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    normalize = snp.sum(special.gammaln(alpha)) - special.gammaln(snp.sum(alpha))
    log_probs = snp.sum(special.xlogy(a - 1, x), axis=0) - normalize
    simplex = snp.all(x >= 0, axis=0) & (snp.abs(snp.sum(x, axis=0) - 1) < 1e-5)
    return snp.where(simplex, log_probs, -snp.inf)


def pdf(x, alpha):
    return snp.exp(logpdf(x, alpha))
