"""Issue 15, code written by others (eleventh round): the eleventh round's library programs under
the compositions their users reach for. Four levels of grad of one step of the class-attribute
Butcher-tableau solver, vmap of vmap of an evolution strategy's fitness over a population and a
set of tasks, an equinox-like MLP whose activation is looked up by name with getattr(jnp, name)
from a static field, differentiated twice (hessian against jacfwd of grad), and a dict of loss
lambdas beside lambdas chosen by a static key, under grad of vmap and vmap of grad. Checked
against float64 central differences of the order below, closed forms and Python loops."""
import dataclasses
from typing import Any

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad
from test_others11_sim import Bosh3


def _one_step(y):
    y1, _ = Bosh3().step(lambda t, y, args: jnp.sin(y) * args, 0.0, 0.3, y, 1.5)
    return y1


def test_four_levels_of_grad_of_a_tableau_step(x64):
    f = _one_step
    y = 0.4
    derivs = [f]
    for _ in range(4):
        derivs.append(grad(derivs[-1]))
    eps = 1e-4
    for k in range(1, 5):
        want = (float(derivs[k - 1](y + eps)) - float(derivs[k - 1](y - eps))) / (2 * eps)
        np.testing.assert_allclose(derivs[k](y), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(derivs[4])(y), derivs[4](y), rtol=1e-12)


def _fitness(x, task):
    return jnp.sum((x - task["target"]) ** 2 * task["weight"])


def test_vmap_of_vmap_of_fitness_over_population_and_tasks(x64):
    rng = np.random.default_rng(0)
    pop = rng.normal(size=(5, 3))
    tasks = {"target": rng.normal(size=(4, 3)), "weight": rng.uniform(0.5, 2.0, size=(4, 3))}
    table = vmap(vmap(_fitness, in_axes=(0, None)), in_axes=(None, 0))(jnp.asarray(pop),
                                                                       tree_util.tree_map(jnp.asarray, tasks))
    want = np.asarray([[np.sum((pop[i] - tasks["target"][j]) ** 2 * tasks["weight"][j])
                        for i in range(5)] for j in range(4)])
    np.testing.assert_allclose(table, want, rtol=1e-12)

    # the gradient of the mean over tasks of the best member's fitness, in the population
    def robust(pop):
        t = vmap(vmap(_fitness, in_axes=(0, None)), in_axes=(None, 0))(pop, tasks)
        return jnp.mean(jnp.min(t, axis=1))

    check_grad(robust, pop)


@dataclasses.dataclass
class MLP:
    layers: list
    activation: str

    def __call__(self, x):
        act = getattr(jnp, self.activation)
        for w, b in self.layers[:-1]:
            x = act(w @ x + b)
        w, b = self.layers[-1]
        return (w @ x + b)[0]


tree_util.register_dataclass(MLP, data_fields=["layers"], meta_fields=["activation"])


def _mlp(activation):
    rng = np.random.default_rng(2)
    return MLP([(jnp.asarray(rng.normal(size=(4, 2))), jnp.asarray(rng.normal(size=4))),
                (jnp.asarray(rng.normal(size=(1, 4))), jnp.asarray(rng.normal(size=1)))], activation)


def test_activation_looked_up_by_name_differentiated_twice(x64):
    x = jnp.asarray([0.3, -0.8])
    for name in ("tanh", "sin", "arctan"):
        model = _mlp(name)
        h = hessian(model)(x)
        np.testing.assert_allclose(h, jacfwd(grad(model))(x), rtol=1e-10, atol=1e-12)
        for i in range(2):
            row = fd_grad(lambda x: grad(model)(x)[i], (x,))
            np.testing.assert_allclose(h[i], row, rtol=1e-5, atol=1e-7)
        # the gradient in the parameters is an MLP with the same activation name
        g = grad(lambda m: m(x))(model)
        assert isinstance(g, MLP) and g.activation == name
        check_vmap(lambda x: grad(lambda m: m(x))(model).layers[0][0], (np.asarray([[0.3, -0.8], [1.0, 2.0]]),))


LOSSES = {
    "mse": lambda pred, y: jnp.mean((pred - y) ** 2),
    "huber": lambda pred, y: jnp.mean(jnp.where(jnp.abs(pred - y) < 1.0, 0.5 * (pred - y) ** 2,
                                                jnp.abs(pred - y) - 0.5)),
    "logcosh": lambda pred, y: jnp.mean(jnp.log(jnp.cosh(pred - y))),
}


@dataclasses.dataclass
class Config:
    loss: str
    weight: Any


def test_dict_of_loss_lambdas_chosen_by_a_static_key(x64):
    rng = np.random.default_rng(3)
    w = rng.normal(size=3)
    xs, ys = rng.normal(size=(6, 3)), rng.normal(size=6) * 2

    for name in LOSSES:
        cfg = Config(name, 0.1)

        def objective(w, x, y):
            reg = (lambda v: cfg.weight * jnp.sum(v ** 2))(w)
            return LOSSES[cfg.loss](x @ w, y) + reg

        check_grad(objective, w, xs, ys)
        per_example = check_vmap(grad(objective), (w, xs[:, None, :], ys[:, None]), in_axes=(None, 0, 0))
        # the mean of per-example gradients is the full-batch gradient (every loss is a mean)
        full = grad(lambda w: jnp.mean(vmap(lambda x, y: objective(w, x[None], y[None]))(xs, ys)))(w)
        assert_trees_close(np.mean(np.asarray(per_example), axis=0), full, rtol=1e-10, atol=1e-12)
