"""Issue 15: a functools.partial of a secant.numpy function passed directly to grad / vmap /
jacfwd (leading static arguments such as einsum's subscripts, keyword arguments), and
custom_jvp / custom_vjp functions in compositions (vmap of grad, jacfwd of jacrev, jit of vmap,
grad of grad), with and without nondiff_argnums: checked against closed forms, Python loops
and eager runs."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(15)
A = RNG.normal(size=(4, 3))
B = RNG.normal(size=(4, 3))
V = RNG.normal(size=3)


# --- functools.partial of library functions, passed directly --------------------------------------
def test_partial_einsum_grad(x64):
    dot = functools.partial(snp.einsum, "i,i->")
    np.testing.assert_allclose(secant.grad(dot)(V, 2 * V), 2 * V, rtol=1e-12)
    ga, gb = secant.grad(dot, argnums=(0, 1))(V, A[0])
    np.testing.assert_allclose(ga, A[0], rtol=1e-12)
    np.testing.assert_allclose(gb, V, rtol=1e-12)


def test_partial_einsum_vmap_and_jacfwd(x64):
    dot = functools.partial(snp.einsum, "i,i->")
    np.testing.assert_allclose(secant.vmap(dot)(A, B), [a @ b for a, b in zip(A, B)],
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jacfwd(dot)(V, A[0]), A[0], rtol=1e-12)
    matvec = functools.partial(snp.einsum, "ij,j->i")
    np.testing.assert_allclose(secant.jacfwd(matvec, argnums=1)(A, V), A, rtol=1e-12)
    np.testing.assert_allclose(secant.jacrev(matvec, argnums=1)(A, V), A, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(matvec, in_axes=(None, 0)))(A, B[:, :3]),
                               B @ A.T, rtol=1e-12)


def test_partial_einsum_with_fixed_operand(x64):
    weighted = functools.partial(snp.einsum, "ij,j->i", A)
    np.testing.assert_allclose(secant.jacfwd(weighted)(V), A, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(weighted)(B[:, :3]), B @ A.T, rtol=1e-12)


def test_partial_with_keywords(x64):
    colsum = functools.partial(snp.sum, axis=0)
    np.testing.assert_allclose(secant.vmap(colsum)(np.stack([A, B])), [A.sum(0), B.sum(0)],
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jacfwd(colsum)(A).reshape(3, 12),
                               np.kron(np.ones((1, 4)), np.eye(3)), rtol=1e-12)
    var0 = functools.partial(snp.var, axis=0)
    np.testing.assert_allclose(secant.vmap(var0, in_axes=1)(A), A.var(0), rtol=1e-12)
    moved = functools.partial(snp.moveaxis, source=0, destination=1)
    np.testing.assert_allclose(secant.grad(lambda a: snp.sum(moved(a) * B.T))(A), B,
                               rtol=1e-12)


def _jacobian_fd(f, x, eps=1e-6):
    x = np.asarray(x, float)
    cols = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("fn, x", [
    (functools.partial(snp.reshape, shape=(3, 4)), A),
    (functools.partial(snp.reshape, newshape=(2, 6)), A),
    (functools.partial(snp.tensordot, A, axes=1), V),
    (functools.partial(snp.einsum, "ij->j", optimize=True), A),
    (functools.partial(functools.partial(snp.einsum, "i,i->"), V), V),
    (functools.partial(snp.linalg.norm, ord=2), V),
    (functools.partial(snp.transpose, axes=(1, 0)), A),
    (functools.partial(snp.power, 2.0), V),
])
def test_partials_under_jacobians_and_vmap(x64, fn, x):
    want = _jacobian_fd(fn, x)
    np.testing.assert_allclose(secant.jacfwd(fn)(x), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.jacrev(fn)(x), want, rtol=1e-6, atol=1e-9)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(secant.vmap(fn)(xs), [fn(x), fn(2 * x)], rtol=1e-12)


def test_reshape_with_shape_keyword_in_user_code(x64):
    g = secant.grad(lambda a: snp.sum(snp.reshape(a, shape=(3, 4)) ** 2))(A)
    np.testing.assert_allclose(g, 2 * A, rtol=1e-12)


# --- custom_jvp / custom_vjp in compositions -------------------------------------------------------
@secant.custom_jvp
def soft(x):
    return snp.log1p(snp.exp(x))


@soft.defjvp
def soft_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return soft(x), x_dot / (1.0 + snp.exp(-x))


@secant.custom_vjp
def cube(x):
    return x ** 3


def cube_fwd(x):
    return x ** 3, x


def cube_bwd(x, g):
    return (3.0 * x ** 2 * g,)


cube.defvjp(cube_fwd, cube_bwd)


@functools.partial(secant.custom_jvp, nondiff_argnums=(0,))
def power(n, x):
    return x ** n


@power.defjvp
def power_jvp(n, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return x ** n, n * x ** (n - 1) * x_dot


@functools.partial(secant.custom_vjp, nondiff_argnums=(0,))
def vpower(n, x):
    return x ** n


def vpower_fwd(n, x):
    return x ** n, x


def vpower_bwd(n, x, g):
    return (n * x ** (n - 1) * g,)


vpower.defvjp(vpower_fwd, vpower_bwd)

XS = np.array([-1.3, -0.2, 0.4, 1.7])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("fn, d1, d2", [
    (soft, _sigmoid, lambda x: _sigmoid(x) * (1 - _sigmoid(x))),
    (cube, lambda x: 3 * x ** 2, lambda x: 6 * x),
])
def test_custom_compositions(x64, fn, d1, d2):
    np.testing.assert_allclose(secant.vmap(secant.grad(fn))(XS), d1(XS), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(fn)))(XS), d1(XS), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(secant.grad(fn)))(XS), d2(XS),
                               rtol=1e-10)
    for x in XS[:2]:
        np.testing.assert_allclose(secant.jacfwd(secant.jacrev(fn))(x), d2(x), rtol=1e-10)
        np.testing.assert_allclose(secant.jacrev(secant.jacrev(fn))(x), d2(x), rtol=1e-10)
        np.testing.assert_allclose(secant.grad(secant.grad(fn))(x), d2(x), rtol=1e-10)
    eager = secant.vmap(fn)(XS)
    np.testing.assert_allclose(eager, [fn(x) for x in XS], rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(fn))(XS), eager, rtol=1e-12)


@pytest.mark.parametrize("fn", [power, vpower])
def test_custom_nondiff_compositions(x64, fn):
    n = 3
    np.testing.assert_allclose(secant.grad(fn, 1)(n, 1.5), 3 * 1.5 ** 2, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(fn, 1), (None, 0))(n, XS), 3 * XS ** 2,
                               rtol=1e-12)
    np.testing.assert_allclose(secant.jacfwd(secant.jacrev(fn, 1), 1)(n, 1.5), 6 * 1.5,
                               rtol=1e-12)
    np.testing.assert_allclose(secant.grad(secant.grad(fn, 1), 1)(n, 1.5), 6 * 1.5, rtol=1e-12)
    jitted = secant.jit(secant.vmap(fn, (None, 0)), static_argnums=0)
    np.testing.assert_allclose(jitted(n, XS), XS ** 3, rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(secant.grad(fn, 1), 1), (None, 0))(n, XS),
                               6 * XS, rtol=1e-10)
