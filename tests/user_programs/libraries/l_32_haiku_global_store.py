"""Haiku-like `transform`: the forward function reads its parameters from a global frame stack
(`get_parameter(name, shape, init)` creates them during `init`, reads them during `apply`);
`transform(f)` returns a (init, apply) pair of pure functions; apply is jitted and
differentiated. Module names come from a per-frame counter, as haiku's do."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

_FRAMES = []


class Frame:
    def __init__(self, params, key):
        self.params, self.key, self.counts = params, key, {}


class Transformed(NamedTuple):
    init: Callable
    apply: Callable


def get_parameter(module, name, shape, init):
    frame = _FRAMES[-1]
    scope = frame.params.setdefault(module, {})
    if name not in scope:
        frame.key, sub = jax.random.split(frame.key)
        scope[name] = init(sub, shape)
    return scope[name]


def module_name(kind):
    frame = _FRAMES[-1]
    i = frame.counts.get(kind, 0)
    frame.counts[kind] = i + 1
    return kind if i == 0 else f"{kind}_{i}"


def transform(f):
    def init(key, *args):
        _FRAMES.append(Frame({}, key))
        try:
            f(*args)
            return _FRAMES[-1].params
        finally:
            _FRAMES.pop()

    def apply(params, *args):
        _FRAMES.append(Frame(params, None))
        try:
            return f(*args)
        finally:
            _FRAMES.pop()
    return Transformed(init, apply)


def linear(x, n_out):
    name = module_name("linear")
    w = get_parameter(name, "w", (x.shape[-1], n_out),
                      lambda k, s: jax.random.truncated_normal(k, -2.0, 2.0, s) / jnp.sqrt(s[0]))
    b = get_parameter(name, "b", (n_out,), lambda k, s: jnp.zeros(s))
    return x @ w + b


def forward(x):
    h = jax.nn.relu(linear(x, 8))
    return linear(h, 1)[:, 0]


net = transform(forward)


def loss(params, x, y):
    return jnp.mean((net.apply(params, x) - y) ** 2)


@jax.jit
def step(params, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g), value


def main():
    x = jax.random.normal(jax.random.PRNGKey(41), (16, 2))
    y = x[:, 0] ** 2 - x[:, 1]
    params = net.init(jax.random.PRNGKey(42), x)
    losses = []
    for _ in range(10):
        params, value = step(params, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "names": sorted(params), "b": params["linear_1"]["b"],
            "frames_left": len(_FRAMES)}
