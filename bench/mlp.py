"""Steady-state jitted MLP forward pass: batch 128, 784-512-512-10, ReLU, float32."""
import numpy as np

import secant
import secant.numpy as snp
from timing import import_jax, per_call_us, report

SIZES = (784, 512, 512, 10)
BATCH = 128


def init(rng):
    return [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(SIZES[:-1], SIZES[1:])]


def make_forward(np_like):
    def forward(params, x):
        for w, b in params[:-1]:
            x = np_like.maximum(x @ w + b, 0.0)
        w, b = params[-1]
        return x @ w + b
    return forward


def main():
    print(f"mlp: forward, batch {BATCH}, {'-'.join(map(str, SIZES))}")
    rng = np.random.default_rng(0)
    params, x = init(rng), rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)

    forward = secant.jit(make_forward(snp))
    dev_params, dev_x = secant.device_put((params, x))
    out = forward(dev_params, dev_x)
    steady = per_call_us(lambda: forward(dev_params, dev_x).block_until_ready()) / 1e3

    jax_steady = None
    jax, jnp = import_jax()
    if jax is not None:
        jforward = jax.jit(make_forward(jnp))
        jparams, jx = jax.device_put((params, x))
        np.testing.assert_allclose(np.asarray(jforward(jparams, jx)), np.asarray(out),
                                   rtol=1e-4, atol=1e-4)
        jax_steady = per_call_us(lambda: jforward(jparams, jx).block_until_ready()) / 1e3

    report("steady-state forward", steady, jax_steady, "ms")


if __name__ == "__main__":
    main()
