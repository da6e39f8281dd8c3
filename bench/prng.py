"""secant.random: 1e6 uniform and normal float32 draws, eagerly (NumPy) and under jit, beside
NumPy's own generator and jax.random (same threefry stream) when jax is importable.

Named prng.py, not random.py: bench/ is first on sys.path, so a random.py here would shadow the
standard library's random module."""
import numpy as np

import secant
from timing import import_jax, once_ms, per_call_us, report

N = 1_000_000


def main():
    print(f"random: {N:.0e} float32 draws")
    R = secant.random
    key = R.PRNGKey(0)
    rng = np.random.default_rng(0)
    numpy_uniform = per_call_us(lambda: rng.random(N, dtype=np.float32)) / 1e3
    numpy_normal = per_call_us(lambda: rng.standard_normal(N, dtype=np.float32)) / 1e3
    eager_uniform = per_call_us(lambda: R.uniform(key, (N,)), rounds=3) / 1e3
    eager_normal = per_call_us(lambda: R.normal(key, (N,)), rounds=3) / 1e3
    jit_uniform_fn = secant.jit(lambda k: R.uniform(k, (N,)))
    jit_normal_fn = secant.jit(lambda k: R.normal(k, (N,)))
    first_uniform = once_ms(lambda: jit_uniform_fn(key).block_until_ready())
    jit_uniform = per_call_us(lambda: jit_uniform_fn(key).block_until_ready()) / 1e3
    jit_normal = per_call_us(lambda: jit_normal_fn(key).block_until_ready()) / 1e3

    jax_uniform = jax_normal = jax_first = None
    jax, _ = import_jax()
    if jax is not None:
        jkey = jax.random.PRNGKey(0)
        ju = jax.jit(lambda k: jax.random.uniform(k, (N,)))
        jn = jax.jit(lambda k: jax.random.normal(k, (N,)))
        jax_first = once_ms(lambda: ju(jkey).block_until_ready())
        jax_uniform = per_call_us(lambda: ju(jkey).block_until_ready()) / 1e3
        jax_normal = per_call_us(lambda: jn(jkey).block_until_ready()) / 1e3
        same = np.array_equal(np.asarray(ju(jkey)), np.asarray(jit_uniform_fn(key)))
        print(f"  jit uniform bit-identical to jax.random.uniform: {same}")

    print(f"  {'numpy default_rng.random':<42} numpy  {numpy_uniform:10.2f} ms")
    print(f"  {'numpy default_rng.standard_normal':<42} numpy  {numpy_normal:10.2f} ms")
    report("uniform eager (NumPy threefry)", eager_uniform, unit="ms")
    report("normal eager (NumPy threefry)", eager_normal, unit="ms")
    report("uniform jit, first call (trace+compile)", first_uniform, jax_first, unit="ms")
    report("uniform jit, steady state", jit_uniform, jax_uniform, unit="ms")
    report("normal jit, steady state", jit_normal, jax_normal, unit="ms")
    print(f"  eager uniform / numpy: {eager_uniform / numpy_uniform:.1f}x   "
          f"jit uniform / numpy: {jit_uniform / numpy_uniform:.2f}x")


if __name__ == "__main__":
    main()
