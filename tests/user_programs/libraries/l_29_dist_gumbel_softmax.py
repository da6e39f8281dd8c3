"""A Categorical class with entropy and a RelaxedOneHotCategorical (Gumbel-softmax) sample
whose gradient flows to the logits; a straight-through estimator (hard one-hot forward,
soft gradient via stop_gradient); a policy-style objective optimized through the relaxed
samples, vmapped over keys."""
import jax
import jax.numpy as jnp


class Categorical:
    def __init__(self, logits):
        self.logits = jax.nn.log_softmax(logits)

    def entropy(self):
        return -jnp.sum(jnp.exp(self.logits) * self.logits)

    def relaxed_sample(self, key, temperature, hard=False):
        g = jax.random.gumbel(key, self.logits.shape)
        soft = jax.nn.softmax((self.logits + g) / temperature)
        if not hard:
            return soft
        one_hot = jax.nn.one_hot(jnp.argmax(soft), soft.shape[-1])
        return soft + jax.lax.stop_gradient(one_hot - soft)


REWARD = jnp.array([0.1, 1.0, 0.3, -0.5])


def objective(logits, keys, temperature, hard):
    dist = Categorical(logits)
    samples = jax.vmap(lambda k: dist.relaxed_sample(k, temperature, hard))(keys)
    return -jnp.mean(samples @ REWARD) - 0.01 * dist.entropy()


def make_step(hard):
    @jax.jit
    def step(logits, key):
        keys = jax.random.split(key, 16)
        value, g = jax.value_and_grad(objective)(logits, keys, 0.5, hard)
        return logits - 0.5 * g, value
    return step


def main():
    out = {}
    for hard in (False, True):
        step, logits, key = make_step(hard), jnp.zeros(4), jax.random.PRNGKey(35)
        values = []
        for _ in range(10):
            key, sub = jax.random.split(key)
            logits, value = step(logits, sub)
            values.append(value)
        out["hard" if hard else "soft"] = {"values": jnp.stack(values), "logits": logits,
                                           "entropy": Categorical(logits).entropy()}
    return out
