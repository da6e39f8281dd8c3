"""Rematerialization as libraries apply it: jax.checkpoint (remat) wrapping a module's
__call__ (a block with a policy argument left out) inside a Python loop over a list of
blocks, and nn.remat-style `jax.checkpoint(fn, static_argnums=...)` with a static flag;
gradients against the non-remat model."""
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Block(NamedTuple):
    w: jax.Array
    b: jax.Array

    def __call__(self, x):
        return x + 0.5 * jnp.tanh(x @ self.w + self.b)


@functools.partial(jax.checkpoint, static_argnums=(2,))
def block_apply(block, x, use_gelu):
    h = x @ block.w + block.b
    return x + 0.5 * (jax.nn.gelu(h) if use_gelu else jnp.tanh(h))


def forward(blocks, x, remat, use_gelu=False):
    for blk in blocks:
        if remat == "method":
            x = jax.checkpoint(blk.__call__)(x)
        elif remat == "function":
            x = block_apply(blk, x, use_gelu)
        else:
            x = blk(x)
    return jnp.sum(x ** 2)


def main():
    keys = jax.random.split(jax.random.PRNGKey(46), 3)
    blocks = [Block(jax.random.normal(k, (4, 4)) * 0.4, jnp.full(4, 0.1)) for k in keys]
    x = jnp.linspace(-1, 1, 8).reshape(2, 4)
    out = {}
    for remat in ("none", "method", "function"):
        g = jax.jit(jax.grad(forward), static_argnums=(2,))(blocks, x, remat)
        out[remat] = [gb.w for gb in g]
    out["gelu"] = jax.grad(forward)(blocks, x, "function", True)[0].b
    for _ in range(3):
        g = jax.grad(forward)(blocks, x, "method")
        blocks = [Block(b.w - 0.05 * gb.w, b.b - 0.05 * gb.b) for b, gb in zip(blocks, g)]
    out["trained"] = forward(blocks, x, "none")
    return out
