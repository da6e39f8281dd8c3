"""Eager overhead: snp.sin on a 1000-element float32 array against np.sin (and jnp.sin)."""
import numpy as np

import secant.numpy as snp
from timing import import_jax, per_call_us, report


def main():
    print("eager: sin of f32[1000]")
    x_np = np.linspace(-3, 3, 1000, dtype=np.float32)
    x = snp.asarray(x_np)
    numpy_us = per_call_us(lambda: np.sin(x_np))
    secant_us = per_call_us(lambda: snp.sin(x))

    jax_us = None
    jax, jnp = import_jax()
    if jax is not None:
        xj = jnp.asarray(x_np)
        jax_us = per_call_us(lambda: jnp.sin(xj).block_until_ready())

    print(f"  {'np.sin':<42} numpy  {numpy_us:10.2f} µs")
    report("snp.sin (eager)", secant_us, jax_us)
    print(f"  snp.sin / np.sin: {secant_us / numpy_us:.2f}x")


if __name__ == "__main__":
    main()
