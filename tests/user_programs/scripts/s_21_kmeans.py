"""k-means clustering: a jitted Lloyd step (argmin assignment, one_hot means), initial centroids
by jax.random.choice, run until assignments stop changing."""
import jax
import jax.numpy as jnp


@jax.jit
def lloyd_step(centroids, points):
    d2 = jnp.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)
    assign = jnp.argmin(d2, axis=1)
    onehot = jax.nn.one_hot(assign, centroids.shape[0])
    counts = onehot.sum(axis=0)
    sums = onehot.T @ points
    new = jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1.0)[:, None], centroids)
    inertia = jnp.sum(jnp.min(d2, axis=1))
    return new, assign, inertia


def main():
    key = jax.random.PRNGKey(77)
    k_pts, k_init = jax.random.split(key)
    centers = jnp.array([[0.0, 0.0], [3.0, 3.0], [-3.0, 2.0]])
    labels = jnp.repeat(jnp.arange(3), 20)
    points = centers[labels] + 0.6 * jax.random.normal(k_pts, (60, 2))
    idx = jax.random.choice(k_init, 60, (3,), replace=False)
    centroids = points[idx]
    prev = None
    inertias = []
    for it in range(20):
        centroids, assign, inertia = lloyd_step(centroids, points)
        inertias.append(float(inertia))
        if prev is not None and bool(jnp.all(assign == prev)):
            break
        prev = assign
    return {"idx": idx, "centroids": centroids, "assign": assign, "inertias": inertias,
            "iterations": it}
