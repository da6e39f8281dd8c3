"""Warm jit dispatch of a tiny two-input function, `a * b + a` on f32[8]: what one call costs
when the work itself is negligible. Also the first call's trace + compile time."""
import numpy as np

import secant
from timing import import_jax, once_ms, per_call_us, report


def f(a, b):
    return a * b + a


def main():
    print("dispatch: a * b + a on f32[8]")
    jax, _ = import_jax()
    a_np = np.linspace(0, 1, 8, dtype=np.float32)
    b_np = np.linspace(1, 2, 8, dtype=np.float32)

    fast = secant.jit(f)
    first = once_ms(lambda: fast(a_np, b_np).block_until_ready())
    a_dev, b_dev = secant.device_put((a_np, b_np))
    device_io = per_call_us(lambda: fast(a_dev, b_dev).block_until_ready())
    numpy_io = per_call_us(lambda: np.asarray(fast(a_np, b_np)))

    jax_first = jax_device = jax_numpy = None
    if jax is not None:
        jfast = jax.jit(f)
        jax_first = once_ms(lambda: jfast(a_np, b_np).block_until_ready())
        ja, jb = jax.device_put(a_np), jax.device_put(b_np)
        jax_device = per_call_us(lambda: jfast(ja, jb).block_until_ready())
        jax_numpy = per_call_us(lambda: np.asarray(jfast(a_np, b_np)))

    report("first call (trace + compile)", first, jax_first, "ms")
    report("warm call, device arrays in/out", device_io, jax_device)
    report("warm call, NumPy in/out", numpy_io, jax_numpy)


if __name__ == "__main__":
    main()
