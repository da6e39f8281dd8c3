"""jax.scipy.stats.gaussian_kde: a Gaussian kernel density estimate of a dataset (d, n) (a 1-D
dataset is one variable), with Scott's or Silverman's bandwidth or a given factor, and weights."""
import math

import secant.numpy as snp
from secant.scipy import special
from secant.scipy.stats._linalg import cholesky_lower, log_diagonal_sum, solve_lower

__secant_by_source__ = True      # transforms read this module like user code


class gaussian_kde:
    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = snp.atleast_2d(dataset)
        d, n = dataset.shape
        if weights is None:
            weights = snp.ones(n, dataset.dtype) / n
        else:
            weights = weights / snp.sum(weights)
        neff = 1 / snp.sum(weights * weights)
        if bw_method is None or bw_method == "scott":
            factor = neff ** (-1.0 / (d + 4))
        elif bw_method == "silverman":
            factor = (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            self.dataset, self.weights, self.neff, self.d, self.n = dataset, weights, neff, d, n
            factor = bw_method(self)
        else:
            factor = bw_method
        mean = snp.sum(dataset * weights, axis=1, keepdims=True)
        diff = dataset - mean
        data_covariance = (diff * weights) @ diff.T / (1 - snp.sum(weights * weights))
        self.dataset = dataset
        self.weights = weights
        self.neff = neff
        self.d = d
        self.n = n
        self.factor = factor
        self.covariance = data_covariance * factor ** 2

    def logpdf(self, points):
        """log of the density at points (d, m) (or (m,) for d == 1)."""
        points = snp.reshape(snp.asarray(points), (self.d, -1))
        lower = cholesky_lower(self.covariance)
        diff = points[:, None, :] - self.dataset[:, :, None]            # (d, n, m)
        z = solve_lower(lower, snp.moveaxis(diff, 0, -1))               # (n, m, d)
        log_norm = self.d / 2 * math.log(2 * math.pi) + log_diagonal_sum(lower)
        energy = 0.5 * snp.sum(z * z, axis=-1)
        return special.logsumexp(-energy, axis=0, b=self.weights[:, None]) - log_norm

    def evaluate(self, points):
        return snp.exp(self.logpdf(points))

    def pdf(self, points):
        return self.evaluate(points)

    def __call__(self, points):
        return self.evaluate(points)

    def integrate_box_1d(self, low, high):
        """The probability mass in [low, high] of a one-dimensional estimate."""
        std = snp.sqrt(self.covariance[0, 0])
        upper = special.ndtr((high - self.dataset[0]) / std)
        lower = special.ndtr((low - self.dataset[0]) / std)
        return snp.sum(self.weights * (upper - lower))
