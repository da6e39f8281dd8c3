"""vmap of scipy.sparse.linalg.cg over 64 examples: one solve of the batch (as JAX batches
lax.custom_linear_solve) against one solve per example (a Python loop, what secant ran before:
under jit, one staged while_loop each).

- A 32 x 32 SPD matrix scaled per example (A * s), b per example, tol=1e-6 (each example stops
  at its own step). Steady-state time per call of jit(vmap) and jit(the loop), eager vmap and
  the eager loop (a second call each: the first generates), and the size of each jit's StableHLO (characters, while ops).
- The same for vmap(grad) of a loss through cg (its implicit derivative: a second solve).
"""
import numpy as np

import secant
import secant.numpy as snp
from secant.scipy.sparse.linalg import cg
from timing import interleaved_us, once_ms

N, BATCH = 32, 64


def main():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(N, N))
    a = (q @ q.T / N + np.eye(N)).astype(np.float32)
    ss = rng.uniform(0.5, 2.0, size=BATCH).astype(np.float32)
    bs = rng.normal(size=(BATCH, N)).astype(np.float32)

    def solve(s, b):
        return cg(a * s, b, tol=1e-6)[0]

    def loss(s, b):
        return snp.sum(solve(s, b) ** 2)

    for label, one in (("cg", solve), ("grad of a loss through cg", secant.grad(loss))):
        batched = secant.vmap(one)

        def loop(ss, bs, one=one):
            return snp.stack([one(ss[k], bs[k]) for k in range(BATCH)])
        jb, jl = secant.jit(batched), secant.jit(loop)
        first_b = once_ms(lambda: np.asarray(jb(ss, bs)))
        first_l = once_ms(lambda: np.asarray(jl(ss, bs)))
        np.testing.assert_allclose(np.asarray(jb(ss, bs)), np.asarray(jl(ss, bs)), rtol=2e-4,
                                   atol=1e-5)
        t_b, t_l = interleaved_us([lambda: jb(ss, bs).block_until_ready(),
                                   lambda: jl(ss, bs).block_until_ready()], rounds=5)
        text_b, text_l = jb.lower(ss, bs).as_text(), jl.lower(ss, bs).as_text()
        once_ms(lambda: np.asarray(batched(ss, bs)))       # (its first call generates)
        once_ms(lambda: np.asarray(loop(ss, bs)))
        eager_b = once_ms(lambda: np.asarray(batched(ss, bs)))
        eager_l = once_ms(lambda: np.asarray(loop(ss, bs)))
        print(f"{label}, {BATCH} examples, n={N} (float32):")
        print(f"  jit, first call (trace+compile)  one solve {first_b:9.0f} ms   "
              f"loop {first_l:9.0f} ms")
        print(f"  jit, per call                    one solve {t_b:9.0f} µs   loop {t_l:9.0f} µs"
              f"   loop/one {t_l / t_b:5.1f}x")
        print(f"  StableHLO characters             one solve {len(text_b):9d}      "
              f"loop {len(text_l):9d}      loop/one {len(text_l) / len(text_b):5.1f}x")
        print(f"  StableHLO while ops              one solve {text_b.count('stablehlo.while'):9d}"
              f"      loop {text_l.count('stablehlo.while'):9d}")
        print(f"  eager, a second call             one solve {eager_b:9.0f} ms   "
              f"loop {eager_l:9.0f} ms")


if __name__ == "__main__":
    main()
