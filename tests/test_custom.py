"""secant.custom_vjp, custom_jvp and custom_vmap: the user's rule is the one every transform uses.

Most rules here are deliberately *different* from the true derivative, so a test can only pass if
the transform called the rule (a correct derivative computed the normal way would fail it).
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


# --- custom_vjp ----------------------------------------------------------------------------------
@secant.custom_vjp
def clip_gradient(x, lo, hi):
    return x


def clip_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_bwd(res, g):
    lo, hi = res
    return snp.clip(g, lo, hi), None, None


clip_gradient.defvjp(clip_fwd, clip_bwd)


def clipped_loss(x):
    return snp.sum(clip_gradient(x, -0.5, 0.5) * 3.0)


@pytest.mark.parametrize("jit", [False, True])
def test_custom_vjp_rule_replaces_the_gradient(jit):
    g = secant.grad(clipped_loss)
    g = secant.jit(g) if jit else g
    x = np.array([1.0, -2.0, 0.1], np.float32)
    np.testing.assert_allclose(np.asarray(g(x)), [0.5, 0.5, 0.5])     # not 3.0: clipped
    np.testing.assert_allclose(np.asarray(clipped_loss(x)), 3.0 * x.sum(), rtol=1e-6)


def test_custom_vjp_source_calls_the_rules_by_name():
    g = secant.grad(clipped_loss)
    text = secant.source(g)     # (fwd's residuals kept by the forward pass, for bwd)
    assert "clip_gradient_out_res = clip_gradient_fwd(x, " in text
    assert "clip_gradient_out_res, x, " in text.split("clip_gradient_bwd(", 1)[1]
    text = secant.source(secant.transforms.generate(clip_gradient, (0,), "vjp"))
    assert "clip_fwd(x, lo, hi)" in text and "clip_bwd(res, out_bar)" in text


@secant.custom_vjp
def sin_with_residual(x):
    return snp.sin(x)


def sin_fwd(x):
    return snp.sin(x), snp.cos(x)


def sin_bwd(cos_x, g):
    return (2.0 * g * cos_x,)           # twice the true derivative


sin_with_residual.defvjp(sin_fwd, sin_bwd)


def test_custom_vjp_residuals_and_grad_of_grad():
    x = 0.7
    assert float(secant.grad(sin_with_residual)(x)) == pytest.approx(2 * np.cos(x))
    # grad of grad differentiates the user's fwd and bwd: d/dx 2 cos(x) = -2 sin(x)
    assert float(secant.grad(secant.grad(sin_with_residual))(x)) == pytest.approx(-2 * np.sin(x))
    assert float(secant.jit(secant.grad(sin_with_residual))(x)) == pytest.approx(2 * np.cos(x))


def loop_of_custom(x):
    return lax.fori_loop(0, 3, lambda i, c: sin_with_residual(c), x)


def test_custom_vjp_inside_a_loop_body():
    x = 0.4
    want, c = 1.0, x
    for _ in range(3):
        want, c = want * 2 * np.cos(c), np.sin(c)
    for g in (secant.grad(loop_of_custom), secant.jit(secant.grad(loop_of_custom))):
        assert float(g(x)) == pytest.approx(want, rel=1e-5)


def scale_by(k, x):
    return k * x


def scale_fwd(k, x):
    return k * x, None


def scale_bwd(k, res, g):
    return (k * k * g,)                 # k squared: visibly the rule's


scale = secant.custom_vjp(scale_by, nondiff_argnums=(0,))
scale.defvjp(scale_fwd, scale_bwd)


def uses_scale(x):
    return snp.sum(scale(3.0, x))


def test_custom_vjp_nondiff_argnums():
    x = np.ones(2, np.float32)
    np.testing.assert_allclose(np.asarray(secant.grad(uses_scale)(x)), [9.0, 9.0])


def test_custom_vjp_refuses_forward_mode():
    with pytest.raises(secant.SecantTypeError, match="forward-mode.*custom_vjp"):
        secant.jvp(clipped_loss, (np.ones(2, np.float32),), (np.ones(2, np.float32),))


# --- custom_jvp ----------------------------------------------------------------------------------
@secant.custom_jvp
def log1pexp(x):
    return snp.log(1.0 + snp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, (1.0 - 1.0 / (1.0 + snp.exp(x))) * x_dot


def softplus_sum(x):
    return snp.sum(log1pexp(x))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("jit", [False, True])
def test_custom_jvp_is_used_in_both_modes(jit):
    x = np.array([0.0, 1.0, -3.0, 100.0], np.float32)
    g = secant.grad(softplus_sum)
    g = secant.jit(g) if jit else g
    # the naive derivative exp(x) / (1 + exp(x)) is nan at 100 in float32; the rule's is 1
    np.testing.assert_allclose(np.asarray(g(x)), sigmoid(x.astype(np.float64)), rtol=1e-6)
    out, out_dot = secant.jvp(log1pexp, (x,), (np.ones(4, np.float32),))
    np.testing.assert_allclose(np.asarray(out_dot), sigmoid(x.astype(np.float64)), rtol=1e-6)


def test_custom_jvp_hessian():
    x = np.array([0.0, 1.0, -3.0], np.float32)
    s = sigmoid(x.astype(np.float64))
    for h in (secant.hessian(softplus_sum), secant.jit(secant.hessian(softplus_sum))):
        np.testing.assert_allclose(np.asarray(h(x)), np.diag(s * (1 - s)), rtol=1e-5,
                                   atol=1e-7)


def _sum_of_softplus_grad(x):
    return snp.sum(secant.grad(softplus_sum)(x))


def test_custom_jvp_grad_of_grad():
    # reverse over reverse: the transposed rule is differentiated again (its grad_of_fields)
    x = np.array([0.0, 1.0, -3.0], np.float32)
    s = sigmoid(x.astype(np.float64))
    for g in (secant.grad(_sum_of_softplus_grad),
              secant.jit(secant.grad(_sum_of_softplus_grad))):
        np.testing.assert_allclose(np.asarray(g(x)), s * (1 - s), rtol=1e-5, atol=1e-7)


def test_custom_jvp_source_calls_the_rule():
    text = secant.source(secant.jvp_fn(softplus_sum))
    assert "= log1pexp_jvp_1(x, x_dot)" in text     # the rule's own name stays log1pexp_jvp
    jvp_of_custom = secant.transforms.generate(log1pexp, (0,), "jvp")
    assert "return custom_jvp_outputs(log1pexp_jvp((x,), (x_dot,)), log1pexp_jvp)" in \
        secant.source(jvp_of_custom)     # the rule's result checked as JAX checks it


@secant.custom_jvp
def product(x, y):
    return x * y


def product_dx(x_dot, ans, x, y):
    return 5.0 * x_dot * y              # 5x the true partials


def product_dy(y_dot, ans, x, y):
    return 5.0 * x * y_dot


product.defjvps(product_dx, product_dy)


def test_custom_jvp_defjvps():
    gx, gy = secant.grad(product, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (15.0, 10.0)
    _, t = secant.jvp(product, (2.0, 3.0), (1.0, 0.0))
    assert float(t) == 15.0
    gx_jit = secant.jit(secant.grad(product))(2.0, 3.0)
    assert float(gx_jit) == 15.0


@secant.custom_jvp
def no_rule_yet(x):
    return x


def test_errors():
    with pytest.raises(secant.SecantTypeError, match="defjvp"):
        secant.grad(no_rule_yet)(1.0)
    with pytest.raises(secant.SecantTypeError, match="nondiff_argnums"):
        secant.grad(scale, argnums=0)(3.0, np.ones(2, np.float32))
    with pytest.raises(secant.SecantTypeError, match="one rule per differentiable"):
        product.defjvps(None)


# --- custom_vmap ---------------------------------------------------------------------------------
# As JAX's custom_batching.custom_vmap: rule(axis_size, in_batched, *args) -> (out, out_batched).
@secant.custom_vmap
def add(x, y):
    return x + y


@add.def_vmap
def add_vmap_rule(axis_size, in_batched, xs, ys):
    return xs * ys, True                # JAX's doc example: not add at all, so visibly the rule's


def test_custom_vmap_rule_is_the_one_used_and_named_in_the_source():
    xs, ys = np.arange(3, dtype=np.float32), np.arange(1, 4, dtype=np.float32)
    for v in (secant.vmap(add), secant.jit(secant.vmap(add))):
        np.testing.assert_array_equal(np.asarray(v(xs, ys)), xs * ys)
    assert float(add(2.0, 3.0)) == 5.0                  # called directly: the function itself
    assert float(secant.jit(add)(2.0, 3.0)) == 5.0
    src = secant.source(secant.vmap(add))
    assert "out, out_batched = add_vmap_rule(batch_size, (True, True), x, y)" in src
    assert "custom_vmap_outputs(out, out_batched, batch_size, add_vmap_rule)" in src


RULE_CALLS = []


@secant.custom_vmap
def weighted_sum(x, w):
    return snp.sum(x * w)


@weighted_sum.def_vmap
def weighted_sum_rule(axis_size, in_batched, x, w):
    RULE_CALLS.append((axis_size, in_batched))
    x_batched, w_batched = in_batched
    if x_batched and w_batched:
        out = snp.einsum("bn,bn->b", x, w)
    elif x_batched:
        out = x @ w                     # one matrix-vector product for the whole batch
    else:
        out = w @ x
    return out, True


def _uses_weighted_sum(x, w):
    return weighted_sum(x, w) + 1.0


@pytest.mark.parametrize("in_axes,flags", [((0, None), (True, False)), ((None, 0), (False, True)),
                                           ((0, 0), (True, True)), ((1, 0), (True, True))])
@pytest.mark.parametrize("jit", [False, True])
def test_custom_vmap_equals_a_loop_with_in_batched_flags(in_axes, flags, jit):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    if in_axes[0] is None:
        x = x[0]
    if in_axes[1] is None:
        w = w[0]
    if in_axes[0] == 1:
        x = x.T.copy()
    take = [lambda a, i, ax=ax: a if ax is None else np.take(a, i, axis=ax) for ax in in_axes]
    want = np.array([np.sum(take[0](x, i) * take[1](w, i)) for i in range(4)])
    for fn, plus in ((weighted_sum, 0.0), (_uses_weighted_sum, 1.0)):
        del RULE_CALLS[:]
        v = secant.vmap(fn, in_axes=in_axes)
        got = (secant.jit(v) if jit else v)(x, w)
        np.testing.assert_allclose(np.asarray(got), want + plus, rtol=1e-5, atol=1e-6)
        assert RULE_CALLS == [(4, flags)]                   # the rule ran once, for the batch


@secant.custom_vmap
def shift_and_count(x, n):
    return x + n, n * 2


@shift_and_count.def_vmap
def shift_and_count_rule(axis_size, in_batched, xs, n):
    x_batched, n_batched = in_batched
    return (xs + n, n * 2), (True, n_batched)      # n * 2 stays unbatched with n


def test_custom_vmap_outputs_the_rule_marks_unbatched_are_broadcast():
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    n = np.float32(5.0)
    for v in (secant.vmap(shift_and_count, in_axes=(0, None)),
              secant.jit(secant.vmap(shift_and_count, in_axes=(0, None)))):
        shifted, doubled = v(xs, n)
        np.testing.assert_array_equal(np.asarray(shifted), xs + 5.0)
        np.testing.assert_array_equal(np.asarray(doubled), np.full(3, 10.0, np.float32))
    moved = secant.vmap(add, out_axes=1)(xs, xs)           # the wrapper moves the batch axis
    np.testing.assert_array_equal(np.asarray(moved), (xs * xs).T)


def test_nested_vmap_batches_the_rule_itself():
    # the outer vmap reads the inner batched function and batches the rule's body, as JAX does
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    nested = secant.vmap(secant.vmap(add))
    for v in (nested, secant.jit(nested)):
        np.testing.assert_array_equal(np.asarray(v(x, y)), x * y)
    xs = np.arange(3, dtype=np.float32)
    rows = secant.vmap(secant.vmap(shift_and_count, in_axes=(0, None)), in_axes=(None, 0))
    shifted, doubled = rows(xs, np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(shifted), xs[None, :] + np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(np.asarray(doubled), [[2.0] * 3, [4.0] * 3])


def test_custom_vmap_differentiation_follows_jax():
    # forward mode goes through the function's body; reverse mode is refused, as in JAX
    _, t = secant.jvp(add, (1.0, 2.0), (1.0, 1.0))
    assert float(t) == 2.0
    with pytest.raises(secant.SecantTypeError, match="reverse-mode.*custom_vmap.*add"):
        secant.grad(add)(1.0, 2.0)


@secant.custom_vjp
@secant.custom_vmap
def sin_times(x, y):
    return snp.sin(x) * y


@sin_times.def_vmap
def sin_times_vmap_rule(axis_size, in_batched, xs, ys):
    return snp.cos(xs) * ys, True       # JAX's doc example: cos, visibly the rule's


def sin_times_fwd(x, y):
    return sin_times(x, y), (snp.cos(x), snp.sin(x), y)


def sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return cos_x * g * y, -sin_x * g    # JAX's doc example: -sin for y's cotangent


sin_times.defvjp(sin_times_fwd, sin_times_bwd)


def test_custom_vjp_over_custom_vmap_as_in_jax_docs():
    x, y = np.float32(0.5), np.float32(2.0)
    assert np.isclose(float(sin_times(x, y)), np.sin(0.5) * 2.0)
    gx, gy = secant.grad(sin_times, argnums=(0, 1))(x, y)
    np.testing.assert_allclose([float(gx), float(gy)], [np.cos(0.5) * 2.0, -np.sin(0.5)],
                               rtol=1e-6)
    xs = np.array([0.1, 0.2], np.float32)
    ys = np.array([1.0, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(secant.vmap(sin_times)(xs, ys)), np.cos(xs) * ys,
                               rtol=1e-6)
    # per-example gradients: the vjp's fwd calls sin_times, which vmap batches by its rule
    per_example = secant.vmap(secant.grad(sin_times))
    for g in (per_example, secant.jit(per_example)):
        np.testing.assert_allclose(np.asarray(g(xs, ys)), np.cos(xs) * ys, rtol=1e-6)


@secant.custom_vmap
def no_vmap_rule_yet(x):
    return x


@secant.custom_vmap
def bad_flags(x):
    return x


@bad_flags.def_vmap
def bad_flags_rule(axis_size, in_batched, xs):
    return (xs, xs), True if axis_size < 0 else (True,)     # flags shaped unlike the outputs


def test_custom_vmap_errors():
    with pytest.raises(secant.SecantTypeError, match=r"(?s)def_vmap.*test_custom\.py"):
        secant.vmap(no_vmap_rule_yet)(np.ones(3, np.float32))
    with pytest.raises(secant.SecantTypeError,
                       match=r"bad_flags_rule \(.*test_custom\.py:\d+\).*out_batched"):
        secant.vmap(bad_flags)(np.ones(3, np.float32))
