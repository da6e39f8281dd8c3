"""Flax-linen-like init/apply: a Module class whose `init(key, x)` runs the forward pass once
to build `{"params": {"Dense_0": {"kernel", "bias"}, ...}}` (names from a per-call counter)
and whose `apply(variables, x)` reads them back; training with value_and_grad over the nested
dict and tree_map SGD."""
import jax
import jax.numpy as jnp


class Scope:
    def __init__(self, params=None, key=None):
        self.params = {} if params is None else params
        self.key = key
        self.counts = {}

    def name(self, kind):
        i = self.counts.get(kind, 0)
        self.counts[kind] = i + 1
        return f"{kind}_{i}"

    def param(self, name, shape, init_fn):
        if name not in self.params:
            self.key, sub = jax.random.split(self.key)
            self.params[name] = init_fn(sub, shape)
        return self.params[name]


def lecun_normal(key, shape):
    return jax.random.normal(key, shape) / jnp.sqrt(shape[0])


def zeros(key, shape):
    return jnp.zeros(shape)


def dense(scope, x, features):
    name = scope.name("Dense")
    sub = Scope(scope.params.setdefault(name, {}), scope.key)
    if scope.key is not None:
        scope.key, _ = jax.random.split(scope.key)
    kernel = sub.param("kernel", (x.shape[-1], features), lecun_normal)
    bias = sub.param("bias", (features,), zeros)
    return x @ kernel + bias


class MLP:
    def __init__(self, features):
        self.features = features

    def __call__(self, scope, x):
        for f in self.features[:-1]:
            x = jax.nn.relu(dense(scope, x, f))
        return dense(scope, x, self.features[-1])

    def init(self, key, x):
        scope = Scope({}, key)
        self(scope, x)
        return {"params": scope.params}

    def apply(self, variables, x):
        return self(Scope(variables["params"]), x)


model = MLP([8, 4, 1])


def loss_fn(params, x, y):
    pred = model.apply({"params": params}, x)[:, 0]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


def main():
    x = jax.random.normal(jax.random.PRNGKey(0), (16, 3))
    y = x[:, 0] * x[:, 1] + 0.5 * x[:, 2]
    variables = model.init(jax.random.PRNGKey(1), x)
    params = variables["params"]
    losses = []
    for _ in range(10):
        params, loss = train_step(params, x, y)
        losses.append(loss)
    return {"losses": jnp.stack(losses), "names": sorted(params),
            "bias_1": params["Dense_1"]["bias"],
            "shapes": jax.tree_util.tree_map(lambda a: jnp.array(a.shape), params)}
