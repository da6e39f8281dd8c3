"""betainc and the beta distribution's cdf family, batched multivariate_normal, logsumexp's
`where=` and complex inputs, and nn.softmax / log_softmax `where=` (against SciPy / NumPy;
tests/test_library_cases.py runs these, tests/test_scipy_nn_final.py checks the rest)."""
import numpy as np
import scipy.special as ss
import scipy.stats as st

import secant.numpy as snp
from secant import nn
from secant.scipy import special, stats
from tests.library_cases import Case


def probability(rng, shape, dtype):
    return rng.uniform(0.05, 0.95, shape).astype(dtype)


A3 = np.array([0.7, 2.5, 12.0])          # shape parameters (betainc is differentiable in x only)
B3 = np.array([3.0, 0.6, 9.0])
MASK = np.array([[True, False, True, True], [False, True, True, False],
                 [True, True, True, True]])


def _spd(a):
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(a.shape[-1])


def _spd_secant(a):
    return a @ snp.swapaxes(a, -1, -2) + 3 * snp.eye(a.shape[-1])


def _mvn_loop(fn):
    """scipy's multivariate_normal function applied point by point over the broadcast batch axes
    of x (..., n), mean (..., n) and cov (..., n, n)."""
    def ref(x, mean, a):
        cov = _spd(a)
        batch = np.broadcast_shapes(x.shape[:-1], mean.shape[:-1], cov.shape[:-2])
        n = mean.shape[-1]
        x = np.broadcast_to(x, batch + (n,))
        mean = np.broadcast_to(mean, batch + (n,))
        cov = np.broadcast_to(cov, batch + (n, n))
        out = np.empty(batch)
        for idx in np.ndindex(batch):
            out[idx] = fn(x[idx], mean[idx], cov[idx])
        return out
    return ref


def _masked_lse(a, axis=None, b=None):
    return ss.logsumexp(np.where(MASK, a, -np.inf), axis=axis, b=b)


def _masked_softmax(x):
    e = np.where(MASK, np.exp(x - np.where(MASK, x, -np.inf).max(-1, keepdims=True)), 0)
    return e / e.sum(-1, keepdims=True)


CASES = [
    Case("scipy.special.betainc", lambda x: special.betainc(A3, B3, x),
         lambda x: ss.betainc(A3, B3, x), [(3,)], probability, rtol=1e-5),
    Case("scipy.special.betainc", lambda x: special.betainc(A3, B3, x),
         lambda x: ss.betainc(A3, B3, x), [(4, 3)], probability, rtol=1e-5, id="broadcast"),
    # the shape parameters batched and broadcast (no derivative in a and b, as JAX)
    Case("scipy.special.betainc", lambda a, b, x: special.betainc(20 * a, 3 * b[:, None], x),
         lambda a, b, x: ss.betainc(20 * a, 3 * b[:, None], x), [(3,), (2,), (2, 3)],
         probability, differentiable=False, id="parameters"),
]
CASES += [Case(f"scipy.stats.beta.{n}",
               lambda x, s, f=getattr(stats.beta, n): f(x * (s + 1), A3, B3, 0.0, s + 1),
               lambda x, s, f=getattr(st.beta, n): f(x * (s + 1), A3, B3, 0.0, s + 1),
               [(3,), (3,)], probability, rtol=1e-5) for n in ("cdf", "logcdf", "sf", "logsf")]
CASES += [
    Case("scipy.stats.beta.cdf", lambda x: stats.beta.cdf(2 * x - 0.5, 2.0, 3.0),
         lambda x: st.beta.cdf(2 * x - 0.5, 2.0, 3.0), [(2, 3)], probability, rtol=1e-5,
         id="outside_the_support"),
    # batched means and covariances: the leading axes of x, mean and cov broadcast
    Case("scipy.stats.multivariate_normal.logpdf",
         lambda x, mean, a: stats.multivariate_normal.logpdf(x, mean, _spd_secant(a)),
         _mvn_loop(st.multivariate_normal.logpdf), [(4, 2, 3), (2, 3), (2, 3, 3)],
         id="batched"),
    Case("scipy.stats.multivariate_normal.pdf",
         lambda x, mean, a: stats.multivariate_normal.pdf(x, mean, _spd_secant(a)),
         _mvn_loop(st.multivariate_normal.pdf), [(4, 3), (3,), (2, 1, 3, 3)],
         id="batched_covariance"),
    Case("scipy.stats.multivariate_normal.logpdf",
         lambda x, mean, v: stats.multivariate_normal.logpdf(x, mean, v[0] + 1),
         lambda x, mean, v: st.multivariate_normal.logpdf(x, mean, v[0] + 1),
         [(4, 3), (3,), (1,)], probability, id="isotropic"),
    # logsumexp: complex inputs (the complex logarithm of the sum), where=
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a, axis=1),
         lambda a: ss.logsumexp(a, axis=1), [(3, 4)], complex=True, id="complex"),
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a, return_sign=True)[0],
         lambda a: ss.logsumexp(a, return_sign=True)[0], [(3, 4)], complex=True,
         id="complex_return_sign"),
    Case("scipy.special.logsumexp", lambda a, b: special.logsumexp(a, axis=0, b=b),
         lambda a, b: ss.logsumexp(a, axis=0, b=b), [(3, 4), (3, 4)], complex=True,
         id="complex_b"),
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a, axis=1, where=MASK),
         lambda a: _masked_lse(a, axis=1), [(3, 4)], id="where"),
    Case("scipy.special.logsumexp",
         lambda a, b: special.logsumexp(a, b=b, where=MASK, return_sign=True)[0],
         lambda a, b: ss.logsumexp(np.where(MASK, a, -np.inf), b=b, return_sign=True)[0],
         [(3, 4), (3, 4)], id="where_b_return_sign"),
    Case("nn.logsumexp", lambda a: nn.logsumexp(a, axis=-1, where=MASK),
         lambda a: _masked_lse(a, axis=-1), [(3, 4)], id="where"),
    Case("nn.logsumexp", lambda a: nn.logsumexp(a, axis=0), lambda a: ss.logsumexp(a, axis=0),
         [(3, 4)], complex=True, id="complex"),
    Case("nn.softmax", lambda x: nn.softmax(x, where=MASK), _masked_softmax, [(3, 4)],
         id="where"),
    # log_softmax is -inf where masked out: the case reads the kept entries
    Case("nn.log_softmax", lambda x: snp.where(MASK, nn.log_softmax(x, where=MASK), 0.0),
         lambda x: np.where(MASK, np.log(np.where(MASK, _masked_softmax(x), 1)), 0.0),
         [(3, 4)], id="where"),
]
