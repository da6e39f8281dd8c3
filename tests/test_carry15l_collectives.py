"""Issue 15 (carry15l): grad and jvp inside vmap(..., axis_name='b') through lax.psum, pmean,
all_gather and psum_scatter over 'b'. They were refused ("no derivative of lax.psum"); JAX
differentiates them as linear maps whose transposes are collectives too (psum's is psum,
pmean's pmean, all_gather's psum_scatter and back), so `vmap(grad(loss), axis_name='b')` gives
each example the derivative of the sum of every example's loss. Checked against that sum written
as a NumPy loop without the collective, by central differences, eagerly and under jit; pmap's
side runs in tests/multidevice/test_pmap_devices.py. pmax and pmin keep a clear refusal (JAX has
no rule either)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

RNG = np.random.default_rng(15)
W3 = np.array([0.5, -1.0, 2.0])


def _fd_grad(total, xs, h=1e-6):
    out = np.zeros_like(xs)
    for idx in np.ndindex(xs.shape):
        e = np.zeros_like(xs)
        e[idx] = h
        out[idx] = (total(xs + e) - total(xs - e)) / (2 * h)
    return out


def _scatter(total, i, n, d, tiled):
    moved = np.moveaxis(total, d, 0)
    if tiled:
        m = moved.shape[0] // n
        return np.moveaxis(moved[i * m:(i + 1) * m], 0, d)
    return moved[i]


# (the loss with the collective, the same losses summed over the examples without it, shape)
CASES = {
    "psum": (lambda x: snp.sum(lax.psum(x, "b") ** 2 * snp.sin(x)),
             lambda X: sum(np.sum(np.sum(X, 0) ** 2 * np.sin(x)) for x in X), (3, 2)),
    "pmean": (lambda x: snp.sum(snp.tanh(lax.pmean(x, "b")) * x ** 2),
              lambda X: sum(np.sum(np.tanh(np.mean(X, 0)) * x ** 2) for x in X), (3, 4)),
    "all_gather": (lambda x: snp.sum(lax.all_gather(x, "b") ** 2 * W3[:, None]) * snp.sum(x),
                   lambda X: sum(np.sum(X ** 2 * W3[:, None]) * np.sum(x) for x in X), (3, 2)),
    "all_gather_tiled": (
        lambda x: snp.sum(snp.cos(lax.all_gather(x, "b", tiled=True)) * snp.arange(6.0)) * x[0],
        lambda X: sum(np.sum(np.cos(X.reshape(-1)) * np.arange(6.0)) * x[0] for x in X), (3, 2)),
    "all_gather_axis1": (
        lambda x: snp.sum(lax.all_gather(x, "b", axis=1) ** 3 * W3),
        lambda X: len(X) * np.sum(np.moveaxis(X, 0, 1) ** 3 * W3), (3, 2)),
    "psum_scatter": (
        lambda x: snp.sum(snp.sin(lax.psum_scatter(x, "b")) * x[0]),
        lambda X: sum(np.sum(np.sin(_scatter(np.sum(X, 0), i, 3, 0, False)) * X[i][0])
                      for i in range(3)), (3, 3, 2)),
    "psum_scatter_tiled": (
        lambda x: snp.sum(lax.psum_scatter(x, "b", scatter_dimension=1, tiled=True) ** 2),
        lambda X: sum(np.sum(_scatter(np.sum(X, 0), i, 3, 1, True) ** 2) for i in range(3)),
        (3, 2, 6)),
    "psum_of_a_product": (   # the collective of a value mixing the example and the others
        lambda x: snp.sum(lax.psum(x * lax.axis_index("b"), "b") ** 2) + snp.sum(x ** 3),
        lambda X: 3 * np.sum(np.sum(X * np.arange(3.0)[:, None], 0) ** 2) + np.sum(X ** 3),
        (3, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_inside_vmap_through_a_collective(x64, name):
    loss, total, shape = CASES[name]
    xs = RNG.normal(size=shape)
    want = _fd_grad(total, xs)
    g = secant.vmap(secant.grad(loss), axis_name="b")
    np.testing.assert_allclose(np.asarray(g(xs)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(xs)), want, rtol=1e-6, atol=1e-8)
    # value_and_grad: each example's own loss (the collective's value) with the same gradient
    vg = secant.vmap(secant.value_and_grad(loss), axis_name="b")
    vals, grads = vg(xs)
    np.testing.assert_allclose(np.sum(np.asarray(vals)), total(xs), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(grads), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["psum", "pmean", "all_gather", "psum_scatter_tiled"])
def test_jvp_inside_vmap_through_a_collective(x64, name):
    """Each example's tangent of its own loss, with every example's input moving along its
    own direction: the sum over examples is the directional derivative of the total."""
    loss, total, shape = CASES[name]
    xs, ts = RNG.normal(size=shape), RNG.normal(size=shape)
    f = secant.vmap(lambda x, t: secant.jvp(loss, (x,), (t,)), axis_name="b")
    outs, tangents = f(xs, ts)
    h = 1e-6
    np.testing.assert_allclose(np.sum(np.asarray(tangents)),
                               (total(xs + h * ts) - total(xs - h * ts)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(np.sum(np.asarray(outs)), total(xs), rtol=1e-10)
    got = secant.jit(f)(xs, ts)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(tangents), rtol=1e-10)


def test_grad_of_a_psum_of_a_constant_and_a_closed_over_weight(x64):
    """psum of a Python number is the axis size times it (no derivative); a weight closed over
    (unbatched) reaches the collective too: the gradient still sums every example's loss."""
    xs = RNG.normal(size=(4, 3))
    w = RNG.normal(size=3)

    def loss(x):
        return snp.sum(lax.psum(3.0, "b") * x * lax.pmean(w * x, "b"))

    def total(X):
        return sum(np.sum(12.0 * x * np.mean(w * X, 0)) for x in X)
    got = secant.vmap(secant.grad(loss), axis_name="b")(xs)
    np.testing.assert_allclose(np.asarray(got), _fd_grad(total, xs), rtol=1e-6)


def test_grad_with_respect_to_a_shared_weight_through_psum(x64):
    """vmap(grad(loss, argnums=1), in_axes=(0, None), axis_name='b'): each example's gradient
    is the total loss's with respect to that example's own copy of the shared weight (as JAX);
    their sum is the total's gradient with respect to the weight."""
    xs = RNG.normal(size=(3, 2))
    w = RNG.normal(size=2)

    def loss(x, w):
        return snp.sum(snp.sin(lax.psum(x * w, "b")) * w)

    def total(X, W):        # W: one copy of the weight per example
        s = np.sum(X * W, 0)
        return sum(np.sum(np.sin(s) * W[i]) for i in range(3))
    got = np.asarray(secant.vmap(secant.grad(loss, argnums=1), in_axes=(0, None),
                                 axis_name="b")(xs, w))
    np.testing.assert_allclose(got, _fd_grad(lambda W: total(xs, W), np.tile(w, (3, 1))),
                               rtol=1e-6)
    shared = _fd_grad(lambda v: total(xs, np.tile(v, (3, 1))), w)
    np.testing.assert_allclose(got.sum(0), shared, rtol=1e-6)


def test_nested_vmap_psum_over_the_outer_axis(x64):
    """grad inside two vmaps, psum over the outer one ('b'): the inner one ('c') leaves it."""
    xs = RNG.normal(size=(3, 2, 2))

    def loss(x):
        return snp.sum(lax.psum(x, "b") ** 2 * x)

    def total(X):      # every (i, j) example's loss, psum over i only
        s = np.sum(X, 0)
        return sum(np.sum(s[j] ** 2 * X[i, j]) for i in range(3) for j in range(2))
    g = secant.vmap(secant.vmap(secant.grad(loss), axis_name="c"), axis_name="b")
    np.testing.assert_allclose(np.asarray(g(xs)), _fd_grad(total, xs), rtol=1e-6)


@pytest.mark.parametrize("op", ["pmax", "pmin"])
def test_pmax_and_pmin_have_no_derivative(x64, op):
    fn = getattr(lax, op)
    with pytest.raises(secant.SecantError, match=rf"lax.{op} has no derivative"):
        secant.vmap(secant.grad(lambda x: snp.sum(fn(x, "b"))), axis_name="b")(np.ones((2, 3)))


def test_hessian_inside_vmap_through_psum(x64):
    """Second order: grad's psum differentiated forward again (jacfwd inside the vmap moves
    every example's input along the same basis vector at once, as JAX's does). The oracle:
    each example's gradient of the total, written in closed form without the collective,
    differentiated by central differences along that joint direction."""
    xs = RNG.normal(size=(3, 2))

    def loss(x):
        return snp.sum(lax.psum(x, "b") ** 2 * snp.sin(x))

    def total_grads(X):     # d/dx_i of sum_j sum(S^2 sin(x_j)), S = sum_j x_j
        s = X.sum(0)
        return 2 * s * np.sin(X).sum(0) + s ** 2 * np.cos(X)
    h, want = 1e-6, np.zeros((3, 2, 2))
    for k in range(2):
        e = np.zeros_like(xs)
        e[:, k] = h
        want[:, :, k] = (total_grads(xs + e) - total_grads(xs - e)) / (2 * h)
    got = secant.vmap(secant.hessian(loss), axis_name="b")(xs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(
        secant.jacfwd(secant.grad(loss)), axis_name="b"))(xs)), want, rtol=1e-6, atol=1e-8)
