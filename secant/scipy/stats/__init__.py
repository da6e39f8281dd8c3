"""jax.scipy.stats."""
