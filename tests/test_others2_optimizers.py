"""Issue 15, code written by others (second round): optimizers written by hand over nested dict
parameters with tree_util.tree_map / tree_leaves / tree_flatten / tree_unflatten (SGD with
momentum, RMSProp, Adam), a jitted training step with donate_argnums, gradient clipping by global
norm; each checked against float64 finite differences, a Python loop for vmap and eager for jit."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jit, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_np, to_snp

RNG = np.random.default_rng(2002)
X = RNG.normal(size=(8, 3))
Y = np.sin(X @ np.array([0.5, -0.8, 0.3]))


def init_mlp(sizes, scale=0.5):
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"layer{i}"] = {"w": RNG.normal(size=(m, n)) * scale, "b": np.zeros(n)}
    return params


def mlp(params, x):
    n = len(params)
    for i in range(n):
        layer = params[f"layer{i}"]
        x = x @ layer["w"] + layer["b"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x[..., 0]


def mse(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


P0 = init_mlp([3, 4, 4, 1])


# --- SGD with momentum --------------------------------------------------------------------------
def momentum_init(params):
    return tree_util.tree_map(jnp.zeros_like, params)


def momentum_update(params, velocity, grads, lr=0.05, beta=0.9):
    velocity = tree_util.tree_map(lambda v, g: beta * v + g, velocity, grads)
    params = tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity


def test_momentum_nested_dicts(x64):
    params = to_snp(P0)
    check_grad(mse, P0, X, Y)
    vel = momentum_init(params)
    losses = []
    for _ in range(40):
        loss, g = value_and_grad(mse)(params, to_snp(X), to_snp(Y))
        params, vel = momentum_update(params, vel, g)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]

    @jit
    def step(params, vel, x, y):
        g = grad(mse)(params, x, y)
        return momentum_update(params, vel, g)

    p, v = to_snp(P0), momentum_init(to_snp(P0))
    for _ in range(3):
        want = momentum_update(p, v, grad(mse)(p, to_snp(X), to_snp(Y)))
        got = step(p, v, to_snp(X), to_snp(Y))
        assert_trees_close(got, want, rtol=1e-10)
        p, v = want


# --- RMSProp over flattened leaves --------------------------------------------------------------
def rmsprop_step(params, sq, x, y, lr=0.01, decay=0.9, eps=1e-8):
    grads = grad(mse)(params, x, y)
    leaves, treedef = tree_util.tree_flatten(params)
    g_leaves = tree_util.tree_leaves(grads)
    sq_leaves = tree_util.tree_leaves(sq)
    new_p, new_sq = [], []
    for p, g, s in zip(leaves, g_leaves, sq_leaves):
        s = decay * s + (1 - decay) * g ** 2
        new_p.append(p - lr * g / (jnp.sqrt(s) + eps))
        new_sq.append(s)
    return tree_util.tree_unflatten(treedef, new_p), tree_util.tree_unflatten(treedef, new_sq)


def rmsprop_train(params, x, y, steps=3):
    sq = tree_util.tree_map(lambda p: jnp.ones_like(p), params)
    for _ in range(steps):
        params, sq = rmsprop_step(params, sq, x, y)
    return mse(params, x, y)


def test_rmsprop_flatten_unflatten(x64):
    params, sq = to_snp(P0), tree_util.tree_map(lambda p: jnp.ones_like(p), to_snp(P0))
    got = jit(rmsprop_step)(params, sq, to_snp(X), to_snp(Y))
    assert_trees_close(got, rmsprop_step(params, sq, to_snp(X), to_snp(Y)), rtol=1e-10)
    # a hand loop in NumPy: the same update
    g = to_np(grad(mse)(params, to_snp(X), to_snp(Y)))
    s = tree_util.tree_map(lambda g: 0.9 + 0.1 * g ** 2, g)
    want = tree_util.tree_map(lambda p, g, s: p - 0.01 * g / (np.sqrt(s) + 1e-8), P0, g, s)
    assert_trees_close(got[0], want, rtol=1e-10)


def test_rmsprop_meta_gradient(x64):
    """meta-gradient through three RMSProp steps, in the data and the initial parameters"""
    check_grad(rmsprop_train, P0, X, Y, argnum=1, rtol=1e-4, atol=1e-6)
    check_grad(lambda p: rmsprop_train(p, to_snp(X), to_snp(Y)), P0, rtol=1e-4, atol=1e-6)


def test_loop_target_rebound_over_leaves_of_different_shapes(x64):
    """The smallest form of the case above (no second order needed). Was silently wrong: the
    zero cotangent of the carried `s` was shaped like the next (reversed) iteration's value and
    broadcast into the previous one's."""
    leaves = [np.ones(4), np.ones((3, 4))]

    def f(a, b):
        out = []
        for g, s in zip([a, b], leaves):
            s = 0.5 * s + g ** 2
            out.append(s)
        return jnp.sum(out[0]) + 2.0 * jnp.sum(out[1])

    a, b = RNG.normal(size=4), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(grad(f)(*to_snp((a, b))), 2 * a, rtol=1e-12)
    np.testing.assert_allclose(grad(f, argnums=1)(*to_snp((a, b))), 4 * b, rtol=1e-12)


def test_loop_target_rebound_and_read_after_the_loop(x64):
    """The same loop with the last `s` read after it: its cotangent reaches only the last
    iteration's value, eagerly and under jit (closed form)."""
    leaves = [np.ones(4), np.ones((3, 4))]

    def f(a, b):
        out = []
        for g, s in zip([a, b], leaves):
            s = 0.5 * s + g ** 2
            out.append(s)
        return jnp.sum(out[0]) + 2.0 * jnp.sum(out[1]) + jnp.sum(s * s)

    a, b = RNG.normal(size=4), RNG.normal(size=(3, 4))
    want = (2 * a, 4 * b + 4 * b * (0.5 + b ** 2))
    for g in (grad(f, argnums=(0, 1)), jit(grad(f, argnums=(0, 1)))):
        got = g(*to_snp((a, b)))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


# --- Adam as a class holding hyperparameters, state as a tuple of pytrees ----------------------
class Adam:
    def __init__(self, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def init(self, params):
        zeros = tree_util.tree_map(jnp.zeros_like, params)
        return (zeros, zeros, 0)

    def update(self, grads, state, params):
        m, v, t = state
        t = t + 1
        m = tree_util.tree_map(lambda m, g: self.b1 * m + (1 - self.b1) * g, m, grads)
        v = tree_util.tree_map(lambda v, g: self.b2 * v + (1 - self.b2) * g * g, v, grads)
        mhat = tree_util.tree_map(lambda m: m / (1 - self.b1 ** t), m)
        vhat = tree_util.tree_map(lambda v: v / (1 - self.b2 ** t), v)
        params = tree_util.tree_map(lambda p, a, b: p - self.lr * a / (jnp.sqrt(b) + self.eps),
                                    params, mhat, vhat)
        return params, (m, v, t)


def np_adam(params, grads_fn, steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m = tree_util.tree_map(np.zeros_like, params)
    v = tree_util.tree_map(np.zeros_like, params)
    for t in range(1, steps + 1):
        g = grads_fn(params)
        m = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        params = tree_util.tree_map(
            lambda p, m, v: p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps),
            params, m, v)
    return params


def test_adam_class_state_tuple(x64):
    opt = Adam(lr=0.02)
    x, y = to_snp((X, Y))

    @jit
    def train_step(params, state):
        loss, g = value_and_grad(mse)(params, x, y)
        params, state = opt.update(g, state, params)
        return params, state, loss

    params = to_snp(P0)
    state = opt.init(params)
    for _ in range(4):
        params, state, loss = train_step(params, state)
    want = np_adam(P0, lambda p: to_np(grad(mse)(to_snp(p), x, y)), 4, lr=0.02)
    assert_trees_close(params, want, rtol=1e-8)
    assert int(state[2]) == 4


# --- gradient clipping by global norm -----------------------------------------------------------
def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(leaf ** 2) for leaf in tree_util.tree_leaves(tree)))


def clip_by_global_norm(grads, max_norm):
    norm = global_norm(grads)
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-12))
    return tree_util.tree_map(lambda g: g * scale, grads)


def clipped_step(params, x, y, lr=0.1, max_norm=0.5):
    g = clip_by_global_norm(grad(mse)(params, x, y), max_norm)
    return tree_util.tree_map(lambda p, g: p - lr * g, params, g)


def test_clip_by_global_norm(x64):
    params = to_snp(P0)
    g = to_np(grad(mse)(params, to_snp(X), to_snp(Y)))
    norm = np.sqrt(sum(np.sum(l ** 2) for l in tree_util.tree_leaves(g)))
    np.testing.assert_allclose(global_norm(g), norm, rtol=1e-12)
    check_grad(global_norm, g)
    want = tree_util.tree_map(lambda p, g: p - 0.1 * g * min(1.0, 0.5 / norm), P0, g)
    assert_trees_close(clipped_step(params, to_snp(X), to_snp(Y)), want, rtol=1e-10)
    assert_trees_close(jit(clipped_step)(params, to_snp(X), to_snp(Y)), want, rtol=1e-10)
    # the loss after one clipped step, differentiated in the data
    after = lambda x: mse(clipped_step(params, x, to_snp(Y)), x, to_snp(Y))
    check_grad(after, X, rtol=1e-4, atol=1e-6)


# --- a jitted step with donate_argnums ----------------------------------------------------------
def sgd_train_step(params, opt_state, x, y):
    loss, grads = value_and_grad(mse)(params, x, y)
    opt_state = tree_util.tree_map(lambda s, g: 0.5 * s + g, opt_state, grads)
    params = tree_util.tree_map(lambda p, s: p - 0.05 * s, params, opt_state)
    return params, opt_state, loss


def test_jit_train_step_donate_argnums(x64):
    step = jit(sgd_train_step, donate_argnums=(0, 1))
    params, state = to_snp(P0), momentum_init(to_snp(P0))
    eager_p, eager_s = to_snp(P0), momentum_init(to_snp(P0))
    for _ in range(5):
        params, state, loss = step(params, state, to_snp(X), to_snp(Y))
        eager_p, eager_s, eager_loss = sgd_train_step(eager_p, eager_s, to_snp(X), to_snp(Y))
        np.testing.assert_allclose(loss, eager_loss, rtol=1e-10)
    assert_trees_close(params, eager_p, rtol=1e-9)
    assert_trees_close(state, eager_s, rtol=1e-9)


# --- per-example gradients of nested params, reduced with tree_map -----------------------------
def test_per_example_grads_tree_mean(x64):
    one = lambda p, x, y: (mlp(p, x[None]) - y) [0] ** 2
    per = check_vmap(grad(one), (P0, X, Y), in_axes=(None, 0, 0))
    mean = tree_util.tree_map(lambda g: jnp.mean(g, axis=0), per)
    assert_trees_close(mean, grad(mse)(to_snp(P0), to_snp(X), to_snp(Y)), rtol=1e-10)
    # the per-example gradient norms (a DP-SGD ingredient), against finite differences
    norms = vmap(lambda x, y: global_norm(grad(one)(to_snp(P0), x, y)))(to_snp(X), to_snp(Y))
    for i in range(3):
        fd = fd_grad(one, (to_snp(P0), to_snp(X[i]), Y[i]))
        np.testing.assert_allclose(norms[i], global_norm(fd), rtol=1e-5)
