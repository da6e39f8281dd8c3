"""Issue 15, code written by others (third round): numerical recipes as users write them with
JAX: Newton's method on a system with jacfwd, gradient descent on Rosenbrock, Runge-Kutta and
implicit Euler written by hand, velocity-Verlet n-body, an Ising energy with roll, a heat
equation stencil, an L-BFGS two-loop recursion, conjugate gradients, quadrature rules, power
iteration, Kepler's equation, a shooting method; each run under the transforms its author would
use and checked against float64 finite differences, closed forms, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, jvp, lax, value_and_grad, vmap

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp,
                            to_snp)

RNG = np.random.default_rng(3003)


# --- Newton's method on a 2x2 nonlinear system with jacfwd ---------------------------------------
def residual(z, a):
    x, y = z[0], z[1]
    return jnp.array([x ** 2 + y ** 2 - a, jnp.exp(x) + y - 1.0])


def newton_solve(a, iters=12):
    z = jnp.array([1.0, -1.0])
    for _ in range(iters):
        J = jacfwd(residual)(z, a)
        z = z - jnp.linalg.solve(J, residual(z, a))
    return z


def test_newton_system_jacfwd(x64):
    a = 4.0
    z = newton_solve(a)
    np.testing.assert_allclose(residual(z, a), 0.0, atol=1e-10)
    # the derivative of the root: implicit function theorem dz/da = -J^{-1} dr/da
    J = np.asarray(jacfwd(residual)(z, a))
    want = -np.linalg.solve(J, np.array([-1.0, 0.0]))
    np.testing.assert_allclose(jacfwd(newton_solve)(a), want, rtol=1e-8)
    np.testing.assert_allclose(grad(lambda a: newton_solve(a)[0])(a), want[0], rtol=1e-8)
    np.testing.assert_allclose(jit(newton_solve)(a), z, rtol=1e-12)
    check_vmap(newton_solve, (np.array([2.0, 3.0, 5.0]),))


# --- gradient descent on Rosenbrock -----------------------------------------------------------------
def rosenbrock(p, a=1.0, b=100.0):
    x, y = p
    return (a - x) ** 2 + b * (y - x ** 2) ** 2


def descend(p, lr, steps):
    for _ in range(steps):
        p = p - lr * grad(rosenbrock)(p)
    return p


def test_rosenbrock_gradient_descent(x64):
    p = to_snp(np.array([-0.5, 0.8]))
    x, y = -0.5, 0.8
    np.testing.assert_allclose(grad(rosenbrock)(p), [-2 * (1 - x) - 400 * x * (y - x ** 2),
                                                    200 * (y - x ** 2)], rtol=1e-12)
    np.testing.assert_allclose(hessian(rosenbrock)(p),
                               [[2 - 400 * (y - 3 * x ** 2), -400 * x], [-400 * x, 200]],
                               rtol=1e-12)
    end = descend(p, 1e-3, 50)
    assert rosenbrock(end) < rosenbrock(p)
    np.testing.assert_allclose(jit(descend, static_argnums=2)(p, 1e-3, 50), end, rtol=1e-10)
    # the final loss as a function of the step size and of the start (grad through grad)
    final = lambda lr: rosenbrock(descend(p, lr, 20))
    np.testing.assert_allclose(grad(final)(1e-3), fd_grad(final, (1e-3,)), rtol=1e-5)
    check_grad(lambda q: rosenbrock(descend(q, 1e-3, 10)), np.array([-0.5, 0.8]))
    # descent as a fori_loop
    looped = lambda p: lax.fori_loop(0, 50, lambda i, p: p - 1e-3 * grad(rosenbrock)(p), p)
    np.testing.assert_allclose(jit(looped)(p), end, rtol=1e-10)


# --- classical Runge-Kutta written by hand: the Van der Pol oscillator -----------------------------
def van_der_pol(state, mu):
    x, v = state
    return jnp.stack([v, mu * (1 - x ** 2) * v - x])


def rk4(f, y, dt, *args):
    k1 = f(y, *args)
    k2 = f(y + dt / 2 * k1, *args)
    k3 = f(y + dt / 2 * k2, *args)
    k4 = f(y + dt * k3, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate(mu, y0, n=40, dt=0.05):
    y = y0
    for _ in range(n):
        y = rk4(van_der_pol, y, dt, mu)
    return y


def test_rk4_by_hand(x64):
    y0 = to_snp(np.array([1.0, 0.0]))
    # mu = 0 is the harmonic oscillator: x(t) = cos t
    np.testing.assert_allclose(integrate(0.0, y0), [np.cos(2.0), -np.sin(2.0)], rtol=1e-6)
    check_grad(lambda mu: integrate(mu, y0)[0], 0.7)
    check_grad(lambda y: jnp.sum(integrate(0.7, y) ** 2), np.array([1.0, 0.3]))
    np.testing.assert_allclose(jacfwd(integrate)(0.7, y0),
                               fd_jvp(integrate, (0.7, y0), (1.0, np.zeros(2))), rtol=1e-6)
    check_vmap(integrate, (0.7, np.array([[1.0, 0.0], [0.5, 0.5], [-1.0, 0.2]])),
               in_axes=(None, 0))
    np.testing.assert_allclose(jit(integrate)(0.7, y0), integrate(0.7, y0), rtol=1e-12)


# --- implicit Euler with a Newton inner solve --------------------------------------------------------
def stiff(y, k):
    return -k * (y - jnp.cos(y))


def implicit_euler(k, y0=1.0, dt=0.1, steps=10):
    y = y0
    for _ in range(steps):
        z = y
        for _ in range(6):        # solve z - y - dt f(z) = 0
            g = z - y - dt * stiff(z, k)
            dg = grad(lambda z: z - y - dt * stiff(z, k))(z)
            z = z - g / dg
        y = z
    return y


def test_implicit_euler_newton_inner(x64):
    check_grad(implicit_euler, 3.0, rtol=1e-5)
    np.testing.assert_allclose(jit(implicit_euler)(3.0), implicit_euler(3.0), rtol=1e-12)
    check_vmap(implicit_euler, (np.array([0.5, 3.0, 20.0]),))


# --- velocity Verlet for a gravitational n-body system --------------------------------------------
def potential(q, m):
    diff = q[:, None, :] - q[None, :, :]
    n = q.shape[0]
    r2 = jnp.sum(diff ** 2, axis=-1) + jnp.eye(n)        # keep the diagonal away from zero
    inv_r = jnp.where(jnp.eye(n, dtype=bool), 0.0, 1.0 / jnp.sqrt(r2))
    return -0.5 * jnp.sum(m[:, None] * m[None, :] * inv_r)


def verlet(q, p, m, dt=0.01, steps=30):
    force = lambda q: -grad(potential)(q, m)
    def step(i, qp):
        q, p = qp
        p = p + 0.5 * dt * force(q)
        q = q + dt * p / m[:, None]
        p = p + 0.5 * dt * force(q)
        return q, p
    return lax.fori_loop(0, steps, step, (q, p))


def energy(q, p, m):
    return jnp.sum(p ** 2 / (2 * m[:, None])) + potential(q, m)


def test_verlet_n_body(x64):
    q = to_snp(np.array([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]]))
    p = to_snp(np.array([[0.0, 0.5], [-0.4, -0.2], [0.4, -0.3]]))
    m = to_snp(np.array([1.0, 0.8, 1.2]))
    # forces against a NumPy double loop
    want = np.zeros((3, 2))
    for i in range(3):
        for j in range(3):
            if i != j:
                d = np.asarray(q[i] - q[j])
                want[i] -= m[i] * m[j] * d / np.linalg.norm(d) ** 3
    np.testing.assert_allclose(-grad(potential)(q, m), want, rtol=1e-10)
    qn, pn = verlet(q, p, m)
    np.testing.assert_allclose(energy(qn, pn, m), energy(q, p, m), rtol=1e-4)
    assert_trees_close(jit(verlet)(q, p, m), (qn, pn), rtol=1e-10)
    check_grad(lambda m: jnp.sum(verlet(q, p, m)[0][0]), np.asarray(m), rtol=1e-5)
    check_grad(lambda p: energy(*verlet(q, p, m, steps=10), m), np.asarray(p), rtol=1e-5)


# --- an Ising-like energy with roll on a periodic lattice -----------------------------------------
def ising_energy(field, J=1.0, h=0.1):
    s = jnp.tanh(field)                                  # soft spins
    neighbours = jnp.roll(s, 1, axis=0) + jnp.roll(s, 1, axis=1)
    return -J * jnp.sum(s * neighbours) - h * jnp.sum(s)


def np_ising(field, J=1.0, h=0.1):
    s = np.tanh(field)
    n, m = s.shape
    e = 0.0
    for i in range(n):
        for j in range(m):
            e -= J * s[i, j] * (s[i - 1, j] + s[i, j - 1]) + h * s[i, j]
    return e


def test_ising_energy_roll(x64):
    field = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(ising_energy(to_snp(field)), np_ising(field), rtol=1e-12)
    check_grad(ising_energy, field)
    check_grad(lambda J: ising_energy(to_snp(field), J), 0.7)
    check_vmap(ising_energy, (RNG.normal(size=(3, 4, 5)),))
    check_vmap(grad(ising_energy), (RNG.normal(size=(3, 4, 5)),))
    H = hessian(ising_energy)(to_snp(field[:2, :3]))
    v = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(np.tensordot(np.asarray(H), v, 2),
                               fd_jvp(grad(ising_energy), (field[:2, :3],), (v,)), rtol=1e-5)


# --- explicit heat equation: a three-point stencil with roll, and one with slices ----------------
def heat(u, alpha, steps=25):
    for _ in range(steps):
        u = u + alpha * (jnp.roll(u, 1) + jnp.roll(u, -1) - 2 * u)
    return u


def heat_dirichlet(u, alpha, steps=25):
    def body(u, _):
        lap = jnp.zeros_like(u).at[1:-1].set(u[:-2] - 2 * u[1:-1] + u[2:])
        return u + alpha * lap, jnp.max(u)
    return lax.scan(body, u, None, length=steps)


def test_heat_equation_stencil(x64):
    n = 12
    u0 = np.exp(-((np.arange(n) - 5.5) / 2.0) ** 2)
    # the scheme is linear: u_T = A^T u0 with A = I + alpha L; its gradient is (A^T)^T w
    alpha = 0.2
    L = -2 * np.eye(n) + np.roll(np.eye(n), 1, 0) + np.roll(np.eye(n), -1, 0)
    A = np.linalg.matrix_power(np.eye(n) + alpha * L, 25)
    w = RNG.normal(size=n)
    np.testing.assert_allclose(heat(to_snp(u0), alpha), A @ u0, rtol=1e-10)
    np.testing.assert_allclose(grad(lambda u: heat(u, alpha) @ w)(to_snp(u0)), A.T @ w,
                               rtol=1e-10)
    check_grad(lambda a: jnp.sum(heat(to_snp(u0), a) ** 3), alpha)
    out, t = jvp(lambda a: heat(to_snp(u0), a), (alpha,), (1.0,))
    np.testing.assert_allclose(t, fd_jvp(lambda a: heat(to_snp(u0), a), (alpha,), (1.0,)),
                               rtol=1e-6)
    check_grad(lambda u: jnp.sum(heat_dirichlet(u, alpha)[0] ** 2) + jnp.sum(
        heat_dirichlet(u, alpha)[1]), u0 + 0.01 * RNG.normal(size=n))
    check_vmap(lambda u: heat_dirichlet(u, alpha), (RNG.normal(size=(3, n)),))


# --- an L-BFGS two-loop recursion on logistic regression ---------------------------------------
X = RNG.normal(size=(20, 3))
LABELS = (X @ np.array([1.0, -2.0, 0.5]) + 0.3 * RNG.normal(size=20) > 0).astype(float)


def logistic_loss(w, X, y):
    logits = X @ w
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits) + 0.05 * jnp.sum(w ** 2)


def lbfgs(w, X, y, iters=15, m=4):
    s_hist, y_hist = [], []
    g = grad(logistic_loss)(w, X, y)
    for _ in range(iters):
        q = g
        alphas = []
        for s, yk in reversed(list(zip(s_hist, y_hist))):
            a = jnp.dot(s, q) / jnp.dot(yk, s)
            q = q - a * yk
            alphas.append(a)
        if s_hist:
            q = q * jnp.dot(s_hist[-1], y_hist[-1]) / jnp.dot(y_hist[-1], y_hist[-1])
        for (s, yk), a in zip(zip(s_hist, y_hist), reversed(alphas)):
            b = jnp.dot(yk, q) / jnp.dot(yk, s)
            q = q + s * (a - b)
        w_new = w - q
        g_new = grad(logistic_loss)(w_new, X, y)
        s_hist.append(w_new - w)
        y_hist.append(g_new - g)
        if len(s_hist) > m:
            s_hist.pop(0)
            y_hist.pop(0)
        w, g = w_new, g_new
    return w


def test_lbfgs_two_loop_recursion(x64):
    w0 = to_snp(np.zeros(3))
    w = lbfgs(w0, to_snp(X), to_snp(LABELS))
    assert np.linalg.norm(grad(logistic_loss)(w, to_snp(X), to_snp(LABELS))) < 1e-8
    np.testing.assert_allclose(jit(lbfgs)(w0, to_snp(X), to_snp(LABELS)), w, rtol=1e-8)
    # the optimum as a function of the data: a few steps differentiated in the labels
    few = lambda y: jnp.sum(lbfgs(w0, to_snp(X), y, iters=3) ** 2)
    check_grad(few, LABELS * 0.8 + 0.1, rtol=1e-4)


# --- conjugate gradients written by hand ------------------------------------------------------------
def conjugate_gradient(A, b, iters):
    x = jnp.zeros_like(b)
    r = b - A @ x
    p = r
    rs = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def test_conjugate_gradient(x64):
    M = RNG.normal(size=(4, 4))
    A = M @ M.T + 4 * np.eye(4)
    b = RNG.normal(size=4)
    np.testing.assert_allclose(conjugate_gradient(to_snp(A), to_snp(b), 4),
                               np.linalg.solve(A, b), rtol=1e-8)
    np.testing.assert_allclose(grad(lambda b: jnp.sum(conjugate_gradient(to_snp(A), b, 4)))(
        to_snp(b)), np.linalg.solve(A, np.ones(4)), rtol=1e-6)
    check_grad(lambda A: jnp.sum(conjugate_gradient(A, to_snp(b), 3) ** 2), A, rtol=1e-4)
    check_vmap(lambda b: conjugate_gradient(to_snp(A), b, 4), (RNG.normal(size=(3, 4)),))


# --- quadrature: composite Simpson and Gauss-Legendre ------------------------------------------
def simpson(f, a, b, n=32):
    x = jnp.linspace(a, b, n + 1)
    w = jnp.where(jnp.arange(n + 1) % 2 == 1, 4.0, 2.0).at[0].set(1.0).at[-1].set(1.0)
    return (b - a) / (3 * n) * jnp.sum(w * f(x))


GL_X, GL_W = np.polynomial.legendre.leggauss(8)


def gauss_legendre(f, a, b):
    x = 0.5 * (b - a) * GL_X + 0.5 * (a + b)
    return 0.5 * (b - a) * jnp.sum(GL_W * f(x))


def test_quadrature_rules(x64):
    # d/dk of int_0^1 exp(-k x^2) dx = -int x^2 exp(-k x^2) dx
    for rule in (simpson, gauss_legendre):
        val = lambda k: rule(lambda x: jnp.exp(-k * x ** 2), 0.0, 1.0)
        want = gauss_legendre(lambda x: -x ** 2 * np.exp(-1.3 * x ** 2), 0.0, 1.0)
        np.testing.assert_allclose(grad(val)(1.3), want, rtol=1e-6)
        np.testing.assert_allclose(jit(grad(val))(1.3), grad(val)(1.3), rtol=1e-12)
        check_vmap(val, (np.array([0.5, 1.3, 2.0]),))
        # the upper limit: the fundamental theorem of calculus
        upper = lambda b: rule(lambda x: jnp.sin(x) ** 2, 0.0, b)
        np.testing.assert_allclose(grad(upper)(1.1), np.sin(1.1) ** 2, rtol=1e-5)


# --- power iteration for the dominant eigenvalue -----------------------------------------------
def dominant_eigenvalue(A, iters=200):
    v = jnp.ones(A.shape[0]) / jnp.sqrt(A.shape[0])
    for _ in range(iters):
        v = A @ v
        v = v / jnp.linalg.norm(v)
    return v @ A @ v


def test_power_iteration(x64):
    M = RNG.normal(size=(4, 4))
    A = M @ M.T
    w, V = np.linalg.eigh(A)
    np.testing.assert_allclose(dominant_eigenvalue(to_snp(A)), w[-1], rtol=1e-10)
    # d(lambda_max)/dA = v v^T (the unrolled iteration's derivative, up to its convergence)
    g = check_grad(dominant_eigenvalue, A, rtol=1e-5)
    np.testing.assert_allclose(g, np.outer(V[:, -1], V[:, -1]), atol=1e-4)
    np.testing.assert_allclose(jit(dominant_eigenvalue)(to_snp(A)), w[-1], rtol=1e-10)


# --- Kepler's equation E - e sin E = M by fixed-point Newton iterations ------------------------
def eccentric_anomaly(M, e):
    E = M
    for _ in range(8):
        E = E - (E - e * jnp.sin(E) - M) / (1 - e * jnp.cos(E))
    return E


def test_kepler_equation(x64):
    M, e = 1.2, 0.3
    E = eccentric_anomaly(M, e)
    np.testing.assert_allclose(E - e * np.sin(E), M, rtol=1e-12)
    np.testing.assert_allclose(grad(eccentric_anomaly)(M, e), 1 / (1 - e * np.cos(E)), rtol=1e-10)
    np.testing.assert_allclose(grad(eccentric_anomaly, argnums=1)(M, e),
                               np.sin(E) / (1 - e * np.cos(E)), rtol=1e-10)
    Ms = np.linspace(0.1, 3.0, 5)
    check_vmap(eccentric_anomaly, (Ms, 0.3), in_axes=(0, None))
    check_vmap(grad(eccentric_anomaly), (Ms, 0.3), in_axes=(0, None))
    # second derivative against the closed form: d2E/dM2 = -e sin E / (1 - e cos E)^3
    np.testing.assert_allclose(grad(grad(eccentric_anomaly))(M, e),
                               -e * np.sin(E) / (1 - e * np.cos(E)) ** 3, rtol=1e-8)


# --- a shooting method for a boundary value problem ------------------------------------------
def euler_path(slope, k, n=50):
    h = 1.0 / n
    y, dy = 0.0, slope
    for _ in range(n):
        y, dy = y + h * dy, dy - h * k * jnp.sin(y)
    return y


def shoot(k, target=1.0):
    s = 1.0
    for _ in range(6):
        val, ds = value_and_grad(euler_path)(s, k)
        s = s - (val - target) / ds
    return s


def test_shooting_method(x64):
    s = shoot(2.0)
    np.testing.assert_allclose(euler_path(s, 2.0), 1.0, rtol=1e-10)
    # ds/dk by the implicit function theorem
    want = -grad(euler_path, argnums=1)(s, 2.0) / grad(euler_path)(s, 2.0)
    np.testing.assert_allclose(grad(shoot)(2.0), want, rtol=1e-7)
    np.testing.assert_allclose(jvp(shoot, (2.0,), (1.0,))[1], want, rtol=1e-7)
    np.testing.assert_allclose(jit(shoot)(2.0), s, rtol=1e-10)


# --- regressions found by these programs ----------------------------------------------------
def test_value_and_grad_value_after_a_loop_with_tuple_assignment(x64):
    """Was silently wrong: value_and_grad returned the loop's first value (0.0), as the reverse
    pass restores the saved forward values into the name the value is returned from."""
    def f(s):
        y, dy = 0.0, s
        for _ in range(3):
            y, dy = y + 0.1 * dy, dy - 0.1 * jnp.sin(y)
        return y * y, (y, dy)
    want = f(1.0)
    value, g = value_and_grad(f, has_aux=True)(1.0)
    assert_trees_close(value, want, rtol=1e-12)
    assert_trees_close(grad(f, has_aux=True)(1.0)[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(g, fd_grad(lambda s: f(s)[0], (1.0,)), rtol=1e-6)


def test_vmap_ndim_of_an_unbatched_callee_output(x64):
    """Was silently wrong: np.ndim of a callee's unbatched output read as one batched value's
    (ndim - 1), so vmap took the other branch (the check missed the unparenthesised form)."""
    def inner(a, b):
        return a + 0.0, b * 2.0
    def f(a, b):
        a2, b2 = inner(a, b)
        if np.ndim(a2) == 1:
            return a2 * b2
        return jnp.sum(a2) * b2
    check_vmap(f, (np.arange(3.0), np.ones((4, 3))), in_axes=(None, 0))


def test_list_pop_truth_and_zip_under_transforms(x64):
    """A history list trimmed with .pop(0), tested with `if hist:`, read by list(zip(...)) and
    zip(zip(...), ...): grad, jit(grad) and vmap as Python runs it."""
    def f(x):
        a, b = [], []
        acc = x
        for i in range(4):
            for s, y in reversed(list(zip(a, b))):
                acc = acc + 0.1 * s * y
            if a:
                acc = acc * (1.0 + 0.01 * a[-1])
            for (s, y), k in zip(zip(a, b), range(3)):
                acc = acc + 0.01 * k * s
            a.append(acc)
            b.append(x * i)
            if len(a) > 2:
                a.pop(0)
                b.pop()
        return acc + sum(a) + len(b)
    check_grad(f, 0.7)
    check_vmap(f, (np.array([0.3, 0.7, -0.4]),))


def test_sourceless_function_passing_a_lambda_to_jvp(x64):
    """A function defined in exec whose lambda (closing over nothing traced) goes to jvp: the
    lambda the trace made read the trace's recorders as its globals (NameError under vmap)."""
    ns = {"jvp": jvp, "jnp": jnp}
    exec("def h(xd):\n    return jvp(lambda x: jnp.sin(x) * 2.0, (jnp.ones(2),), (xd,))[1]\n",
         ns)
    xd = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    np.testing.assert_allclose(vmap(ns["h"])(to_snp(xd)), 2 * np.cos(1.0) * xd, rtol=1e-12)
    np.testing.assert_allclose(jit(ns["h"])(to_snp(xd[2])), 2 * np.cos(1.0) * xd[2], rtol=1e-12)


def test_vmap_of_partial_written_in_place(x64):
    """vmap(functools.partial(net, p))(xs) inside a differentiated function (refused before)."""
    import functools

    def net(p, x):
        return jnp.tanh(p * x).sum()

    def loss(p, xs):
        return jnp.mean(vmap(functools.partial(net, p))(xs) ** 2)
    xs = RNG.normal(size=(4, 3))
    check_grad(loss, np.array([0.5, -0.3, 0.8]), xs)
    check_vmap(lambda p: loss(p, to_snp(xs)), (RNG.normal(size=(2, 3)),))
