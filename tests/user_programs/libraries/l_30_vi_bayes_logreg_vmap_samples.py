"""Mean-field VI for Bayesian logistic regression in the numpyro AutoNormal style: a guide
class holding loc/scale params in a dict, `guide.sample(params, key)` reparameterised, the
model's log density a sum over data by jax.nn.log_sigmoid; the ELBO estimated with vmap over
samples and the gradient estimated by jax.grad of it; a posterior predictive by vmap."""
import jax
import jax.numpy as jnp


class AutoNormal:
    def __init__(self, dim):
        self.dim = dim

    def init(self):
        return {"loc": jnp.zeros(self.dim), "log_scale": jnp.full(self.dim, -1.0)}

    def sample(self, params, key):
        eps = jax.random.normal(key, (self.dim,))
        return params["loc"] + jnp.exp(params["log_scale"]) * eps

    def log_density(self, params, w):
        scale = jnp.exp(params["log_scale"])
        return jnp.sum(jax.scipy.stats.norm.logpdf(w, params["loc"], scale))


def model_log_density(w, x, y):
    prior = jnp.sum(jax.scipy.stats.norm.logpdf(w, 0.0, 2.0))
    logits = x @ w
    return prior + jnp.sum(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))


guide = AutoNormal(3)


def neg_elbo(params, key, x, y):
    def one(k):
        w = guide.sample(params, k)
        return model_log_density(w, x, y) - guide.log_density(params, w)
    return -jnp.mean(jax.vmap(one)(jax.random.split(key, 10)))


@jax.jit
def svi_step(params, key, x, y):
    value, g = jax.value_and_grad(neg_elbo)(params, key, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.01 * d, params, g), value


def main():
    x = jnp.concatenate([jnp.ones((40, 1)), jax.random.normal(jax.random.PRNGKey(36), (40, 2))],
                        axis=1)
    y = (x @ jnp.array([0.3, 2.0, -1.0]) + 0.5 * jax.random.normal(
        jax.random.PRNGKey(37), (40,)) > 0).astype(jnp.float32)
    params = guide.init()
    key = jax.random.PRNGKey(38)
    losses = []
    for _ in range(15):
        key, sub = jax.random.split(key)
        params, value = svi_step(params, sub, x, y)
        losses.append(value)
    ws = jax.vmap(lambda k: guide.sample(params, k))(jax.random.split(key, 20))
    pred = jnp.mean(jax.nn.sigmoid(ws @ x[:5].T), axis=0)
    return {"losses": jnp.stack(losses), "params": params, "pred": pred}
