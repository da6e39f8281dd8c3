"""Issue 15, fifth battery (explore15l): programs sorted by how their authors write code, in
tests/user_programs/habits.py: code ported from PyTorch habits (x.sum(-1), keepdims, x.T,
reshape(-1, d), astype, clip chains, .at[] chains, squeeze, swapaxes, flatten/ravel, `@`),
optax-like optimisers (init/update closures and NamedTuple states, tree_map of several trees,
tree_flatten/unflatten, jax.tree.map, chains), flax-like modules (dicts of dicts, a FrozenDict
Mapping, config dataclasses with __call__, setup-style lazy init, a stop_gradient target net),
scientific code (jax.scipy.special, stats.norm, cholesky/cho_solve/slogdet, eigh, expm, RK4,
Newton in while_loop, user-written custom_jvp/custom_vjp implicit functions, checkpoint/remat,
named_call) and Python idioms (forwarding wrappers, stacked decorators, reduce/accumulate,
map, zip(strict=True), f-string asserts, isinstance dispatch, early returns, for/else, nested
comprehensions, sorted(d.items()), enums, Protocols, __slots__, properties). Each runs through
grad, hessian, grad∘grad, jit, jit∘grad, vmap, vmap∘grad, jvp and jacrev, checked against
float64 central differences, a Python loop and the eager value (tests/user_programs/checks.py);
and the bad inputs of tests/user_programs/bad_inputs_fifth.py.

The default profile runs every program through one transform, rotating over the transforms;
HYPOTHESIS_PROFILE=thorough runs every pair. `.venv/bin/python bench/user_programs.py --fifth`
prints the whole table. Below: a named regression test for each fix the battery led to.
"""
import numpy as np

import secant
import secant.numpy as jnp
from user_programs import FIFTH, bad_inputs_fifth, checks, habits

PER_PROGRAM = 1

_WHY = [      # (program, its failing transforms, why)
]
# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {(name, t): why for name, ts, why in _WHY for t in ts}
KNOWN_BAD_INPUTS = {}


test_program, test_bad_input = checks.battery(FIFTH, checks.SECOND_TRANSFORMS, PER_PROGRAM,
                                              KNOWN_FAILURES, bad_inputs_fifth, KNOWN_BAD_INPUTS,
                                              habits.JAX_REFUSES)


def test_battery_size():
    assert len(FIFTH) >= 50 and len(bad_inputs_fifth.CASES) >= 15


# --- regression tests of what the battery found ---------------------------------------------------
def _layer(params, x, train=False):
    k, s = params["kernel"], params["scale"]
    h = x @ k if train else jnp.tanh(x @ k)
    return jnp.sum(h * s)


def _two_modes(params, x):
    return _layer(params, x) + _layer(params, x, train=True) ** 2


def _two_modes_ref(params, x):
    def layer(k, s, train):
        h = x @ k if train else np.tanh(x @ k)
        return np.sum(h * s)
    k, s = params["kernel"], params["scale"]
    hk, hs = x, np.tanh(x @ k)
    g_scale = hs.sum(0) + 2 * layer(k, s, True) * (x @ k).sum(0)
    g_kernel = x.T @ ((1 - hs ** 2) * s) + 2 * layer(k, s, True) * np.outer(hk.sum(0), s)
    return g_kernel, g_scale


def test_a_field_read_renamed_keeps_its_key(x64):
    """fx_apply_variables under jit∘grad: `k, s = params["kernel"], params["scale"]` then a
    branch on a Python flag reading k: the copy removal of ad/copies.py renamed `kernel` to `k`
    in `kernel = params['kernel']` as text, inside the string too: `k = params['k']`, a KeyError,
    or, where the dict has a key named as the user's variable, a SILENTLY WRONG gradient (the
    other field's). A name inside a string literal, or a keyword argument's name, is no read
    of the variable."""
    params = {"kernel": np.eye(3) * 0.5, "scale": np.array([1.0, 2.0, 3.0]),
              "k": np.ones((3, 3)) * 7.0, "s": np.array([10.0, 0.0, -10.0])}
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    want_kernel, want_scale = _two_modes_ref(params, x)
    for run in (secant.grad(_two_modes), secant.jit(secant.grad(_two_modes))):
        g = run(params, x)
        np.testing.assert_allclose(g["kernel"], want_kernel, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g["scale"], want_scale, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g["k"], 0.0)
        np.testing.assert_allclose(g["s"], 0.0)


def test_the_copy_renaming_skips_strings_and_keywords():
    from secant.ad.copies import _rename
    assert _rename("batch_stats = variables['batch_stats']", "batch_stats", "s") == \
        "s = variables['batch_stats']"
    assert _rename('y = f(x, train=train) + g(train == 1)', "train", "t") == \
        "y = f(x, train=t) + g(t == 1)"
    assert _rename("y = g(f'{a}') + a.a + rb'a'", "a", "b") == "y = g(f'{b}') + b.a + rb'a'"
    # a tuple target at the statement's level is no keyword (a for/else's looping flag)
    assert _rename("h_1, looping_2 = lax.cond(p, f, g, h_1, looping_2)", "looping_2", "l") == \
        "h_1, l = lax.cond(p, f, g, h_1, l)"


def _for_else(w):
    h = w
    for k in (1, 2, 3):
        if k == 2:
            h = h + 0.5
            break
    else:
        h = h * 0.0
    return jnp.sum(h ** 2)


def test_a_for_else_broken_out_of_under_jit_of_grad(x64):
    """py_for_else: the loop breaks, so its else never runs: d/dw sum((w + 0.5)^2)."""
    w = np.array([0.3, -0.2])
    for run in (secant.grad(_for_else), secant.jit(secant.grad(_for_else))):
        np.testing.assert_allclose(run(w), 2 * (w + 0.5), rtol=1e-12)


def _named_blocks(w, x):
    def block(h):
        return jnp.tanh(h @ w)
    h = secant.named_call(block, name="block1")(x)
    return jnp.sum(secant.named_call(block, name="block2")(h) ** 2)


def test_named_call_of_a_nested_def(x64):
    """sci_named_call: named_call(block, name=...)(x) of a nested def closing over w was
    refused by every transform but jit; it reads as block(x)."""
    w, x = np.eye(3) * 0.5 + 0.1, np.linspace(-1.0, 1.0, 12).reshape(4, 3)

    def ref(w):
        return np.sum(np.tanh(np.tanh(x @ w) @ w) ** 2)
    eps, want = 1e-6, np.zeros((3, 3))
    for i in range(9):
        e = np.zeros((3, 3))
        e.flat[i] = eps
        want.flat[i] = (ref(w + e) - ref(w - e)) / (2 * eps)
    for run in (secant.grad(_named_blocks), secant.jit(secant.grad(_named_blocks))):
        np.testing.assert_allclose(run(w, x), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.vmap(_named_blocks, in_axes=(0, None))(
        np.stack([w, 2 * w]), x), [ref(w), ref(2 * w)], rtol=1e-12)


def _clipped(w, x):
    h = (x @ w) ** 2 + 0.5
    return jnp.tanh(h).clip(max=0.7).sum() + jnp.clip(h, min=0.56).sum() + h.clip(0.6, None).sum()


def test_clip_with_min_and_max_keywords(x64):
    """pt_method_chain: `h.clip(max=...)` / jnp.clip(h, min=...) (JAX's newer spelling of
    a_min/a_max) was refused by every transform but jit ("bad arguments for clip")."""
    w, x = np.eye(3) * 0.8, np.linspace(-1.0, 1.0, 12).reshape(4, 3)

    def ref(w):
        h = (x @ w) ** 2 + 0.5
        return np.minimum(np.tanh(h), 0.7).sum() + np.maximum(h, 0.56).sum() + \
            np.maximum(h, 0.6).sum()
    eps, want = 1e-6, np.zeros((3, 3))
    for i in range(9):
        e = np.zeros(9)
        e[i] = eps
        want.flat[i] = (ref(w + e.reshape(3, 3)) - ref(w - e.reshape(3, 3))) / (2 * eps)
    for run in (secant.grad(_clipped), secant.jit(secant.grad(_clipped))):
        np.testing.assert_allclose(run(w, x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.vmap(_clipped, in_axes=(0, None))(np.stack([w, 2 * w]), x),
                               [ref(w), ref(2 * w)], rtol=1e-12)

