"""vmap (issue 6): per-example gradients of an MLP (batch 256) under jit, as
secant.jit(secant.vmap(secant.grad(loss))) beside jax.jit(jax.vmap(jax.grad(loss))) when jax is
installed (a benchmark-only dependency) and beside a Python loop of jitted grads; first call
(transform + trace + compile + run) and steady state.

    .venv/bin/python bench/vmap.py
"""
import numpy as np

import secant
from secant import block_until_ready as ready
import secant.numpy as snp
from timing import import_jax, once_ms, per_call_us, report

BATCH, D_IN, HIDDEN, D_OUT = 256, 64, 256, 10


def loss(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    err = logits - y
    return snp.mean(err * err)


def main():
    print(f"vmap: per-example gradients of an MLP {D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH}, "
          "under jit")
    jax, jnp = import_jax()
    rng = np.random.default_rng(0)
    params = {"w1": (rng.normal(size=(D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
              "b1": np.zeros(HIDDEN, np.float32),
              "w2": (rng.normal(size=(HIDDEN, D_OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
              "b2": np.zeros(D_OUT, np.float32)}
    xs = rng.normal(size=(BATCH, D_IN)).astype(np.float32)
    ys = rng.normal(size=(BATCH, D_OUT)).astype(np.float32)
    ready(secant.jit(lambda v: v + 1)(xs))    # start the PJRT client first

    per_example = secant.jit(secant.vmap(secant.grad(loss), in_axes=(None, 0, 0)))
    first = once_ms(lambda: ready(per_example(params, xs, ys)))
    sp = {k: secant.device_put(v) for k, v in params.items()}
    sx, sy = secant.device_put(xs), secant.device_put(ys)
    steady = per_call_us(lambda: ready(per_example(sp, sx, sy)))
    got = per_example(params, xs, ys)

    one = secant.jit(secant.grad(loss))
    ready(one(params, xs[0], ys[0]))
    rows = [(secant.device_put(x), secant.device_put(y)) for x, y in zip(xs, ys)]
    loop = per_call_us(lambda: [ready(one(sp, x, y)) for x, y in rows], rounds=3)
    for i in (0, BATCH - 1):
        want = one(params, xs[i], ys[i])
        for k in params:
            np.testing.assert_allclose(np.asarray(got[k][i]), np.asarray(want[k]), rtol=2e-4,
                                       atol=1e-6)

    jax_first = jax_steady = None
    if jax is not None:
        def loss_jax(params, x, y):
            h = jnp.tanh(x @ params["w1"] + params["b1"])
            err = h @ params["w2"] + params["b2"] - y
            return jnp.mean(err * err)
        jax.jit(lambda v: v + 1)(xs).block_until_ready()
        jg = jax.jit(jax.vmap(jax.grad(loss_jax), in_axes=(None, 0, 0)))
        jax_first = once_ms(lambda: jax.block_until_ready(jg(params, xs, ys)))
        jp = jax.device_put(params)
        jx, jy = jax.device_put(xs), jax.device_put(ys)
        jax_steady = per_call_us(lambda: jax.block_until_ready(jg(jp, jx, jy)))
        ref = jg(params, xs, ys)
        for k in params:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(ref[k]), rtol=2e-3,
                                       atol=1e-5)
    report("jit(vmap(grad)): first call", first, jax_first, "ms")
    report("jit(vmap(grad)): steady", steady, jax_steady, "µs")
    report(f"Python loop of {BATCH} jit(grad) calls", loop)
    print(f"  vmap over the loop of grads: {loop / steady:.1f}x faster")


if __name__ == "__main__":
    main()
