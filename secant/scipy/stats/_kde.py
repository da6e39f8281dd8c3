"""jax.scipy.stats.gaussian_kde: a Gaussian kernel density estimate of a dataset (d, n) (a 1-D
dataset is one variable), with Scott's or Silverman's bandwidth or a given factor, and weights.

The estimate can be built inside a transformed function (grad of a loss that fits it to its
argument, vmap over datasets): the class declares its functional form (`_Functional`, see
transformer/objects.py), a dict of the fields and the methods as functions of it, which is what
the transforms read for `gaussian_kde(...)` and its methods; eager calls build the object."""
import math

import secant.numpy as snp
from secant.scipy import special
from secant.scipy.stats._linalg import cholesky_lower, log_diagonal_sum, solve_lower

__secant_by_source__ = True      # transforms read this module like user code


class _Functional:
    """gaussian_kde as functions of a dict of its fields."""

    @staticmethod
    def init(dataset, bw_method=None, weights=None):
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
        elif callable(bw_method):       # (gaussian_kde passes one taking this dict)
            factor = bw_method({"dataset": dataset, "weights": weights, "neff": neff, "d": d,
                                "n": n})
        else:
            factor = bw_method
        mean = snp.sum(dataset * weights, axis=1, keepdims=True)
        diff = dataset - mean
        data_covariance = (diff * weights) @ diff.T / (1 - snp.sum(weights * weights))
        return {"dataset": dataset, "weights": weights, "neff": neff, "d": d, "n": n,
                "factor": factor, "covariance": data_covariance * factor ** 2}

    @staticmethod
    def logpdf(kde, points):
        """log of the density at points (d, m) (or (m,) for d == 1)."""
        dataset = kde["dataset"]
        d = dataset.shape[0]            # (a shape: static; the field "d" is a traced value here)
        points = snp.reshape(snp.asarray(points), (d, -1))
        lower = cholesky_lower(kde["covariance"])
        diff = points[:, None, :] - dataset[:, :, None]                 # (d, n, m)
        z = solve_lower(lower, snp.moveaxis(diff, 0, -1))               # (n, m, d)
        log_norm = d / 2 * math.log(2 * math.pi) + log_diagonal_sum(lower)
        energy = 0.5 * snp.sum(z * z, axis=-1)
        return special.logsumexp(-energy, axis=0, b=kde["weights"][:, None]) - log_norm

    @staticmethod
    def evaluate(kde, points):
        return snp.exp(_Functional.logpdf(kde, points))

    @staticmethod
    def pdf(kde, points):
        return snp.exp(_Functional.logpdf(kde, points))

    __call__ = evaluate

    @staticmethod
    def integrate_box_1d(kde, low, high):
        """The probability mass in [low, high] of a one-dimensional estimate."""
        dataset = kde["dataset"]
        std = snp.sqrt(kde["covariance"][0, 0])
        upper = special.ndtr((high - dataset[0]) / std)
        lower = special.ndtr((low - dataset[0]) / std)
        return snp.sum(kde["weights"] * (upper - lower))


_Functional.init.__secant_functional_init__ = True


class _Fields:
    """The fields as attributes (what a callable bw_method receives, as SciPy's object)."""

    def __init__(self, fields):
        self.__dict__.update(fields)


class gaussian_kde:
    __secant_functional__ = _Functional

    def __init__(self, dataset, bw_method=None, weights=None):
        if callable(bw_method):         # SciPy's callable receives the estimate's fields
            user_bw_method = bw_method

            def bw_method(fields):
                return user_bw_method(_Fields(fields))
        self._fields = _Functional.init(dataset, bw_method, weights)
        self.__dict__.update(self._fields)

    def logpdf(self, points):
        """log of the density at points (d, m) (or (m,) for d == 1)."""
        return _Functional.logpdf(self._fields, points)

    def evaluate(self, points):
        return _Functional.evaluate(self._fields, points)

    def pdf(self, points):
        return _Functional.pdf(self._fields, points)

    def __call__(self, points):
        return _Functional.evaluate(self._fields, points)

    def integrate_box_1d(self, low, high):
        """The probability mass in [low, high] of a one-dimensional estimate."""
        return _Functional.integrate_box_1d(self._fields, low, high)
