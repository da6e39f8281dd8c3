"""secant.scipy: SciPy's functions as JAX's jax.scipy (import the submodules you use:
`import secant.scipy.linalg`)."""
