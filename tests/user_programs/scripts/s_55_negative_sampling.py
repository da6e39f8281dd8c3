"""Word2vec-style embeddings with negative sampling: negatives drawn as rows of the embedding
table itself by jax.random.choice (the gradient flows into the rows drawn), positive pairs
shuffled by jax.random.permutation of the pair array, a key per step."""
import jax
import jax.numpy as jnp

VOCAB, DIM = 8, 4
PAIRS = jnp.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]])


def loss(emb, ctx, pairs, key):
    k_perm, k_neg = jax.random.split(key)
    pairs = jax.random.permutation(k_perm, pairs)[:4]
    center, context = emb[pairs[:, 0]], ctx[pairs[:, 1]]
    negatives = jax.random.choice(k_neg, ctx, (4, 3))          # rows of ctx: (4, 3, DIM)
    pos = jax.nn.log_sigmoid(jnp.sum(center * context, axis=-1))
    neg = jax.nn.log_sigmoid(-jnp.einsum("bd,bkd->bk", center, negatives)).sum(-1)
    return -jnp.mean(pos + neg)


@jax.jit
def step(emb, ctx, key):
    l, (g_emb, g_ctx) = jax.value_and_grad(loss, argnums=(0, 1))(emb, ctx, PAIRS, key)
    return emb - 0.5 * g_emb, ctx - 0.5 * g_ctx, l


def main():
    k_e, k_c, key = jax.random.split(jax.random.PRNGKey(42), 3)
    emb = 0.3 * jax.random.normal(k_e, (VOCAB, DIM))
    ctx = 0.3 * jax.random.normal(k_c, (VOCAB, DIM))
    losses = []
    for _ in range(12):
        key, sub = jax.random.split(key)
        emb, ctx, l = step(emb, ctx, sub)
        losses.append(l)
    sims = emb @ ctx.T
    return {"losses": jnp.stack(losses), "sims": sims, "emb": emb}
