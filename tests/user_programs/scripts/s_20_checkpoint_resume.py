"""Checkpointing: parameters and optimizer state saved to host NumPy at a step (np.savez to a
buffer), training resumed from the checkpoint reproduces the trajectory; jax.checkpoint (remat)
around a layer of the loss."""
import io

import jax
import jax.numpy as jnp
import numpy as np


@jax.checkpoint
def layer(w, x):
    return jnp.sin(x @ w) + x


def loss(params, x):
    h = layer(params["w1"], x)
    h = layer(params["w2"], h)
    return jnp.mean((h - 0.5 * x) ** 2)


@jax.jit
def step(params, mom, x):
    l, g = jax.value_and_grad(loss)(params, x)
    mom = jax.tree_util.tree_map(lambda m, g: 0.5 * m + g, mom, g)
    return jax.tree_util.tree_map(lambda p, m: p - 0.2 * m, params, mom), mom, l


def train(params, mom, x, start, stop, save_at=None):
    losses, saved = [], None
    for i in range(start, stop):
        params, mom, l = step(params, mom, x)
        losses.append(float(l))
        if i == save_at:
            buf = io.BytesIO()
            np.savez(buf, **{f"p_{k}": v for k, v in jax.device_get(params).items()},
                     **{f"m_{k}": v for k, v in jax.device_get(mom).items()})
            saved = buf.getvalue()
    return params, mom, losses, saved


def main():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(4), 3)
    params = {"w1": 0.3 * jax.random.normal(k1, (3, 3)), "w2": 0.3 * jax.random.normal(k2, (3, 3))}
    mom = jax.tree_util.tree_map(jnp.zeros_like, params)
    x = jax.random.normal(k3, (10, 3))
    params, mom, losses, saved = train(params, mom, x, 0, 12, save_at=5)
    ckpt = np.load(io.BytesIO(saved))
    params2 = {k: jnp.asarray(ckpt[f"p_{k}"]) for k in ("w1", "w2")}
    mom2 = {k: jnp.asarray(ckpt[f"m_{k}"]) for k in ("w1", "w2")}
    params2, mom2, resumed, _ = train(params2, mom2, x, 6, 12)
    return {"losses": losses, "resumed": resumed, "params": params, "params2": params2}
