"""Eager overhead: snp.sin on a 1000-element float32 array and on a scalar, against np.sin
(issue 19's targets: <= 1.5x on 1,000 floats, <= 3x on a scalar) and jnp.sin.

Candidates are timed in interleaved rounds (medians) in one process."""
import numpy as np

import secant.numpy as snp
from timing import import_jax, interleaved_us


def main():
    print("eager: sin of f32[1000] and of a float32 scalar (medians of interleaved rounds)")
    jax, jnp = import_jax()
    x_np = np.linspace(-3, 3, 1000, dtype=np.float32)
    x = snp.asarray(x_np)
    s_np = np.float32(0.5)
    s = snp.asarray(s_np)
    cases = [("f32[1000]", x_np, x), ("f32[] scalar", s_np, s)]
    for label, v_np, v in cases:
        cands = [lambda: np.sin(v_np), lambda: snp.sin(v)]
        if jax is not None:
            vj = jnp.asarray(v_np)
            cands.append(lambda: jnp.sin(vj).block_until_ready())
        times = interleaved_us(cands)
        numpy_us, secant_us = times[:2]
        line = (f"  {label:<13} np.sin {numpy_us:8.2f} µs   snp.sin {secant_us:8.2f} µs   "
                f"snp/np {secant_us / numpy_us:5.2f}x")
        if jax is not None:
            line += f"   jnp.sin {times[2]:8.2f} µs   snp/jnp {secant_us / times[2]:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
