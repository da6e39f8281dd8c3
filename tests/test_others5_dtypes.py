"""Issue 15, code written by others (fifth round): dtype edges as users meet them with JAX: int
and bool arguments beside the float ones (a step count, a mask, token ids), grad refused for an
int argument as JAX refuses it, float16 and bfloat16 models under grad, jit and vmap, uint8
images normalised inside the model, value_and_grad with has_aux returning integer accuracy
counts, integer and bool outputs under vmap (argmax, argsort, counts, searchsorted, digitize),
a straight-through rounding estimator with astype, and Python idioms found on the way (a dict
rebuilt with ** unpacking or dict(base, k=v), a staged if that also flips a Python int); each
checked against float64 finite differences, a Python loop and eager."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, nn, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(5757)


def masked_decay_loss(w, step, mask, x):
    # a float parameter, a Python/int step count, a bool mask over the features
    decay = 0.99 ** step
    h = jnp.where(mask, x * w, 0.0)
    return decay * jnp.sum(jnp.tanh(h) ** 2) + 1e-3 * jnp.sum(w ** 2) * (step > 3)


def test_int_and_bool_arguments_beside_floats(x64):
    w, x = RNG.normal(size=5), RNG.normal(size=5)
    mask = np.array([True, False, True, True, False])
    step = np.int32(7)
    g = check_grad(masked_decay_loss, w, step, mask, x)
    np.testing.assert_array_equal(np.asarray(g)[~mask], 2e-3 * w[~mask])
    # per-example masks batched with the data, the step shared
    masks = RNG.uniform(size=(4, 5)) > 0.5
    xs = RNG.normal(size=(4, 5))
    got = vmap(grad(masked_decay_loss), in_axes=(None, None, 0, 0))(to_snp(w), step,
                                                                    masks, to_snp(xs))
    want = [grad(masked_decay_loss)(to_snp(w), step, masks[i], to_snp(xs[i])) for i in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got_j = jit(vmap(grad(masked_decay_loss), in_axes=(None, None, 0, 0)))(to_snp(w), step, masks,
                                                                           to_snp(xs))
    np.testing.assert_allclose(got_j, want, rtol=1e-10)


def test_grad_with_respect_to_an_int_argument_is_refused():
    f = lambda x, n: jnp.sum(x * n)
    with pytest.raises(TypeError):
        grad(f, argnums=1)(jnp.ones(3), 2)
    with pytest.raises(TypeError):
        grad(lambda n: n * 2.0)(np.int32(3))
    # allow_int gives a float0 zero, as JAX
    g = grad(f, argnums=(0, 1), allow_int=True)(jnp.ones(3), 2)
    np.testing.assert_allclose(g[0], [2.0, 2.0, 2.0])
    assert g[1].dtype == jax_float0()


def jax_float0():
    return secant.dtypes.float0


def half_mlp(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.sum(h @ params["w2"])


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_model(dtype):
    p32 = {"w1": RNG.normal(size=(3, 4)) * 0.5, "b1": RNG.normal(size=4) * 0.1,
           "w2": RNG.normal(size=(4, 2)) * 0.5}
    x32 = RNG.normal(size=(5, 3))
    p = {k: jnp.asarray(v, dtype=dtype) for k, v in p32.items()}
    x = jnp.asarray(x32, dtype=dtype)
    g = grad(half_mlp)(p, x)
    g32 = grad(half_mlp)({k: jnp.asarray(v, jnp.float32) for k, v in p32.items()},
                         jnp.asarray(x32, jnp.float32))
    tol = 2e-2 if dtype == jnp.float16 else 1e-1
    for k in p:
        assert g[k].dtype == dtype, (k, g[k].dtype)
        np.testing.assert_allclose(np.asarray(g[k], np.float32), g32[k], rtol=tol, atol=tol)
    gj = jit(grad(half_mlp))(p, x)
    for k in p:
        assert gj[k].dtype == dtype
        np.testing.assert_allclose(np.asarray(gj[k], np.float32), np.asarray(g[k], np.float32),
                                   rtol=tol, atol=tol)
    out = vmap(half_mlp, in_axes=(None, 0))(p, x[:, None, :])
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out, np.float32),
                               [float(half_mlp(p, x[i:i + 1])) for i in range(5)], rtol=tol,
                               atol=tol)


def image_model(w, images):
    x = images.astype(w.dtype) / 255.0              # uint8 pixels in
    x = x.reshape(images.shape[0], -1)
    return jnp.mean(nn.log_softmax(x @ w)[:, 0])


def test_uint8_images_normalised_inside(x64):
    images = RNG.integers(0, 256, size=(4, 3, 3), dtype=np.uint8)
    w64 = RNG.normal(size=(9, 3)) * 0.1
    g64 = check_grad(image_model, w64, images)
    w = jnp.asarray(w64, jnp.float32)
    g = grad(image_model)(w, images)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, g64, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(jit(grad(image_model))(w, images), g, rtol=1e-5, atol=1e-7)
    per = vmap(image_model, in_axes=(None, 0))(w, images[:, None])
    np.testing.assert_allclose(per, [image_model(w, images[i:i + 1]) for i in range(4)],
                               rtol=1e-6)


def classifier_loss(params, x, labels):
    logits = x @ params["w"] + params["b"]
    loss = -jnp.mean(jnp.take_along_axis(nn.log_softmax(logits), labels[:, None], axis=1))
    correct = jnp.sum(jnp.argmax(logits, axis=1) == labels)
    return loss, {"correct": correct, "predictions": jnp.argmax(logits, axis=1)}


def test_value_and_grad_with_integer_aux(x64):
    params = {"w": RNG.normal(size=(4, 3)), "b": np.zeros(3)}
    x, labels = RNG.normal(size=(10, 4)), RNG.integers(0, 3, size=10)
    (loss, aux), g = value_and_grad(classifier_loss, has_aux=True)(to_snp(params), to_snp(x),
                                                                   labels)
    preds = np.argmax(x @ params["w"], axis=1)
    assert int(aux["correct"]) == int(np.sum(preds == labels))
    assert np.issubdtype(np.asarray(aux["predictions"]).dtype, np.integer)
    np.testing.assert_array_equal(aux["predictions"], preds)
    assert_trees_close(g, fd_grad(lambda p: classifier_loss(p, to_snp(x), labels)[0],
                                  (to_snp(params),)), rtol=1e-6, atol=1e-8)
    (lj, auxj), gj = jit(value_and_grad(classifier_loss, has_aux=True))(to_snp(params),
                                                                       to_snp(x), labels)
    np.testing.assert_allclose(lj, loss, rtol=1e-12)
    assert int(auxj["correct"]) == int(aux["correct"])
    assert_trees_close(gj, g, rtol=1e-10)
    # per-batch values and aux by vmap over batches of the data
    xb, lb = x.reshape(2, 5, 4), labels.reshape(2, 5)
    (lv, auxv), gv = vmap(value_and_grad(classifier_loss, has_aux=True),
                          in_axes=(None, 0, 0))(to_snp(params), to_snp(xb), lb)
    for i in range(2):
        (li, ai), gi = value_and_grad(classifier_loss, has_aux=True)(to_snp(params),
                                                                     to_snp(xb[i]), lb[i])
        np.testing.assert_allclose(lv[i], li, rtol=1e-12)
        assert int(auxv["correct"][i]) == int(ai["correct"])
        np.testing.assert_array_equal(auxv["predictions"][i], ai["predictions"])
        assert_trees_close({k: v[i] for k, v in gv.items()}, gi, rtol=1e-10)


def ranking_summary(scores, edges):
    order = jnp.argsort(-scores)
    top = jnp.argmax(scores)
    above = jnp.sum(scores > jnp.mean(scores))
    bins = jnp.digitize(scores, edges)
    slot = jnp.searchsorted(edges, scores[0])
    return order, top, above, bins, slot, scores > 0


def test_integer_and_bool_outputs_under_vmap():
    scores = RNG.normal(size=(5, 6))
    edges = np.array([-1.0, 0.0, 1.0])
    got = vmap(ranking_summary, in_axes=(0, None))(jnp.asarray(scores), jnp.asarray(edges))
    for i in range(5):
        want = ranking_summary(jnp.asarray(scores[i]), jnp.asarray(edges))
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype, (g.dtype, w.dtype)
            np.testing.assert_array_equal(g[i], w)
    np.testing.assert_array_equal(got[0][0], np.argsort(-scores[0]))
    np.testing.assert_array_equal(got[3], np.digitize(scores, edges))
    got_j = jit(vmap(ranking_summary, in_axes=(0, None)))(jnp.asarray(scores), jnp.asarray(edges))
    for g, w in zip(got_j, got):
        np.testing.assert_array_equal(g, w)


def straight_through_round(x):
    return x + lax.stop_gradient(jnp.round(x).astype(x.dtype) - x)


def quantised_loss(w, x, bits=4):
    scale = 2.0 ** (bits - 1) - 1
    q = straight_through_round(jnp.clip(w, -1, 1) * scale) / scale
    levels = (q * scale).astype(jnp.int32)          # an int view for a histogram
    return jnp.sum((x @ q) ** 2), levels


def test_straight_through_quantisation(x64):
    w, x = RNG.uniform(-1.2, 1.2, size=4), RNG.normal(size=(3, 4))
    (val, levels), g = value_and_grad(quantised_loss, has_aux=True)(to_snp(w), to_snp(x))
    q = np.round(np.clip(w, -1, 1) * 7) / 7
    np.testing.assert_allclose(val, np.sum((x @ q) ** 2), rtol=1e-12)
    np.testing.assert_array_equal(levels, np.round(np.clip(w, -1, 1) * 7).astype(int))
    # the gradient flows as if rounding were the identity, and stops where clip saturates
    want = 2 * x.T @ (x @ q) * (np.abs(w) < 1)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    gs = vmap(grad(lambda w, x: quantised_loss(w, x)[0]), in_axes=(0, None))(
        to_snp(np.stack([w, -w])), to_snp(x))
    np.testing.assert_allclose(gs[0], want, rtol=1e-12)


# --- Python idioms found on the way (fixed in this round) --------------------------------------
BASE = {"scale": 1.5, "shift": 0.2}


def affine(cfg, x):
    return cfg["scale"] * x + cfg["shift"]


def override_loss(s, x):
    cfg = {**BASE, "scale": s}                      # a config dict rebuilt with one override
    first = {"shift": s * 0.0, **BASE}              # a later ** entry wins: shift from BASE
    shifted = dict(BASE, shift=s)                   # dict(mapping, **overrides)
    return jnp.sum(affine(cfg, x) ** 2) + jnp.sum(affine(first, x)) + jnp.sum(affine(shifted, x))


def test_dict_rebuilt_with_star_star_unpacking(x64):
    x = RNG.normal(size=4)
    check_grad(override_loss, np.array(0.7), x)
    np.testing.assert_allclose(grad(override_loss)(0.7, to_snp(x)),
                               np.sum(2 * (0.7 * x + 0.2) * x) + 4, rtol=1e-12)
    check_vmap(override_loss, (np.array([0.3, 0.7, 1.1]), x), in_axes=(0, None))


def _digits(n):
    return tuple(int(c) for c in bin(n)[:1:-1])


def power_by_bits(a, n):
    if n < 0:
        a = 1.0 / a
        n = -n
    out = jnp.ones_like(a)
    for i, bit in enumerate(_digits(n)):
        if bit:
            out = out * a ** (2 ** i)
    return out


def test_staged_if_flipping_a_python_int_under_jit_of_vmap(x64):
    a = np.array([0.5, 1.5, 2.0])
    for n in (5, -3):
        f = lambda a: power_by_bits(a, n)
        np.testing.assert_allclose(jit(vmap(f))(to_snp(a)), a ** float(n), rtol=1e-12)
        np.testing.assert_allclose(vmap(grad(f))(to_snp(a)), n * a ** (n - 1.0), rtol=1e-12)


def test_staged_if_flipping_a_python_int_under_jit_of_grad(x64):
    a = np.array([0.5, 1.5, 2.0])
    f = lambda a: power_by_bits(a, -3)
    np.testing.assert_allclose(jit(vmap(grad(f)))(to_snp(a)), -3 * a ** -4.0, rtol=1e-12)
