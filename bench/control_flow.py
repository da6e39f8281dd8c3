"""Control flow under jit: loops stay rolled, so compile time does not grow with the trip count.

- fori_loop of x = sin(x) * 0.5 + 1 on a float32[128]: first call (trace + compile + run) with
  10 and 10,000 steps. Each configuration is timed once per process (compiled modules are cached
  by their text, so a second first call would not compile).
- An RNN over lax.scan, h = tanh(h @ W + x_t @ U), hidden 128, batch 32, input 64: first call
  for T=10 and T=1000, and the steady-state time per call; then jit(grad) of a loss over it
  (first call, steady state, and the bytes of residuals the forward pass keeps for the reverse).
- A scalar recurrence with 1,000 data-dependent steps written as a plain Python loop, under
  jit(grad(f)): secant differentiates the functionalised loop (both passes stay rolled); jax
  unrolls the Python loop (its fori_loop form is shown too).
Beside jax's own versions when jax is installed (a benchmark-only dependency).
"""
import numpy as np

import secant
import secant.numpy as snp
from secant import lax
from timing import import_jax, once_ms, per_call_us, report

HIDDEN, BATCH, INPUT = 128, 32, 64


def block(out, tree_leaves):
    for leaf in tree_leaves(out):
        leaf.block_until_ready()
    return out


def make_fori(np_like, lax_like, n):
    def f(x):
        return lax_like.fori_loop(0, n, lambda i, c: np_like.sin(c) * 0.5 + 1.0, x)
    return f


def make_rnn(np_like, lax_like):
    def rnn(w, u, h0, xs):
        def step(h, x):
            h = np_like.tanh(h @ w + x @ u)
            return h, h
        return lax_like.scan(step, h0, xs)
    return rnn


def make_rnn_loss(np_like, lax_like):
    rnn = make_rnn(np_like, lax_like)

    def loss(w, u, h0, xs):
        h, hs = rnn(w, u, h0, xs)
        return np_like.sum(h * h) + np_like.mean(hs)
    return loss


STEPS = 1000


def recurrence(x):
    """1,000 steps, each depending on the last: a plain Python loop (jit stages it)."""
    y = x
    for i in range(STEPS):
        y = snp.sin(y) * 0.9 + x * 0.1
    return y


def recurrence_jax(x):
    y = x
    for i in range(STEPS):
        y = JNP.sin(y) * 0.9 + x * 0.1
    return y


JNP = None


def rnn_inputs(rng, t):
    w = (rng.normal(size=(HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    u = (rng.normal(size=(INPUT, HIDDEN)) / np.sqrt(INPUT)).astype(np.float32)
    h0 = np.zeros((BATCH, HIDDEN), np.float32)
    xs = rng.normal(size=(t, BATCH, INPUT)).astype(np.float32)
    return w, u, h0, xs


def main():
    print(f"control flow: fori_loop first call vs trip count; RNN over scan (hidden {HIDDEN}, "
          f"batch {BATCH}, input {INPUT})")
    jax, jnp = import_jax()
    leaves = secant.tree_util.tree_leaves
    x = np.linspace(-1, 1, 128).astype(np.float32)
    # start the PJRT client (and jax's) first, so the first figure does not pay for it
    block(secant.jit(lambda v: v + 1)(x), leaves)
    if jax is not None:
        block(jax.jit(lambda v: v + 1)(x), jax.tree_util.tree_leaves)

    for n in (10, 10_000):
        f = secant.jit(make_fori(snp, lax, n))
        first = once_ms(lambda: block(f(x), leaves))
        j_first = None
        if jax is not None:
            jf = jax.jit(make_fori(jnp, jax.lax, n))
            j_first = once_ms(lambda: block(jf(x), jax.tree_util.tree_leaves))
            np.testing.assert_allclose(np.asarray(jf(x)), np.asarray(f(x)), rtol=1e-5, atol=1e-5)
        report(f"fori_loop {n:>6} steps: first call", first, j_first, "ms")

    rng = np.random.default_rng(0)
    for t in (10, 1000):
        args = rnn_inputs(rng, t)
        rnn = secant.jit(make_rnn(snp, lax))
        first = once_ms(lambda: block(rnn(*args), leaves))
        dev = secant.device_put(args)
        steady = per_call_us(lambda: block(rnn(*dev), leaves)) / 1e3
        j_first = j_steady = None
        if jax is not None:
            jrnn = jax.jit(make_rnn(jnp, jax.lax))
            j_first = once_ms(lambda: block(jrnn(*args), jax.tree_util.tree_leaves))
            jdev = jax.device_put(args)
            for a, b in zip(jax.tree_util.tree_leaves(jrnn(*jdev)), leaves(rnn(*dev))):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
            j_steady = per_call_us(lambda: block(jrnn(*jdev), jax.tree_util.tree_leaves)) / 1e3
        report(f"rnn scan T={t:<5}: first call", first, j_first, "ms")
        report(f"rnn scan T={t:<5}: steady state per call", steady, j_steady, "ms")
        rnn_grads(jax, jnp, args, t)
    recurrence_grads(jax, jnp)
    if jax is None:
        print("  (jax not installed: no comparison)")


def rnn_grads(jax, jnp, args, t):
    leaves = secant.tree_util.tree_leaves
    g = secant.jit(secant.grad(make_rnn_loss(snp, lax), argnums=(0, 1)))
    first = once_ms(lambda: block(g(*args), leaves))
    dev = secant.device_put(args)
    steady = per_call_us(lambda: block(g(*dev), leaves)) / 1e3
    j_first = j_steady = None
    if jax is not None:
        jg = jax.jit(jax.grad(make_rnn_loss(jnp, jax.lax), argnums=(0, 1)))
        j_first = once_ms(lambda: block(jg(*args), jax.tree_util.tree_leaves))
        jdev = jax.device_put(args)
        for a, b in zip(jg(*jdev), g(*dev)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-4)
        j_steady = per_call_us(lambda: block(jg(*jdev), jax.tree_util.tree_leaves)) / 1e3
    report(f"rnn jit(grad) T={t:<5}: first call", first, j_first, "ms")
    report(f"rnn jit(grad) T={t:<5}: steady state per call", steady, j_steady, "ms")
    # secant's forward pass keeps one carry per step (the body's vjp recomputes the rest)
    mine = t * BATCH * HIDDEN * 4 / 2**20
    theirs = _jax_residual_mib(jax, make_rnn_loss(jnp, jax.lax), args) if jax else None
    report(f"rnn jit(grad) T={t:<5}: residuals kept", mine, theirs, "MiB")


def _jax_residual_mib(jax, loss, args):
    """What jax's reverse pass saves (its own accounting; a private helper, bench only)."""
    try:
        from jax._src.ad_checkpoint import saved_residuals
    except ImportError:
        return None
    total = 0
    for aval, _ in saved_residuals(loss, *args):
        total += int(np.prod(aval.shape)) * np.dtype(aval.dtype).itemsize
    return total / 2**20


def recurrence_grads(jax, jnp):
    global JNP
    x = np.float32(0.5)
    g = secant.jit(secant.grad(recurrence))
    first = once_ms(lambda: g(x).block_until_ready())
    want = secant.grad(recurrence)(x)           # eager: the Python loop, replayed from a stack
    np.testing.assert_allclose(float(g(x)), float(want), rtol=1e-4)
    j_first = None
    if jax is not None:
        JNP = jnp
        jg = jax.jit(jax.grad(recurrence_jax))
        j_first = once_ms(lambda: jg(x).block_until_ready())
        np.testing.assert_allclose(float(jg(x)), float(want), rtol=1e-4)
    report(f"python loop x{STEPS} jit(grad): first call", first, j_first, "ms")
    if jax is not None:
        jf = jax.jit(jax.grad(lambda v: jax.lax.fori_loop(
            0, STEPS, lambda i, y: jnp.sin(y) * 0.9 + v * 0.1, v)))
        print(f"  (jax's lax.fori_loop form of it: first call "
              f"{once_ms(lambda: jf(x).block_until_ready()):.2f} ms)")


if __name__ == "__main__":
    main()
