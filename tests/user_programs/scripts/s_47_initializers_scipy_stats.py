"""Parameters from jax.nn.initializers (glorot_normal, he_uniform, zeros), a heteroscedastic
Gaussian likelihood through jax.scipy.stats.norm.logpdf, Adam from optimizers, 10 steps."""
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers
from jax.nn import initializers
from jax.scipy.stats import norm


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"w1": initializers.glorot_normal()(k1, (2, 10)),
            "b1": initializers.zeros(k2, (10,)),
            "w_mu": initializers.he_uniform()(k2, (10, 1)),
            "w_sig": initializers.lecun_normal()(k3, (10, 1))}


def nll(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    mu = (h @ params["w_mu"])[:, 0]
    sigma = jax.nn.softplus((h @ params["w_sig"])[:, 0]) + 1e-3
    return -jnp.mean(norm.logpdf(y, mu, sigma))


def main():
    params = init(jax.random.PRNGKey(123))
    x = jnp.stack([jnp.linspace(-1, 1, 30), jnp.cos(jnp.linspace(0, 3, 30))], axis=1)
    y = x[:, 0] * 2 + 0.3 * x[:, 1] * jnp.sin(jnp.arange(30.0))
    opt_init, opt_update, get_params = optimizers.adam(1e-2)
    state = opt_init(params)

    @jax.jit
    def step(i, state):
        l, g = jax.value_and_grad(nll)(get_params(state), x, y)
        return opt_update(i, g, state), l
    losses = []
    for i in range(10):
        state, l = step(i, state)
        losses.append(l)
    return {"init": params, "losses": jnp.stack(losses), "final": get_params(state)}
