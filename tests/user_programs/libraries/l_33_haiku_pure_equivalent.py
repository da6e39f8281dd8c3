"""The pure equivalent of l_32's haiku-style model (the same parameters, names and
initializers), written without any global store: params passed explicitly, module names from
an explicit counter dict threaded through; its apply jitted and differentiated."""
import jax
import jax.numpy as jnp


def linear(params, key, counts, x, n_out):
    i = counts.get("linear", 0)
    counts["linear"] = i + 1
    name = "linear" if i == 0 else f"linear_{i}"
    if name not in params:
        key, kw = jax.random.split(key)
        key, _ = jax.random.split(key)
        shape = (x.shape[-1], n_out)
        params[name] = {"w": jax.random.truncated_normal(kw, -2.0, 2.0, shape) / jnp.sqrt(shape[0]),
                        "b": jnp.zeros((n_out,))}
    return x @ params[name]["w"] + params[name]["b"], key


def forward(params, x, key=None):
    counts = {}
    h, key = linear(params, key, counts, x, 8)
    out, key = linear(params, key, counts, jax.nn.relu(h), 1)
    return out[:, 0]


def init(key, x):
    params = {}
    forward(params, x, key)
    return params


def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def step(params, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g), value


def main():
    x = jax.random.normal(jax.random.PRNGKey(41), (16, 2))
    y = x[:, 0] ** 2 - x[:, 1]
    params = init(jax.random.PRNGKey(42), x)
    losses = []
    for _ in range(10):
        params, value = step(params, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "names": sorted(params), "b": params["linear_1"]["b"]}
