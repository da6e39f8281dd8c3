"""Linear regression trained with SGD + momentum; minibatches from a key split per epoch."""
import jax
import jax.numpy as jnp

N, D, BATCH = 64, 3, 16


def make_data(key):
    kx, kn = jax.random.split(key)
    x = jax.random.normal(kx, (N, D))
    w_true = jnp.array([1.5, -2.0, 0.5])
    y = x @ w_true + 0.3 + 0.1 * jax.random.normal(kn, (N,))
    return x, y


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def update(params, opt_state, batch):
    x, y = batch
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    opt_state = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, opt_state, grads)
    params = jax.tree_util.tree_map(lambda p, m: p - 0.05 * m, params, opt_state)
    return params, opt_state, loss


def main():
    key = jax.random.PRNGKey(0)
    key, data_key = jax.random.split(key)
    x, y = make_data(data_key)
    params = {"w": jnp.zeros(D), "b": jnp.zeros(())}
    opt_state = jax.tree_util.tree_map(jnp.zeros_like, params)
    losses = []
    for epoch in range(4):
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, N)
        for i in range(N // BATCH):
            idx = perm[i * BATCH:(i + 1) * BATCH]
            params, opt_state, loss = update(params, opt_state, (x[idx], y[idx]))
            losses.append(loss)
    return {"losses": jnp.stack(losses), "params": params, "perm": perm}
