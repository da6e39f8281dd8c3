"""Monte Carlo estimate with a running histogram: uniform draws per round, bins counted with
.at[].add inside jit, pi estimated from hits, fold_in of a traced round number."""
import jax
import jax.numpy as jnp


@jax.jit
def one_round(key, r, hist):
    key = jax.random.fold_in(key, r)
    pts = jax.random.uniform(key, (256, 2), minval=-1.0, maxval=1.0)
    radius = jnp.sqrt(jnp.sum(pts ** 2, axis=1))
    bins = jnp.clip((radius * 5).astype(jnp.int32), 0, 7)
    hist = hist.at[bins].add(1)
    return jnp.sum(radius <= 1.0), hist


def main():
    key = jax.random.PRNGKey(8080)
    hist = jnp.zeros(8, jnp.int32)
    hits, estimates = 0, []
    for r in range(6):
        h, hist = one_round(key, r, hist)
        hits += int(h)
        estimates.append(4.0 * hits / (256 * (r + 1)))
    return {"hist": hist, "estimates": estimates, "hits": hits}
