"""Issue 15, code written by others: programs in the style of "Thinking in JAX" and the control
flow tutorial (lax.cond, lax.switch, fori_loop, while_loop, scan, static_argnums, jnp.where, a
Newton solver), under grad, vmap, jit and their compositions; checked against float64 finite
differences, a Python loop and eager."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, jvp, lax, vmap

from others15_check import (check_grad, check_jit, check_vmap, fd_grad,
                            fd_jvp, to_snp)

RNG = np.random.default_rng(150)


def piecewise(x):
    return lax.cond(x > 0, lambda x: x ** 2 + jnp.sin(x), lambda x: -x * jnp.exp(x), x)


def test_cond_scalar(x64):
    for x in (-1.3, 0.7):
        check_grad(piecewise, x)
    xs = to_snp(np.array([-1.3, -0.2, 0.4, 2.0]))
    check_vmap(piecewise, (xs,))
    check_vmap(grad(piecewise), (xs,))
    np.testing.assert_allclose(grad(grad(piecewise))(0.7), 2 - np.sin(0.7), rtol=1e-10)


def cond_with_operands(p, x, scale):
    def true_fun(x, s):
        return jnp.sum(x * s)

    def false_fun(x, s):
        return jnp.sum(jnp.cos(x)) / s

    return lax.cond(p, true_fun, false_fun, x, scale)


def test_cond_two_operands_batched_predicate(x64):
    x = RNG.normal(size=3)
    for p in (True, False):
        check_grad(lambda x, s: cond_with_operands(p, x, s), x, 1.7)
        check_grad(lambda x, s: cond_with_operands(p, x, s), x, 1.7, argnum=1)
    ps = to_snp(np.array([True, False, True]))
    xs = to_snp(RNG.normal(size=(3, 3)))
    check_vmap(cond_with_operands, (ps, xs, 1.7), in_axes=(0, 0, None))
    check_vmap(grad(cond_with_operands, argnums=1), (ps, xs, to_snp(1.7)), in_axes=(0, 0, None))


def activation(i, x):
    return lax.switch(i, [jnp.tanh, lambda x: jnp.maximum(x, 0.0) ** 2, lambda x: x * jnp.sin(x)],
                      x)


def test_switch(x64):
    x = 0.8
    for i in range(3):
        check_grad(lambda x: activation(i, x), x)
    idx = to_snp(np.array([0, 1, 2, 1]))
    xs = to_snp(np.array([0.3, -0.5, 1.2, 0.9]))
    check_vmap(activation, (idx, xs))
    check_vmap(grad(activation, argnums=1), (idx, xs))


def horner(coeffs, x):
    def body(i, acc):
        return acc * x + coeffs[i]

    return lax.fori_loop(0, coeffs.shape[0], body, 0.0)


def test_fori_loop_horner(x64):
    c = RNG.normal(size=5)
    x = 0.7
    np.testing.assert_allclose(horner(to_snp(c), x), np.polyval(c, x), rtol=1e-12)
    check_grad(horner, c, x)
    check_grad(horner, c, x, argnum=1)
    check_vmap(horner, (c, to_snp(np.linspace(-1, 1, 4))), in_axes=(None, 0))
    check_vmap(grad(horner, argnums=1), (c, to_snp(np.linspace(-1, 1, 4))), in_axes=(None, 0))
    np.testing.assert_allclose(grad(grad(horner, argnums=1), argnums=1)(to_snp(c), x),
                               np.polyval(np.polyder(c, 2), x), rtol=1e-10)


def power_iteration(A, num_iters):
    def body(_, v):
        w = A @ v
        return w / jnp.linalg.norm(w)

    v = lax.fori_loop(0, num_iters, body, jnp.ones(A.shape[0]) / jnp.sqrt(A.shape[0]))
    return v @ A @ v


def test_fori_loop_power_iteration_static_argnums(x64):
    B = RNG.normal(size=(4, 4))
    A = B @ B.T + np.eye(4)
    top = np.max(np.linalg.eigvalsh(A))
    got = jit(power_iteration, static_argnums=1)(to_snp(A), 200)
    np.testing.assert_allclose(got, top, rtol=1e-8)
    check_grad(lambda A: power_iteration(A, 30), A, rtol=1e-4)
    As = to_snp(np.stack([A, A + np.eye(4), 2 * A]))
    check_vmap(lambda A: power_iteration(A, 30), (As,))


def newton_sqrt_while(a):
    """sqrt(a) by Newton's method in a while_loop (forward mode and vmap only, as in JAX)."""
    def cond(state):
        x, i = state
        return (jnp.abs(x * x - a) > 1e-12) & (i < 50)

    def body(state):
        x, i = state
        return 0.5 * (x + a / x), i + 1

    x, _ = lax.while_loop(cond, body, (a, 0))
    return x


def test_while_loop_newton_jvp_vmap(x64):
    a = to_snp(2.0)
    np.testing.assert_allclose(newton_sqrt_while(a), np.sqrt(2.0), rtol=1e-12)
    check_jit(newton_sqrt_while, 2.0)
    _, t = jvp(newton_sqrt_while, (a,), (to_snp(1.0),))
    np.testing.assert_allclose(t, 0.5 / np.sqrt(2.0), rtol=1e-8)
    check_vmap(newton_sqrt_while, (np.array([0.5, 2.0, 9.0]),))
    got = vmap(lambda a: jvp(newton_sqrt_while, (a,), (jnp.ones_like(a),))[1])(
        to_snp(np.array([0.5, 2.0, 9.0])))
    np.testing.assert_allclose(got, 0.5 / np.sqrt([0.5, 2.0, 9.0]), rtol=1e-8)
    np.testing.assert_allclose(secant.jacfwd(newton_sqrt_while)(a), 0.5 / np.sqrt(2.0), rtol=1e-8)


def newton_solve(f, x0, steps=8):
    """Newton's method with the derivative from grad, a fixed number of steps in Python."""
    x = x0
    for _ in range(steps):
        x = x - f(x) / grad(f)(x)
    return x


def cube_root(a):
    return newton_solve(lambda x: x ** 3 - a, 1.0 + a / 3)


def cube_root_inline(a):
    """The same Newton iteration with grad of a lambda written in the loop."""
    x = 1.0 + a / 3
    for _ in range(8):
        x = x - (x ** 3 - a) / grad(lambda y: y ** 3 - a)(x)
    return x


def cube_root_local_lambda(a):
    """The same with the function a lambda assigned to a name, called and passed to grad."""
    f = lambda x: x ** 3 - a
    x = 1.0 + a / 3
    for _ in range(8):
        x = x - f(x) / grad(f)(x)       # (was refused: 'Lambda expression', then 'used as a value')
    return x


@pytest.mark.parametrize("fn", [
    cube_root_inline, cube_root_local_lambda,
    cube_root],     # (a closure passed to a helper calling grad(f) on it: was refused)
    ids=["inline", "local_lambda", "solver_function"])
def test_python_newton_solver(x64, fn):
    a = 5.0
    np.testing.assert_allclose(fn(to_snp(a)), a ** (1 / 3), rtol=1e-12)
    check_grad(fn, a, rtol=1e-6)
    np.testing.assert_allclose(grad(fn)(a), a ** (-2 / 3) / 3, rtol=1e-9)
    check_jit(fn, a)
    check_vmap(fn, (np.array([1.0, 5.0, 20.0]),))


@functools.partial(jit, static_argnums=(1,))
def repeated_square(x, n):
    for _ in range(n):
        x = x * x / (1 + x * x)
    return x


def test_static_argnums_python_loop(x64):
    x = 0.9
    for n in (1, 3):
        want = x
        for _ in range(n):
            want = want * want / (1 + want * want)
        np.testing.assert_allclose(repeated_square(to_snp(x), n), want, rtol=1e-12)
        g = grad(repeated_square)(to_snp(x), n)
        np.testing.assert_allclose(g, fd_grad(lambda x: repeated_square(x, n), (to_snp(x),)),
                                   rtol=1e-6)
    got = vmap(repeated_square, in_axes=(0, None))(to_snp(np.array([0.2, 0.9, 1.5])), 3)
    want = np.stack([repeated_square(to_snp(v), 3) for v in (0.2, 0.9, 1.5)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def cumulative_stats(xs):
    def step(carry, x):
        total, sq = carry
        total = total + x
        sq = sq + x * x
        return (total, sq), total / (1.0 + sq)

    (total, sq), ys = lax.scan(step, (0.0, 0.0), xs)
    return jnp.sum(ys) + total * sq


def test_scan_carry_tuple(x64):
    xs = RNG.normal(size=6)
    check_grad(cumulative_stats, xs)
    check_jit(cumulative_stats, xs)
    check_vmap(cumulative_stats, (RNG.normal(size=(3, 6)),))
    check_vmap(grad(cumulative_stats), (RNG.normal(size=(3, 6)),))
    v = RNG.normal(size=6)
    hv = jvp(grad(cumulative_stats), (to_snp(xs),), (to_snp(v),))[1]
    np.testing.assert_allclose(hv, fd_jvp(grad(cumulative_stats), (to_snp(xs),), (to_snp(v),)),
                               rtol=1e-5, atol=1e-6)


def relu_where(x):
    return jnp.sum(jnp.where(x > 0, x, 0.01 * x) ** 2)


def safe_log_where(x):
    # the double-where trick from JAX's FAQ: no NaN gradient at x <= 0
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.sum(jnp.where(x > 0, jnp.log(safe), 0.0))


def test_where(x64):
    x = np.array([-1.0, 0.5, 2.0, -0.3])
    check_grad(relu_where, x)
    check_grad(safe_log_where, x)
    g = grad(safe_log_where)(to_snp(x))
    np.testing.assert_allclose(g, np.where(x > 0, 1 / np.where(x > 0, x, 1.0), 0.0))
    check_vmap(grad(relu_where), (RNG.normal(size=(3, 4)),))
    check_vmap(grad(safe_log_where), (RNG.normal(size=(3, 4)),))


def python_if_on_static_shape(x):
    if x.ndim == 1:
        return jnp.sum(x ** 2)
    return jnp.sum(jnp.mean(x, axis=0) ** 2)


def test_python_if_on_shape(x64):
    check_grad(python_if_on_static_shape, RNG.normal(size=3))
    check_grad(python_if_on_static_shape, RNG.normal(size=(2, 3)))
    check_vmap(python_if_on_static_shape, (RNG.normal(size=(4, 3)),))
    check_vmap(grad(python_if_on_static_shape), (RNG.normal(size=(4, 2, 3)),))


# --- regression: a lax body passing on a nested def that closes over a differentiated value ----
def body_grad_of_closure(k, q):
    def potential(q):
        return k * jnp.sum(q ** 2)

    def body(i, q):
        return q + grad(potential)(q)       # potential reads k: was a zero gradient in k

    return jnp.sum(lax.fori_loop(0, 2, body, q))


def python_loop_grad_of_closure(k, q):
    def potential(q):
        return k * jnp.sum(q)

    for _ in range(2):      # (jit rolls it into a fori_loop: the same body)
        q = q - 0.1 * grad(potential)(q)
    return jnp.sum(q)


@pytest.mark.parametrize("f", [body_grad_of_closure, python_loop_grad_of_closure],
                         ids=lambda f: f.__name__)
def test_loop_body_passing_a_closure_to_grad(x64, f):
    q = np.array([1.0, 2.0])
    g = check_grad(f, 1.3, q)           # (jit(grad) too: was 0.0 under jit)
    assert abs(float(g)) > 0.1
    _, t = jvp(f, (to_snp(1.3), to_snp(q)), (to_snp(1.0), jnp.zeros(2)))
    np.testing.assert_allclose(t, g, rtol=1e-10)
    check_vmap(f, (np.array([0.5, 1.3]), q), in_axes=(0, None))
    check_vmap(grad(f), (np.array([0.5, 1.3]), q), in_axes=(0, None))
