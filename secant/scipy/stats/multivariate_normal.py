"""jax.scipy.stats.multivariate_normal: logpdf and pdf of x (..., n) for a mean (..., n) and a
positive definite covariance (..., n, n), the leading (batch) axes of x, mean and cov
broadcast against each other as JAX's; a scalar covariance is isotropic, and a scalar mean
and variance give the univariate normal. The factorisation and the solve are lax.linalg's
cholesky and triangular_solve (ops with their own rules, lowered to StableHLO)."""
import math

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends import errors

__secant_by_source__ = True      # transforms read this module like user code


def _dimension(mean_shape, cov_shape, allow_singular):
    """n, the size of the last axis of mean, after JAX's checks: allow_singular is not
    supported; cov must be (..., n, n)."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf "
                                  "(JAX does not support it either)")
    n = mean_shape[-1]
    if len(cov_shape) < 2 or tuple(cov_shape[-2:]) != (n, n):
        raise errors.SecantValueError(f"multivariate_normal.logpdf got incompatible shapes: "
                                      f"mean {tuple(mean_shape)}, cov {tuple(cov_shape)}")
    return n


def _whiten(lower, y):
    """z with lower @ z[..., None] == y[..., None], lower (..., n, n) and y (..., n) broadcast
    over their leading axes: one solve with every point as a column when lower has none."""
    n = lower.shape[-1]
    if lower.ndim == 2:
        columns = snp.reshape(y, (-1, n)).T
        z = lax.linalg.triangular_solve(lower, columns, left_side=True, lower=True)
        out = snp.reshape(z.T, y.shape)
    else:
        batch = np.broadcast_shapes(lower.shape[:-2], y.shape[:-1])
        lower = snp.broadcast_to(lower, batch + (n, n))
        y = snp.broadcast_to(y, batch + (n,))
        z = lax.linalg.triangular_solve(lower, y[..., None], left_side=True, lower=True)
        out = z[..., 0]
    return out


def logpdf(x, mean, cov, allow_singular=None):
    x = snp.asarray(x) * 1.0
    mean = snp.asarray(mean) * 1.0
    cov = snp.asarray(cov) * 1.0
    if mean.ndim == 0:
        z = (x - mean) / snp.sqrt(cov)
        out = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - 0.5 * snp.log(cov)
    elif cov.ndim == 0:
        n = mean.shape[-1]
        y = x - mean
        out = (-0.5 * snp.sum(y * y, axis=-1) / cov
               - n / 2 * (math.log(2 * math.pi) + snp.log(cov)))
    else:
        n = _dimension(mean.shape, cov.shape, allow_singular)
        lower = lax.linalg.cholesky(cov)
        z = _whiten(lower, x - mean)
        log_det = snp.sum(snp.log(snp.diagonal(lower, axis1=-2, axis2=-1)), axis=-1)
        out = -0.5 * snp.sum(z * z, axis=-1) - n / 2 * math.log(2 * math.pi) - log_det
    return out


def pdf(x, mean, cov, allow_singular=None):
    return snp.exp(logpdf(x, mean, cov, allow_singular))
