"""Issue 15, code written by others (fourth round): the programs of the other test_others4_*
files under deeper compositions: grad to the 4th order (against differences of the 3rd),
jacfwd of jacrev against jacrev of jacrev, jvp of grad against differences of grad, vmap of
jit of grad against a loop, grad of a vmapped sum against the sum of grads, and jit of hessian
against eager; each checked against float64 finite differences, a Python loop or eager."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, vmap

from others15_check import fd_grad, fd_jvp, to_snp
from test_others4_graphs_rl import gae
from test_others4_idioms import collatz_like, comprehension_loss, gaussian_nll, power_by_squaring
from test_others4_libraries import flow_log_prob_classes, make_flow, model_log_density
from test_others4_pystyle import ordered_layers, reduce_net, tree_model, make_tree
from test_others4_transformers import layer_norm
from user_programs.checks import turns

# (tolerance-based checks: XLA's LLVM optimisation off in the default profile, conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")

RNG = np.random.default_rng(4444)

FLOW = make_flow(np.random.default_rng(1))
TREE = make_tree(2, np.random.default_rng(2))
WS = [np.random.default_rng(3).normal(size=(3, 3)) * 0.7 for _ in range(3)]
LN = (1 + 0.1 * np.random.default_rng(4).normal(size=4), 0.1 * np.ones(4))
DONES = np.array([0.0, 1.0, 0.0, 0.0])
REWARDS = np.array([0.3, -0.1, 0.5, 0.2])
DICT_PARAMS = {"w_a": np.array([0.3, -0.2]), "w_b": np.array([0.1, 0.4]),
               "b_a": np.array([-0.5, 0.2])}
LAYER_PARAMS = {f"layer_{i}": np.random.default_rng(i).normal(size=(2, 2)) * 0.7
                for i in (10, 2, 1)}

# scalar functions of a scalar, for high orders
SCALAR = {
    "collatz_like": collatz_like,
    "power_by_squaring": lambda x: power_by_squaring(x, 6),
    "tree_model": lambda x: tree_model(to_snp(TREE), x * jnp.array([1.0, -0.5, 0.3])),
    "reduce_net": lambda x: reduce_net(to_snp(WS), x * jnp.array([0.2, 0.5, -0.4])),
    "gaussian_nll": lambda x: gaussian_nll({"loc": x, "log_scale": 0.3 * x},
                                           jnp.array([0.1, 1.2, -0.4])),
    "gae_critic": lambda x: jnp.sum(gae(to_snp(REWARDS), x * jnp.arange(1.0, 6.0),
                                        to_snp(DONES)) ** 2),
    "comprehension": lambda x: comprehension_loss(to_snp(DICT_PARAMS), x * jnp.ones(2)),
    "ordered_layers": lambda x: ordered_layers(to_snp(LAYER_PARAMS), x * jnp.ones(2)),
}

# vector functions of a vector, for jacobians and vmap
VECTOR = {
    "flow_log_prob": lambda x: flow_log_prob_classes(to_snp(FLOW), x),
    "layer_norm": lambda x: jnp.sum(jnp.sin(layer_norm(x, to_snp(LN[0]), to_snp(LN[1])))),
    "tree_model": lambda x: tree_model(to_snp(TREE), x[:3]) * jnp.cos(x[3]),
    "reduce_net": lambda x: reduce_net(to_snp(WS), x[:3] * x[3]),
}


# each function under one of its two tests in turn (both under HYPOTHESIS_PROFILE=thorough)
SCALAR_UNDER = turns(sorted(SCALAR), ["fourth_order", "vmap_of_jit"])
VECTOR_UNDER = turns(sorted(VECTOR), ["jacobians", "grad_of_vmap"])


@pytest.mark.parametrize("name", SCALAR_UNDER["fourth_order"])
def test_grad_to_the_fourth_order(x64, name):
    f = SCALAR[name]
    x0 = 0.37
    d3 = grad(grad(grad(f)))
    d4 = grad(d3)(x0)
    np.testing.assert_allclose(d4, fd_grad(d3, (jnp.asarray(x0),)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(jit(grad(grad(grad(grad(f)))))(x0), d4, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", SCALAR_UNDER["vmap_of_jit"])
def test_vmap_of_jit_of_grad_of_grad(x64, name):
    f = SCALAR[name]
    xs = np.array([-0.4, 0.1, 0.37, 0.8])
    got = vmap(jit(grad(grad(f))))(jnp.asarray(xs))
    want = [grad(grad(f))(x) for x in xs]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", VECTOR_UNDER["jacobians"])
def test_jacobian_compositions(x64, name):
    f = VECTOR[name]
    x = RNG.normal(size=4) * 0.5
    h_fr = jacfwd(jacrev(f))(jnp.asarray(x))
    h_rr = jacrev(jacrev(f))(jnp.asarray(x))
    np.testing.assert_allclose(h_fr, h_rr, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(jit(hessian(f))(jnp.asarray(x)), h_fr, rtol=1e-8, atol=1e-10)
    v = RNG.normal(size=4)
    _, hvp = jvp(grad(f), (jnp.asarray(x),), (jnp.asarray(v),))
    np.testing.assert_allclose(hvp, fd_jvp(grad(f), (jnp.asarray(x),), (v,)), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(hvp, np.asarray(h_fr) @ v, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", VECTOR_UNDER["grad_of_vmap"])
def test_grad_of_a_vmapped_sum(x64, name):
    f = VECTOR[name]
    xs = RNG.normal(size=(3, 4)) * 0.5
    g = grad(lambda xs: jnp.sum(vmap(f)(xs)))(jnp.asarray(xs))
    want = np.stack([grad(f)(jnp.asarray(x)) for x in xs])
    np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(jnp.asarray(xs)), want, rtol=1e-9, atol=1e-12)


def test_hessian_of_model_log_density_in_one_weight(x64):
    x = RNG.normal(size=(6, 3))
    y = (RNG.uniform(size=6) < 0.5).astype(np.float64)
    f = lambda t: model_log_density({"log_tau": 0.1 * t, "w": t * jnp.array([0.3, -0.2, 0.5]),
                                     "b": 0.2 - t}, to_snp(x), to_snp(y))
    d3 = grad(grad(grad(f)))
    np.testing.assert_allclose(grad(d3)(0.4), fd_grad(d3, (jnp.asarray(0.4),)), rtol=1e-4,
                               atol=1e-6)
