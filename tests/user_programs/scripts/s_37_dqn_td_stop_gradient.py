"""A TD(0) value-learning loop: the target network's values behind lax.stop_gradient, the target
parameters copied every 5 steps (a Python branch on the step), transitions sampled with
jax.random.randint."""
import jax
import jax.numpy as jnp

N_STATES = 6


def values(params, s):
    onehot = jax.nn.one_hot(s, N_STATES)
    return jnp.tanh(onehot @ params["w1"]) @ params["w2"]


def td_loss(params, target, s, r, s_next):
    target_v = r + 0.9 * jax.lax.stop_gradient(values(target, s_next))
    return jnp.mean((values(params, s) - target_v) ** 2)


@jax.jit
def update(params, target, key):
    ks, kr = jax.random.split(key)
    s = jax.random.randint(ks, (16,), 0, N_STATES)
    s_next = (s + 1) % N_STATES
    r = jnp.where(s_next == 0, 1.0, 0.0) + 0.01 * jax.random.normal(kr, (16,))
    l, g = jax.value_and_grad(td_loss)(params, target, s, r, s_next)
    return jax.tree_util.tree_map(lambda p, g: p - 0.3 * g, params, g), l


def main():
    k1, k2, key = jax.random.split(jax.random.PRNGKey(6), 3)
    params = {"w1": 0.3 * jax.random.normal(k1, (N_STATES, 8)),
              "w2": 0.3 * jax.random.normal(k2, (8,))}
    target = params
    losses = []
    for step in range(20):
        key, sub = jax.random.split(key)
        params, l = update(params, target, sub)
        losses.append(l)
        if step % 5 == 4:
            target = jax.tree_util.tree_map(lambda p: p, params)
    return {"losses": jnp.stack(losses), "v": values(params, jnp.arange(N_STATES))}
