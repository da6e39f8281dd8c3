"""Issue 15, code written by others (fifth round): the programs of the other test_others5_* files
under deeper compositions: grad to the 4th order (against differences of the 3rd and against
jit), vmap of jit of grad of grad against a loop, jacfwd of jacrev against jacrev of jacrev,
jvp of grad against differences of grad, grad of a vmapped sum against the sum of grads, and
jit of hessian against eager; each checked against float64 finite differences, a Python loop or
eager."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, random, vmap

from others15_check import fd_grad, fd_jvp, to_snp
from test_others5_bayes import banana_log_density, iwae_bound, leapfrog
from test_others5_graphics_signal import iir_filter, project, volume_render
from test_others5_linalg import sqrtm_eigh
from test_others5_physics_finance import black_scholes, bond_price, morse, sharpe, wave_leapfrog
from test_others5_sciml import curl_field, heat_residual, init_mlp

RNG = np.random.default_rng(5858)
HEAT = init_mlp([2, 4, 1], np.random.default_rng(1))
CURL = init_mlp([3, 4, 3], np.random.default_rng(3))
XS = np.random.default_rng(4).normal(size=12)
COV = np.array([[0.04, 0.01, 0.0], [0.01, 0.09, 0.02], [0.0, 0.02, 0.05]])
POINTS = np.random.default_rng(5).normal(size=(3, 3))

# scalar functions of a scalar, for high orders
SCALAR = {
    "pinn_heat_residual": lambda x: heat_residual(to_snp(HEAT), 0.3, x),
    "morse": morse,
    "black_scholes_spot": lambda s: black_scholes(100.0 * s, 95.0, 0.75, 0.02, 0.3),
    "leapfrog_end": lambda c: jnp.sum(leapfrog(banana_log_density, jnp.array([0.3, -0.2]) * c,
                                               jnp.array([0.5, 0.1]))[0] ** 2),
    "iwae": lambda m: iwae_bound(jnp.stack([m, -0.5 + 0.0 * m]), random.PRNGKey(1),
                                 jnp.array([0.2, 0.9])),
    "bond": lambda y: bond_price(y, jnp.array([5.0, 5.0, 105.0]), jnp.array([1.0, 2.0, 3.0])),
    "volume_render": lambda s: jnp.sum(volume_render(s * jnp.array([0.5, 1.0, 2.0]),
                                                     jnp.eye(3), jnp.full(3, 0.3))[0] ** 2),
    "iir": lambda a: jnp.sum(iir_filter(jnp.stack([0.3, 0.2, a, 0.1]), to_snp(XS[:6])) ** 2),
    "sharpe": lambda t: sharpe(jnp.array([0.1, -0.2, 0.3]) * t, jnp.array([0.05, 0.08, 0.03]),
                               to_snp(COV)),
}

# vector functions of a vector, for jacobians and vmap
VECTOR = {
    "curl_field": lambda x: jnp.sum(jnp.sin(curl_field(to_snp(CURL), x[:3]))) * x[3],
    "project": lambda x: jnp.sum(project(jnp.concatenate([x[:3] * 0.2, jnp.array([0.0, 0.1]),
                                                          4.0 + x[3:]]), to_snp(POINTS)) ** 2),
    "sqrtm": lambda x: jnp.sum(sqrtm_eigh(jnp.diag(1.5 + jnp.sin(x)) + 0.1) ** 3),
}
# (kept small for CI time: the hessian of test_others5_sciml's lnn_acceleration, a 4th
# derivative of its network through a solve, takes minutes; the PINN residual's
# vmap(jit(grad(grad))) too)
FOURTH = ("morse", "bond", "volume_render")
SECOND = sorted(set(SCALAR) - {"pinn_heat_residual"})
JACOBIANS = ("project", "sqrtm")
VMAPPED_SUM = ("project", "sqrtm", "curl_field")


@pytest.mark.parametrize("name", FOURTH)
def test_grad_to_the_fourth_order(x64, name):
    f = SCALAR[name]
    x0 = 1.07
    d3 = grad(grad(grad(f)))
    d4 = grad(d3)(x0)
    np.testing.assert_allclose(d4, fd_grad(d3, (jnp.asarray(x0),)), rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(jit(grad(grad(grad(grad(f)))))(x0), d4, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", SECOND)
def test_vmap_of_jit_of_grad_of_grad(x64, name):
    f = SCALAR[name]
    xs = np.array([0.8, 1.0, 1.2])
    got = vmap(jit(grad(grad(f))))(jnp.asarray(xs))
    want = [grad(grad(f))(x) for x in xs]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacobian_compositions(x64, name):
    f = VECTOR[name]
    x = RNG.normal(size=4) * 0.3
    h_fr = jacfwd(jacrev(f))(jnp.asarray(x))
    h_rr = jacrev(jacrev(f))(jnp.asarray(x))
    np.testing.assert_allclose(h_fr, h_rr, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(jit(hessian(f))(jnp.asarray(x)), h_fr, rtol=1e-8, atol=1e-10)
    t = RNG.normal(size=4)
    _, hvp = jvp(grad(f), (jnp.asarray(x),), (jnp.asarray(t),))
    np.testing.assert_allclose(hvp, np.asarray(h_fr) @ t, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(hvp, fd_jvp(grad(f), (jnp.asarray(x),), (t,)), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("name", VMAPPED_SUM)
def test_grad_of_vmapped_sum(x64, name):
    f = VECTOR[name]
    xs = RNG.normal(size=(3, 4)) * 0.3
    w = jnp.asarray(RNG.normal(size=4))
    total = lambda w: jnp.sum(vmap(lambda x: f(x * w))(to_snp(xs)))
    want = sum(grad(lambda w: f(to_snp(x) * w))(w) for x in xs)
    np.testing.assert_allclose(grad(total)(w), want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(jit(grad(total))(w), want, rtol=1e-9, atol=1e-11)


def roll_energy(x):
    return jnp.sum(jnp.roll(x, 1) * x ** 2)


def test_hessian_of_roll_eagerly(x64):
    x = RNG.normal(size=4)
    r = np.roll(np.eye(4), 1, axis=0)      # roll(x, 1) = R x
    # f = sum_i (R x)_i x_i^2: H = 2 diag(R x) + 2 (diag(x) R + R' diag(x))
    want = 2 * np.diag(r @ x) + 2 * (np.diag(x) @ r + r.T @ np.diag(x))
    np.testing.assert_allclose(hessian(roll_energy)(to_snp(x)), want, rtol=1e-12)
    np.testing.assert_allclose(jacrev(jacrev(roll_energy))(to_snp(x)), want, rtol=1e-12)
    np.testing.assert_allclose(jvp(grad(VECTOR_WAVE), (to_snp(x),), (to_snp(x),))[1],
                               fd_jvp(grad(VECTOR_WAVE), (to_snp(x),), (x,)), rtol=1e-5, atol=1e-7)


VECTOR_WAVE = lambda x: jnp.sum(wave_leapfrog(jnp.tile(x, 5), dx=0.5, steps=6) ** 2)


def test_jit_of_hessian_of_roll(x64):
    x = RNG.normal(size=4)
    np.testing.assert_allclose(jit(hessian(roll_energy))(to_snp(x)),
                               hessian(roll_energy)(to_snp(x)), rtol=1e-10)
