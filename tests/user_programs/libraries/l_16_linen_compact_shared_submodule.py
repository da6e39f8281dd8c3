"""A compact-style model: submodules are objects created once and called several times
(weight sharing, a Siamese encoder applied to two inputs), parameters addressed by the
submodule's `name` attribute in a nested dict; a contrastive loss on the pair distances."""
import jax
import jax.numpy as jnp


class Dense:
    def __init__(self, name, n_in, n_out):
        self.name, self.n_in, self.n_out = name, n_in, n_out

    def init(self, key):
        return {self.name: {"kernel": jax.random.normal(key, (self.n_in, self.n_out)) * 0.5,
                            "bias": jnp.zeros(self.n_out)}}

    def __call__(self, params, x):
        p = params[self.name]
        return x @ p["kernel"] + p["bias"]


class Siamese:
    def __init__(self):
        self.encoder = Dense("encoder", 3, 2)

    def init(self, key):
        return {"params": self.encoder.init(key)}

    def __call__(self, variables, a, b):
        enc = self.encoder
        za, zb = enc(variables["params"], a), enc(variables["params"], b)
        return jnp.sqrt(jnp.sum((za - zb) ** 2, axis=-1) + 1e-6)


model = Siamese()


def contrastive(variables, a, b, same, margin=1.0):
    d = model(variables, a, b)
    return jnp.mean(jnp.where(same, d ** 2, jnp.maximum(margin - d, 0.0) ** 2))


@jax.jit
def step(variables, a, b, same):
    g = jax.grad(contrastive)(variables, a, b, same)
    return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, variables, g)


def main():
    ka, kb = jax.random.split(jax.random.PRNGKey(13))
    a = jax.random.normal(ka, (12, 3))
    b = a + 0.3 * jax.random.normal(kb, (12, 3))
    same = jnp.arange(12) % 2 == 0
    b = jnp.where(same[:, None], b, -b)
    variables = model.init(jax.random.PRNGKey(14))
    losses = []
    for _ in range(10):
        variables = step(variables, a, b, same)
        losses.append(contrastive(variables, a, b, same))
    return {"losses": jnp.stack(losses), "kernel": variables["params"]["encoder"]["kernel"]}
