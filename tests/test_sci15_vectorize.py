"""Issue 15: secant.numpy.vectorize under grad, jvp, vmap and their compositions (each rule is
a vectorize again: secant/vectorize_rules.py). Derivatives against closed forms and float64
finite differences, vmap against Python loops, jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(15)
X = RNG.normal(size=(4, 3))
Y = RNG.normal(size=3)

scaled = snp.vectorize(lambda a, b: a * snp.sin(b))
DOT = snp.vectorize(lambda u, v: snp.sum(u * v * v), signature="(n),(n)->()")


def _power(x, n):
    return x ** n


POWER = snp.vectorize(_power, excluded={1})


def _fd(f, x, eps=1e-6):
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def test_grad_of_broadcast_arguments(x64):
    loss = lambda x, y: snp.sum(scaled(x, y) ** 2)     # noqa: E731
    gx, gy = secant.grad(loss, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, 2 * X * np.sin(Y) ** 2, rtol=1e-12)
    np.testing.assert_allclose(gy, (2 * X ** 2 * np.sin(Y) * np.cos(Y)).sum(0), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(loss, 1))(X, Y), gy, rtol=1e-12)
    np.testing.assert_allclose(secant.grad(scaled)(0.7, 1.1), np.sin(1.1), rtol=1e-12)


def test_signature_gradient_against_finite_differences(x64):
    loss = lambda x, y: snp.sum(snp.tanh(DOT(x, y)))   # noqa: E731
    gx, gy = secant.grad(loss, argnums=(0, 1))(X, Y)
    f = lambda x, y: np.sum(np.tanh((x * y * y).sum(-1)))     # noqa: E731
    np.testing.assert_allclose(gx, _fd(lambda x: f(x, Y), X), rtol=1e-7)
    np.testing.assert_allclose(gy, _fd(lambda y: f(X, y), Y), rtol=1e-7)


def test_jvp_and_second_order(x64):
    out, out_dot = secant.jvp(lambda x: scaled(x, Y), (X,), (np.ones_like(X),))
    np.testing.assert_allclose(out, X * np.sin(Y), rtol=1e-12)
    np.testing.assert_allclose(out_dot, np.broadcast_to(np.sin(Y), X.shape), rtol=1e-12)
    cube = snp.vectorize(lambda a: a ** 3 * snp.sin(a))
    xs = np.array([0.3, -1.2, 2.0])
    d1 = lambda a: 3 * a ** 2 * np.sin(a) + a ** 3 * np.cos(a)      # noqa: E731
    d2 = lambda a: 6 * a * np.sin(a) + 6 * a ** 2 * np.cos(a) - a ** 3 * np.sin(a)  # noqa: E731
    for x in xs:
        np.testing.assert_allclose(secant.grad(secant.grad(cube))(x), d2(x), rtol=1e-10)
        np.testing.assert_allclose(secant.jacfwd(secant.grad(cube))(x), d2(x), rtol=1e-10)
    np.testing.assert_allclose(secant.vmap(secant.grad(cube))(xs), d1(xs), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(cube)))(xs), d1(xs),
                               rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(secant.grad(cube)))(xs), d2(xs),
                               rtol=1e-10)
    np.testing.assert_allclose(secant.jacfwd(lambda x: cube(x))(xs), np.diag(d1(xs)),
                               rtol=1e-12)
    np.testing.assert_allclose(secant.hessian(lambda x: snp.sum(cube(x)))(xs), np.diag(d2(xs)),
                               rtol=1e-10)


def test_vmap_against_a_loop(x64):
    ys = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(secant.vmap(scaled)(X, ys), [scaled(x, y) for x, y in zip(X, ys)],
                               rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(scaled, in_axes=(1, None))(X, Y[0]),
                               [scaled(X[:, j], Y[0]) for j in range(3)], rtol=1e-12)
    # an unbatched argument with more loop axes than the batched one
    np.testing.assert_allclose(secant.vmap(scaled, in_axes=(0, None))(Y, X),
                               [scaled(y, X) for y in Y], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.vmap(scaled))(X, ys), scaled(X, ys),
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(scaled))(X, ys), scaled(X, ys),
                               rtol=1e-12)


def test_vmap_of_signature(x64):
    m = RNG.normal(size=(5, 2, 3))
    np.testing.assert_allclose(secant.vmap(DOT, in_axes=(0, None))(m, Y),
                               [DOT(a, Y) for a in m], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(DOT, in_axes=(None, 0))(Y, X),
                               [DOT(Y, b) for b in X], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(DOT, in_axes=(2, 1))(m, m[0]),
                               [DOT(m[:, :, k], m[0][:, k]) for k in range(3)], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.vmap(DOT, (0, None)), (0, None))(m, Y),
                               DOT(m, Y), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(DOT, (0, None)))(m, Y), DOT(m, Y),
                               rtol=1e-12)
    g = secant.vmap(secant.grad(lambda x, y: snp.sum(DOT(x, y))), in_axes=(0, None))(m, Y)
    np.testing.assert_allclose(g, np.broadcast_to(Y * Y, m.shape), rtol=1e-12)


def test_excluded_argument(x64):
    xs = np.array([0.5, 1.5, 2.5])
    np.testing.assert_allclose(secant.grad(lambda x: snp.sum(POWER(x, 3)))(xs), 3 * xs ** 2,
                               rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(POWER, in_axes=(0, None))(xs, 2), xs ** 2,
                               rtol=1e-12)
    with pytest.raises(secant.SecantError, match="excluded"):
        secant.vmap(POWER, in_axes=(0, 0))(xs, np.array([1, 2, 3]))


def test_grad_of_vmap(x64):
    loss = lambda x, y: snp.sum(secant.vmap(scaled, (0, None))(x, y) ** 2)    # noqa: E731
    gx, gy = secant.grad(loss, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, 2 * X * np.sin(Y) ** 2, rtol=1e-12)
    np.testing.assert_allclose(gy, (2 * X ** 2 * np.sin(Y) * np.cos(Y)).sum(0), rtol=1e-12)
    m = RNG.normal(size=(5, 2, 3))
    inner = lambda a, y: snp.sum(secant.vmap(DOT, (1, None))(a, y) ** 2)     # noqa: E731
    ga = secant.grad(inner)(m, Y)
    f = lambda a: np.sum(np.moveaxis((a * Y * Y).sum(-1), 1, 0) ** 2)         # noqa: E731
    np.testing.assert_allclose(ga, _fd(f, m), rtol=1e-7)
    both = secant.vmap(secant.vmap(scaled))
    twice = lambda x: snp.sum(both(x, X) ** 2)      # noqa: E731
    np.testing.assert_allclose(secant.grad(twice)(X), 2 * X * np.sin(X) ** 2, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(twice))(X), 2 * X * np.sin(X) ** 2,
                               rtol=1e-12)


def test_refused_compositions_are_clear():
    skip = snp.vectorize(lambda a, b=1.0, c=2.0: a * b * c)
    with pytest.raises(secant.SecantError, match="by position"):
        secant.grad(lambda x: snp.sum(skip(x, c=3.0)))(X)


def test_keyword_arguments(x64):
    g = secant.grad(lambda x, y: snp.sum(scaled(x, b=y) ** 2), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(g[0], 2 * X * np.sin(Y) ** 2, rtol=1e-12)
    np.testing.assert_allclose(g[1], (2 * X ** 2 * np.sin(Y) * np.cos(Y)).sum(0), rtol=1e-12)
    named = snp.vectorize(_power, excluded={"n"})
    xs = np.array([0.5, 1.5, 2.5])
    np.testing.assert_allclose(secant.grad(lambda x: snp.sum(named(x, n=3)))(xs), 3 * xs ** 2,
                               rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(lambda x: named(x, n=2))(xs), xs ** 2, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(lambda x, y: DOT(x, v=y))(X, X),
                               [DOT(a, a) for a in X], rtol=1e-12)
