"""Issue 15, code written by others (second round): second-order programs as users write them:
a physics-informed loss with the Laplacian as the trace of a Hessian (differentiated again in
the network's parameters), Hutchinson's trace estimator with vmap over probes of jvp-of-grad,
a Gauss-Newton step from jacfwd of the residuals with a flattened parameter vector, Hessians of
dict-of-dict parameters, a deep-equilibrium layer whose custom_vjp solves the adjoint with a
while_loop; checked against float64 finite differences, closed forms, loops and eager."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(2727)


# --- a PINN residual: Laplacian = trace of the Hessian in x; grad in the network parameters -----
def u(params, x):
    h = jnp.tanh(params["W1"] @ x + params["b1"])
    return params["w2"] @ h


def laplacian(params, x):
    return jnp.trace(hessian(u, argnums=1)(params, x))


def pinn_loss(params, xs):
    res = vmap(lambda x: laplacian(params, x) + jnp.sum(jnp.sin(x)))(xs)
    return jnp.mean(res ** 2)


PINN = {"W1": RNG.normal(size=(4, 2)) * 0.7, "b1": RNG.normal(size=4) * 0.2,
        "w2": RNG.normal(size=4) * 0.7}
PTS = RNG.normal(size=(3, 2))


def test_pinn_laplacian_third_order(x64):
    p = to_snp(PINN)
    # the Laplacian against a finite-difference stencil
    for x in PTS:
        h = 1e-4
        stencil = sum((float(u(p, to_snp(x + h * e))) - 2 * float(u(p, to_snp(x))) +
                       float(u(p, to_snp(x - h * e)))) / h ** 2 for e in np.eye(2))
        np.testing.assert_allclose(laplacian(p, to_snp(x)), stencil, rtol=1e-5)
    check_grad(pinn_loss, PINN, PTS, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(pinn_loss)(p, to_snp(PTS)), pinn_loss(p, to_snp(PTS)),
                               rtol=1e-10)


# --- Hutchinson's trace estimator: vmap over Rademacher probes of jvp(grad(f)) -------------------
def f_energy(x):
    return jnp.sum(jnp.cos(x) * x ** 2) + jnp.sum(x[:-1] * x[1:]) ** 2


def hutchinson(x, probes):
    hvp = lambda v: jvp(grad(f_energy), (x,), (v,))[1]
    return jnp.mean(vmap(lambda v: jnp.vdot(v, hvp(v)))(probes))


def test_hutchinson_trace(x64):
    x = RNG.normal(size=5)
    H = np.asarray(hessian(f_energy)(to_snp(x)))
    # with all 2^5 sign vectors the estimator is exact
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 5)).reshape(5, -1).T
    np.testing.assert_allclose(hutchinson(to_snp(x), to_snp(signs)), np.trace(H), rtol=1e-10)
    probes = np.sign(RNG.normal(size=(6, 5)))
    want = np.mean([v @ H @ v for v in probes])
    np.testing.assert_allclose(hutchinson(to_snp(x), to_snp(probes)), want, rtol=1e-10)
    np.testing.assert_allclose(jit(hutchinson)(to_snp(x), to_snp(probes)), want, rtol=1e-10)
    # the estimate's gradient in x (third derivatives), against finite differences
    check_grad(hutchinson, x, probes, rtol=1e-5)


# --- a Gauss-Newton step with the parameters flattened into one vector -----------------------------
def flatten(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    shapes = [np.shape(l) for l in leaves]
    flat = jnp.concatenate([jnp.ravel(l) for l in leaves])

    def unflatten(v):
        out, i = [], 0
        for s in shapes:
            n = int(np.prod(s))
            out.append(jnp.reshape(v[i:i + n], s))
            i += n
        return tree_util.tree_unflatten(treedef, out)
    return flat, unflatten


CURVE_X = np.linspace(0, 2, 7)
CURVE_Y = 1.5 * np.exp(-0.8 * CURVE_X) + 0.2


def residuals(params, x, y):
    return params["a"] * jnp.exp(-params["k"] * x) + params["c"] - y


def gauss_newton_step(params, x, y):
    flat, unflatten = flatten(params)
    r = lambda v: residuals(unflatten(v), x, y)
    J = jacfwd(r)(flat)
    delta = jnp.linalg.solve(J.T @ J + 1e-9 * jnp.eye(flat.shape[0]), J.T @ r(flat))
    return unflatten(flat - delta)


def test_gauss_newton_flattened(x64):
    params = to_snp({"a": 1.0, "c": 0.0, "k": 0.5})
    flat, unflatten = flatten(params)
    J = jacfwd(lambda v: residuals(unflatten(v), CURVE_X, CURVE_Y))(flat)
    fd = np.stack([fd_jvp(lambda v: residuals(unflatten(v), CURVE_X, CURVE_Y), (flat,), (e,))
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacrev(lambda v: residuals(unflatten(v), CURVE_X, CURVE_Y))(flat),
                               J, rtol=1e-10)
    for _ in range(8):
        params = gauss_newton_step(params, CURVE_X, CURVE_Y)
    np.testing.assert_allclose([params["a"], params["k"], params["c"]], [1.5, 0.8, 0.2],
                               rtol=1e-6)
    p0 = to_snp({"a": 1.0, "c": 0.0, "k": 0.5})
    assert_trees_close(jit(gauss_newton_step)(p0, to_snp(CURVE_X), to_snp(CURVE_Y)),
                       gauss_newton_step(p0, to_snp(CURVE_X), to_snp(CURVE_Y)), rtol=1e-10)


# --- Hessians of dict-of-dict parameters ------------------------------------------------------------
def small_loss(p):
    return jnp.sum(jnp.sin(p["a"]["w"]) * p["b"]["v"] ** 2) + p["a"]["s"] * jnp.sum(p["b"]["v"])


def test_hessian_nested_dicts(x64):
    p = to_snp({"a": {"w": RNG.normal(size=2), "s": 0.7}, "b": {"v": RNG.normal(size=2)}})
    H = hessian(small_loss)(p)
    # H[i][j] blocks: d2/dw dv = diag(2 v cos w), d2/ds dv = ones, d2/dv2 = diag(2 sin w)
    w, v = np.asarray(p["a"]["w"]), np.asarray(p["b"]["v"])
    np.testing.assert_allclose(H["a"]["w"]["b"]["v"], np.diag(2 * v * np.cos(w)), rtol=1e-10)
    np.testing.assert_allclose(H["a"]["s"]["b"]["v"], np.ones(2), rtol=1e-10)
    np.testing.assert_allclose(H["b"]["v"]["b"]["v"], np.diag(2 * np.sin(w)), rtol=1e-10)
    np.testing.assert_allclose(H["a"]["w"]["a"]["w"], np.diag(-np.sin(w) * v ** 2), rtol=1e-10)
    H2 = jacrev(jacfwd(small_loss))(p)
    assert_trees_close(H2, H, rtol=1e-10)
    assert_trees_close(jit(hessian(small_loss))(p), H, rtol=1e-10)


# --- a deep-equilibrium layer: fixed point forward, adjoint fixed point backward ------------------
def deq_f(z, x, W):
    return jnp.tanh(W @ z + x)


def fixed_point_iter(g, z0, tol=1e-12, max_iter=200):
    def cond(c):
        z, prev, i = c
        return (jnp.max(jnp.abs(z - prev)) > tol) & (i < max_iter)

    def body(c):
        z, _, i = c
        return g(z), z, i + 1

    return lax.while_loop(cond, body, (g(z0), z0, 1))[0]


@secant.custom_vjp
def deq(x, W):
    return fixed_point_iter(lambda z: deq_f(z, x, W), jnp.zeros_like(x))


def deq_fwd(x, W):
    z = deq(x, W)
    return z, (z, x, W)


def deq_bwd(res, g):
    z, x, W = res
    _, vjp_z = secant.vjp(lambda z: deq_f(z, x, W), z)
    # adjoint: u = g + (df/dz)^T u, by the same fixed-point iteration
    u = fixed_point_iter(lambda u: g + vjp_z(u)[0], g)
    _, vjp_xw = secant.vjp(lambda x, W: deq_f(z, x, W), x, W)
    return vjp_xw(u)


deq.defvjp(deq_fwd, deq_bwd)


def test_deep_equilibrium_layer(x64):
    W = RNG.normal(size=(3, 3)) * 0.3
    x = RNG.normal(size=3)
    z = np.asarray(deq(to_snp(x), to_snp(W)))
    np.testing.assert_allclose(z, np.tanh(W @ z + x), atol=1e-11)
    loss = lambda x, W: jnp.sum(deq(x, W) ** 2 * jnp.arange(1.0, 4.0))
    check_grad(loss, x, W, rtol=1e-6)
    check_grad(loss, x, W, argnum=1, rtol=1e-6)
    check_vmap(grad(loss), (RNG.normal(size=(3, 3)), W), in_axes=(0, None))
