"""value_and_grad(loss, has_aux=True) with a metrics dict, accumulated over steps."""
import jax
import jax.numpy as jnp


def loss_fn(params, batch):
    x, y = batch
    logits = x @ params["w"] + params["b"]
    loss = jnp.mean(jax.nn.softplus(-y * logits))
    acc = jnp.mean((logits > 0) == (y > 0))
    metrics = {"loss": loss, "accuracy": acc, "w_norm": jnp.linalg.norm(params["w"])}
    return loss + 0.01 * jnp.sum(params["w"] ** 2), metrics


@jax.jit
def train_step(params, batch):
    (total, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.2 * g, params, grads)
    metrics["total"] = total
    return params, metrics


def main():
    key = jax.random.PRNGKey(21)
    x = jax.random.normal(key, (50, 5))
    y = jnp.where(x[:, 0] + x[:, 1] ** 2 > 0.5, 1.0, -1.0)
    params = {"w": jnp.zeros(5), "b": 0.0}
    history = {"loss": [], "accuracy": [], "w_norm": [], "total": []}
    for _ in range(10):
        params, metrics = train_step(params, (x, y))
        for k, v in metrics.items():
            history[k].append(v)
    return {k: jnp.stack(v) for k, v in history.items()} | {"params": params}
