"""secant.custom_vjp and secant.custom_jvp: the user's rule is the one every transform uses.

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
    assert "clip_gradient_vjp(" in secant.source(g)
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


def test_custom_jvp_source_calls_the_rule():
    text = secant.source(secant.jvp_fn(softplus_sum))
    assert "= log1pexp_jvp_1(x, x_dot)" in text     # the rule's own name stays log1pexp_jvp
    jvp_of_custom = secant.transforms.generate(log1pexp, (0,), "jvp")
    assert "return log1pexp_jvp((x,), (x_dot,))" in secant.source(jvp_of_custom)


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
