"""The JIT mechanics tutorial's checks in a script: a Python side effect (a counter, a print)
runs once per trace, retraces for a new shape, a weak vs strong dtype, a new static value;
jax.debug.print runs every call (its text captured)."""
import contextlib
import functools
import io

import jax
import jax.numpy as jnp

TRACES = {"step": 0}


@functools.partial(jax.jit, static_argnames="n")
def step(x, scale, n):
    TRACES["step"] += 1
    print("tracing step for", x.shape, n)
    for _ in range(n):
        x = jnp.sin(x) * scale
    return x


@jax.jit
def noisy(x):
    jax.debug.print("sum={s:.3f} max={m:.3f}", s=jnp.sum(x), m=jnp.max(x))
    return 2 * x


def main():
    outs = []
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        outs.append(step(jnp.ones(3), 2.0, n=2))
        outs.append(step(jnp.ones(3), 3.0, n=2))
        outs.append(step(jnp.ones(4), 2.0, n=2))
        outs.append(step(jnp.ones(3), jnp.float32(2.0), n=2))
        outs.append(step(jnp.ones(3), 2.0, n=3))
        y = noisy(jnp.arange(3.0))
        y = noisy(y)
    return {"traces": TRACES["step"], "outs": outs, "printed": buf.getvalue(), "y": y}
