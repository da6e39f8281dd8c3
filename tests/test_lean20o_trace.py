"""Issue 20 (trace size): ops the jit trace no longer emits. A product by a real one (grad's
seed, `snp.ones_like(x) * x`) or a quotient by one is its other operand where that has the
result's shape, dtype and weak type (backends/tracer.py _times_one: exact for real values,
NaN, inf and -0.0; complex and promoted products kept); a reshape of a reshape is one, a
broadcast of a reshaped scalar broadcasts the scalar (_reshapes); a matmul with a vector
operand is one dot_general, no reshape around it (secant/numpy/products.py). Each against
eager NumPy values, and the ops counted in the module text."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.helpers import grad_seed_like, mean_grad

RNG = np.random.default_rng(2030)


def _ops(text, op):
    return sum(f"stablehlo.{op} " in ln or f'"stablehlo.{op}"' in ln for ln in text.splitlines())


def times_seed(h):
    return 2 * h * grad_seed_like(h) + h / snp.ones_like(h) + 1.0 * h


def test_products_by_one_not_emitted():
    x = np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 3.0], np.float32)
    f = secant.jit(times_seed)
    text = f.lower(x).as_text()
    assert _ops(text, "multiply") == 1 and _ops(text, "divide") == 0, text
    got = np.asarray(f(x))
    want = 2 * x + x + x
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[1]) == np.signbit(want[1])


@pytest.mark.parametrize("x, one, kept", [
    (np.arange(4, dtype=np.int32), 1.0, 0),         # (the integers converted: that value)
    (np.full(3, complex(np.inf, 1.0), np.complex64), 1.0, 1),   # (inf * (1 + 0j) is nan)
    (np.arange(3, dtype=np.float32), np.float64(1), 0)])
def test_products_by_one_promoted_or_complex(x, one, kept):
    f = secant.jit(lambda v: v * one)
    text = f.lower(x).as_text()
    assert _ops(text, "multiply") == kept, text
    got, want = np.asarray(f(x)), np.asarray(snp.multiply(x, one))
    assert got.dtype == want.dtype
    if not kept:        # (complex: XLA's own product, left as it was)
        np.testing.assert_array_equal(got, want)


def test_closed_over_ones_array_not_read_as_one():
    """A closed-over array is a parameter of the compiled program (Trace.hoist): its value
    may differ at the next call, so it is never read as ones."""
    for w in (np.ones(3, np.float32), np.array([2.0, 3.0, 4.0], np.float32)):
        f = secant.jit(lambda v, w=w: v * w)
        x = RNG.normal(size=3).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(f(x)), x * w)


def test_reshapes_and_scalar_broadcasts():
    def f(h, s):
        a = snp.broadcast_to(snp.reshape(s, (1, 1)), (3, 4)) * h
        b = snp.reshape(snp.reshape(h, (12,)), (3, 4))
        return a + b + snp.reshape(snp.reshape(h, (12,)), (2, 6)).sum()
    h, s = RNG.normal(size=(3, 4)).astype(np.float32), np.float32(1.7)
    text = secant.jit(f).lower(h, s).as_text()
    assert _ops(text, "reshape") == 1, text
    np.testing.assert_allclose(np.asarray(secant.jit(f)(h, s)), s * h + h + h.sum(), rtol=1e-6)


def test_mean_grad_divides_before_spreading():
    f = secant.jit(lambda h: mean_grad(grad_seed_like(h), h))
    text = f.lower(np.ones((3, 4), np.float32)).as_text()
    assert _ops(text, "reshape") == 0 and _ops(text, "broadcast_in_dim") == 1, text
    np.testing.assert_array_equal(np.asarray(f(np.ones((3, 4), np.float32))),
                                  np.full((3, 4), np.float32(1) / 12))


@pytest.mark.parametrize("sa, sb", [((3,), (3, 4)), ((2, 5, 3), (3,)), ((3,), (3,)),
                                    ((4, 3), (3,)), ((3,), (2, 3, 4)), ((2, 4, 3), (2, 3, 5))],
                         ids=str)
def test_matmul_with_vectors(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    want = a @ b
    f = secant.jit(lambda u, v: u @ v)
    got = np.asarray(f(a, b))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(snp.matmul(a, b)), want, rtol=1e-5, atol=1e-6)
    if len(sb) == 1 or len(sa) == 1 and len(sb) == 2:
        text = f.lower(a, b).as_text()
        assert _ops(text, "reshape") == 0 and _ops(text, "dot_general") == 1, text


def test_matmul_vector_errors_and_bools():
    with pytest.raises(secant.SecantError, match=r"\(1, 3\) @ \(4, 2\)"):
        snp.matmul(np.ones(3), np.ones((4, 2)))
    a, b = np.array([True, False]), np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(np.asarray(snp.matmul(a, b)), a @ b)


def rnn_step_loss(w, h, x):
    return snp.sum(snp.tanh(h @ w + x) ** 2)


def test_outer_product_cotangent(x64):
    """matmul_grad_y of a vector h: one dot_general (ad/helpers.py), against differences,
    under jit, vmap (a loop) and second order."""
    w, h, x = RNG.normal(size=(4, 3)), RNG.normal(size=4), RNG.normal(size=3)
    g = secant.grad(rnn_step_loss)
    eps = 1e-6
    want = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[i] = eps
        want[i] = (float(rnn_step_loss(w + e, h, x)) - float(rnn_step_loss(w - e, h, x))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(g(w, h, x)), want, rtol=1e-6, atol=1e-8)
    text = secant.jit(g).lower(w, h, x).as_text()
    assert _ops(text, "reshape") == 0, text
    np.testing.assert_allclose(np.asarray(secant.jit(g)(w, h, x)), want, rtol=1e-6, atol=1e-8)
    hs = RNG.normal(size=(3, 4))
    got = secant.vmap(g, in_axes=(None, 0, None))(w, hs, x)
    for k in range(3):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(g(w, hs[k], x)), rtol=1e-12)
    hess = np.asarray(secant.hessian(rnn_step_loss)(w, h, x)).reshape(12, 12)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-9, atol=1e-12)
