"""secant.lax: the primitives under their lax names (lax.add, lax.dot_general, ...)."""
