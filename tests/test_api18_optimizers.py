"""example_libraries.optimizers under grad and vmap (a MAML-style gradient through update
steps, a batch of parameter sets), stax apply functions under vmap, checked against float64
finite differences and Python loops; a hyperparameter computed from a differentiated value is
a clear error (never a silent zero)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import random
from secant.example_libraries import optimizers, stax


@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                               atol=atol)


def loss(params):
    return snp.sum((params["w"] - 3.0) ** 2 * snp.arange(1.0, 3.0)) + snp.sin(params["b"])


def fd_grad(f, params, eps=1e-6):
    out = {}
    for k, v in params.items():
        v = np.asarray(v, np.float64)
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            e = np.zeros_like(v)
            e[i] = eps
            g[i] = (f({**params, k: v + e}) - f({**params, k: v - e})) / (2 * eps)
        out[k] = g
    return out


OPTIMIZERS = {"sgd": lambda: optimizers.sgd(0.1),
              "momentum": lambda: optimizers.momentum(0.1, 0.9),
              "adam": lambda: optimizers.adam(0.1),
              "rmsprop": lambda: optimizers.rmsprop(0.1),
              "adagrad": lambda: optimizers.adagrad(0.1),
              "schedule": lambda: optimizers.sgd(optimizers.exponential_decay(0.1, 1, 0.5))}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_grad_through_update_steps_matches_finite_differences(name):
    opt_init, opt_update, get_params = OPTIMIZERS[name]()

    def inner(params):           # two steps of the optimizer, then the loss
        state = opt_init(params)
        for i in range(2):
            state = opt_update(i, secant.grad(loss)(get_params(state)), state)
        return loss(get_params(state))
    params = {"w": np.array([1.0, 2.0]), "b": np.array(0.5)}
    g = secant.grad(inner)(params)
    expected = fd_grad(inner, params)
    for k in params:
        close(g[k], expected[k], rtol=1e-5, atol=1e-7)
    jitted = secant.jit(secant.grad(inner))(params)
    for k in params:
        close(jitted[k], g[k], rtol=1e-9)


def test_vmap_of_update_steps_and_of_their_gradient_match_a_loop():
    opt_init, opt_update, get_params = optimizers.adam(0.1)

    def inner(w):
        state = opt_init({"w": w, "b": snp.zeros(())})
        state = opt_update(0, secant.grad(loss)(get_params(state)), state)
        return loss(get_params(state))
    ws = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    close(secant.vmap(inner)(ws), [inner(w) for w in ws])
    close(secant.vmap(secant.grad(inner))(ws), [secant.grad(inner)(w) for w in ws])

    state = opt_init({"w": ws[0], "b": snp.zeros(())})

    def step(g):
        return get_params(opt_update(0, {"w": g, "b": snp.ones(())}, state))["w"]
    close(secant.vmap(step)(ws), [step(g) for g in ws])


def test_a_hyperparameter_from_a_differentiated_value_is_a_clear_error():
    def meta(lr):
        opt_init, opt_update, get_params = optimizers.sgd(lr)
        state = opt_init(snp.ones(2))
        state = opt_update(0, snp.ones(2), state)
        return snp.sum(get_params(state))
    with pytest.raises(secant.SecantError, match="differentiate"):
        secant.grad(meta)(0.1)
    with pytest.raises(secant.SecantError, match="batch"):
        secant.vmap(meta)(np.array([0.1, 0.2]))


def test_stax_apply_under_vmap_matches_the_batched_call():
    init_fn, apply_fn = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(3), stax.LogSoftmax)
    _, params = init_fn(random.PRNGKey(0), (-1, 5))
    xs = np.random.RandomState(0).randn(6, 5)
    per_example = secant.vmap(apply_fn, in_axes=(None, 0))(params, xs)
    close(per_example, apply_fn(params, xs), rtol=1e-12)
    close(secant.jit(secant.vmap(apply_fn, in_axes=(None, 0)))(params, xs),
          apply_fn(params, xs), rtol=1e-9)

    def nll(params, x):
        return -apply_fn(params, x[None])[0, 0]
    grads = secant.vmap(secant.grad(nll), in_axes=(None, 0))(params, xs)
    for k in range(len(xs)):
        one = secant.grad(nll)(params, xs[k])
        for a, b in zip(secant.tree_util.tree_leaves(grads), secant.tree_util.tree_leaves(one)):
            close(np.asarray(a)[k], b, rtol=1e-9)
