"""A quantization-aware layer as libraries write it: a straight-through round whose
gradient is defined with jax.custom_vjp (clipped identity), used inside a module's __call__
(a registered dataclass with a static `bits` field, read as float(levels)); training through the quantized weights
and a jax.custom_jvp soft clipping activation."""
import dataclasses

import jax
import jax.numpy as jnp


@jax.custom_vjp
def ste_round(x, lo, hi):
    return jnp.round(jnp.clip(x, lo, hi))


def _fwd(x, lo, hi):
    return ste_round(x, lo, hi), (x, lo, hi)


def _bwd(res, g):
    x, lo, hi = res
    inside = (x >= lo) & (x <= hi)
    return jnp.where(inside, g, 0.0), None, None


ste_round.defvjp(_fwd, _bwd)


@jax.custom_jvp
def soft_clip(x):
    return jnp.tanh(x)


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, t * (1 - y ** 2)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class QuantDense:
    w: jax.Array
    scale: jax.Array
    bits: int = dataclasses.field(default=4, metadata={"static": True})

    def __call__(self, x):
        levels = 2 ** (self.bits - 1) - 1
        scale = jax.lax.stop_gradient(self.scale)     # (a calibrated scale: not trained)
        q = ste_round(self.w / scale, -levels - 1.0, float(levels)) * scale
        return soft_clip(x @ q)


def loss(layer, x, y):
    return jnp.mean((layer(x).sum(-1) - y) ** 2)


@jax.jit
def step(layer, x, y):
    value, g = jax.value_and_grad(loss)(layer, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, layer, g), value


def main():
    x = jax.random.normal(jax.random.PRNGKey(45), (12, 3))
    y = jnp.tanh(x @ jnp.array([0.7, -0.4, 0.2]))
    out = {}
    for bits in (3, 6):
        layer = QuantDense(jnp.full((3, 2), 0.1), jnp.array(0.05), bits)
        losses = []
        for _ in range(10):
            layer, value = step(layer, x, y)
            losses.append(value)
        out[bits] = (jnp.stack(losses), layer.w, layer.scale)
    return out
