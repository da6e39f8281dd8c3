"""Left-over gaps of loops and dtypes (issue 15, loops16): shape queries of the items of a
batched list inside a starred comprehension, and the neighbourhood of staged loops."""
import numpy as np

import secant
import secant.numpy as snp

RNG = np.random.default_rng(16)


# --- max(*[c.ndim for c in xs], 0): shape queries of batched items are per example ---------
def widest(a, b):
    xs = [a, b]
    n = max(*[c.ndim for c in xs], 0)
    return a * n + b


def twice_rows(a, b):
    xs = [a, b]
    m = max(*[sum([e.shape[0] for e in [c, c]]) for c in xs])      # (a query inside a query)
    return a * m + b.shape[-1]


def test_vmap_of_a_starred_comprehension_of_shape_queries():
    a, b = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    for f in (widest, twice_rows):
        want = np.stack([f(a[i], b[i]) for i in range(3)])
        np.testing.assert_allclose(secant.vmap(f)(a, b), want, rtol=1e-6)
        np.testing.assert_allclose(secant.jit(secant.vmap(f))(a, b), want, rtol=1e-6)


def test_grad_of_a_starred_comprehension_of_shape_queries():
    a, b = RNG.normal(size=2), RNG.normal(size=2)
    g = secant.grad(lambda a, b: snp.sum(widest(a, b) ** 2), argnums=(0, 1))
    ga, gb = g(a, b)
    np.testing.assert_allclose(ga, 2 * (a + b) * 1, rtol=1e-6)      # n is 1
    np.testing.assert_allclose(gb, 2 * (a + b), rtol=1e-6)
    g2 = secant.grad(lambda a, b: snp.sum(twice_rows(a, b) ** 2))
    np.testing.assert_allclose(g2(a, b), 2 * (4 * a + 2) * 4, rtol=1e-6)
