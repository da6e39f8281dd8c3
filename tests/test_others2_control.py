"""Issue 15, code written by others (second round): lax.cond and lax.switch with lambdas, named
branches and operand tuples; lax.while_loop solvers (bisection, fixed point, Newton with a
tolerance) differentiated forward (as JAX allows), vmapped with per-example stopping, and given
reverse-mode gradients by implicit differentiation with custom_vjp / custom_jvp; checked against
float64 finite differences, closed forms, a Python loop for vmap and eager for jit."""
import functools

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jacfwd, jit, jvp, lax

from others15_check import check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(2121)


# --- lax.cond with lambdas and an operand tuple ---------------------------------------------------
def huber_cond(x, delta):
    return lax.cond(jnp.abs(x) < delta,
                    lambda ops: 0.5 * ops[0] ** 2,
                    lambda ops: ops[1] * (jnp.abs(ops[0]) - 0.5 * ops[1]),
                    (x, delta))


def test_cond_lambdas_operand_tuple(x64):
    for x in (-2.0, -0.3, 0.4, 1.7):
        g = check_grad(huber_cond, x, 1.0)
        np.testing.assert_allclose(g, x if abs(x) < 1 else np.sign(x), rtol=1e-12)
        check_grad(huber_cond, x, 1.0, argnum=1)
    xs = np.array([-2.0, -0.3, 0.4, 1.7])
    check_vmap(huber_cond, (xs, 1.0), in_axes=(0, None))
    check_vmap(grad(huber_cond), (xs, 1.0), in_axes=(0, None))
    check_vmap(grad(huber_cond, argnums=1), (xs, np.array([0.5, 1.0, 1.0, 2.0])))
    _, t = jvp(lambda x: huber_cond(x, 1.0), (0.4,), (1.0,))
    np.testing.assert_allclose(t, 0.4)


# --- lax.cond with several operands and named branches; a pytree through both -------------------
def _shrink(p, x):
    return {"w": p["w"] * 0.5, "b": p["b"] - x}


def _grow(p, x):
    return {"w": p["w"] * jnp.exp(x), "b": p["b"] + x ** 2}


def branchy(p, x):
    q = lax.cond(x > 0, _grow, _shrink, p, x)
    return jnp.sum(q["w"] ** 2) + q["b"] * x


def test_cond_named_branches_dict_operands(x64):
    p = {"w": RNG.normal(size=3), "b": 0.3}
    for x in (-0.7, 0.6):
        check_grad(branchy, p, x)
        check_grad(branchy, p, x, argnum=1)
    check_vmap(branchy, (p, np.array([-0.7, 0.6, 1.1])), in_axes=(None, 0))
    check_vmap(grad(branchy), (p, np.array([-0.7, 0.6, 1.1])), in_axes=(None, 0))
    H = secant.hessian(branchy, argnums=1)(to_snp(p), 0.6)
    fd = fd_grad(grad(branchy, argnums=1), (to_snp(p), 0.6), argnum=1)
    np.testing.assert_allclose(H, fd, rtol=1e-5)


# --- lax.switch over a list of lambdas and functions ---------------------------------------------
ACTIVATIONS = [lambda x: jnp.tanh(x), jnp.sin, lambda x: x * jax_sigmoid(x), lambda x: x ** 3 / 3]


def jax_sigmoid(x):
    return 1 / (1 + jnp.exp(-x))


def activate(kind, x):
    return lax.switch(kind, ACTIVATIONS, x)


def test_switch_list_of_lambdas(x64):
    x = RNG.normal(size=4)
    for kind in range(4):
        check_grad(lambda x: jnp.sum(activate(kind, x)), x)
    kinds = to_snp(np.array([0, 1, 2, 3, 5]))       # (5: clamped to the last branch, as JAX)
    xs = RNG.normal(size=5)
    got = check_vmap(activate, (kinds, xs))
    np.testing.assert_allclose(got[4], xs[4] ** 3 / 3, rtol=1e-12)
    check_vmap(grad(activate, argnums=1), (kinds, xs))
    # a batch of kinds with one x: the index batched, the operand not
    check_vmap(lambda k, x: jnp.sum(activate(k, x)), (kinds, x), in_axes=(0, None))


def piecewise(x, i, scale):
    branches = (lambda a, s: a * s, lambda a, s: jnp.sin(a) * s ** 2,
                lambda a, s: jnp.log1p(a ** 2) + s)
    return lax.switch(i, branches, x, scale)


def test_switch_several_operands(x64):
    for i in range(3):
        check_grad(piecewise, 0.7, i, 1.3)
        check_grad(piecewise, 0.7, i, 1.3, argnum=2)
        check_grad(grad(piecewise), 0.7, i, 1.3)   # second order through switch
    check_vmap(piecewise, (np.array([0.1, 0.7, 1.5]), to_snp(np.array([2, 0, 1])), 1.3),
               in_axes=(0, 0, None))


# --- lax.while_loop solvers ----------------------------------------------------------------------
def bisection(f, lo, hi, tol=1e-12, max_iter=200):
    def cond(state):
        lo, hi, i = state
        return (hi - lo > tol) & (i < max_iter)

    def body(state):
        lo, hi, i = state
        mid = 0.5 * (lo + hi)
        left = jnp.sign(f(mid)) == jnp.sign(f(lo))
        return jnp.where(left, mid, lo), jnp.where(left, hi, mid), i + 1

    lo, hi, _ = lax.while_loop(cond, body, (lo, hi, 0))
    return 0.5 * (lo + hi)


def cube_root(a):
    return bisection(lambda x: x ** 3 - a, 0.0, jnp.maximum(a, 1.0))


def test_while_loop_bisection(x64):
    np.testing.assert_allclose(cube_root(8.0), 2.0, atol=1e-11)
    np.testing.assert_allclose(jit(cube_root)(27.0), 3.0, atol=1e-11)
    got = check_vmap(cube_root, (np.array([0.5, 2.0, 8.0, 100.0]),))
    np.testing.assert_allclose(got, np.cbrt([0.5, 2.0, 8.0, 100.0]), atol=1e-10)


def fixed_point(f, x0, tol=1e-12, max_iter=500):
    def cond(carry):
        x, prev, i = carry
        return (jnp.max(jnp.abs(x - prev)) > tol) & (i < max_iter)

    def body(carry):
        x, _, i = carry
        return f(x), x, i + 1

    x, _, _ = lax.while_loop(cond, body, (f(x0), x0, 1))
    return x


def solve_cos(a):
    return fixed_point(lambda x: jnp.cos(a * x), jnp.zeros_like(a))


def test_while_loop_fixed_point_forward_mode(x64):
    a = np.array([0.5, 0.8, 0.9])
    x = np.asarray(solve_cos(to_snp(a)))
    np.testing.assert_allclose(x, np.cos(a * x), atol=1e-11)
    # forward mode through the loop (JAX allows it for while_loop): dx/da = -x sin(ax)/(1+a sin(ax))
    _, t = jvp(solve_cos, (to_snp(a),), (jnp.ones(3),))
    want = -x * np.sin(a * x) / (1 + a * np.sin(a * x))
    np.testing.assert_allclose(t, want, rtol=1e-8)
    np.testing.assert_allclose(jacfwd(solve_cos)(to_snp(a)), np.diag(want), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(jit(jacfwd(solve_cos))(to_snp(a)), np.diag(want), rtol=1e-8,
                               atol=1e-12)
    check_vmap(solve_cos, (np.array([[0.5, 0.8], [0.3, 0.95]]),))


# --- Newton with a tolerance, implicit gradient by custom_vjp ---------------------------------
def newton(f, x0, tol=1e-12, max_iter=50):
    df = grad(f)

    def cond(c):
        x, step, i = c
        return (jnp.abs(step) > tol) & (i < max_iter)

    def body(c):
        x, _, i = c
        step = f(x) / df(x)
        return x - step, step, i + 1

    x, _, _ = lax.while_loop(cond, body, (x0, 1.0, 0))
    return x


@secant.custom_vjp
def kepler(M, e):
    """Solves Kepler's equation E - e sin E = M for E."""
    return newton(lambda E: E - e * jnp.sin(E) - M, M)


def kepler_fwd(M, e):
    E = kepler(M, e)
    return E, (E, e)


def kepler_bwd(res, g):
    E, e = res
    denom = 1 - e * jnp.cos(E)         # dF/dE; F = E - e sin E - M
    return g / denom, g * jnp.sin(E) / denom


kepler.defvjp(kepler_fwd, kepler_bwd)


def test_newton_while_loop_custom_vjp(x64):
    M, e = 1.2, 0.3
    E = float(kepler(M, e))
    np.testing.assert_allclose(E - e * np.sin(E), M, atol=1e-12)
    g = grad(kepler, argnums=(0, 1))(M, e)
    fd = [fd_grad(kepler, (M, e), k) for k in (0, 1)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    Ms = np.linspace(0.1, 3.0, 4)
    check_vmap(kepler, (Ms, e), in_axes=(0, None))
    check_vmap(grad(kepler), (Ms, e), in_axes=(0, None))
    # an orbit's x position, differentiated through the custom rule
    x_pos = lambda M, e: jnp.cos(kepler(M, e)) - e
    check_grad(x_pos, M, e)
    check_grad(x_pos, M, e, argnum=1)


@secant.custom_jvp
def implicit_sqrt(a):
    return newton(lambda x: x * x - a, jnp.maximum(a, 1.0))


@implicit_sqrt.defjvp
def implicit_sqrt_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    x = implicit_sqrt(a)
    return x, da / (2 * x)


def test_newton_custom_jvp_reverse_and_forward(x64):
    for a in (0.3, 2.0, 9.0):
        np.testing.assert_allclose(implicit_sqrt(a), np.sqrt(a), rtol=1e-12)
        check_grad(implicit_sqrt, a)
        np.testing.assert_allclose(grad(grad(implicit_sqrt))(a), -0.25 * a ** -1.5, rtol=1e-8)
    check_vmap(grad(implicit_sqrt), (np.array([0.3, 2.0, 9.0]),))
    check_vmap(lambda a: jvp(implicit_sqrt, (a,), (1.0,))[1], (np.array([0.3, 2.0, 9.0]),))


# --- a solver with its tolerance static, inside jit --------------------------------------------
@functools.partial(jit, static_argnames=("tol",))
def inverse_sqrt(a, tol=1e-10):
    def body(c):
        y, _ = c
        new = y * (1.5 - 0.5 * a * y * y)
        return new, jnp.max(jnp.abs(new - y))

    y, _ = lax.while_loop(lambda c: c[1] > tol, body, (jnp.ones_like(a) * 0.5, 1.0))
    return y


def test_while_loop_static_tolerance_jit(x64):
    a = to_snp(np.array([0.5, 1.0, 2.5]))
    np.testing.assert_allclose(inverse_sqrt(a), 1 / np.sqrt(np.asarray(a)), rtol=1e-9)
    np.testing.assert_allclose(inverse_sqrt(a, tol=1e-4), 1 / np.sqrt(np.asarray(a)), rtol=1e-3)
    # forward mode through a jitted while loop: d(a^-1/2) = -a^-3/2 / 2
    _, t = jvp(inverse_sqrt, (a,), (jnp.ones(3),))
    np.testing.assert_allclose(t, -0.5 * np.asarray(a) ** -1.5, rtol=1e-8)
    check_vmap(lambda a: inverse_sqrt(a), (np.array([[0.5, 1.0], [2.0, 3.0]]),), jit=False)
