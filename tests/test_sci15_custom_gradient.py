"""Issue 15: secant.custom_gradient under vmap, grad of grad, vmap of grad, jacfwd of jacrev
and jit of them, as JAX (which closure-converts the vjp function): the vjp function is followed
through a trace of fun (secant/custom_gradient.py). Checked against closed forms of the user's
rule (not of the value's true derivative), Python loops and eager runs; a fun a trace cannot
fix to one path keeps grad, vmap runs it per example (tests/test_misc15_custom_gradient.py),
and its second derivative differentiates the rule each call takes."""
import numpy as np

import secant
import secant.numpy as snp

XS = np.array([-1.1, 0.3, 0.8, 2.0])


@secant.custom_gradient
def scaled_sin(x):
    def vjp(g):
        return 2.0 * g * snp.cos(x)         # twice the true derivative: a rule of its own
    return snp.sin(x), vjp


@secant.custom_gradient
def product(x, y):
    return x * y, lambda g: (g * y, 3.0 * g * x)


SCALE = np.array([1.0, 2.0, 3.0])


@secant.custom_gradient
def weighted_norm(v):
    sq = snp.sum(SCALE * v * v)
    norm = snp.sqrt(sq)
    return norm, lambda g: (g * SCALE * v / norm,)


@secant.custom_gradient
def branchy(x):
    if x > 0:                   # a Python branch on the value: no single trace
        return x, lambda g: 2.0 * g
    return -x, lambda g: -2.0 * g


def test_vmap_of_value_and_of_grad(x64):
    np.testing.assert_allclose(secant.vmap(scaled_sin)(XS), np.sin(XS), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(scaled_sin))(XS), 2 * np.cos(XS),
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(scaled_sin)))(XS),
                               2 * np.cos(XS), rtol=1e-12)
    ys = XS[::-1] + 1.0
    gx, gy = secant.vmap(secant.grad(product, argnums=(0, 1)))(XS, ys)
    np.testing.assert_allclose(gx, ys, rtol=1e-12)
    np.testing.assert_allclose(gy, 3 * XS, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(product, in_axes=(0, None))(XS, 2.0), 2 * XS,
                               rtol=1e-12)


def test_grad_of_grad_differentiates_the_rule(x64):
    for x in XS:
        np.testing.assert_allclose(secant.grad(secant.grad(scaled_sin))(x), -2 * np.sin(x),
                                   rtol=1e-12)
        np.testing.assert_allclose(secant.jacfwd(secant.jacrev(scaled_sin))(x),
                                   -2 * np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(secant.grad(scaled_sin)))(XS),
                               -2 * np.sin(XS), rtol=1e-12)
    # d/dy of the rule's x-cotangent g*y is 1; d/dx of the y-cotangent 3*g*x is 3
    np.testing.assert_allclose(secant.grad(lambda x, y: secant.grad(product, 1)(x, y))(2.0, 5.0),
                               3.0, rtol=1e-12)


def test_vector_rule_hessian_against_finite_differences(x64):
    v = np.array([0.4, -0.7, 1.3])
    rule = lambda v: SCALE * v / np.sqrt(np.sum(SCALE * v * v))    # noqa: E731
    np.testing.assert_allclose(secant.grad(weighted_norm)(v), rule(v), rtol=1e-12)
    eps = 1e-6
    fd = np.stack([(rule(v + eps * e) - rule(v - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    np.testing.assert_allclose(secant.hessian(weighted_norm)(v), fd, rtol=1e-7, atol=1e-9)
    vs = np.stack([v, 2 * v, -v])
    np.testing.assert_allclose(secant.vmap(secant.grad(weighted_norm))(vs),
                               [rule(w) for w in vs], rtol=1e-12)


def test_caller_of_custom_gradient_under_vmap_and_jit(x64):
    def loss(x):
        return scaled_sin(x) ** 2 + x
    expected = [2 * np.sin(x) * 2 * np.cos(x) + 1 for x in XS]
    np.testing.assert_allclose(secant.vmap(secant.grad(loss))(XS), expected, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(loss)))(XS), expected,
                               rtol=1e-12)


def test_untraceable_fun_keeps_grad_and_says_why(x64):
    assert float(secant.grad(branchy)(1.5)) == 2.0
    assert float(secant.grad(branchy)(-1.5)) == -2.0
    # second order differentiates the rule taken at x (2 g or -2 g: constant in x), as
    # JAX's custom_gradient differentiates its bwd; it was refused ("could not trace") before
    # the branch's outputs were read per returned tuple (gaps15q)
    assert float(secant.grad(secant.grad(branchy))(1.5)) == 0.0
    assert float(secant.grad(secant.grad(branchy))(-1.5)) == 0.0
