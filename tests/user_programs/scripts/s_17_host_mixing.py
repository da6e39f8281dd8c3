"""The host side of a script: printing inside the loop, block_until_ready for timing,
np.asarray / jax.device_get of results, NumPy statistics of the run."""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)
    return w - 0.5 * g, loss


def main():
    key = jax.random.PRNGKey(9)
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (30, 3))
    y = jnp.tanh(x @ jnp.array([0.5, -1.0, 0.25]))
    w = jax.random.normal(kw, (3,))
    log = []
    for i in range(20):
        w, loss = step(w, x, y)
        loss = loss.block_until_ready()
        if i % 5 == 0:
            print(f"step {i:3d} loss {loss:.5f} w {np.asarray(w)}")
        log.append(np.asarray(loss))
    host_w = jax.device_get(w)
    log = np.array(log)
    jax.block_until_ready((w, loss))
    return {"log": log, "w": host_w, "improved": bool(log[-1] < log[0]),
            "w_is_numpy": isinstance(host_w, np.ndarray), "argmin": int(np.argmin(log)),
            "sum_w": float(np.sum(host_w))}
