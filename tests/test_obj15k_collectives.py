"""lax.axis_size and lax.psum_scatter (issue 15) inside vmap/pmap with axis_name: vmap writes
them over its batch axis (the size; the batch's sum, example i keeping block i), grad of the
vmapped function follows, checked against Python loops and central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


def _scatter_loop(xs, d=0, tiled=False):
    """Example i's psum_scatter, by a Python loop over the examples."""
    n = len(xs)
    total = np.sum(xs, axis=0)
    out = []
    for i in range(n):
        moved = np.moveaxis(total, d, 0)
        if tiled:
            m = moved.shape[0] // n
            out.append(np.moveaxis(moved[i * m:(i + 1) * m], 0, d))
        else:
            out.append(moved[i])
    return np.stack(out)


def test_axis_size_under_vmap_and_pmap(x64):
    xs = np.arange(8.0).reshape(4, 2)
    got = secant.vmap(lambda x: x * lax.axis_size("i"), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(got), 4 * xs)
    nested = secant.vmap(secant.vmap(lambda x: x * lax.axis_size("i") + lax.axis_size("j"),
                                     axis_name="j"), axis_name="i")(np.ones((3, 5)))
    np.testing.assert_allclose(np.asarray(nested), np.full((3, 5), 8.0))
    g = secant.vmap(secant.grad(lambda x: snp.sum(x ** 2) * lax.axis_size("i")), axis_name="i")
    np.testing.assert_allclose(np.asarray(g(xs)), 2 * xs * 4)
    out = secant.pmap(lambda x: x * lax.axis_size("i"), axis_name="i")(np.ones((1, 2)))
    np.testing.assert_allclose(np.asarray(out), np.ones((1, 2)))
    with pytest.raises(secant.SecantError, match="unbound axis name"):
        lax.axis_size("i")


@pytest.mark.parametrize("d, tiled, shape", [(0, False, (4, 4, 3)), (1, False, (4, 2, 4)),
                                             (-1, False, (4, 3, 4)), (0, True, (4, 8, 3)),
                                             (1, True, (4, 3, 12))])
def test_psum_scatter_under_vmap_matches_a_loop(x64, d, tiled, shape):
    xs = np.random.default_rng(0).normal(size=shape)
    f = secant.vmap(lambda x: lax.psum_scatter(x, "i", scatter_dimension=d, tiled=tiled),
                    axis_name="i")
    want = _scatter_loop(xs, d % (len(shape) - 1), tiled)
    np.testing.assert_allclose(np.asarray(f(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(xs)), want, rtol=1e-12)


def test_psum_scatter_of_an_unbatched_value(x64):
    c = np.arange(6.0).reshape(3, 2)
    got = secant.vmap(lambda x: x[0] + lax.psum_scatter(c, "i"), axis_name="i")(np.ones((3, 2)))
    np.testing.assert_allclose(np.asarray(got), 1.0 + 3 * c)


def test_grad_through_psum_scatter(x64):
    xs = np.random.default_rng(1).normal(size=(4, 4, 2))
    w = np.random.default_rng(2).normal(size=(4, 2))

    def loss(a):
        return snp.sum(secant.vmap(lambda x: lax.psum_scatter(x, "i") ** 2,
                                   axis_name="i")(a) * w)

    def ref(a):
        return np.sum(_scatter_loop(a) ** 2 * w)
    got = np.asarray(secant.grad(loss)(xs))
    s = np.sum(xs, axis=0)
    np.testing.assert_allclose(got, np.broadcast_to(2 * s * w, xs.shape), rtol=1e-10)
    h = 1e-6
    e = np.zeros_like(xs)
    e[1, 2, 0] = h
    np.testing.assert_allclose(got[1, 2, 0], (ref(xs + e) - ref(xs - e)) / (2 * h), rtol=1e-6)
    # grad inside the vmap (carry15l): psum_scatter's transpose is all_gather, so each example
    # gets the derivative of every example's loss summed: the blocks of psum(x) summed are
    # sum(x) over every example, so 1 everywhere; weighted by w, example i's x gets the blocks
    # of w laid end to end
    got = secant.vmap(secant.grad(lambda x: snp.sum(lax.psum_scatter(x, "i", tiled=True))),
                      axis_name="i")(np.ones((2, 4)))
    np.testing.assert_allclose(np.asarray(got), np.ones((2, 4)))
    w2 = np.arange(4.0).reshape(2, 2)
    got = secant.vmap(lambda x, v: secant.grad(
        lambda a: snp.sum(lax.psum_scatter(a, "i", tiled=True) * v))(x), axis_name="i")(
        np.ones((2, 4)), w2)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(w2.reshape(4), (2, 4)))


def test_psum_scatter_refuses_a_size_that_does_not_split(x64):
    with pytest.raises(secant.SecantError, match="must equal the axis size 3"):
        secant.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(np.ones((3, 4)))
    with pytest.raises(secant.SecantError, match="multiple of"):
        secant.vmap(lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(np.ones((3, 4)))


def test_psum_scatter_under_pmap(x64):
    out = secant.pmap(lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(
        np.arange(4.0).reshape(1, 4))
    np.testing.assert_allclose(np.asarray(out), np.arange(4.0).reshape(1, 4))
