"""secant.scipy.special against scipy.special (tests/test_library_cases.py runs these)."""
import numpy as np
import scipy.special as ss

from secant.scipy import special
from tests.library_cases import Case, positive


def wide(rng, shape, dtype):
    """Both signs, into the tails: uniform(-6, 6)."""
    return rng.uniform(-6, 6, shape).astype(dtype)


def probability(rng, shape, dtype):
    return rng.uniform(0.02, 0.98, shape).astype(dtype)


def above_one(rng, shape, dtype):
    return rng.uniform(1.5, 4.0, shape).astype(dtype)


def spread(rng, shape, dtype):
    """Positive, both sides of 1 and of a few units: uniform(0.2, 12)."""
    return rng.uniform(0.2, 12.0, shape).astype(dtype)


def signed_away_from_zero(rng, shape, dtype):
    """Both signs, |x| in (0.3, 8): expi's log singularity at 0 stays out of the differences."""
    return (rng.uniform(0.3, 8.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)


A3 = np.array([0.3, 2.5, 9.0])            # gammainc's shape parameters (not differentiated)
N3 = np.array([0, 1, 3])                  # polygamma's orders

CASES = [
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a), ss.logsumexp, [(3, 4)],
         id="all"),
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a, axis=1, keepdims=True),
         lambda a: ss.logsumexp(a, axis=1, keepdims=True), [(3, 4)], id="axis_keepdims"),
    Case("scipy.special.logsumexp", lambda a: special.logsumexp(a, axis=(0, -1)),
         lambda a: ss.logsumexp(a, axis=(0, -1)), [(2, 3, 4)], id="axes"),
    Case("scipy.special.logsumexp", lambda a, b: special.logsumexp(a, axis=0, b=b),
         lambda a, b: ss.logsumexp(a, axis=0, b=b), [(3, 4), (3, 4)], positive, id="b"),
    Case("scipy.special.logsumexp",
         lambda a, b: special.logsumexp(a, axis=-1, b=b, return_sign=True)[0],
         lambda a, b: ss.logsumexp(a, axis=-1, b=b, return_sign=True)[0], [(3, 4), (3, 4)],
         id="return_sign"),
    Case("scipy.special.xlogy", special.xlogy, ss.xlogy, [(3,), (3,)], positive),
    Case("scipy.special.xlog1py", special.xlog1py, ss.xlog1py, [(3,), (3,)], positive),
    Case("scipy.special.entr", special.entr, ss.entr, [(2, 3)], positive),
    Case("scipy.special.gammaln", special.gammaln, ss.gammaln, [(3,)], spread),
    Case("scipy.special.digamma", special.digamma, ss.digamma, [(3,)], spread),
    Case("scipy.special.polygamma", lambda x: special.polygamma(N3, x),
         lambda x: ss.polygamma(N3, x), [(3,)], spread),
    Case("scipy.special.polygamma", lambda x: special.polygamma(2, x),
         lambda x: ss.polygamma(2, x), [(2, 2)], spread, id="static_n"),
    Case("scipy.special.betaln", special.betaln, ss.betaln, [(3,), (3,)], spread),
    Case("scipy.special.multigammaln", lambda a: special.multigammaln(a + 2, 3),
         lambda a: ss.multigammaln(a + 2, 3), [(3,)], spread),
    Case("scipy.special.erf", special.erf, ss.erf, [(3,)], wide),
    Case("scipy.special.erfc", special.erfc, ss.erfc, [(2, 3)], wide),
    Case("scipy.special.erfinv", special.erfinv, ss.erfinv, [(3,)]),
    Case("scipy.special.expit", special.expit, ss.expit, [(3,)], wide),
    Case("scipy.special.logit", special.logit, ss.logit, [(3,)], probability),
    Case("scipy.special.ndtr", special.ndtr, ss.ndtr, [(2, 3)], wide),
    Case("scipy.special.ndtri", special.ndtri, ss.ndtri, [(2, 3)], probability),
    Case("scipy.special.log_ndtr", special.log_ndtr, ss.log_ndtr, [(2, 3)], wide),
    Case("scipy.special.i0e", special.i0e, ss.i0e, [(2, 3)], wide),
    Case("scipy.special.i1e", special.i1e, ss.i1e, [(2, 3)], wide),
    Case("scipy.special.i0", special.i0, ss.i0, [(2, 3)], wide),
    Case("scipy.special.i1", special.i1, ss.i1, [(2, 3)], wide),
    Case("scipy.special.gammainc", lambda x: special.gammainc(A3, x),
         lambda x: ss.gammainc(A3, x), [(3,)], spread),
    Case("scipy.special.gammaincc", lambda x: special.gammaincc(A3, x),
         lambda x: ss.gammaincc(A3, x), [(3,)], spread),
    Case("scipy.special.gammainc", special.gammainc, ss.gammainc, [(3,), (3,)], spread,
         id="a_and_x"),
    Case("scipy.special.gammaincc", special.gammaincc, ss.gammaincc, [(3,), (3,)], spread,
         id="a_and_x"),
    Case("scipy.special.zeta", lambda q: special.zeta(2.5, q), lambda q: ss.zeta(2.5, q),
         [(3,)], spread),
    Case("scipy.special.zeta", lambda x: special.zeta(x), lambda x: ss.zeta(x), [(3,)],
         above_one, differentiable=False, id="riemann"),
    Case("scipy.special.erfcx", lambda x: special.erfcx(2 * x), lambda x: ss.erfcx(2 * x),
         [(2, 3)]),
    Case("scipy.special.erfcx", lambda x: special.erfcx(30 * x), lambda x: ss.erfcx(30 * x),
         [(3,)], spread, id="large"),
    Case("scipy.special.boxcox", lambda x, lm: special.boxcox(x, lm - 1),
         lambda x, lm: ss.boxcox(x, lm - 1), [(3,), (3,)], positive),
    Case("scipy.special.boxcox", lambda x: special.boxcox(x, np.array([0.0, 0.5, -1.0])),
         lambda x: ss.boxcox(x, np.array([0.0, 0.5, -1.0])), [(3,)], spread, id="lmbda_0"),
    Case("scipy.special.boxcox1p", lambda x, lm: special.boxcox1p(x, lm - 1),
         lambda x, lm: ss.boxcox1p(x, lm - 1), [(3,), (3,)], positive),
    Case("scipy.special.boxcox1p", lambda x: special.boxcox1p(x, np.array([0.0, 2.0, -0.5])),
         lambda x: ss.boxcox1p(x, np.array([0.0, 2.0, -0.5])), [(3,)], spread, id="lmbda_0"),
    Case("scipy.special.exp1", special.exp1, ss.exp1, [(2, 3)], spread),
    Case("scipy.special.expi", special.expi, ss.expi, [(2, 3)], signed_away_from_zero),
    Case("scipy.special.expn", lambda x: special.expn(N3, x), lambda x: ss.expn(N3, x),
         [(2, 3)], spread),
    Case("scipy.special.expn", lambda x: special.expn(5, x), lambda x: ss.expn(5, x),
         [(4,)], lambda rng, shape, dtype: rng.uniform(0.05, 3.0, shape).astype(dtype),
         id="static_n"),
]
