"""Issue 15, code written by others: programs in the style of JAX's pytree, stateful-computation
and random-number tutorials (an MLP with a list of (w, b) tuples, dict and namedtuple parameters,
tree_map SGD, a registered pytree class, a counter and a model state threaded through, keys split
in a loop, dropout, Monte Carlo with vmap over keys), under grad, vmap, jit and compositions;
checked against float64 finite differences, a Python loop and eager."""
import collections

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, random, tree_util, vmap

from others15_check import (assert_trees_close, check_grad, check_vmap, to_snp)

RNG = np.random.default_rng(1500)
XS = RNG.normal(size=(8, 3))
YS = np.sin(XS @ np.array([1.0, -2.0, 0.5]))


def init_mlp_params(layer_widths):
    params = []
    for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
        params.append(dict(weights=RNG.normal(size=(n_in, n_out)) * np.sqrt(2 / n_in),
                           biases=np.ones(shape=(n_out,))))
    return params


def forward(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jnp.tanh(x @ layer["weights"] + layer["biases"])
    return x @ last["weights"] + last["biases"]


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x)[:, 0] - y) ** 2)


LEARNING_RATE = 0.05


@jit
def update(params, x, y):
    grads = grad(loss_fn)(params, x, y)
    return tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def test_mlp_list_of_dicts_tree_map_sgd(x64):
    params = to_snp(init_mlp_params([3, 5, 4, 1]))
    check_grad(loss_fn, params, XS, YS)
    # one jitted step equals the same step eager
    g = grad(loss_fn)(params, to_snp(XS), to_snp(YS))
    want = tree_util.tree_map(lambda p, g: np.asarray(p) - LEARNING_RATE * np.asarray(g), params, g)
    assert_trees_close(update(params, to_snp(XS), to_snp(YS)), want, rtol=1e-10)
    losses = []
    for _ in range(20):
        params = update(params, to_snp(XS), to_snp(YS))
        losses.append(float(loss_fn(params, to_snp(XS), to_snp(YS))))
    assert losses[-1] < losses[0]
    # per-example loss gradients: vmap of grad with params unbatched
    per_ex = lambda p, x, y: loss_fn(p, x[None], y[None])
    check_vmap(grad(per_ex), (params, XS, YS), in_axes=(None, 0, 0))


Params = collections.namedtuple("Params", ["w", "b"])


def linear_loss(p, x, y):
    pred = x @ p.w + p.b
    return jnp.mean((pred - y) ** 2)


def test_namedtuple_params(x64):
    p = Params(RNG.normal(size=3), 0.2)
    g = check_grad(linear_loss, p, XS, YS)
    assert isinstance(g, Params)
    ps = Params(RNG.normal(size=(4, 3)), RNG.normal(size=4))
    check_vmap(linear_loss, (ps, XS, YS), in_axes=(0, None, None))
    check_vmap(grad(linear_loss), (ps, XS, YS), in_axes=(0, None, None))
    new = jit(lambda p: tree_util.tree_map(lambda a, b: a - 0.1 * b, p,
                                           grad(linear_loss)(p, XS, YS)))(to_snp(p))
    assert isinstance(new, Params)
    np.testing.assert_allclose(new.w, np.asarray(p.w) - 0.1 * np.asarray(g.w), rtol=1e-12)


class MyContainer:
    def __init__(self, name, a, b):
        self.name = name
        self.a = a
        self.b = b


def flatten_container(c):
    return (c.a, c.b), c.name


def unflatten_container(name, children):
    return MyContainer(name, *children)


tree_util.register_pytree_node(MyContainer, flatten_container, unflatten_container)


def container_loss(c, x):
    return jnp.sum(jnp.tanh(c.a * x) * c.b) + jnp.sum(c.b ** 2)


def test_registered_pytree_class(x64):
    c = MyContainer("layer", RNG.normal(size=3), RNG.normal(size=3))
    g = check_grad(container_loss, c, RNG.normal(size=3))
    assert isinstance(g, MyContainer) and g.name == "layer"
    cs = MyContainer("layer", RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3)))
    check_vmap(container_loss, (cs, RNG.normal(size=3)), in_axes=(0, None))
    got = check_vmap(grad(container_loss), (cs, RNG.normal(size=3)), in_axes=(0, None))
    assert isinstance(got, MyContainer)


def tree_l2(params):
    return sum(jnp.sum(leaf ** 2) for leaf in tree_util.tree_leaves(params))


def test_tree_leaves_regulariser(x64):
    params = {"dense": {"w": RNG.normal(size=(2, 3)), "b": RNG.normal(size=3)},
              "out": [RNG.normal(size=3), 0.5]}
    g = check_grad(tree_l2, params)
    assert_trees_close(g, tree_util.tree_map(lambda p: 2 * np.asarray(p), params))
    check_vmap(grad(tree_l2), (tree_util.tree_map(lambda p: np.stack([p, 2 * np.asarray(p)]),
                                                  params),))


# --- stateful computations: state in, state out ------------------------------------------------
class Counter:
    """The stateful-computations tutorial's counter, made functional."""

    def count(self, n):
        return n + 1, n + 1

    def reset(self):
        return 0


def test_counter_state_threaded(x64):
    counter = Counter()
    state = counter.reset()
    step = jit(counter.count)
    outs = []
    for _ in range(3):
        value, state = step(state)
        outs.append(int(value))
    assert outs == [1, 2, 3]


def ema_step(state, x):
    """A model with running statistics: the state (mean, var, count) is threaded through."""
    mean, var, count = state["mean"], state["var"], state["count"]
    momentum = 0.9
    new_mean = momentum * mean + (1 - momentum) * jnp.mean(x, axis=0)
    new_var = momentum * var + (1 - momentum) * jnp.var(x, axis=0)
    y = (x - new_mean) / jnp.sqrt(new_var + 1e-5)
    return jnp.sum(y ** 3), {"mean": new_mean, "var": new_var, "count": count + 1}


def run_ema(x, steps=3):
    state = {"mean": jnp.zeros(3), "var": jnp.ones(3), "count": 0}
    total = 0.0
    for i in range(steps):
        out, state = ema_step(state, x * (1.0 + 0.1 * i))
        total = total + out
    return total + jnp.sum(state["mean"])


def test_state_dict_threaded(x64):
    x = RNG.normal(size=(4, 3))
    check_grad(run_ema, x, rtol=1e-5)
    _, state = jit(ema_step)({"mean": jnp.zeros(3), "var": jnp.ones(3), "count": 0}, to_snp(x))
    assert int(state["count"]) == 1
    g, aux = grad(ema_step, argnums=1, has_aux=True)(
        {"mean": jnp.zeros(3), "var": jnp.ones(3), "count": 0}, to_snp(x))
    np.testing.assert_allclose(aux["mean"], 0.1 * x.mean(axis=0), rtol=1e-12)
    check_vmap(run_ema, (RNG.normal(size=(2, 4, 3)),))
    check_vmap(grad(run_ema), (RNG.normal(size=(2, 4, 3)),))


# --- random numbers -----------------------------------------------------------------------------
def noisy_sum(key, x, n=4):
    total = 0.0
    for _ in range(n):
        key, subkey = random.split(key)
        total = total + jnp.sum(x * random.normal(subkey, x.shape))
    return total


def test_split_keys_in_a_loop(x64):
    key = random.PRNGKey(0)
    x = RNG.normal(size=3)
    # linear in x: the gradient is the sum of the draws, drawn again outside
    k, draws = key, np.zeros(3)
    for _ in range(4):
        k, sub = random.split(k)
        draws += np.asarray(random.normal(sub, (3,)))
    np.testing.assert_allclose(grad(noisy_sum, argnums=1)(key, to_snp(x)), draws, rtol=1e-12)
    np.testing.assert_allclose(jit(noisy_sum)(key, to_snp(x)), noisy_sum(key, to_snp(x)), rtol=1e-12)
    keys = random.split(key, 3)
    check_vmap(noisy_sum, (keys, x), in_axes=(0, None))
    check_vmap(grad(noisy_sum, argnums=1), (keys, x), in_axes=(0, None))


def dropout(key, x, rate=0.5):
    keep = random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


def dropout_loss(w, key, x):
    return jnp.sum(dropout(key, jnp.tanh(x @ w)) ** 2)


def test_dropout(x64):
    w = RNG.normal(size=(3, 4))
    key = random.PRNGKey(3)
    check_grad(lambda w: dropout_loss(w, key, to_snp(XS)), w)
    keys = random.split(key, 4)
    check_vmap(lambda k, w: dropout_loss(w, k, to_snp(XS)), (keys, w), in_axes=(0, None))
    check_vmap(lambda k, w: grad(dropout_loss)(w, k, to_snp(XS)), (keys, w), in_axes=(0, None))


def mc_estimate(theta, key):
    """E[(theta z)^2] for z ~ N(0, 1) = theta^2, by the reparameterisation trick."""
    z = random.normal(key, (2000,))
    return jnp.mean((theta * z) ** 2)


def test_monte_carlo_vmap_over_keys(x64):
    keys = random.split(random.PRNGKey(42), 8)
    theta = 1.3
    estimates = check_vmap(mc_estimate, (theta, keys), in_axes=(None, 0))
    np.testing.assert_allclose(np.mean(np.asarray(estimates)), theta ** 2, rtol=0.05)
    grads = check_vmap(grad(mc_estimate), (to_snp(theta), keys), in_axes=(None, 0))
    np.testing.assert_allclose(np.mean(np.asarray(grads)), 2 * theta, rtol=0.05)
    # each estimate's gradient is exact for its own draws
    z = np.asarray(random.normal(keys[0], (2000,)))
    np.testing.assert_allclose(grads[0], 2 * theta * np.mean(z ** 2), rtol=1e-10)
    avg = lambda theta: jnp.mean(vmap(mc_estimate, in_axes=(None, 0))(theta, keys))
    check_grad(avg, theta)


def test_random_draws_jit_equal_eager(x64):
    def sample(key):
        k1, k2, k3 = random.split(key, 3)
        return (random.uniform(k1, (3,)), random.normal(k2, (2, 2)),
                random.categorical(k3, jnp.log(jnp.array([0.2, 0.3, 0.5])), shape=(5,)))

    key = random.PRNGKey(7)
    assert_trees_close(jit(sample)(key), sample(key))
    keys = random.split(key, 3)
    got = vmap(sample)(keys)
    for i in range(3):
        assert_trees_close(tree_util.tree_map(lambda v: v[i], got), sample(keys[i]))
