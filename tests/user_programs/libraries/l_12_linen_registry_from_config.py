"""A layer registry filled by `__init_subclass__` (each Layer subclass registered under its
lowercase name), a model built from a config list of dicts (`{"type": "dense", ...}`), params
as a list of dicts, one `apply` walking layers and params together; jitted training."""
import jax
import jax.numpy as jnp

REGISTRY = {}


class Layer:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        REGISTRY[cls.__name__.lower()] = cls

    def init(self, key, n_in):
        return {}, n_in


class Dense(Layer):
    def __init__(self, features):
        self.features = features

    def init(self, key, n_in):
        return {"w": jax.random.normal(key, (n_in, self.features)) / jnp.sqrt(n_in),
                "b": jnp.zeros(self.features)}, self.features

    def __call__(self, p, x):
        return x @ p["w"] + p["b"]


class Activation(Layer):
    def __init__(self, fn):
        self.fn = getattr(jax.nn, fn)

    def __call__(self, p, x):
        return self.fn(x)


class LayerNorm(Layer):
    def init(self, key, n_in):
        return {"scale": jnp.ones(n_in), "offset": jnp.zeros(n_in)}, n_in

    def __call__(self, p, x):
        mu = jnp.mean(x, -1, keepdims=True)
        sd = jnp.std(x, -1, keepdims=True)
        return (x - mu) / (sd + 1e-5) * p["scale"] + p["offset"]


def build(config):
    return [REGISTRY[c["type"]](**{k: v for k, v in c.items() if k != "type"}) for c in config]


def init(layers, key, n_in):
    params = []
    for layer, k in zip(layers, jax.random.split(key, len(layers))):
        p, n_in = layer.init(k, n_in)
        params.append(p)
    return params


def apply(layers, params, x):
    for layer, p in zip(layers, params):
        x = layer(p, x)
    return x


CONFIG = [{"type": "dense", "features": 6}, {"type": "layernorm"},
          {"type": "activation", "fn": "swish"}, {"type": "dense", "features": 1}]
LAYERS = build(CONFIG)


def loss(params, x, y):
    return jnp.mean((apply(LAYERS, params, x)[:, 0] - y) ** 2)


@jax.jit
def step(params, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g), value


def main():
    x = jax.random.uniform(jax.random.PRNGKey(5), (14, 3), minval=-1, maxval=1)
    y = jnp.abs(x[:, 0]) - x[:, 1] * x[:, 2]
    params = init(LAYERS, jax.random.PRNGKey(6), 3)
    losses = []
    for _ in range(10):
        params, value = step(params, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "registry": sorted(REGISTRY),
            "n_params": [len(p) for p in params], "scale": params[1]["scale"]}
