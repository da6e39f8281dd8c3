"""secant.checkpoint (issue 7): the memory a deep stack of layers needs for jit(grad), with and
without checkpointing each layer, and the time it costs (one more forward pass per layer);
beside jax.checkpoint when jax is installed (a benchmark-only dependency). Memory is XLA's
temporary buffer size for the compiled program (Compiled.memory_analysis()).

    .venv/bin/python bench/checkpoint.py
"""
import numpy as np

import secant
from secant import block_until_ready as ready
import secant.numpy as snp
from timing import import_jax, per_call_us, report

L, B, H = 24, 256, 512


def layer(h, w):
    z = h @ w
    return snp.tanh(z) * snp.sin(z) + h


block = secant.checkpoint(layer)


def plain(ws, x):
    h = x
    for i in range(L):
        h = layer(h, ws[i])
    return snp.sum(h * h)


def checkpointed(ws, x):
    h = x
    for i in range(L):
        h = block(h, ws[i])
    return snp.sum(h * h)


def main():
    print(f"checkpoint: jit(grad) of {L} layers tanh(h @ w) * sin(h @ w) + h, batch {B}, "
          f"width {H}")
    rng = np.random.default_rng(0)
    ws = tuple((rng.normal(size=(H, H)) / np.sqrt(H) / 4).astype(np.float32) for _ in range(L))
    x = rng.normal(size=(B, H)).astype(np.float32)
    jax, jnp = import_jax()
    mib = 2.0 ** 20
    results = {}
    for name, f in (("without", plain), ("with checkpoint", checkpointed)):
        g = secant.jit(secant.grad(f))
        temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes / mib
        ready(g(ws, x))
        results[name] = (temp, per_call_us(lambda: ready(g(ws, x)), rounds=5) / 1e3,
                         g(ws, x))
    np.testing.assert_allclose(np.asarray(results["with checkpoint"][2][0]),
                               np.asarray(results["without"][2][0]), rtol=1e-4, atol=1e-6)
    jax_results = {}
    if jax is not None:
        def jlayer(h, w):
            z = h @ w
            return jnp.tanh(z) * jnp.sin(z) + h

        for name, fn in (("without", jlayer), ("with checkpoint", jax.checkpoint(jlayer))):
            def loss(ws, x, fn=fn):
                h = x
                for w in ws:
                    h = fn(h, w)
                return jnp.sum(h * h)
            g = jax.jit(jax.grad(loss))
            temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes / mib
            jax.block_until_ready(g(ws, x))
            jax_results[name] = (temp, per_call_us(
                lambda: jax.block_until_ready(g(ws, x)), rounds=5) / 1e3)
    for name in ("without", "with checkpoint"):
        temp, ms, _ = results[name]
        jt, jms = jax_results.get(name, (None, None))
        report(f"temp memory, {name}", temp, jt, "MiB")
        report(f"steady jit(grad), {name}", ms, jms, "ms")
    saved = 1 - results["with checkpoint"][0] / results["without"][0]
    print(f"  checkpointing saves {saved:.0%} of the temporary memory, for "
          f"{results['with checkpoint'][1] / results['without'][1]:.2f}x the time")


if __name__ == "__main__":
    main()
