"""Issue 19 (first19): first calls of Jacobians under jit. Checked here: jit reuses the batched
derivatives (and the batched helpers they call) made by an eager call before, rather than
functionalising helpers it never stages; jacfwd, jacrev and hessian under jit against closed
forms and float64 finite differences. No timings."""
import re

import numpy as np
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant import transforms

N = 12


def tanh_map(w, x):
    return snp.tanh(w @ x)


def energy(x):
    return snp.sum(x ** 4) - snp.sum(snp.sin(x[:-1] * x[1:])) + snp.sum(snp.tanh(x)) ** 2


def _inputs():
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(N, N)) / np.sqrt(N)).astype(np.float32)
    x = rng.normal(size=N).astype(np.float32)
    return w, x


def _tanh_map_jacobian(w, x):       # d tanh(W x) / dx = diag(1 - tanh(W x)^2) W
    return (1 - np.tanh(w.astype(np.float64) @ x) ** 2)[:, None] * w


def _energy_hessian(x):     # central differences of the float64 gradient, written out
    x = x.astype(np.float64)

    def grad(v):
        g = 4 * v ** 3 + 2 * np.sum(np.tanh(v)) * (1 - np.tanh(v) ** 2)
        c = np.cos(v[:-1] * v[1:])
        g[:-1] -= c * v[1:]
        g[1:] -= c * v[:-1]
        return g
    eps = 1e-6
    return np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps)
                     for e in np.eye(x.size)], axis=1)


def test_jit_reuses_the_batched_vjp_made_eagerly():
    """jit of a vmapped vjp after the eager call: the plain batched function is jit's too (its
    helpers branch on shapes only), not generated again from functionalised helpers."""
    def local_map(w, x):
        return snp.tanh(w @ x)
    w, x = _inputs()
    vjp = transforms.generate(local_map, (1,), "vjp")
    batched = secant.vmap(vjp, in_axes=(0, None, None))
    want = batched(np.eye(N, dtype=np.float32), w, x)
    assert transforms._same_staged(batched.__secant_generated__)
    assert_allclose(secant.jit(batched)(np.eye(N, dtype=np.float32), w, x), want, rtol=1e-5,
                    atol=1e-6)
    assert_allclose(want, _tanh_map_jacobian(w, x), rtol=1e-4, atol=1e-5)


def test_jacobians_under_jit_after_eager():
    w, x = _inputs()
    want = _tanh_map_jacobian(w, x)
    for make in (secant.jacfwd, secant.jacrev):
        f = make(tanh_map, argnums=1)
        eager = f(w, x)
        jitted = secant.jit(make(tanh_map, argnums=1))(w, x)
        assert_allclose(eager, want, rtol=1e-4, atol=1e-5)
        assert_allclose(jitted, want, rtol=1e-4, atol=1e-5)
    h = secant.hessian(energy)
    want = _energy_hessian(x)
    assert_allclose(h(x), want, rtol=1e-3, atol=1e-3)
    assert_allclose(secant.jit(secant.hessian(energy))(x), want, rtol=1e-3, atol=1e-3)


_rank3 = re.compile(r"tensor<\d+x\d+x\d+x")


def test_jacrev_rows_of_a_matrix_vector_product_are_one_matrix_product():
    """vmap of matmul's cotangent rules over the output basis: t @ W, a 2-D dot (a 3-D one with
    transposes around it took XLA 50 ms more to compile, and ran slower)."""
    w, x = _inputs()
    for wrt, want in ((1, _tanh_map_jacobian(w, x)), (0, None)):
        f = secant.jit(secant.jacrev(tanh_map, argnums=wrt))
        text = f.lower(w, x).as_text()
        dots = [line for line in text.splitlines() if "dot_general" in line]
        assert dots and not any(_rank3.search(line.split("->")[-1]) for line in dots), dots
        if want is not None:
            assert_allclose(f(w, x), want, rtol=1e-4, atol=1e-5)
    v = np.linspace(-1, 1, N).astype(np.float32)      # x @ W: the other operand's rule
    f = secant.jit(secant.jacrev(lambda v, w: snp.tanh(v @ w)))
    want = (1 - np.tanh(v.astype(np.float64) @ w) ** 2)[:, None] * w.T
    assert_allclose(f(v, w), want, rtol=1e-4, atol=1e-5)
    dots = [line for line in f.lower(v, w).as_text().splitlines() if "dot_general" in line]
    assert dots and not any(_rank3.search(line.split("->")[-1]) for line in dots), dots


def test_static_slice_add_under_jit_matches_eager():
    """x.at[static ints and slices].add(v) under jit, the same values as eagerly for every such
    index (a reverse pass's x_bar.at[1:].add: a scatter, which XLA runs faster than JAX's pad
    and add, though it compiles slower)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 7)).astype(np.float32)
    indices = [np.s_[1:], np.s_[:-1], np.s_[::2], np.s_[1:6:3, 2], np.s_[-1], np.s_[2, 3],
               np.s_[..., 1:], np.s_[None, 1:4, ::3], np.s_[3:3], np.s_[:, 6:1], np.s_[10:],
               np.s_[1:, -2:]]
    for idx in indices:
        shape = np.empty((5, 7))[idx].shape
        v = rng.normal(size=shape).astype(np.float32)
        f = lambda a, b: a.at[idx].add(b)       # noqa: E731
        want = x.copy()
        want[idx] += v          # (basic indices: each element once)
        assert_allclose(f(snp.asarray(x), v), want, rtol=1e-6, err_msg=str(idx))
        jitted = secant.jit(f)
        assert_allclose(jitted(x, v), want, rtol=1e-6, err_msg=str(idx))
    # a broadcast update, an integer array, and a reverse slice (still a scatter) agree too
    for idx, v in ((np.s_[1:3], np.float32(2.0)), (np.s_[::-1], np.ones(7, np.float32))):
        f = lambda a, b: a.at[idx].add(b)       # noqa: E731
        assert_allclose(secant.jit(f)(x, v), f(snp.asarray(x), v), rtol=1e-6)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    g = secant.jit(lambda a: a.at[1:, ::2].add(5))
    want = xi.copy()
    want[1:, ::2] += 5
    np.testing.assert_array_equal(g(xi), want)


def test_a_basis_of_one_vector_is_not_batched():
    """jacrev of a scalar function (and the Hessian's inner Jacobian) runs the vjp on its one
    basis vector: no batched function of the vjp is generated, for one example."""
    def scalar_energy(x):
        return snp.sum(x ** 4) - snp.sum(snp.sin(x[:-1] * x[1:])) + snp.sum(snp.tanh(x)) ** 2

    def made():
        return {k[0].__name__: k[1] for k in transforms._generated
                if getattr(k[0], "__name__", "").startswith("scalar_energy")}
    _, x = _inputs()
    hess = _energy_hessian(x)
    grad = secant.grad(scalar_energy)(x)
    assert_allclose(secant.jacrev(scalar_energy)(x), grad, rtol=1e-6)
    assert_allclose(secant.jit(secant.jacrev(scalar_energy))(x), grad, rtol=1e-5, atol=1e-6)
    assert "vmap" not in made().values(), made()
    assert_allclose(secant.hessian(scalar_energy)(x), hess, rtol=1e-3, atol=1e-3)
    assert_allclose(secant.jit(secant.hessian(scalar_energy))(x), hess, rtol=1e-3, atol=1e-3)
    # one vmap: the jvp of the vjp over the outer basis, none of the vmapped function again
    assert [name for name, mode in made().items() if mode == "vmap"] == ["scalar_energy_vjp_jvp"]
    # a Jacobian of a function of one scalar input, by forward mode: the jvp run once
    assert_allclose(secant.jacfwd(lambda t: snp.sin(t) * snp.arange(3.0))(np.float32(0.5)),
                    np.cos(0.5) * np.arange(3.0), rtol=1e-6)
    assert_allclose(secant.jit(secant.hessian(lambda t: snp.sin(t) ** 3))(np.float32(0.5)),
                    6 * np.sin(0.5) * np.cos(0.5) ** 2 - 3 * np.sin(0.5) ** 3, rtol=1e-5)
