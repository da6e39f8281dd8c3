"""Sampling from a tiny bigram language model: logits from a table, temperature, masked tokens
set to -inf with jnp.where, jax.random.categorical in a lax.scan, vmapped over prompts."""
import jax
import jax.numpy as jnp
from jax import lax

VOCAB = 7
TABLE = jnp.sin(jnp.arange(VOCAB * VOCAB, dtype=jnp.float32).reshape(VOCAB, VOCAB)) * 2.0
BANNED = jnp.array([False, False, True, False, False, False, True])


def sample(key, first, length=12, temperature=0.8):
    def step(carry, key):
        tok = carry
        logits = TABLE[tok] / temperature
        logits = jnp.where(BANNED, -jnp.inf, logits)
        nxt = jax.random.categorical(key, logits)
        logp = jax.nn.log_softmax(logits)[nxt]
        return nxt, (nxt, logp)
    keys = jax.random.split(key, length)
    _, (tokens, logps) = lax.scan(step, first, keys)
    return tokens, jnp.sum(logps)


def main():
    key = jax.random.PRNGKey(314)
    firsts = jnp.array([0, 3, 5, 1])
    keys = jax.random.split(key, 4)
    tokens, logp = jax.jit(jax.vmap(sample))(keys, firsts)
    counts = jnp.zeros(VOCAB, jnp.int32).at[tokens.ravel()].add(1)
    return {"tokens": tokens, "logp": logp, "counts": counts}
