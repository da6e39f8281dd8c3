"""Issue 15, code written by others (seventh round): the numerics people write to keep
gradients finite. safe_log and the double-where trick (grad finite where JAX's is: exactly 0 on
the masked side), logsumexp over -inf masks, softplus / log1p / expm1 at their edges, grad at 0
of sqrt(x**2 + eps) and of a norm written with a where, stop_gradient straight-through
estimators, and custom_jvp / custom_vjp functions (a clipped gradient, an implicit fixed point)
under vmap, jit and at second order. Each value is compared with a closed form or float64
finite differences; vmap with a Python loop."""
import functools
import math

import numpy as np
import scipy.special

import secant
import secant.numpy as jnp
from secant import custom_jvp, custom_vjp, grad, hessian, jacfwd, jit, lax, vmap

from others15_check import check_grad, check_vmap


def assert_finite_equal(got, want, **kw):
    got = np.asarray(got)
    assert np.all(np.isfinite(got)), got
    np.testing.assert_allclose(got, want, **kw)


# --- double where -------------------------------------------------------------------------------
def safe_log(x):
    return jnp.where(x > 0.0, jnp.log(jnp.where(x > 0.0, x, 1.0)), 0.0)


def test_safe_log_double_where_grad_is_finite_at_zero(x64):
    xs = jnp.asarray([0.0, 0.5, 2.0, -1.0])
    g = vmap(grad(safe_log))(xs)
    assert_finite_equal(g, [0.0, 2.0, 0.5, 0.0])
    assert_finite_equal(jit(vmap(grad(safe_log)))(xs), [0.0, 2.0, 0.5, 0.0])
    assert_finite_equal(grad(lambda x: jnp.sum(safe_log(x)))(xs), [0.0, 2.0, 0.5, 0.0])
    h = vmap(grad(grad(safe_log)))(xs)
    assert_finite_equal(h, [0.0, -4.0, -0.25, 0.0])


def entropy(p):
    """-sum p log p with 0 log 0 = 0, written with the double where."""
    plogp = jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0)
    return -jnp.sum(plogp)


def test_entropy_with_zero_probabilities(x64):
    p = jnp.asarray([0.0, 0.25, 0.75, 0.0])
    np.testing.assert_allclose(entropy(p), -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    g = grad(entropy)(p)
    assert_finite_equal(g, [0.0, -math.log(0.25) - 1, -math.log(0.75) - 1, 0.0], rtol=1e-12)
    H = hessian(entropy)(p)
    assert_finite_equal(np.diag(H), [0.0, -4.0, -1 / 0.75, 0.0], rtol=1e-12)
    assert_finite_equal(jit(hessian(entropy))(p), H, rtol=1e-12)


def smooth_norm(x, eps=1e-12):
    return jnp.sqrt(jnp.sum(x ** 2) + eps)


def safe_norm(x):
    """The norm whose gradient at 0 is 0 (the double where), not NaN."""
    sq = jnp.sum(x ** 2)
    is_zero = sq == 0.0
    safe = jnp.where(is_zero, 1.0, sq)
    return jnp.where(is_zero, 0.0, jnp.sqrt(safe))


def test_norms_at_zero(x64):
    z = jnp.zeros(3)
    assert_finite_equal(grad(smooth_norm)(z), np.zeros(3))
    assert_finite_equal(grad(safe_norm)(z), np.zeros(3))
    x = jnp.asarray([3.0, 4.0, 0.0])
    assert_finite_equal(grad(safe_norm)(x), [0.6, 0.8, 0.0], rtol=1e-12)
    rows = jnp.asarray([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [1.0, 0.0, 0.0]])
    assert_finite_equal(vmap(grad(safe_norm))(rows), [[0, 0, 0], [0.6, 0.8, 0], [1, 0, 0]],
                        rtol=1e-12)
    assert_finite_equal(jit(vmap(grad(safe_norm)))(rows), vmap(grad(safe_norm))(rows))
    # grad of sqrt(x**2 + eps) at 0 is exactly 0; its second derivative 1/sqrt(eps)
    f = lambda x: jnp.sqrt(x ** 2 + 1e-6)
    assert_finite_equal(grad(f)(0.0), 0.0)
    assert_finite_equal(grad(grad(f))(0.0), 1e3, rtol=1e-12)
    # the plain norm at 0: NaN as in JAX (0/0), the reason people write safe_norm
    assert np.isnan(np.asarray(grad(jnp.linalg.norm)(z))).all()


def test_pairwise_distances_with_zero_diagonal(x64):
    """Pairwise distances whose diagonal is 0: grad of their sum finite with the double where."""
    def dists(x):
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, -1)
        pos = d2 > 0
        return jnp.where(pos, jnp.sqrt(jnp.where(pos, d2, 1.0)), 0.0)

    x = jnp.asarray(np.random.default_rng(1).normal(size=(4, 2)))
    energy = lambda x: jnp.sum(dists(x))
    g = check_grad(energy, x)
    assert np.all(np.isfinite(g))
    # each pair counted twice: d/dx_i = 2 sum_j (x_i - x_j)/d_ij
    xn = np.asarray(x)
    want = np.zeros_like(xn)
    for i in range(4):
        for j in range(4):
            if i != j:
                want[i] += 2 * (xn[i] - xn[j]) / np.linalg.norm(xn[i] - xn[j])
    np.testing.assert_allclose(g, want, rtol=1e-10)


# --- logsumexp with masks -----------------------------------------------------------------------
def masked_logsumexp(x, mask):
    x = jnp.where(mask, x, -jnp.inf)
    m = jnp.max(x, axis=-1, keepdims=True)
    m = lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))
    return jnp.squeeze(m, -1) + jnp.log(jnp.sum(jnp.exp(x - m), axis=-1))


def test_logsumexp_with_minus_inf_masks(x64):
    x = jnp.asarray([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    mask = jnp.asarray([[True, False, True], [False, False, True]])
    out = masked_logsumexp(x, mask)
    np.testing.assert_allclose(out, [np.log(np.e + np.e ** 3), 4.0], rtol=1e-12)
    g = grad(lambda x: jnp.sum(masked_logsumexp(x, mask)))(x)
    sm = np.exp(1) / (np.exp(1) + np.exp(3))
    assert_finite_equal(g, [[sm, 0.0, 1 - sm], [0.0, 0.0, 1.0]], rtol=1e-12)
    # against secant's own logsumexp with where=
    ref = secant.nn.logsumexp(jnp.where(mask, x, -jnp.inf), axis=-1)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    gref = grad(lambda x: jnp.sum(secant.nn.logsumexp(jnp.where(mask, x, -jnp.inf), axis=-1)))(x)
    assert_finite_equal(gref, g, rtol=1e-12)
    check_vmap(lambda x, m: masked_logsumexp(x, m), (x, mask))


def test_masked_softmax_row_fully_masked(x64):
    """A fully masked row: softmax written to return zeros there, gradients finite."""
    def masked_softmax(x, mask):
        x = jnp.where(mask, x, -1e30)
        e = jnp.exp(x - jnp.max(x, -1, keepdims=True)) * mask
        return e / jnp.maximum(jnp.sum(e, -1, keepdims=True), 1e-30)

    x = jnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    mask = jnp.asarray([[1.0, 1.0], [0.0, 0.0]])
    out = masked_softmax(x, mask)
    np.testing.assert_allclose(out[1], 0.0)
    w = jnp.asarray([[1.0, -1.0], [2.0, 3.0]])
    g = grad(lambda x: jnp.sum(masked_softmax(x, mask) * w))(x)
    s = 1 / (1 + np.e)
    assert_finite_equal(g, [[2 * s * (1 - s), -2 * s * (1 - s)], [0.0, 0.0]], rtol=1e-10)


# --- softplus / log1p / expm1 edges ---------------------------------------------------------------
def stable_softplus(x):
    return jnp.logaddexp(x, 0.0)


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, switching at log 2 (Maechler)."""
    return jnp.where(x < math.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def test_softplus_log1p_expm1_edges(x64):
    xs = jnp.asarray([-800.0, -30.0, 0.0, 30.0, 800.0])
    np.testing.assert_allclose(stable_softplus(xs), np.logaddexp(np.asarray(xs), 0.0), rtol=1e-12)
    g = vmap(grad(stable_softplus))(xs)
    assert_finite_equal(g, scipy.special.expit(np.asarray(xs)), rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(secant.nn.softplus))(xs), g, rtol=1e-12)
    ys = jnp.asarray([1e-10, 0.1, 0.6, 5.0, 40.0])
    yn = np.asarray(ys)
    np.testing.assert_allclose(log1mexp(ys), np.where(yn < np.log(2), np.log(-np.expm1(-yn)),
                                                      np.log1p(-np.exp(-yn))), rtol=1e-12)
    gy = vmap(grad(log1mexp))(ys)
    assert_finite_equal(gy, 1 / np.expm1(np.asarray(ys)), rtol=1e-9)
    # log1p and expm1 at tiny arguments keep their digits through grad
    np.testing.assert_allclose(grad(jnp.log1p)(1e-300), 1.0)
    np.testing.assert_allclose(grad(lambda x: jnp.expm1(x) / x)(1e-8), 0.5, rtol=1e-6)
    np.testing.assert_allclose(grad(grad(jnp.expm1))(0.0), 1.0)


def test_sigmoid_cross_entropy_from_logits_extremes(x64):
    def bce(logit, y):
        return jnp.maximum(logit, 0) - logit * y + jnp.log1p(jnp.exp(-jnp.abs(logit)))

    logits = jnp.asarray([-1000.0, -5.0, 0.0, 5.0, 1000.0])
    ys = jnp.asarray([0.0, 1.0, 1.0, 0.0, 1.0])
    out = vmap(bce)(logits, ys)
    want = np.logaddexp(0, np.asarray(logits)) - np.asarray(logits) * np.asarray(ys)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    g = vmap(grad(bce))(logits, ys)
    want = scipy.special.expit(np.asarray(logits)) - np.asarray(ys)
    want[2] = 0.5 - 1.0 - 0.5       # at 0, JAX's conventions: max splits the tie, abs' = 1
    assert_finite_equal(g, want, atol=1e-15)
    assert_finite_equal(jit(vmap(grad(bce)))(logits, ys), want, atol=1e-15)


# --- straight-through estimators ----------------------------------------------------------------
def ste_round(x):
    return x + lax.stop_gradient(jnp.round(x) - x)


def ste_sign(x):
    return x + lax.stop_gradient(jnp.sign(x) - x)


def test_straight_through_round_and_sign(x64):
    xs = jnp.asarray([-1.6, -0.2, 0.4, 2.5])
    np.testing.assert_allclose(vmap(ste_round)(xs), np.round(np.asarray(xs)))
    np.testing.assert_allclose(vmap(grad(ste_round))(xs), 1.0)
    f = lambda w, x: jnp.sum((ste_sign(w) * x - 1.0) ** 2)
    w = jnp.asarray([0.3, -0.7])
    x = jnp.asarray([2.0, 3.0])
    g = grad(f)(w, x)
    np.testing.assert_allclose(g, 2 * (np.sign([0.3, -0.7]) * [2.0, 3.0] - 1) * [2.0, 3.0])
    np.testing.assert_allclose(jit(grad(f))(w, x), g)
    # second order through the estimator: its Hessian is that of the identity path
    H = hessian(lambda w: jnp.sum(ste_round(w) ** 2 * x))(w)
    np.testing.assert_allclose(H, np.diag(2 * np.asarray(x)), atol=1e-12)


def test_quantised_weights_with_a_learned_scale(x64):
    """LSQ-style quantisation: round through the straight-through estimator, scale learned."""
    def quantise(w, s, levels=7):
        return ste_round(jnp.clip(w / s, -levels, levels)) * s

    w = jnp.asarray([0.12, -0.53, 0.9, 2.4])
    s = jnp.asarray(0.25)
    q = quantise(w, s)
    np.testing.assert_allclose(q, np.round(np.clip(np.asarray(w) / 0.25, -7, 7)) * 0.25)
    gs = grad(lambda s: jnp.sum(quantise(w, s)))(s)
    # d/ds [round(clip(w/s)) * s] with round's gradient 1: round(v) - v for unclipped, and
    # the clip level for clipped entries (2.4 / 0.25 = 9.6 > 7)
    v = np.asarray(w) / 0.25
    want = sum(np.round(vi) - vi if abs(vi) < 7 else np.sign(vi) * 7 for vi in v)
    np.testing.assert_allclose(gs, want, rtol=1e-12)
    gw = grad(lambda w: jnp.sum(quantise(w, s)))(w)
    np.testing.assert_allclose(gw, [1, 1, 1, 0])


# --- custom_jvp / custom_vjp ----------------------------------------------------------------------
@custom_vjp
def clip_gradient(x, lo, hi):
    return x


def clip_gradient_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (jnp.clip(g, lo, hi), None, None)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def test_clip_gradient_custom_vjp_under_vmap_and_jit(x64):
    f = lambda x: jnp.sum(clip_gradient(x, -1.0, 1.0) ** 2)
    x = jnp.asarray([0.2, -3.0, 5.0])
    np.testing.assert_allclose(grad(f)(x), [0.4, -1.0, 1.0])
    np.testing.assert_allclose(jit(grad(f))(x), [0.4, -1.0, 1.0])
    rows = jnp.asarray([[0.2, -3.0, 5.0], [0.1, 0.3, -0.4]])
    np.testing.assert_allclose(vmap(grad(f))(rows), [[0.4, -1.0, 1.0], [0.2, 0.6, -0.8]])
    np.testing.assert_allclose(jit(vmap(grad(f)))(rows), vmap(grad(f))(rows))
    # forward mode of the primal is the identity's
    np.testing.assert_allclose(vmap(lambda x: clip_gradient(x, -1.0, 1.0))(rows), rows)


@custom_jvp
def softclip(x):
    return jnp.tanh(x)


@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = softclip(x)
    return y, (1 - y ** 2) * t


def test_custom_jvp_second_order_vmap_and_jit(x64):
    xs = jnp.asarray([-2.0, 0.0, 0.7])
    np.testing.assert_allclose(vmap(grad(softclip))(xs), 1 - np.tanh(np.asarray(xs)) ** 2, rtol=1e-12)
    # the rule calls softclip itself, so its derivative is differentiable again
    d2 = vmap(grad(grad(softclip)))(xs)
    t = np.tanh(np.asarray(xs))
    np.testing.assert_allclose(d2, -2 * t * (1 - t ** 2), rtol=1e-10)
    np.testing.assert_allclose(jit(vmap(grad(grad(softclip))))(xs), d2, rtol=1e-12)
    np.testing.assert_allclose(vmap(jacfwd(grad(softclip)))(xs), d2, rtol=1e-10)


@functools.partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_init):
    """x* = f(a, x*) by iteration, differentiated implicitly (the JAX custom_vjp tutorial)."""
    return _iterate(f, a, x_init)


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = secant.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(_rev_iter, (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


def _rev_iter(packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = secant.vjp(lambda x: _babylon(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def _iterate(f, a, x, steps=60):
    for _ in range(steps):
        x = f(a, x)
    return x


def _babylon(a, x):
    return 0.5 * (x + a / x)


def test_implicit_fixed_point_sqrt(x64):
    """Babylonian sqrt as a fixed point: d sqrt(a)/da = 1 / (2 sqrt a), by the implicit rule."""
    sqrt = lambda a: fixed_point(_babylon, a, jnp.asarray(1.0))
    np.testing.assert_allclose(sqrt(jnp.asarray(2.0)), math.sqrt(2.0), rtol=1e-14)
    np.testing.assert_allclose(grad(sqrt)(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(sqrt))(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0), rtol=1e-10)
    a = jnp.asarray([1.0, 4.0, 9.0])
    np.testing.assert_allclose(vmap(grad(sqrt))(a), [0.5, 0.25, 1 / 6], rtol=1e-10)
    np.testing.assert_allclose(vmap(sqrt)(a), [1.0, 2.0, 3.0], rtol=1e-14)


def test_custom_vjp_defined_inside_the_function(x64):
    def sqrt(a):
        @custom_vjp
        def solve(a):
            return _iterate(_babylon, a, jnp.ones_like(a))
        solve.defvjp(lambda a: (solve(a), solve(a)), lambda r, g: (g / (2 * r),))
        return solve(a)
    np.testing.assert_allclose(grad(sqrt)(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(sqrt))(jnp.asarray(2.0)), 0.5 / math.sqrt(2.0),
                               rtol=1e-10)
    a = jnp.asarray([1.0, 4.0, 9.0])
    np.testing.assert_allclose(vmap(grad(sqrt))(a), [0.5, 0.25, 1 / 6], rtol=1e-10)
    # the second derivative differentiates the rule's backward pass: -1/4 a^(-3/2)
    np.testing.assert_allclose(grad(grad(sqrt))(jnp.asarray(2.0)), -0.25 * 2.0 ** -1.5,
                               rtol=1e-8)


def test_custom_vjp_log_with_safe_backward_inside_a_loss(x64):
    """A log whose backward pass floors its input (a common hack), checked to leave the forward
    value alone and to give the floored gradient only where the floor bites."""
    @custom_vjp
    def floored_log(x):
        return jnp.log(x)

    floored_log.defvjp(lambda x: (jnp.log(x), x),
                       lambda x, g: (g / jnp.maximum(x, 1e-3),))
    x = jnp.asarray([1e-6, 0.5, 2.0])
    np.testing.assert_allclose(floored_log(x), np.log(np.asarray(x)))
    g = grad(lambda x: jnp.sum(floored_log(x)))(x)
    np.testing.assert_allclose(g, [1e3, 2.0, 0.5])
    np.testing.assert_allclose(vmap(grad(floored_log))(x), [1e3, 2.0, 0.5])
    np.testing.assert_allclose(jit(grad(lambda x: jnp.sum(floored_log(x) ** 2)))(x),
                               2 * np.log(np.asarray(x)) / np.maximum(np.asarray(x), 1e-3))
