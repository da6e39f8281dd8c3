"""MixtureSameFamily by hand: a Categorical over components (logits) and a batched Normal
(component axis last), log_prob by logsumexp over components; fitted by gradient ascent on
the mean log-likelihood; responsibilities by vmap over data; sampling by categorical then
normal draws."""
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp


class Categorical:
    def __init__(self, logits):
        self.logits = logits

    @property
    def log_probs(self):
        return jax.nn.log_softmax(self.logits)

    def sample(self, key, n):
        return jax.random.categorical(key, self.logits, shape=(n,))


class Normal:
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def log_prob(self, x):
        return jax.scipy.stats.norm.logpdf(x, self.loc, self.scale)


class Mixture:
    def __init__(self, mixing, components):
        self.mixing, self.components = mixing, components

    def log_prob(self, x):
        return logsumexp(self.mixing.log_probs + self.components.log_prob(x[..., None]), -1)

    def responsibilities(self, x):
        joint = self.mixing.log_probs + self.components.log_prob(x)
        return jax.nn.softmax(joint)

    def sample(self, key, n):
        k1, k2 = jax.random.split(key)
        idx = self.mixing.sample(k1, n)
        eps = jax.random.normal(k2, (n,))
        return self.components.loc[idx] + self.components.scale[idx] * eps


def build(p):
    return Mixture(Categorical(p["logits"]), Normal(p["loc"], jnp.exp(p["log_scale"])))


def neg_ll(p, x):
    return -jnp.mean(build(p).log_prob(x))


@jax.jit
def step(p, x):
    value, g = jax.value_and_grad(neg_ll)(p, x)
    return jax.tree_util.tree_map(lambda a, b: a - 0.3 * b, p, g), value


def main():
    truth = build({"logits": jnp.array([0.0, 0.7]), "loc": jnp.array([-2.0, 1.5]),
                   "log_scale": jnp.array([-0.5, 0.0])})
    x = truth.sample(jax.random.PRNGKey(33), 80)
    p = {"logits": jnp.zeros(2), "loc": jnp.array([-0.5, 0.5]), "log_scale": jnp.zeros(2)}
    losses = []
    for _ in range(20):
        p, value = step(p, x)
        losses.append(value)
    resp = jax.vmap(build(p).responsibilities)(x[:6])
    return {"x_head": x[:8], "losses": jnp.stack(losses), "p": p, "resp": resp}
