"""Issue 15 (dyn15): a transform written in place on the function a user's factory makes,
`vmap(lambda z: grad(make_loss(f))(z, theta))`, was refused ("secant reads grad(...) written
in place when its function is named"): now the factory runs as the program runs it and the
call of grad(...) is a call of a function known at run time (transformed on first use). Against
closed forms, a Python loop (vmap), float64 central differences (grad of it) and eager (jit)."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jacfwd, jacrev, jit, value_and_grad, vmap

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(1515)


def wave(z, theta):
    return jnp.sin(z * theta)


def make_loss(fn):
    def loss(z, theta):
        return jnp.sum(fn(z, theta) ** 2)
    return loss


def make_scaled_loss(fn, scale=3.0):
    return lambda z, theta: scale * jnp.sum(fn(z, theta) ** 2)


THETA = np.array([0.5, 1.5, -0.7])


def grad_in_place(z):
    return grad(make_loss(wave))(z, jnp.asarray(THETA))


def grad_in_place_by_keyword(z):
    return grad(make_scaled_loss(wave, scale=2.0), argnums=0)(z, theta=jnp.asarray(THETA))


def test_vmap_of_grad_of_a_factory_made_function(x64):
    zs = RNG.normal(size=(4, 3))
    want = np.sin(2 * zs * THETA) * THETA        # d/dz sum sin(z theta)^2
    np.testing.assert_allclose(vmap(grad_in_place)(jnp.asarray(zs)), want, rtol=1e-12)
    check_vmap(grad_in_place, (zs,))             # (and jit(vmap))
    np.testing.assert_allclose(vmap(grad_in_place_by_keyword)(jnp.asarray(zs)), 2 * want,
                               rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad_in_place))(jnp.asarray(zs)), want, rtol=1e-12)


def test_derivatives_of_grad_of_a_factory_made_function(x64):
    z = RNG.normal(size=3)
    hess = np.diag(2 * THETA ** 2 * np.cos(2 * z * THETA))
    np.testing.assert_allclose(jacfwd(grad_in_place)(jnp.asarray(z)), hess, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(jacrev(grad_in_place)(jnp.asarray(z)), hess, rtol=1e-12,
                               atol=1e-14)
    check_grad(lambda z_: jnp.sum(grad_in_place(z_) ** 2), z)     # (and jit(grad))


def test_vmap_over_the_other_argument(x64):
    z, thetas = to_snp(RNG.normal(size=3)), RNG.normal(size=(4, 3))
    f = lambda t: grad(make_loss(wave), argnums=1)(z, t)      # noqa: E731
    check_vmap(f, (thetas,))
    want = np.sin(2 * np.asarray(z) * thetas) * np.asarray(z)
    np.testing.assert_allclose(vmap(f)(jnp.asarray(thetas)), want, rtol=1e-12)


def test_other_transforms_of_a_factory_made_function_in_place(x64):
    zs = RNG.normal(size=(4, 3))
    want = np.sin(2 * zs * THETA) * THETA
    theta = jnp.asarray(THETA)
    vag = lambda z: value_and_grad(make_loss(wave))(z, theta)    # noqa: E731
    value, g = vmap(vag)(jnp.asarray(zs))
    np.testing.assert_allclose(value, np.sum(np.sin(zs * THETA) ** 2, axis=1), rtol=1e-12)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    jac = lambda z: jacfwd(make_loss(wave))(z, theta)             # noqa: E731
    np.testing.assert_allclose(vmap(jac)(jnp.asarray(zs)), want, rtol=1e-12)
    check_vmap(jac, (zs,))
