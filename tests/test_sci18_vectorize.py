"""secant.numpy.vectorize as jax.numpy.vectorize (built on vmap): values against a Python loop,
signature= and excluded=, jit against eager, its errors; grad/vmap of it."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.RandomState(0)


def _power(x, n):
    return x ** n


def test_scalar_function_broadcasts_like_numpy_vectorize(x64):
    f = snp.vectorize(lambda a, b: snp.where(a > b, a - b, a * b))
    a, b = RNG.randn(2, 3), RNG.randn(3)
    want = np.vectorize(lambda u, v: u - v if u > v else u * v)(a, b)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(f)(a, b), want, rtol=1e-12)


def test_signature_against_a_loop(x64):
    dot = snp.vectorize(snp.dot, signature="(n),(n)->()")
    x, y = RNG.randn(4, 2, 3), RNG.randn(3)
    out = dot(x, y)
    assert out.shape == (4, 2)
    np.testing.assert_allclose(out, [[np.dot(r, y) for r in m] for m in x], rtol=1e-12)
    np.testing.assert_allclose(secant.jit(dot)(x, y), out, rtol=1e-12)
    mv = snp.vectorize(snp.matmul, signature="(n,m),(m)->(n)")
    m, v = RNG.randn(5, 2, 3), RNG.randn(5, 3)
    np.testing.assert_allclose(mv(m, v), [a @ b for a, b in zip(m, v)], rtol=1e-12)
    two = snp.vectorize(lambda r: (snp.sum(r), snp.max(r)), signature="(k)->(),()")
    s, mx = two(m)
    np.testing.assert_allclose(s, m.sum(-1), rtol=1e-12)
    np.testing.assert_allclose(mx, m.max(-1), rtol=1e-12)


def test_excluded_and_keywords(x64):
    x = np.arange(4.0)
    np.testing.assert_allclose(snp.vectorize(_power, excluded={1})(x, 3), x ** 3)
    np.testing.assert_allclose(snp.vectorize(_power, excluded={"n"})(x, n=2), x ** 2)
    np.testing.assert_allclose(snp.vectorize(_power)(x, n=np.array([1.0, 2.0, 3.0, 0.5])),
                               x ** np.array([1.0, 2.0, 3.0, 0.5]))


@pytest.mark.parametrize("call, match", [
    (lambda: snp.vectorize(snp.dot, signature="(n),(n)->()")(np.ones((2, 3)), np.ones(4)),
     "inconsistent size"),
    (lambda: snp.vectorize(snp.dot, signature="(n),(n)->()")(np.ones(3)), "inputs"),
    (lambda: snp.vectorize(snp.sum, signature="(n)->(n)")(np.ones((2, 3))), "output"),
    (lambda: snp.vectorize(snp.sum, signature="(n)->")(np.ones(3)), "signature"),
    (lambda: snp.vectorize(snp.add)(np.ones((2, 3)), np.ones((4,))), "broadcast"),
])
def test_errors(call, match):
    with pytest.raises(secant.SecantError, match=match):
        call()


DOT = snp.vectorize(snp.dot, signature="(n),(n)->()")


def test_transforms_of_it(x64):
    # (issue 15: its own rules, secant/vectorize_rules.py; more in tests/test_sci15_vectorize.py)
    x, y = RNG.randn(4, 3), RNG.randn(3)
    np.testing.assert_allclose(secant.grad(lambda a: snp.sum(DOT(a, y)))(x),
                               np.broadcast_to(y, x.shape), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(DOT, in_axes=(0, None))(x, y), x @ y, rtol=1e-12)
