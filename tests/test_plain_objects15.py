"""Issue 15: objects of plain (unregistered) Python classes as differentiated values, the way
code written by others uses them: a class looked up at run time from a registry, an __init__
that computes (a log-scale stored, the scale a property), methods calling each other, a class
hierarchy with super(), objects kept in lists and dicts and returned from helpers, and an L2
penalty over vars(m). secant reads such an object as a pytree of its fields (its cotangent an
object of its class built without running __init__, as JAX's register_dataclass / equinox
build theirs). Each under grad, jit(grad), grad(grad) and vmap, against float64 central
differences and Python loops; a class it cannot read so is a clear SecantError."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, hessian, jit

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(1515)


def check_hessian(f, x, *rest):
    """hessian(f) against central differences of grad(f)."""
    x = to_snp(x)
    rest = to_snp(rest)
    h = hessian(f)(x, *rest)
    n = np.size(x)
    want = np.stack([np.reshape(fd_grad(lambda v, *r: np.reshape(grad(f)(v, *r), -1)[i],
                                        (x,) + tuple(rest)), -1) for i in range(n)])
    np.testing.assert_allclose(np.reshape(h, (n, n)), want, rtol=1e-5, atol=1e-6)


# --- distributions looked up by name, one with an __init__ that computes -------------------------
class Dist:
    def nll(self, xs):
        return -jnp.sum(self.log_prob(xs))


class Normal(Dist):
    def __init__(self, loc, scale):
        self.loc = loc
        self.log_scale = jnp.log(scale)         # stored as its log; scale a property

    @property
    def scale(self):
        return jnp.exp(self.log_scale)

    def log_prob(self, x):
        z = (x - self.loc) / self.scale
        return -0.5 * z ** 2 - self.log_scale - 0.5 * jnp.log(2 * jnp.pi)


class Laplace(Dist):
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def log_prob(self, x):
        return -jnp.abs(x - self.loc) / self.scale - jnp.log(2 * self.scale)


FAMILIES = {"normal": Normal, "laplace": Laplace}


def family_nll(p, xs, family):
    dist = FAMILIES[family](p[0], p[1])
    return dist.nll(xs)


def test_constructor_known_at_run_time(x64):
    from scipy import stats
    xs = RNG.normal(0.3, 1.5, size=12)
    p = np.array([0.2, 1.3])
    np.testing.assert_allclose(family_nll(to_snp(p), xs, "normal"),
                               -stats.norm.logpdf(xs, 0.2, 1.3).sum(), rtol=1e-10)
    np.testing.assert_allclose(family_nll(to_snp(p), xs, "laplace"),
                               -stats.laplace.logpdf(xs, 0.2, 1.3).sum(), rtol=1e-10)
    for family in ("normal", "laplace"):
        check_grad(functools.partial(family_nll, family=family), p, xs)
        check_hessian(lambda q, xs: family_nll(q, xs, family), p, xs)
        check_vmap(lambda a, b: family_nll((a, b), xs, family),
                   (RNG.normal(size=4), RNG.uniform(0.5, 2.0, size=4)))
        # vmap over the data, the parameters shared
        check_vmap(lambda x: family_nll(to_snp(p), x, family), (RNG.normal(size=(3, 5)),))
