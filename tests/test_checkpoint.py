"""secant.checkpoint / secant.remat: reverse mode recomputes the wrapped function's
intermediates instead of keeping them. Gradients equal those without it (eagerly, under jit,
composed with jvp and vmap); the generated source says where the recomputation happens; under
jit the optimization barrier keeps XLA from merging it back, so a deep stack of checkpointed
layers needs less temporary memory than the same stack without."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

L, B, H = 6, 32, 64


def layer(h, w):
    z = h @ w
    return snp.tanh(z) * snp.sin(z) + h


block = secant.checkpoint(layer)


@secant.remat
def block_decorated(h, w):
    z = h @ w
    return snp.tanh(z) * snp.sin(z) + h


block_no_barrier = secant.checkpoint(prevent_cse=False)(layer)


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


def decorated(ws, x):
    h = x
    for i in range(L):
        h = block_decorated(h, ws[i])
    return snp.sum(h * h)


def no_barrier(ws, x):
    h = x
    for i in range(L):
        h = block_no_barrier(h, ws[i])
    return snp.sum(h * h)


def two_plain(ws, x):
    return snp.sum(layer(layer(x, ws[0]), ws[1]) ** 2)


def two_checkpointed(ws, x):
    return snp.sum(block(block(x, ws[0]), ws[1]) ** 2)


def _inputs(seed=0, n=B):
    rng = np.random.default_rng(seed)
    ws = rng.normal(size=(L, H, H)) / np.sqrt(H) / 2
    return ws, rng.normal(size=(n, H))


@pytest.mark.parametrize("f", [checkpointed, decorated, no_barrier])
def test_same_gradients_with_and_without(f, x64):
    ws, x = _inputs()
    want = secant.grad(plain, argnums=(0, 1))(ws, x)
    for g in (secant.grad(f, argnums=(0, 1)), secant.jit(secant.grad(f, argnums=(0, 1)))):
        got = g(ws, x)
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    # and the gradient is right: a directional finite difference
    v = np.random.default_rng(1).normal(size=ws.shape)
    e = 1e-6
    fd = (float(plain(ws + e * v, x)) - float(plain(ws - e * v, x))) / (2 * e)
    assert float(np.sum(np.asarray(want[0]) * v)) == pytest.approx(fd, rel=1e-6)


def test_the_generated_source_shows_the_recomputation():
    text = secant.source(secant.grad(checkpointed))
    assert "layer_checkpoint_vjp(" in text
    import inspect
    gen = secant.grad(checkpointed).__secant_generated__
    helper = inspect.getclosurevars(gen).nonlocals.get("layer_checkpoint_vjp") or \
        gen.__globals__.get("layer_checkpoint_vjp")
    if helper is None:
        helper = next(v for v in gen.__secant_source__.closure.values()
                      if getattr(v, "__name__", "") == "layer_checkpoint_vjp")
    vjp_text = inspect.getsource(helper)
    assert "# checkpoint: the forward pass kept only the arguments of layer" in vjp_text
    assert "    h = lax.optimization_barrier(h)\n    w = lax.optimization_barrier(w)\n" \
        in vjp_text
    assert "return layer_vjp(out_bar, h, w)" in vjp_text


def test_checkpoint_is_transparent_to_other_transforms(x64):
    ws, x = _inputs(2)
    t = np.random.default_rng(3).normal(size=x.shape)
    _, want = secant.jvp(plain, (ws, x), (np.zeros_like(ws), t))
    _, got = secant.jvp(checkpointed, (ws, x), (np.zeros_like(ws), t))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12)
    xs = np.stack([x[0], 2 * x[0]])
    per_example = secant.vmap(secant.grad(two_checkpointed), in_axes=(None, 0))(ws, xs)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(per_example[k]),
                                   np.asarray(secant.grad(two_plain)(ws, xs[k])), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(block(x, ws[0])), np.asarray(layer(x, ws[0])))


def test_the_barrier_saves_memory_under_jit():
    # the stack's weights as a tuple: the loop stays a Python loop under jit (straight-line code)
    ws, x = _inputs(n=256)
    ws = tuple(w.astype(np.float32) for w in ws)
    x = x.astype(np.float32)

    def temp_bytes(f):
        compiled = secant.jit(secant.grad(f)).lower(ws, x).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    assert temp_bytes(checkpointed) < 0.8 * temp_bytes(plain)


def test_policies_are_refused():
    with pytest.raises(secant.UnsupportedError, match="policies"):
        secant.checkpoint(layer, policy=lambda *a, **k: True)


def test_save_source_rebuilds_a_checkpoint(tmp_path):
    path = tmp_path / "ckpt_grad.py"
    secant.save_source(secant.grad(checkpointed), str(path))
    text = path.read_text()
    assert "block = secant.checkpoint(layer)" in text
    compile(text, str(path), "exec")


def test_lax_optimization_barrier_is_the_identity():
    x = np.arange(3.0, dtype=np.float32)
    pair = lax.optimization_barrier((x, 2 * x))
    np.testing.assert_array_equal(np.asarray(pair[1]), 2 * x)
    text = secant.jit(lambda v: lax.optimization_barrier(v) + v).lower(x).as_text()
    assert "stablehlo.optimization_barrier" in text


# --- checkpoint written in place, of a lambda -----------------------------------------------
def _sin_times(y):
    return snp.sin(y) * y


def _in_place_named(x):
    return secant.checkpoint(_sin_times)(x)


def _in_place_lambda(x):
    return secant.checkpoint(lambda y: snp.sin(y) * y)(x)


def _assigned_lambda(x):
    g = secant.remat(lambda y: snp.sin(y) * y)
    return g(x) * 2.0


@pytest.mark.parametrize("f, scale", [(_in_place_named, 1.0), (_in_place_lambda, 1.0),
                                      (_assigned_lambda, 2.0)])
def test_checkpoint_in_place_and_of_a_lambda(f, scale):
    x = 0.7
    d1 = scale * (np.cos(x) * x + np.sin(x))
    d2 = scale * (2 * np.cos(x) - np.sin(x) * x)
    assert float(secant.grad(f)(x)) == pytest.approx(d1, rel=1e-5)
    assert float(secant.jit(secant.grad(f))(x)) == pytest.approx(d1, rel=1e-5)
    assert float(secant.grad(secant.grad(f))(x)) == pytest.approx(d2, rel=1e-4)
    xs = np.array([0.1, 0.7, 1.3], np.float32)
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(xs),
                               scale * (np.cos(xs) * xs + np.sin(xs)), rtol=1e-5)
